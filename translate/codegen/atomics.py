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

from ..cnames import c_name, is_float
from . import arrays
from .cexpr import PRIMARY, UNARY, CExpr, cast, paren

ATOMICS = {cuda.atomic.add: "add", cuda.atomic.sub: "sub", cuda.atomic.max: "max", cuda.atomic.min: "min",
           cuda.atomic.nanmax: "nanmax", cuda.atomic.nanmin: "nanmin", cuda.atomic.exch: "exch",
           cuda.atomic.cas: "cas", cuda.atomic.compare_and_swap: "compare_and_swap", cuda.atomic.inc: "inc",
           cuda.atomic.dec: "dec", cuda.atomic.and_: "and", cuda.atomic.or_: "or", cuda.atomic.xor: "xor"}

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


def atomic(tr, obj, node) -> CExpr:
    kind = ATOMICS[obj]
    nargs = {"cas": 4, "compare_and_swap": 3}.get(kind, 3)
    if len(node.args) != nargs or node.keywords:
        raise tr.src.error(node, f"cuda.atomic.{kind} takes {nargs} arguments by position")
    arr = tr.value(node.args[0])
    if not isinstance(arr, arrays.ArrayInfo):
        raise tr.src.error(node.args[0], "the first argument of an atomic must be an array")
    key = arr.key
    if key not in _SUPPORTED[kind]:
        raise tr.src.error(node, f"cuda.atomic.{kind} on {key} arrays is not supported (numba supports "
                           f"{', '.join(sorted(_SUPPORTED[kind]))})")
    tr.mark_written(arr.name)
    if kind == "compare_and_swap":  # the first element of the array
        elem = arrays.element_at(tr, arr, [CExpr("0", "int32", None, literal=0, nonneg=True)], node)
        vals = [tr.expr(a) for a in node.args[1:]]
    else:
        elem = arrays.element(tr, arr, node.args[1], node)
        vals = [tr.expr(a) for a in node.args[2:]]
    vals = [cast(v, key) for v in vals]
    ptr = f"&{elem.code}"
    rtype = arr.nbt.dtype if arr.nbt is not None else None
    if is_float(key) and kind in ("max", "min", "nanmax", "nanmin"):
        tr.helpers.add("nk_atomic_fminmax" if kind in ("max", "min") else "nk_atomic_nanminmax")
        return CExpr(f"nk_atomic_{kind}({ptr}, {vals[0].code})", key, rtype, PRIMARY, pure=False)
    if kind in ("inc", "dec") and key in ("int64", "uint64"):
        tr.helpers.add("nk_atomic_incdec64")
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


BUILTINS = {obj: atomic for obj in ATOMICS}
