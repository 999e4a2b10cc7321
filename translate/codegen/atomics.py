"""``cuda.atomic.*`` in C, with numba's meaning for every dtype numba supports (numba_cuda ``cudaimpl.py`` and
``nvvm.py``): the value is converted to the array's dtype, the element index wraps around like any index, and the
call returns the element's old value.

    add/sub        int32 uint32 int64 uint64 float32 float64  atomicAdd / atomicSub (64-bit ints through
                                                              unsigned long long; float sub = add of -v, exactly)
    and_/or_/xor   int32 uint32 int64 uint64                  atomicAnd / atomicOr / atomicXor
    exch           int32 uint32 int64 uint64                  atomicExch
    inc/dec        int32 uint32 (atomicInc/atomicDec); int64 uint64: numba's compare-and-swap loop (nk_atomic_inc64)
    max/min        ints: atomicMax/atomicMin; floats: numba's NaN-aware compare-and-swap loop (nk_atomic_max)
    nanmax/nanmin  ints: atomicMax/atomicMin; floats: numba's NaN-ignoring loop (nk_atomic_nanmax)
    cas, compare_and_swap  int32 uint32 int64 uint64          atomicCAS
"""

from __future__ import annotations

from numba import cuda

from numbakern.intrinsics import warp

from ..cnames import c_name, is_float
from . import arrays
from .cexpr import PRIMARY, UNARY, CExpr, cast, paren
from .sites import Site, call_op

_INTS = {"int32", "uint32", "int64", "uint64"}
_SUPPORTED = {"add": _INTS | {"float32", "float64"}, "sub": _INTS | {"float32", "float64"},
              "and": _INTS, "or": _INTS, "xor": _INTS, "exch": _INTS, "inc": _INTS, "dec": _INTS,
              "max": _INTS | {"float32", "float64"}, "min": _INTS | {"float32", "float64"},
              "nanmax": _INTS | {"float32", "float64"}, "nanmin": _INTS | {"float32", "float64"},
              "cas": _INTS, "compare_and_swap": _INTS}
_FUNC = {"add": "atomicAdd", "sub": "atomicSub", "and": "atomicAnd", "or": "atomicOr", "xor": "atomicXor",
         "exch": "atomicExch", "inc": "atomicInc", "dec": "atomicDec", "max": "atomicMax", "min": "atomicMin",
         "nanmax": "atomicMax", "nanmin": "atomicMin", "cas": "atomicCAS", "compare_and_swap": "atomicCAS"}
#: the C type CUDA's atomics take for each dtype (where it differs)
_VIA = {"int64": "unsigned long long", "uint64": "unsigned long long"}
_SIGNED_VIA = {"int64": "long long", "uint64": "unsigned long long"}  # max/min compare signed/unsigned


def atomic(site: Site) -> CExpr:
    kind = site.op.stub[1].rstrip("_")  # and_, or_: C's and, or
    nargs = len(site.op.params)
    if site.nargs != nargs or site.keywords:
        raise site.error(None, f"cuda.atomic.{kind} takes {nargs} arguments by position")
    arr = site.value(0)
    if not isinstance(arr, arrays.ArrayInfo):
        raise site.error(0, "the first argument of an atomic must be an array")
    key = arr.key
    if key not in _SUPPORTED[kind]:
        raise site.error(None, f"cuda.atomic.{kind} on {key} arrays is not supported (numba supports "
                         f"{', '.join(sorted(_SUPPORTED[kind]))})")
    site.writes(0)
    if kind == "compare_and_swap":  # the first element of the array
        elem = site.element(0)
        vals = [site.expr(i) for i in range(1, nargs)]
    else:
        elem = site.element(0, 1)
        vals = [site.expr(i) for i in range(2, nargs)]
    vals = [cast(v, key) for v in vals]
    ptr = f"&{elem.code}"
    rtype = arr.nbt.dtype if arr.nbt is not None else None
    if is_float(key) and kind in ("max", "min", "nanmax", "nanmin"):
        site.helper("nk_atomic_fminmax" if kind in ("max", "min") else "nk_atomic_nanminmax")
        return CExpr(f"nk_atomic_{kind}({ptr}, {vals[0].code})", key, rtype, PRIMARY, pure=False)
    if kind in ("inc", "dec") and key in ("int64", "uint64"):
        site.helper("nk_atomic_incdec64")
        via = "unsigned long long"
        code = f"({c_name(key)})nk_atomic_{kind}64(({via} *){ptr}, ({via}){paren(vals[0], UNARY)})"
        return CExpr(code, key, rtype, UNARY, pure=False)
    func = _FUNC[kind]
    if kind == "sub" and key != "int32" and key != "uint32":
        # CUDA has atomicSub for 32-bit integers only: x - v is x + (-v), bit for bit (two's complement, IEEE)
        func, vals = "atomicAdd", [CExpr(f"-{paren(vals[0], UNARY)}", key, vals[0].nbt, UNARY)]
    if kind in ("inc", "dec"):
        via = "unsigned int"
    elif kind in ("max", "min", "nanmax", "nanmin"):
        via = _SIGNED_VIA.get(key)
    else:
        via = _VIA.get(key)
    if via is None:
        return CExpr(f"{func}({ptr}, {', '.join(v.code for v in vals)})", key, rtype, PRIMARY, pure=False)
    vs = ", ".join(f"({via}){paren(v, UNARY)}" for v in vals)
    return CExpr(f"({c_name(key)}){func}(({via} *){ptr}, {vs})", key, rtype, UNARY, pure=False)


for _op in warp.ATOMIC:
    _op.register("c", atomic)

BUILTINS = {getattr(cuda.atomic, op.stub[1]): call_op for op in warp.ATOMIC if op.stub}
