"""Backends produce the *device code* of a generated file; the project's emitter (``translate.emit``) adds the
preamble, helpers, constants, explicit instantiations and the host launchers of the contract
(docs/design/translate-contract.md).

The interface is one function per backend module::

    def generate(request: KernelRequest) -> DeviceCode

``KernelRequest`` carries everything a backend may use: the kernel's identity and Python source, Numba's
inferred types, the argument types, the compile-time constants and the launcher parameters (``ParamSpec``,
whose ``const`` flags the kernel signature must follow). ``DeviceCode`` is C++ text with the device functions
and exactly one ``__global__`` kernel named ``request.name`` whose parameters follow ``kernel_params(request)``;
a ``template<int NAME...>`` kernel when ``request.template_params`` is not empty. Backends are looked up by name
with ``get_backend`` (``ast``: deterministic, default; ``llm``: optional, added by its own module).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from ..cnames import c_name


@dataclass(frozen=True)
class ParamSpec:
    """One Python argument as the launcher ABI passes it (manifest ``launchers[].params`` entry).

    An array is a pointer and its extents; an array whose layout is not C-contiguous (``float32[:]``,
    ``float32[::1, :]``) also passes its strides, in elements, after the extents. ``cname`` is the C identifier
    (the Python name unless that collides with C/C++/CUDA or a generated name)."""
    name: str
    kind: str            # "array" | "scalar"
    dtype: str           # numba dtype name: float32, int64, ...
    ndim: int = 0
    const: bool = False  # arrays the kernel never writes
    layout: str = "C"    # numba's array layout: "C", "F" or "A"
    cname: str = ""      # C identifier ("" = name)
    ctype: str = ""      # C element / scalar type ("" = from dtype)
    extents: tuple = ()  # C names of the extents ("" = <cname>_shape<d>) and of the strides (<cname>_stride<d>)
    strides: tuple = ()
    record: tuple = ()   # dtype "record": (itemsize, ((field, dtype, offset), ...)), its C struct is ctype

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
            return out
        return {"name": self.name, "kind": "scalar", "dtype": self.dtype}

    def c_params(self) -> list[str]:
        ctype = self.ctype or c_name(self.dtype)
        if self.kind == "array":
            ptr = f"const {ctype}* {self.c}" if self.const else f"{ctype}* {self.c}"
            return [ptr] + [f"int64_t {a}" for a in self.c_args()[1:]]
        return [f"{ctype} {self.c}"]

    def extent_names(self) -> list[str]:
        return list(self.extents) or [f"{self.c}_shape{d}" for d in range(self.ndim)]

    def stride_names(self) -> list[str]:
        if not self.strided:
            return []
        return list(self.strides) or [f"{self.c}_stride{d}" for d in range(self.ndim)]

    def c_args(self) -> list[str]:
        if self.kind == "array":
            return [self.c] + self.extent_names() + self.stride_names()
        return [self.c]


@dataclass
class KernelRequest:
    name: str                                  # C kernel name = file stem (registry name or function name)
    qualname: str                              # "package.module:function"
    source: str                                # the kernel's Python source
    signature: str                             # numba signature string
    arg_names: tuple[str, ...]
    argtypes: tuple                            # numba types
    typemap: dict[str, str]                    # Python name -> numba type (text), SSA versions merged
    params: tuple[ParamSpec, ...]              # launcher ABI, in argument order
    template_params: tuple[str, ...] = ()      # compile-time constants that become template<int ...> parameters
    instantiations: tuple[dict, ...] = ({},)   # one {name: value} per explicit instantiation / launcher
    constants: dict[str, Any] = field(default_factory=dict)  # module-level constants the kernel reads
    pyfunc: Any = None                         # the Python function (the ast backend uses it)
    typed: Any = None                          # translate.typing.TypedFunction (the ast backend uses it)
    device_sources: dict[str, str] = field(default_factory=dict)  # device function qualname -> source
    fastmath: bool = False                     # the kernel's fastmath: float32 math uses numba's fast intrinsics
    build: Any = None                          # translate.options.CodegenOptions: launch bounds, build flags
    kernel_cname: str = ""                     # the __global__ function's C name ("" = name; `main` -> `main_`)

    @property
    def c_name(self) -> str:
        return self.kernel_cname or self.name


@dataclass
class DeviceCode:
    code: str                                  # device functions + the __global__ kernel
    helpers: tuple[str, ...] = ()              # names from translate.codegen.helpers.HELPERS the code calls
    constants: dict[str, tuple] = field(default_factory=dict)  # name -> (scalar key, value): constexpr at file scope
    nonneg_params: tuple[str, ...] = ()        # integer parameters the code assumes >= 0 (the launcher checks)
    device_functions: tuple[str, ...] = ()     # qualnames of the device functions included
    notes: dict[str, Any] = field(default_factory=dict)  # backend metadata for the manifest (model, usage, ...)
    cooperative: bool = False                  # the kernel syncs the whole grid: launched cooperatively


def kernel_params(request: KernelRequest) -> list[str]:
    """The C parameter list of the __global__ kernel (and of the launcher, before grid/block/stream)."""
    return [p for spec in request.params for p in spec.c_params()]


def c_declaration(head: str, groups: list[list[str]], width: int = 110) -> str:
    """``head(params)`` on one line if short, else one parameter group (a Python argument) per line."""
    flat = ", ".join(p for g in groups for p in g)
    if len(head) + len(flat) + 2 <= width:
        return f"{head}({flat})"
    return f"{head}(\n    " + ",\n    ".join(", ".join(g) for g in groups) + ")"


def kernel_declaration(request: KernelRequest) -> str:
    return c_declaration(f"__global__ void {request.c_name}", [spec.c_params() for spec in request.params])


BACKENDS = {"ast": "translate.backends.ast_backend", "llm": "translate.backends.llm"}


def get_backend(name: str):
    """The backend module for ``name``; it has ``generate(request) -> DeviceCode`` and ``NAME``/``VERSION``."""
    if name not in BACKENDS:
        raise ValueError(f"unknown backend '{name}'; available: {', '.join(sorted(BACKENDS))}")
    return importlib.import_module(BACKENDS[name])
