"""``cuda.*`` functions in C: each numba-cuda intrinsic with numba's meaning (numba_cuda ``cudaimpl.py``).

    cuda.popc(x)            __popc / __popcll of x's bits (8/16-bit values zero-extended)     type of x
    cuda.clz(x)             leading zeros within x's width                                      type of x
    cuda.ffs(x)             __ffs / __ffsll (1-based lowest set bit, 0 for 0)                   uint32
    cuda.brev(x)            __brev / __brevll                                                   uint32 / uint64
    cuda.fma(a, b, c)       fmaf / fma
    cuda.cbrt(x)            cbrtf / cbrt
    cuda.selp(p, a, b)      p ? a : b (both evaluated, as numba does)
    cuda.lanemask_lt()      %lanemask_lt
    cuda.match_any_sync     __match_any_sync;  cuda.match_all_sync -> (mask, predicate)
    cuda.cg.this_grid()     a grid group; .sync() -> cooperative_groups grid sync (the launcher launches the
                            kernel cooperatively)
    syncthreads*, shfl_*_sync, vote (all/any/eq/ballot), activemask, syncwarp, threadfence* -> their CUDA namesakes
"""

from __future__ import annotations

from numba import cuda
from numba.cuda import types

from numbakern.intrinsics import op_of, warp
from numbakern.intrinsics.op import stubs

from ..cnames import c_name, is_int
from .cexpr import COND, PRIMARY, CExpr, Static, TupleVal, cast, paren
from .sites import Site, call_op

SIMPLE = {  # cuda function -> C function; result type from numba
    cuda.syncthreads: "__syncthreads", cuda.syncthreads_count: "__syncthreads_count",
    cuda.syncthreads_and: "__syncthreads_and", cuda.syncthreads_or: "__syncthreads_or",
    cuda.shfl_sync: "__shfl_sync", cuda.shfl_up_sync: "__shfl_up_sync", cuda.shfl_down_sync: "__shfl_down_sync",
    cuda.shfl_xor_sync: "__shfl_xor_sync", cuda.ballot_sync: "__ballot_sync", cuda.all_sync: "__all_sync",
    cuda.any_sync: "__any_sync", cuda.eq_sync: "__uni_sync", cuda.activemask: "__activemask",
    cuda.threadfence: "__threadfence", cuda.threadfence_block: "__threadfence_block",
    cuda.threadfence_system: "__threadfence_system", cuda.syncwarp: "__syncwarp",
    cuda.match_any_sync: "__match_any_sync", cuda.nanosleep: "__nanosleep",
}
STUB_RESULTS = {cuda.syncwarp: None, cuda.threadfence: None, cuda.threadfence_block: None,
                cuda.threadfence_system: None, cuda.activemask: types.uint32, cuda.nanosleep: None}

_VOTES = (cuda.all_sync, cuda.any_sync, cuda.eq_sync, cuda.ballot_sync)
_BITS = {"int8": 8, "uint8": 8, "int16": 16, "uint16": 16, "int32": 32, "uint32": 32, "int64": 64, "uint64": 64}


def call(tr, obj, node):
    return BUILTINS[obj](tr, obj, node)


def _simple(tr, obj, node):
    return _simple_c(Site(tr, op_of(obj), node), obj)


def _simple_c(site: Site, obj):
    args = [site.expr(i) for i in range(site.nargs)]
    if obj is cuda.syncwarp and not args:
        args = [CExpr("0xffffffff", "uint32", types.uint32)]
    if obj in STUB_RESULTS:  # stub classes: numba typed them with the kernel; fixed results
        rt = STUB_RESULTS[obj]
        code = f"{SIMPLE[obj]}({', '.join(cast(a, 'uint32').code for a in args)})"
        return CExpr(code, site.scalar_key(rt) if rt is not None else None, rt if rt is not None else types.none,
                     PRIMARY, pure=False)
    sig = site.signature()
    args = [cast(a, site.scalar_key(t)) if site.scalar_key(t) and a.key != site.scalar_key(t) and not
            (is_int(a.key) and is_int(site.scalar_key(t)) and a.literal is not None) else a
            for a, t in zip(args, sig.args)]
    if obj in _VOTES and args[-1].key in ("int64", "uint64"):
        # numba votes on `predicate != 0` of the whole value; C's int parameter would drop the high 32 bits
        args[-1] = CExpr(f"{paren(args[-1], 10)} != 0", "bool", types.boolean, 9, pure=args[-1].pure)
    code = f"{SIMPLE[obj]}({', '.join(a.code for a in args)})"
    return CExpr(code, site.scalar_key(sig.return_type), sig.return_type, PRIMARY, pure=False)


def _typed_args(tr, obj, node):
    args = [tr.expr(a) for a in node.args]
    sig = tr.signature(node)
    return [cast(a, tr.scalar_key(t)) for a, t in zip(args, sig.args)], sig


def _bits(tr, obj, node):
    (a,), sig = _typed_args(tr, obj, node)
    if a.key not in _BITS:
        raise tr.src.error(node, f"cuda.{obj.__name__} takes an integer, got {a.key}")
    bits, name = _BITS[a.key], obj.__name__
    rkey = tr.scalar_key(sig.return_type)
    # 8/16-bit values are zero-extended, as numba's ctpop/ctlz of their own width see them
    narrow = f"({c_name(f'uint{bits}')}){paren(a, 15)}" if bits < 32 and not a.key.startswith("u") else a.code
    if name == "popc":
        e = CExpr(f"__popcll({a.code})" if bits == 64 else f"__popc({narrow})", "int32", sig.return_type)
    elif name == "clz":
        code = f"__clzll({a.code})" if bits == 64 else f"__clz({narrow})"
        e = CExpr(code, "int32", sig.return_type) if bits >= 32 else \
            CExpr(f"{code} - {32 - bits}", "int32", sig.return_type, 12)
    elif name == "ffs":
        e = CExpr(f"__ffsll({a.code})" if bits == 64 else f"__ffs({narrow})", "int32", sig.return_type)
    else:  # brev: numba's signature already widened the argument to uint32 / uint64
        e = CExpr(f"__brevll({a.code})" if bits == 64 else f"__brev({a.code})", a.key, sig.return_type)
    e.pure = a.pure
    return cast(e, rkey, sig.return_type) if e.key != rkey else e


def _fma(tr, obj, node):
    args, sig = _typed_args(tr, obj, node)
    key = tr.scalar_key(sig.return_type)
    fname = {"float32": "fmaf", "float64": "fma"}.get(key)
    if fname is None:
        raise tr.src.error(node, f"cuda.fma on {key} is not supported", hint="float32 or float64 arguments")
    return CExpr(f"{fname}({', '.join(a.code for a in args)})", key, sig.return_type, PRIMARY,
                 pure=all(a.pure for a in args))


def _cbrt(tr, obj, node):
    (a,), sig = _typed_args(tr, obj, node)
    key = tr.scalar_key(sig.return_type)
    fname = {"float32": "cbrtf", "float64": "cbrt"}.get(key)
    if fname is None:
        raise tr.src.error(node, f"cuda.cbrt on {key} is not supported", hint="a float32 or float64 argument")
    return CExpr(f"{fname}({a.code})", key, sig.return_type, PRIMARY, pure=a.pure)


def _selp(tr, obj, node):
    if len(node.args) != 3:
        raise tr.src.error(node, "cuda.selp takes three arguments: selp(predicate, a, b)")
    test = tr.cond(node.args[0])
    a, b = tr.expr(node.args[1]), tr.expr(node.args[2])
    sig = tr.signature(node)
    key = tr.scalar_key(sig.return_type)
    a, b = cast(a, key), cast(b, key)
    if not (a.pure and b.pure):  # numba evaluates both values; a C conditional evaluates one
        a, b = tr.hoist(a, "selp_a"), tr.hoist(b, "selp_b")
    tcode = f"({test.code})" if test.prec <= COND else paren(test, COND + 1)
    return CExpr(f"{tcode} ? {paren(a, COND + 1)} : {paren(b, COND)}", key, sig.return_type, COND,
                 pure=test.pure and a.pure and b.pure)


def _lanemask_lt(tr, obj, node):
    tr.helpers.add("nk_lanemask_lt")
    return CExpr("nk_lanemask_lt()", "uint32", types.uint32, PRIMARY, nonneg=True)


def _match_all(site: Site):
    args = [site.expr(i) for i in range(site.nargs)]
    sig = site.signature()
    mask, value = (cast(a, site.scalar_key(t)) for a, t in zip(args, sig.args))
    result = site.temp("match")
    pred = site.temp("match_pred")
    site.need_statement()
    site.emit(f"int {pred};")
    site.emit(f"const uint32_t {result} = __match_all_sync({mask.code}, {value.code}, &{pred});")
    rtype = sig.return_type
    return TupleVal([CExpr(result, "uint32", rtype[0]), CExpr(f"{pred} != 0", "bool", types.boolean, 9)])


class GridGroup:
    """The value of ``cuda.cg.this_grid()``: its ``sync()`` is a grid-wide barrier."""

    def sync(self):  # the method call is translated by ``grid_sync``
        raise NotImplementedError


def _this_grid(tr, obj, node):
    tr.unit.cooperative = True
    tr.helpers.add("nk_grid_sync")
    return Static(GridGroup())


def grid_sync(tr, node):
    return CExpr("nk_grid_sync()", None, types.none, PRIMARY, pure=False)


def _grid(tr, obj, node):
    n = tr.const_value(node.args[0]) if len(node.args) == 1 else None
    if n not in (1, 2, 3):
        raise tr.src.error(node, "cuda.grid/gridsize take a literal 1, 2 or 3", hint="cuda.grid(2)")
    items = []
    for d in "xyz"[:n]:
        code = (f"(int64_t)blockIdx.{d} * blockDim.{d} + threadIdx.{d}" if obj is cuda.grid
                else f"(int64_t)blockDim.{d} * gridDim.{d}")
        items.append(CExpr(code, "int64", types.int64, 12 if obj is cuda.grid else 13, nonneg=True))
    return items[0] if n == 1 else TupleVal(items)


_CALLS = {cuda.popc: _bits, cuda.clz: _bits, cuda.ffs: _bits, cuda.brev: _bits, cuda.fma: _fma, cuda.cbrt: _cbrt,
          cuda.selp: _selp, cuda.lanemask_lt: _lanemask_lt, cuda.cg.this_grid: _this_grid, cuda.grid: _grid,
          cuda.gridsize: _grid}

# the declared warp instructions (numbakern.intrinsics.warp): their emitters registered on them
_DECLARED = {stub: op for stub, op in stubs().items() if op.family == "warp"}
for _stub, _op in _DECLARED.items():
    _op.register("c", _match_all if _op is warp.MATCH_ALL_SYNC else lambda site, stub=_stub: _simple_c(site, stub))

BUILTINS = {**{obj: _simple for obj in SIMPLE if obj not in _DECLARED}, **_CALLS, **dict.fromkeys(_DECLARED, call_op)}
