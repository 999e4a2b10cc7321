"""The kernel registry: everything the tests, the translator, verification and the benchmarks need to know
about a kernel, in one ``KernelSpec``.

A spec says how to build inputs and a launch configuration for a size (``make_case``), what the right answer is
(``reference``, computed independently in numpy, in float64 where precision matters), which arguments the kernel
writes (``outputs``), how close is close enough (``rtol``/``atol`` against ``error_scale``), and which argument
types to translate it for (``signatures``). ``run_case`` launches a kernel on a case in the current mode and
returns its outputs; ``KernelSpec.check`` compares them with the reference.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from . import mode
from .compare import Comparison, compare
from .launch import LaunchConfig

Size = Mapping[str, int]

#: value distributions a case maker must support; verification draws inputs from each of them
DISTRIBUTIONS = ("uniform", "normal", "negative", "large")


@dataclass(frozen=True)
class Case:
    """One concrete launch: host arrays and scalars in the kernel's argument order, and the launch shape."""

    args: tuple[Any, ...]
    launch: LaunchConfig
    size: Mapping[str, int]

    def fresh_args(self) -> list[Any]:
        """Copies of the arrays, so a run never changes the case (scalars are passed through)."""
        return [a.copy() if isinstance(a, np.ndarray) else a for a in self.args]


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
        return {
            i: compare(
                outputs[i], expected[i], scale=scales.get(i), rtol=self.rtol, atol=self.atol,
                name=f"{self.name} arg {i}",
            )
            for i in self.outputs
        }

    def arg_names(self) -> tuple[str, ...]:
        """The kernel's parameter names, in order."""
        code = _py_func(self.kernel).__code__
        return code.co_varnames[: code.co_argcount]


def run_case(spec: KernelSpec, case: Case, kernel: Any = None) -> dict[int, np.ndarray]:
    """Launch ``kernel`` (default: the spec's) on copies of the case's inputs; return its outputs on the host."""
    kernel = spec.kernel if kernel is None else kernel
    args = case.fresh_args()
    cfg = case.launch
    if mode.in_simulator():
        kernel[cfg.grid, cfg.block, 0, cfg.shared_bytes](*args)
        return {i: args[i] for i in spec.outputs}
    from numba import cuda

    device_args = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    kernel[cfg.grid, cfg.block, 0, cfg.shared_bytes](*device_args)
    cuda.synchronize()
    return {i: device_args[i].copy_to_host() for i in spec.outputs}


# ---------------------------------------------------------------------------------------------------------------
# the registry itself

_REGISTRY: dict[str, KernelSpec] = {}

#: modules whose import registers the library's kernels
KERNEL_MODULES = (
    "numbakern.kernels.matmul",
    "numbakern.kernels.elementwise",
    "numbakern.kernels.reduce",
    "numbakern.kernels.transpose",
    "numbakern.kernels.matmul_fast",
    "numbakern.kernels.matmul_async",
    "numbakern.kernels.matmul_pipe",
    "numbakern.kernels.attention",
)


def register(spec: KernelSpec) -> KernelSpec:
    existing = _REGISTRY.get(spec.name)
    if existing is not None and existing is not spec:
        raise ValueError(f"a kernel named '{spec.name}' is already registered ({existing.family})")
    bad = [i for i in (*spec.outputs, *spec.accumulates) if not 0 <= i < len(spec.arg_names())]
    if bad:
        raise ValueError(f"kernel '{spec.name}': output indices {bad} are outside its argument list")
    _REGISTRY[spec.name] = spec
    return spec


def get(name: str) -> KernelSpec:
    _load_library()
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise KeyError(f"no registered kernel named '{name}'; registered kernels: {known}") from None


def all_specs() -> list[KernelSpec]:
    _load_library()
    return [_REGISTRY[name] for name in sorted(_REGISTRY)]


def _load_library() -> None:
    for module in KERNEL_MODULES:
        importlib.import_module(module)


def _py_func(kernel: Any):
    return getattr(kernel, "py_func", kernel)


# ---------------------------------------------------------------------------------------------------------------
# input makers shared by the kernel families


def random_array(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any, dist: str = "uniform") -> np.ndarray:
    """Random values of ``dtype`` drawn from one of ``DISTRIBUTIONS`` (never all zeros)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = {
            "uniform": (0, 100),
            "normal": (-100, 100),
            "negative": (-100, 0),
            "large": (max(info.min, -(2**20)), min(info.max, 2**20)),
        }[_dist(dist)]
        return rng.integers(lo, hi, size=shape, dtype=dtype, endpoint=True)
    values = {
        "uniform": lambda: rng.random(shape),
        "normal": lambda: rng.standard_normal(shape),
        "negative": lambda: -rng.random(shape) - 0.5,
        "large": lambda: rng.standard_normal(shape) * 1e4,
    }[_dist(dist)]()
    return np.ascontiguousarray(values, dtype=dtype)


def _dist(dist: str) -> str:
    if dist not in DISTRIBUTIONS:
        raise ValueError(f"unknown distribution '{dist}'; expected one of {', '.join(DISTRIBUTIONS)}")
    return dist
