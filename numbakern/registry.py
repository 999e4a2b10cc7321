"""The kernel registry: everything the tests, the translator, verification and the benchmarks need to know
about a kernel, in one ``KernelSpec``.

A spec says how to build inputs and a launch configuration for a size (``make_case``), what the right answer is
(``reference``, computed independently in numpy, in float64 where precision matters), which arguments the kernel
writes (``outputs``), how close is close enough (``rtol``/``atol`` against ``error_scale``), and which argument
types to translate it for (``signatures``). ``run_case`` launches a kernel on a case in the current mode and
returns its outputs; ``KernelSpec.check`` compares them with the reference.

Two namespaces: the library's kernels (declared in ``numbakern.*`` modules; ``all_specs()``) and the kernels users
declare in their own modules (``numbakern.declare``; ``project_specs()``), keyed by (module, name). A user kernel may
be named like a library kernel; a bare name that matches both is an error that says how to name one of them
(``module:name``). ``spec_ref``/``from_ref`` let another process re-create a spec from its module.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import mode
from .compare import Comparison, compare
from .launch import LaunchConfig

Size = Mapping[str, int]

#: value distributions a case maker must support; verification draws inputs from each of them
DISTRIBUTIONS = ("uniform", "normal", "negative", "large")
#: normal values with special ones mixed in (inf, -inf, NaN, -0.0, subnormals); only for the kernels whose
#: reference defines their outputs for them (``KernelSpec.special_values``), which verification then runs on it too
SPECIAL = "special"


@dataclass(frozen=True)
class Case:
    """One concrete launch: host arrays and scalars in the kernel's argument order, and the launch shape."""

    args: tuple[Any, ...]
    launch: LaunchConfig
    size: Mapping[str, int]

    def fresh_args(self) -> list[Any]:
        """Copies of the arrays, so a run never changes the case (scalars are passed through)."""
        return [a.copy(order="K") if isinstance(a, np.ndarray) else a for a in self.args]


@dataclass(frozen=True)
class Work:
    """What one launch must do at least: floating-point operations and bytes moved through device memory."""

    flops: float = 0.0
    bytes: float = 0.0


@dataclass(frozen=True)
class KernelSpec:
    name: str
    family: str
    kernel: Any  # the @cuda.jit kernel (for specialized kernels: the variant for `constants`)
    signatures: tuple[str, ...]  # numba signature strings, e.g. "void(float32[:, ::1], float32[:, ::1], int64)"
    make_case: Callable[[Size, np.random.Generator, str], Case]  # (size, rng, distribution) -> Case
    reference: Callable[..., dict[int, np.ndarray]]  # (*case.args) -> {output index: expected}
    outputs: tuple[int, ...]  # argument indices the kernel writes
    test_sizes: tuple[Size, ...]  # small sizes for the simulator (include non-multiples of the tile and 1)
    verify_sizes: tuple[Size, ...]  # GPU verification sizes (1, non-multiples, primes)
    bench_sizes: tuple[Size, ...] = ()
    # outputs whose incoming values the kernel reads (atomic accumulators): initialised by make_case, never poisoned
    accumulates: tuple[int, ...] = ()
    rtol: float = 1e-5
    atol: float = 0.0
    # (*args) -> {output index: scale}: the magnitude each element's rounding error is relative to;
    # defaults to |expected|. For a dot product it is sum(|a_i * b_i|), which cancellation cannot shrink to zero.
    error_scale: Callable[..., dict[int, np.ndarray]] | None = None
    constants: Mapping[str, int] = field(default_factory=dict)
    work: Callable[[Size], Work] | None = None
    description: str = ""
    # the kernel's precondition on sizes, e.g. {"k": 4, "w": 4}: those dimensions must be multiples (16-byte access)
    size_multiples: Mapping[str, int] = field(default_factory=dict)
    # scratch arguments that must be zeros at launch and that the kernel leaves zeros (a workspace that needs no
    # memset between launches); make_case gives them as zeros, and they carry no test data
    workspace: tuple[int, ...] = ()
    # the library operation the kernel replaces, for the benchmark: (*args on the device, in the kernel's order, as
    # torch tensors and scalars) -> (a no-argument callable that runs it, its name), e.g. (lambda: torch.sum(x),
    # "torch.sum")
    baseline: Callable[..., tuple[Callable[[], Any], str]] | None = None
    # the module that declared the spec (default: the kernel's): its namespace, and where a child process finds it
    module: str = ""
    # the reference defines the outputs for special float inputs (IEEE arithmetic element by element: inf, -inf,
    # NaN, -0.0, subnormals): verification also draws inputs from the SPECIAL distribution
    special_values: bool = False
    # (*args in the kernel's order) -> LaunchConfig: ``launch``'s answer (``declare`` gives its ``launch``)
    launcher: Callable[..., LaunchConfig] | None = None

    def __post_init__(self):
        check_tolerances(f"kernel '{self.name}'", self.rtol, self.atol)
        if self.error_scale is not None and not callable(self.error_scale):
            raise TypeError(f"kernel '{self.name}': error_scale must be a function (*args) -> {{output index: "
                            f"scale}}, got {type(self.error_scale).__name__} {self.error_scale!r}")
        if not self.module:
            object.__setattr__(self, "module", _py_func(self.kernel).__module__)

    def launch(self, *args: Any) -> LaunchConfig:
        """The launch configuration for these arguments, in the kernel's order::

            cfg = spec.launch(x, out)
            spec.kernel[cfg.grid, cfg.block, 0, cfg.shared_bytes](x, out)
        """
        if self.launcher is None:
            raise TypeError(f"kernel '{self.name}' was registered without a launch function (only declare() gives "
                            "one); its cases carry their launch: spec.make_case(size, rng).launch")
        return self.launcher(*args)

    @property
    def distributions(self) -> tuple[str, ...]:
        """What verification draws inputs from: ``DISTRIBUTIONS``, and ``SPECIAL`` with ``special_values``."""
        return (*DISTRIBUTIONS, SPECIAL) if self.special_values else DISTRIBUTIONS

    @property
    def namespace(self) -> str:
        """``"library"`` for numbakern's own kernels, ``"project"`` for kernels declared in a user's modules."""
        return LIBRARY if is_library_module(self.module) else PROJECT

    @property
    def qualified_name(self) -> str:
        """``module:name``: unique across namespaces, accepted by ``get``."""
        return f"{self.module}:{self.name}"

    def accepts(self, size: Size) -> bool:
        """True when ``size`` meets ``size_multiples``."""
        return all(size[d] % m == 0 for d, m in self.size_multiples.items())

    def smallest_size(self, like: Size) -> Size:
        """The smallest size (each dimension 1, or its required multiple) with the dimensions of ``like``."""
        return {d: self.size_multiples.get(d, 1) for d in like}

    def check(self, case: Case, outputs: Mapping[int, np.ndarray]) -> dict[int, Comparison]:
        """Compare a run's outputs with the reference; one ``Comparison`` per output argument."""
        expected = self.reference(*case.args)
        scales = self.error_scale(*case.args) if self.error_scale else {}
        names = self.arg_names()
        return {
            i: compare(
                outputs[i], expected[i], scale=scales.get(i), rtol=self.rtol, atol=self.atol,
                name=f"{self.name}: output '{names[i]}'",
                # an accumulator starts from the case's values on purpose: unchanged there is not "never written"
                before=None if i in self.accumulates else case.args[i],
            )
            for i in self.outputs
        }

    def arg_names(self) -> tuple[str, ...]:
        """The kernel's parameter names, in order."""
        code = _py_func(self.kernel).__code__
        return code.co_varnames[: code.co_argcount]


def check_tolerances(where: str, rtol: Any, atol: Any) -> None:
    """``rtol`` and ``atol`` are finite numbers, at least 0: an infinite or NaN tolerance would pass any output."""
    for name, value in (("rtol", rtol), ("atol", atol)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise TypeError(f"{where}: {name} must be a number, got {type(value).__name__} {value!r}")
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{where}: {name} must be a finite number >= 0, got {value!r} (an infinite or NaN "
                             "tolerance would pass any output)")


def run_case(spec: KernelSpec, case: Case, kernel: Any = None) -> dict[int, np.ndarray]:
    """Launch ``kernel`` (default: the spec's) on copies of the case's inputs; return its outputs on the host."""
    kernel = spec.kernel if kernel is None else kernel
    args = case.fresh_args()
    cfg = case.launch
    if mode.in_simulator():
        kernel[cfg.grid, cfg.block, 0, cfg.shared_bytes](*args)
        return {i: args[i] for i in spec.outputs}
    from .frontend.choice import cuda_module_of  # numba's or numba-cuda-mlir's host API, as the kernel's

    cuda = cuda_module_of(kernel)
    device_args = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    kernel[cfg.grid, cfg.block, 0, cfg.shared_bytes](*device_args)
    cuda.synchronize()
    return {i: device_args[i].copy_to_host() for i in spec.outputs}


# ---------------------------------------------------------------------------------------------------------------
# the registry itself

LIBRARY = "library"
PROJECT = "project"

_REGISTRY: dict[str, KernelSpec] = {}  # the library's kernels, by name
_PROJECT: dict[tuple[str, str], KernelSpec] = {}  # users' kernels, by (declaring module, name)

#: modules whose import registers the library's kernels
KERNEL_MODULES = (
    "numbakern.kernels.matmul",
    "numbakern.kernels.elementwise",
    "numbakern.kernels.reduce",
    "numbakern.kernels.transpose",
    "numbakern.kernels.matmul_fast",
    "numbakern.kernels.matmul_async",
    "numbakern.kernels.softmax",
    "numbakern.kernels.norm",
    "numbakern.kernels.scan",
    "numbakern.kernels.histogram",
    "numbakern.kernels.conv",
    "numbakern.kernels.matmul_pipe",
    "numbakern.kernels.attention",
    "numbakern.kernels.matmul_tc",
    "numbakern.kernels.matmul_3xtf32",
    "numbakern.kernels.attention_tc",
    "numbakern.kernels.attention_3xtf32",
)


#: library kernels not yet in every tool's reach: ``get`` finds them (their tests, the benchmark), ``all_specs`` and
#: the tools that walk it (translate, verification, the LLM backend's checks) leave them out until ``translate``
#: knows their intrinsics (numbakern.mma's tensor-core instructions)
PREVIEW_MODULES: tuple[str, ...] = ()


class AmbiguousKernelName(LookupError):
    """A bare kernel name that more than one namespace (or module) declares."""


def register(spec: KernelSpec) -> KernelSpec:
    """Add a spec. Library names are unique; a user module that is imported again re-declares (replaces) its own."""
    bad = [i for i in (*spec.outputs, *spec.accumulates, *spec.workspace) if not 0 <= i < len(spec.arg_names())]
    if bad:
        raise ValueError(f"kernel '{spec.name}': output indices {bad} are outside its argument list")
    if spec.namespace == PROJECT:
        _PROJECT[(spec.module, spec.name)] = spec
        return spec
    existing = _REGISTRY.get(spec.name)
    if existing is not None and existing is not spec:
        raise ValueError(f"a kernel named '{spec.name}' is already registered ({existing.family})")
    _REGISTRY[spec.name] = spec
    return spec


def get(name: str) -> KernelSpec:
    """The spec named ``name`` (library or user), or ``module:name`` for one module's.

    A bare name declared by the library and by a user module (or by two user modules) is ambiguous: the error lists
    the ``module:name`` of each.
    """
    _load_library(preview=True)
    if ":" in name:
        module, _, short = name.rpartition(":")
        return lookup(module, short)
    found = ([_REGISTRY[name]] if name in _REGISTRY else []) + [
        spec for (_, n), spec in sorted(_PROJECT.items()) if n == name
    ]
    if len(found) > 1:
        listing = "; ".join(f"{s.qualified_name} ({'numbakern library' if s.namespace == LIBRARY else 'yours'})"
                            for s in found)
        raise AmbiguousKernelName(
            f"the kernel name '{name}' is ambiguous: {listing}. Name one as MODULE:NAME, or look it up in its "
            "project (numbakern.project)"
        )
    if not found:
        known = ", ".join(sorted({*_REGISTRY, *(n for _, n in _PROJECT)}))
        raise KeyError(f"no registered kernel named '{name}'; registered kernels: {known}")
    return found[0]


def all_specs() -> list[KernelSpec]:
    """The library's kernels, by name (not the ``PREVIEW_MODULES``' kernels)."""
    _load_library()
    return [_REGISTRY[name] for name in sorted(_REGISTRY) if _REGISTRY[name].module not in PREVIEW_MODULES]


def project_specs(modules: Sequence[str] | None = None) -> list[KernelSpec]:
    """Kernels declared in users' modules (imported so far), by (module, name); with ``modules``, only those
    declared in these modules or packages (a package covers its submodules)."""
    def wanted(module: str) -> bool:
        return modules is None or any(module == m or module.startswith(m + ".") for m in modules)

    return [spec for (module, _), spec in sorted(_PROJECT.items()) if wanted(module)]


def lookup(module: str, name: str) -> KernelSpec:
    """The spec ``module`` declares as ``name``, importing ``module`` if needed (library modules too;
    ``numbakern`` alone stands for the whole library)."""
    if is_library_module(module):
        _load_library(preview=True)
        spec = _REGISTRY.get(name)
        if spec is not None and module in (spec.module, "numbakern"):
            return spec
    else:
        if (module, name) not in _PROJECT:
            importlib.import_module(module)
        spec = _PROJECT.get((module, name))
        if spec is not None:
            return spec
    declared = sorted({s.name for s in (*_REGISTRY.values(), *_PROJECT.values()) if s.module == module})
    raise KeyError(f"module '{module}' declares no kernel named '{name}'; it declares: {', '.join(declared) or 'none'}")


def spec_for_kernel(kernel: Any) -> KernelSpec | None:
    """The spec (either namespace) whose kernel is ``kernel``, or None. The library is imported only for one of
    its own kernels (a user's project that does not include it never pays for importing it)."""
    module = getattr(_py_func(kernel), "__module__", None) if kernel is not None else None
    if isinstance(module, str) and is_library_module(module):
        _load_library(preview=True)
    return next((s for s in (*_REGISTRY.values(), *_PROJECT.values()) if s.kernel is kernel), None)


def kernel_target(spec: KernelSpec) -> str | None:
    """``module:attribute`` under which ``spec.kernel`` itself can be imported again (what ``translate`` accepts as
    a kernel), searching the kernel's module, then the declaring one; None for a kernel made inside a function
    (a ``specialize`` variant)."""
    for module_name in dict.fromkeys((_py_func(spec.kernel).__module__, spec.module)):
        module = sys.modules.get(module_name)
        for attr, value in vars(module).items() if module is not None else ():
            if value is spec.kernel:
                return f"{module_name}:{attr}"
    return None


def spec_ref(spec: KernelSpec) -> dict[str, str]:
    """What another process needs to re-create ``spec`` (``from_ref``): plain strings, JSON-ready."""
    ref = {"module": spec.module, "name": spec.name, "file": "", "root": ""}
    mod = sys.modules.get(spec.module)
    file = getattr(mod, "__file__", None)
    if file:
        file = os.path.abspath(file)
        ref["file"] = file
        # the folder to put on sys.path so that `module` imports by name: one level up per dotted part
        depth = spec.module.count(".") + (1 if os.path.basename(file) == "__init__.py" else 0)
        root = os.path.dirname(file)
        for _ in range(depth):
            root = os.path.dirname(root)
        ref["root"] = root
    return ref


def from_ref(ref: Mapping[str, str]) -> KernelSpec:
    """The spec a ``spec_ref`` names, in this process: its module imported by name (its root on ``sys.path`` if
    needed), or, for a script or a file imported by path, its file executed afresh as a module of its own."""
    module, name = ref["module"], ref["name"]
    if is_library_module(module):
        return lookup(module, name)
    if module != "__main__" and ref.get("root") and importlib.util.find_spec(module.split(".")[0]) is None:
        sys.path.insert(0, ref["root"])
    try:
        if module != "__main__" and importlib.util.find_spec(module) is not None:
            return lookup(module, name)
    except (ImportError, ValueError):
        pass
    file = ref.get("file")
    if not file:
        raise KeyError(f"cannot re-create kernel '{name}': module '{module}' is not importable and its file is unknown")
    digest = hashlib.sha256(file.encode()).hexdigest()[:10]
    alias = f"_numbakern_{os.path.splitext(os.path.basename(file))[0]}_{digest}"
    if alias not in sys.modules:
        loader_spec = importlib.util.spec_from_file_location(alias, file)
        mod = importlib.util.module_from_spec(loader_spec)
        sys.modules[alias] = mod
        loader_spec.loader.exec_module(mod)
    return lookup(alias, name)


def is_library_module(module: str) -> bool:
    """True for numbakern's own modules, whose specs form the library's namespace."""
    return module == "numbakern" or module.startswith("numbakern.")


def _load_library(preview: bool = False) -> None:
    for module in KERNEL_MODULES + (PREVIEW_MODULES if preview else ()):
        importlib.import_module(module)


def _py_func(kernel: Any):
    return getattr(kernel, "py_func", kernel)


# ---------------------------------------------------------------------------------------------------------------
# input makers shared by the kernel families


def random_array(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any, dist: str = "uniform") -> np.ndarray:
    """Random values of ``dtype`` drawn from one of ``DISTRIBUTIONS`` or ``SPECIAL`` (never all zeros)."""
    dtype = np.dtype(dtype)
    if _dist(dist) == SPECIAL:
        return _special_array(rng, shape, dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = {
            "uniform": (0, 100),
            "normal": (-100, 100),
            # unsigned types have no negatives: the top of the range instead, the bit patterns of -100..-1
            "negative": (-100, 0) if dtype.kind == "i" else (int(info.max) - 100, int(info.max)),
            "large": (-(2**20), 2**20),
        }[dist]
        return rng.integers(max(lo, info.min), min(hi, info.max), size=shape, dtype=dtype, endpoint=True)
    values = {
        "uniform": lambda: rng.random(shape),
        "normal": lambda: rng.standard_normal(shape),
        "negative": lambda: -rng.random(shape) - 0.5,
        "large": lambda: rng.standard_normal(shape) * 1e4,
    }[dist]()
    return np.ascontiguousarray(values, dtype=dtype)


def _special_array(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """Normal values, about a third of them replaced by inf, -inf, NaN, -0.0 and subnormals of either sign (every
    kind present once an array has a dozen elements); integers have no special values: normal ones."""
    if dtype.kind not in "fc":
        return random_array(rng, shape, dtype, "normal")
    out = np.ascontiguousarray(rng.standard_normal(shape), dtype=dtype)
    tiny = np.finfo(dtype).smallest_subnormal
    specials = np.array([np.inf, -np.inf, np.nan, -0.0, tiny, -tiny, tiny * 3, -tiny * 1000], dtype=dtype)
    flat = out.reshape(-1)
    k = min(flat.size, max(len(specials) if flat.size >= 12 else 1, flat.size // 3))
    where = rng.choice(flat.size, size=k, replace=False)
    picks = np.concatenate([specials, rng.choice(specials, size=max(0, k - len(specials)))])[:k]
    flat[where] = rng.permutation(picks)
    return out


def _dist(dist: str) -> str:
    if dist not in DISTRIBUTIONS and dist != SPECIAL:
        raise ValueError(f"unknown distribution '{dist}'; expected one of {', '.join((*DISTRIBUTIONS, SPECIAL))}")
    return dist
