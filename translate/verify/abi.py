"""The launcher ABI of ``docs/design/translate-contract.md``, in ctypes.

A manifest entry's ``launchers`` list describes each ``extern "C"`` launcher's parameters; from it this module
builds the ctypes signature and turns a kernel's Python-order arguments (device addresses for arrays, numbers for
scalars) into the C call: ``T* x, int64_t x_shape0, ...`` per array, the scalar by value per scalar, then
``grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes, stream``. An array whose layout is not C
(``"layout": "A"`` or ``"F"`` in the description) also passes its strides, in elements, after its extents.

Imports only the standard library and numpy: a deployed ``.so`` is callable with this and nothing else.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: scalar dtype names of the contract -> ctypes type
SCALAR_CTYPES: dict[str, Any] = {
    "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32, "int64": ctypes.c_int64,
    "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64,
    "float32": ctypes.c_float, "float64": ctypes.c_double, "bool": ctypes.c_bool,
    "float16": ctypes.c_uint16,  # a __half by value: its bits
    "bfloat16": ctypes.c_uint16,  # a __nv_bfloat16 by value: its bits
}
#: element types an array parameter may have besides the scalar ones (arrays travel as pointers)
ARRAY_ONLY_DTYPES = ("complex64", "complex128")
#: the trailing launch parameters every launcher takes
LAUNCH_CTYPES = [ctypes.c_uint] * 6 + [ctypes.c_size_t, ctypes.c_void_p]


class AbiError(ValueError):
    """A launcher description, or the arguments given for it, do not fit the contract."""


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # "array" | "scalar"
    dtype: str
    ndim: int = 0
    const: bool = False
    layout: str = "C"
    record: dict | None = None  # dtype "record": {"itemsize": n, "fields": [[name, dtype, offset], ...]}
    items: tuple = ()  # kind "tuple": its numbers' dtypes (one C parameter each), or its arrays (Params)

    @property
    def strided(self) -> bool:
        return self.kind == "array" and self.layout != "C"


def params_of(launcher: Mapping[str, Any]) -> list[Param]:
    return [_param(launcher, i, p) for i, p in enumerate(launcher.get("params", ()))]


def _param(launcher: Mapping[str, Any], i: int, p: Mapping[str, Any], in_tuple: bool = False) -> Param:
    kind = p.get("kind")
    dtype = str(p.get("dtype"))
    if kind == "tuple" and not in_tuple:
        listed: Any = p.get("items") or ()
        if listed and all(isinstance(d, Mapping) and d.get("kind") == "array" for d in listed):  # of arrays
            arrays = tuple(_param(launcher, i, d, True) for d in listed)
            return Param(str(p.get("name", f"arg{i}")), kind, "tuple", items=arrays)
        items = tuple(str(d) for d in listed)
        if not items or any(d not in SCALAR_CTYPES for d in items):
            raise AbiError(f"{launcher.get('symbol')}: tuple param {p.get('name', i)!r} has items {items!r}")
        return Param(str(p.get("name", f"arg{i}")), kind, "tuple", items=items)
    if kind not in ("array", "scalar"):
        raise AbiError(f"{launcher.get('symbol')}: param {i} has kind {kind!r}; expected 'array' or 'scalar'")
    array_dtype = dtype in ARRAY_ONLY_DTYPES or (dtype == "record" and p.get("record"))
    if dtype not in SCALAR_CTYPES and not (kind == "array" and array_dtype):
        raise AbiError(f"{launcher.get('symbol')}: param {p.get('name', i)!r} has unsupported dtype {dtype!r}")
    ndim = int(p.get("ndim", 0)) if kind == "array" else 0
    if kind == "array" and ndim < 1:
        raise AbiError(f"{launcher.get('symbol')}: array param {p.get('name', i)!r} needs ndim >= 1")
    layout = str(p.get("layout", "C"))
    if layout not in ("C", "F", "A"):
        raise AbiError(f"{launcher.get('symbol')}: array param {p.get('name', i)!r} has layout {layout!r}")
    return Param(str(p.get("name", f"arg{i}")), kind, dtype, ndim, bool(p.get("const", False)), layout,
                 p.get("record"))


def argtypes(launcher: Mapping[str, Any]) -> list[Any]:
    """The ctypes argument types of a launcher, in C order."""
    types: list[Any] = []
    for p in _flat(params_of(launcher)):
        if p.kind == "array":
            types.append(ctypes.c_void_p)
            types.extend([ctypes.c_int64] * (p.ndim * (2 if p.strided else 1)))
        elif p.kind == "tuple":
            types.extend(SCALAR_CTYPES[d] for d in p.items)
        else:
            types.append(SCALAR_CTYPES[p.dtype])
    return types + LAUNCH_CTYPES


def c_declaration(launcher: Mapping[str, Any]) -> str:
    """The C prototype the description stands for (for reports and error messages)."""
    c_names = {"float32": "float", "float64": "double", "bool": "bool", "float16": "__half",
               "bfloat16": "__nv_bfloat16", "complex64": "cuFloatComplex", "complex128": "cuDoubleComplex",
               "record": "struct"}
    parts = []
    for p in _flat(params_of(launcher)):
        if p.kind == "tuple":
            parts.extend(f"{c_names.get(d, f'{d}_t')} {p.name}_{i}" for i, d in enumerate(p.items))
            continue
        ctype = c_names.get(p.dtype, f"{p.dtype}_t")
        if p.kind == "array":
            name = p.name.replace("[", "_").rstrip("]")  # (a tuple's array `pair[0]` is `pair_0` in C)
            parts.append(f"{'const ' if p.const else ''}{ctype}* {name}")
            parts.extend(f"int64_t {name}_shape{d}" for d in range(p.ndim))
            if p.strided:
                parts.extend(f"int64_t {name}_stride{d}" for d in range(p.ndim))
        else:
            parts.append(f"{ctype} {p.name}")
    parts += [f"unsigned {a}" for a in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")]
    parts += ["size_t shared_bytes", "cudaStream_t stream"]
    return f'extern "C" cudaError_t {launcher["symbol"]}({", ".join(parts)})'


def bind(lib: ctypes.CDLL, launcher: Mapping[str, Any]):
    """The launcher function of a loaded library with its ctypes signature set."""
    symbol = launcher["symbol"]
    try:
        fn = getattr(lib, symbol)
    except AttributeError:
        raise AbiError(f"the library has no symbol {symbol!r} (expected {c_declaration(launcher)})") from None
    fn.argtypes = argtypes(launcher)
    fn.restype = ctypes.c_int
    return fn


def select_launcher(launchers: Sequence[Mapping[str, Any]],
                    constants: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    """The launcher instantiated for ``constants`` (the spec's compile-time constants; {} for none).

    A launcher names only the constants that became template parameters: a factory parameter the kernel body never
    reads (it only sizes others) is not one, so the launcher whose every constant agrees with the spec's is it."""
    want = {k: int(v) for k, v in (constants or {}).items()}
    if not launchers:
        raise AbiError("the manifest entry lists no launchers")
    agreeing = [launcher for launcher in launchers
                if all(k in want and want[k] == int(v) for k, v in (launcher.get("constants") or {}).items())]
    if agreeing:
        most = max(len(launcher.get("constants") or {}) for launcher in agreeing)
        best = [launcher for launcher in agreeing if len(launcher.get("constants") or {}) == most]
        if len(best) == 1:
            return best[0]
    have = ", ".join(f"{l['symbol']} {l.get('constants') or {}}" for l in launchers)
    raise AbiError(f"no launcher is instantiated for constants {want}; the entry has: {have}")


def _triple(dims: Sequence[int]) -> tuple[int, int, int]:
    given = tuple(int(d) for d in dims)
    if not 1 <= len(given) <= 3:
        raise AbiError(f"launch dimensions must have 1 to 3 entries, got {given}")
    x, y, z = (given + (1, 1, 1))[:3]
    return x, y, z


def call_args(
    launcher: Mapping[str, Any],
    args: Sequence[Any],
    grid: Sequence[int],
    block: Sequence[int],
    shared_bytes: int = 0,
    stream: int = 0,
) -> list[Any]:
    """The C argument list for ``args`` in Python order.

    Each array argument is ``(address, shape, dtype)`` or ``(address, shape, dtype, strides)`` (a device address
    and its host-side description; strides in elements, C-contiguous when absent, see ``ArrayArg``) or an object
    with ``address``, ``shape`` and ``dtype`` (and optionally ``element_strides``) attributes; scalars are Python
    numbers.
    """
    params = params_of(launcher)
    if len(args) != len(params):
        raise AbiError(f"{launcher['symbol']} takes {len(params)} arguments, got {len(args)}")
    out: list[Any] = []
    for p, a in zip(params, args):
        if p.kind == "array":
            out += _array_args(launcher, p, a)
        elif p.kind == "tuple" and isinstance(p.items[0], Param):
            if not isinstance(a, tuple) or len(a) != len(p.items):
                raise AbiError(f"{launcher['symbol']}: '{p.name}' is a tuple of {len(p.items)} arrays, got "
                               f"{type(a).__name__}")
            for item, x in zip(p.items, a):
                out += _array_args(launcher, item, x)
        elif p.kind == "tuple":
            if not isinstance(a, tuple) or len(a) != len(p.items):
                raise AbiError(f"{launcher['symbol']}: '{p.name}' is a tuple of {len(p.items)} numbers, got {a!r}")
            out.extend(_scalar(launcher, p.name, d, v) for d, v in zip(p.items, a))
        else:
            out.append(_scalar(launcher, p.name, p.dtype, a))
    return out + [*_triple(grid), *_triple(block), int(shared_bytes), ctypes.c_void_p(int(stream) or None)]


def _flat(params: list[Param]) -> list[Param]:
    """The parameters with each tuple of arrays as its arrays (C parameters of their own)."""
    return [q for p in params for q in (p.items if p.kind == "tuple" and isinstance(p.items[0], Param) else [p])]


def _array_args(launcher, p: Param, a) -> list[Any]:
    """The C arguments of the array ``a`` for the array parameter ``p``: its address and extents (and strides)."""
    address, shape, dtype, strides = _array_parts(a)
    if len(shape) != p.ndim:
        raise AbiError(f"{launcher['symbol']}: '{p.name}' must be {p.ndim}-D, got shape {tuple(shape)}")
    if p.record is not None:
        if not _record_matches(np.dtype(dtype), p.record):
            raise AbiError(f"{launcher['symbol']}: '{p.name}' must be a record array laid out as "
                           f"{p.record}, got dtype {np.dtype(dtype)}")
    elif np.dtype(dtype) != _numpy_dtype(p.dtype):
        raise AbiError(f"{launcher['symbol']}: '{p.name}' must have dtype {p.dtype}, got {np.dtype(dtype)}")
    out: list[Any] = [ctypes.c_void_p(int(address)), *(int(s) for s in shape)]
    if p.strided:
        out.extend(int(s) for s in (strides if strides is not None else c_strides(shape)))
    elif strides is not None and tuple(strides) != c_strides(shape) and 0 not in shape:
        raise AbiError(f"{launcher['symbol']}: '{p.name}' must be C-contiguous (the kernel's signature "
                       f"says so), got strides {tuple(strides)} (elements)")
    return out


def _scalar(launcher, name: str, dtype: str, a):
    if isinstance(a, np.ndarray):
        raise AbiError(f"{launcher['symbol']}: '{name}' is a scalar parameter, got an array")
    if dtype in ("float16", "bfloat16"):
        return int(np.array(a, dtype=_numpy_dtype(dtype)).view(np.uint16))
    return bool(a) if dtype == "bool" else (float(a) if dtype.startswith("float") else int(a))


def _numpy_dtype(name: str) -> np.dtype:
    """numpy's dtype of a contract dtype name (``bfloat16``: ml_dtypes', the one numpy arrays of it have)."""
    if name == "bfloat16":
        import ml_dtypes  # a test dependency, needed only for bfloat16 arrays

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


@dataclass(frozen=True)
class ArrayArg:
    address: int
    shape: tuple[int, ...]
    dtype: np.dtype
    element_strides: tuple[int, ...] | None = None  # None: C-contiguous


def _record_matches(dtype: np.dtype, record: Mapping[str, Any]) -> bool:
    """Is numpy ``dtype`` the record the launcher takes (same itemsize, field names, types and offsets)?"""
    if dtype.names is None or dtype.itemsize != int(record.get("itemsize", -1)):
        return False
    want = {str(name): (str(t), int(off)) for name, t, off in record.get("fields", ())}
    fields: Any = dtype.fields
    have = {name: (str(np.dtype(fields[name][0])), int(fields[name][1])) for name in dtype.names}
    return want == have


def c_strides(shape) -> tuple[int, ...]:
    """The strides (in elements) of a C-contiguous array of ``shape``."""
    out, step = [], 1
    for extent in reversed(tuple(shape)):
        out.append(step)
        step *= int(extent)
    return tuple(reversed(out))


def element_strides(a: np.ndarray) -> tuple[int, ...]:
    """numpy's byte strides in elements (an AbiError if a stride is not a multiple of the item size)."""
    if any(s % a.itemsize for s in a.strides):
        raise AbiError(f"strides {a.strides} are not multiples of the item size {a.itemsize}")
    return tuple(s // a.itemsize for s in a.strides)


def _array_parts(a: Any):
    if isinstance(a, tuple) and len(a) in (3, 4):
        return int(a[0]), tuple(a[1]), np.dtype(a[2]), (tuple(a[3]) if len(a) == 4 and a[3] is not None else None)
    if hasattr(a, "address") and hasattr(a, "shape") and hasattr(a, "dtype"):
        strides = getattr(a, "element_strides", None)
        arg: Any = a
        return int(arg.address), tuple(arg.shape), np.dtype(arg.dtype), \
            (tuple(strides) if strides is not None else None)
    raise AbiError("an array argument must be (address, shape, dtype[, strides]) or have .address/.shape/.dtype, "
                   f"got {type(a).__name__}")


def launch(fn, launcher: Mapping[str, Any], args: Sequence[Any], grid, block, shared_bytes: int = 0,
           stream: int = 0) -> int:
    """Call a bound launcher; returns its ``cudaError_t`` (0 = cudaSuccess)."""
    return int(fn(*call_args(launcher, args, grid, block, shared_bytes, stream)))
