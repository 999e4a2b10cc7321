"""The data that flows along translate's spine (``translate.pipeline``), each built once and never changed:

- ``TranslateOptions``: what the caller chose (backend and its options, architecture, ``--verify``, ``--force``);
- ``KernelRequest``: one kernel to translate, with everything a backend may use: its identity and Python source,
  Numba's types, the launcher parameters (``ParamSpec``), the compile-time constants, the codegen options and what
  the kernel depends on;
- ``DeviceCode``: what a backend returns (device functions and the ``__global__`` kernel);
- ``TranslationResult``: what the pipeline returns (the file's text, its manifest entry, timings).

The C signature of the kernel and of its launchers follows from the request (``kernel_declaration``), so the
emitter, the backends and the prompt can never disagree about it (docs/design/translate-contract.md).
"""

from __future__ import annotations

import re
import types
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from numba.cuda import types as nbtypes

from .cnames import c_name
from .depends import Dependencies
from .options import CodegenOptions

if TYPE_CHECKING:  # typing needs numba's real CUDA target, which a process in simulator mode cannot import
    from .typed import TypedFunction

#: a plain JSON value, as options and manifest records hold them
JSONValue = str | int | float | bool | None

ARCH = re.compile(r"^(sm|compute)_(\d+a?)$")  # (90a: the arch-specific features)


def arch_number(arch: str) -> str:
    """``sm_90`` / ``compute_90`` -> ``90`` (``sm_90a`` -> ``90a``); ``ValueError`` naming ``--arch`` for anything
    else."""
    m = ARCH.match(arch)
    if m is None:
        raise ValueError(f"--arch must look like sm_90 or compute_90, got {arch!r}")
    return m.group(2)


@dataclass(frozen=True)
class TranslateOptions:
    """How to translate, as the caller (the CLI or ``translate.api``) chose it; checked when made."""

    backend: str = "ast"
    #: the backend's own options (the llm backend: model, base_url, max_turns, timeout, max_retries), JSON values;
    #: never a key: a backend reads secrets from the environment
    backend_options: Mapping[str, JSONValue] = field(default_factory=dict)
    arch: str = "sm_90"
    #: verify each candidate of the backend on the GPU before accepting it (the llm backend's repair loop)
    verify: bool = False
    #: replace a GPU-verified file with an unverified translation of the same kernel
    force: bool = False

    def __post_init__(self) -> None:
        arch_number(self.arch)
        object.__setattr__(self, "backend_options", types.MappingProxyType(dict(self.backend_options)))

    def to_json(self) -> dict:
        return {"backend": self.backend, "backend_options": dict(self.backend_options), "arch": self.arch,
                "verify": self.verify, "force": self.force}


@dataclass(frozen=True)
class ParamSpec:
    """One Python argument as the launcher ABI passes it (manifest ``launchers[].params`` entry).

    An array is a pointer and its extents; an array whose layout is not C-contiguous (``float32[:]``,
    ``float32[::1, :]``) also passes its strides, in elements, after the extents. ``cname`` is the C identifier
    (the Python name unless that collides with C/C++/CUDA or a generated name)."""

    name: str
    kind: str            # "array" | "scalar" | "tuple" (of numbers: one C parameter each; of arrays: each's own)
    dtype: str           # numba dtype name: float32, int64, ... ("tuple" for a tuple)
    ndim: int = 0
    const: bool = False  # arrays the kernel never writes
    layout: str = "C"    # numba's array layout: "C", "F" or "A"
    cname: str = ""      # C identifier ("" = name)
    ctype: str = ""      # C element / scalar type ("" = from dtype)
    extents: tuple[str, ...] = ()  # C names of the extents ("" = <cname>_shape<d>)
    strides: tuple[str, ...] = ()  # C names of the strides (<cname>_stride<d>)
    record: tuple = ()   # dtype "record": (itemsize, ((field, dtype, offset), ...)); its C struct is ctype
    #: a tuple: its numbers' dtypes (C parameters <cname>_0, <cname>_1, ...), or its arrays (ParamSpecs)
    items: tuple = ()
    #: the tensor map of another argument (numbakern.tensormap.tensor_map_params): (source, box_rows, box_cols,
    #: swizzle). The launcher takes the 16-word array as the kernel's caller gives it, ignores its contents, makes
    #: the map from the source array's pointer and passes it to the kernel by value (a __grid_constant__)
    tensor_map: tuple = ()

    @property
    def c(self) -> str:
        return self.cname or self.name

    @property
    def strided(self) -> bool:
        return self.kind == "array" and self.layout != "C"

    def manifest(self) -> dict:
        if self.kind == "array":
            out = {"name": self.name, "kind": "array", "dtype": self.dtype, "ndim": self.ndim, "const": self.const}
            if self.strided:
                out["layout"] = self.layout
            if self.record:
                out["record"] = {"itemsize": self.record[0], "fields": [list(f) for f in self.record[1]]}
            if self.tensor_map:
                source, rows, cols, swizzle = self.tensor_map
                out["tensor_map"] = {"of": source, "box": [rows, cols], "swizzle": swizzle}
            return out
        if self.kind == "tuple":
            return {"name": self.name, "kind": "tuple", "dtype": "tuple",
                    "items": [i.manifest() if isinstance(i, ParamSpec) else i for i in self.items]}
        return {"name": self.name, "kind": "scalar", "dtype": self.dtype}

    @property
    def arrays(self) -> tuple[ParamSpec, ...]:
        """A tuple of arrays: its arrays, each passed as an array parameter is (else none)."""
        return tuple(i for i in self.items if isinstance(i, ParamSpec))

    def c_params(self) -> list[str]:
        if self.arrays:
            return [c for a in self.arrays for c in a.c_params()]
        if self.kind == "tuple":
            return [f"{c_name(d)} {a}" for d, a in zip(self.items, self.c_args())]
        ctype = self.ctype or c_name(self.dtype)
        if self.kind == "array":
            ptr = f"const {ctype}* {self.c}" if self.const else f"{ctype}* {self.c}"
            return [ptr] + [f"int64_t {a}" for a in self.c_args()[1:]]
        return [f"{ctype} {self.c}"]

    def kernel_params(self) -> list[str]:
        """The ``__global__`` function's parameters for this argument (the launcher's, but a tensor map's value)."""
        if self.tensor_map:
            return [f"const __grid_constant__ nk_tensor_map {self.c}"]
        return self.c_params()

    def kernel_args(self) -> list[str]:
        """What the launcher passes the kernel for this argument."""
        return [f"{self.c}_map"] if self.tensor_map else self.c_args()

    def extent_names(self) -> list[str]:
        return list(self.extents) or [f"{self.c}_shape{d}" for d in range(self.ndim)]

    def stride_names(self) -> list[str]:
        if not self.strided:
            return []
        return list(self.strides) or [f"{self.c}_stride{d}" for d in range(self.ndim)]

    def c_args(self) -> list[str]:
        if self.kind == "array":
            return [self.c] + self.extent_names() + self.stride_names()
        if self.arrays:
            return [c for a in self.arrays for c in a.c_args()]
        if self.kind == "tuple":
            return [f"{self.c}_{i}" for i in range(len(self.items))]
        return [self.c]


@dataclass(frozen=True)
class KernelRequest:
    """One kernel to translate: made once by ``translate.kernel_request.build_request``."""

    name: str                                  # C kernel name = file stem (registry name or function name)
    qualname: str                              # "package.module:function"
    source: str                                # the kernel's Python source
    signature: str                             # numba signature string
    arg_names: tuple[str, ...]
    argtypes: tuple[nbtypes.Type, ...]
    typemap: Mapping[str, str]                 # Python name -> numba type (text), SSA versions merged
    params: tuple[ParamSpec, ...]              # launcher ABI, in argument order
    pyfunc: types.FunctionType                 # the kernel's Python function, closure set for the first instantiation
    typed: TypedFunction                       # Numba's types for it (translate.typed)
    build: CodegenOptions                      # launch bounds, fastmath and the build flags they need
    dependencies: Dependencies                 # the device functions and module constants the kernel reads
    options: TranslateOptions                  # how to translate it
    template_params: tuple[str, ...] = ()      # compile-time constants that become template<int ...> parameters
    #: one {name: value} per explicit instantiation / launcher
    instantiations: tuple[Mapping[str, int], ...] = (types.MappingProxyType({}),)
    kernel_cname: str = ""                     # the __global__ function's C name ("" = name; `main` -> `main_`)

    def __post_init__(self) -> None:
        object.__setattr__(self, "typemap", types.MappingProxyType(dict(self.typemap)))
        object.__setattr__(self, "instantiations",
                           tuple(types.MappingProxyType(dict(inst)) for inst in self.instantiations))

    @property
    def fastmath(self) -> bool:
        """The kernel's fastmath: float32 math uses numba's fast intrinsics."""
        return self.build.fastmath

    @property
    def filename(self) -> str:
        return f"{self.name}.cu"

    @property
    def c_name(self) -> str:
        return self.kernel_cname or self.name


@dataclass(frozen=True)
class DeviceCode:
    """A backend's answer: C++ with the device functions and exactly one ``__global__`` kernel named
    ``request.name`` whose declaration is ``kernel_declaration(request)``."""

    code: str                                  # device functions + the __global__ kernel
    helpers: tuple[str, ...] = ()              # names from translate.codegen.helpers.HELPERS the code calls
    #: name -> (scalar key, value): constexpr at file scope
    constants: Mapping[str, tuple[str, JSONValue]] = field(default_factory=dict)
    nonneg_params: tuple[str, ...] = ()        # integer parameters the code assumes >= 0 (the launcher checks)
    device_functions: tuple[str, ...] = ()     # qualnames of the device functions included
    #: backend metadata for the manifest's "backend" record (llm: model, endpoint host, turns, usage)
    notes: Mapping[str, JSONValue | dict] = field(default_factory=dict)
    cooperative: bool = False                  # the kernel syncs the whole grid: launched cooperatively
    #: C name -> Python name of a module constant whose C name had to differ (``INT64_MAX`` is a C macro)
    constant_names: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TranslationResult:
    """What one translation produced; plain JSON values, so it travels from a helper process unchanged."""

    name: str                     # kernel / file stem
    path: str | None              # the written .cu (None when nothing was written)
    code: str                     # the file's text
    entry: dict                   # the manifest entry
    compile: dict                 # the NVRTC result for the manifest, and its log
    seconds: dict = field(default_factory=dict)  # time per stage

    def to_json(self) -> dict:
        return asdict(self)


def c_declaration(head: str, groups: list[list[str]], width: int = 110) -> str:
    """``head(params)`` on one line if short, else one parameter group (a Python argument) per line."""
    flat = ", ".join(p for g in groups for p in g)
    if len(head) + len(flat) + 2 <= width:
        return f"{head}({flat})"
    return f"{head}(\n    " + ",\n    ".join(", ".join(g) for g in groups) + ")"


def kernel_declaration(request: KernelRequest) -> str:
    return c_declaration(f"__global__ void {request.c_name}", [spec.kernel_params() for spec in request.params])
