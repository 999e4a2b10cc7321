"""Hopper's asynchronous units (``numbakern.mma.hopper``) on numba-cuda-mlir: the PTX of the numba-cuda lowering, as
inline PTX (``llvm.inline_asm``, with side effects and a memory clobber) with the same operands — shared-memory
addresses as 32-bit ``shared::cta`` addresses, the tensor map as its array's 64-bit data pointer, the
accumulators in and out through the wgmma and wait_group statements, compile-time counts as immediates.

A kernel that uses them needs ``sm_90a``; numba-cuda-mlir 0.6 compiles for the device's ``sm_90`` (no ``a``):
its PTX then fails to assemble (``ptxas``: "not supported on .target 'sm_90'") until it targets ``sm_90a``.
"""

from __future__ import annotations

from ..mma.hopper import WgmmaShape, wgmma_shape
from .support import (
    GLOBAL,
    SHARED,
    T,
    TypingError,
    arith,
    array_pointer,
    asm,
    check_index,
    define,
    integer,
    llvm,
    memref,
    signature,
    space_pointer,
    types,
)

_SIMPLE = {
    "fence_barrier_init": "fence.mbarrier_init.release.cluster;",
    "fence_proxy_async": "fence.proxy.async.shared::cta;",
    "bulk_commit": "cp.async.bulk.commit_group;",
    "wgmma_fence": "wgmma.fence.sync.aligned;",
    "wgmma_commit": "wgmma.commit_group.sync.aligned;",
}


def _shared(what, name, t, index):
    if not isinstance(t, types.Array):
        raise TypingError(f"{what}: {name} must be a shared array, got {t}")
    check_index(what, name, index, t.ndim)


def _int(what, name, t):
    if not isinstance(t, types.Integer):
        raise TypingError(f"{what}: {name} must be an integer, got {t}")


def _literal(what, name, t) -> int:
    if not isinstance(t, types.IntegerLiteral):
        raise TypingError(f"{what}: {name} must be a compile-time integer (a literal or a factory's constant), got {t}")
    return t.literal_value


def _address(builder, array, index):
    element = builder.get_mlir_type(builder.get_numba_type(array).dtype)
    return llvm.ptrtoint(T.i32(), space_pointer(builder, array, index, element, SHARED))


def _data64(builder, array):
    """The tensor map's address: its device array's data, as a 64-bit generic address."""
    return llvm.ptrtoint(T.i64(), llvm.addrspacecast(llvm.PointerType.get(), array_pointer(builder, array, GLOBAL)))


def _u32(builder, var):
    return integer(builder, var, T.i32())


def _void(text, constraints, operands):
    asm(None, operands, text, constraints)


def _literal_of(builder, var) -> int:
    return builder.get_numba_type(var).literal_value


def _simple(name):
    def typer():
        return signature(types.void)

    def lower(builder, args):
        _void(_SIMPLE[name], "~{memory}", [])

    return typer, lower


def _shared_address():
    def typer(arr, index):
        _shared("shared_address", "arr", arr, index)
        return signature(types.uint32, arr, index)

    def lower(builder, args):
        return _address(builder, args[0], args[1])

    return typer, lower


def _mbarrier(name, text, extra):
    def typer(bars, index, *rest):
        _shared(name, "bars", bars, index)
        if len(rest) != len(extra):
            raise TypingError(f"{name}: takes {2 + len(extra)} arguments")
        for arg, t in zip(extra, rest):
            _int(name, arg, t)
        result = types.boolean if name == "mbarrier_try_wait" else types.void
        return signature(result, bars, index, *rest)

    def lower(builder, args):
        operands = [_address(builder, args[0], args[1]), *(_u32(builder, a) for a in args[2:])]
        if name == "mbarrier_try_wait":
            done = asm(T.i32(), operands, text, "=r,r,r,~{memory}")
            return arith.cmpi(arith.CmpIPredicate.ne, done, arith.constant(T.i32(), 0))
        _void(text, ",".join(["r"] * len(operands) + ["~{memory}"]), operands)
        return None

    return typer, lower


def _tma_load():
    text = ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
            "[$0], [$1, {$2, $3}], [$4];")

    def typer(dst, dst_index, tensor_map, c0, c1, bars, bar_index):
        _shared("tma_load_2d", "dst", dst, dst_index)
        _shared("tma_load_2d", "bars", bars, bar_index)
        if not isinstance(tensor_map, types.Array):
            raise TypingError(f"tma_load_2d: tensor_map must be a device array holding a CUtensorMap, got {tensor_map}")
        _int("tma_load_2d", "c0", c0)
        _int("tma_load_2d", "c1", c1)
        return signature(types.void, dst, dst_index, tensor_map, c0, c1, bars, bar_index)

    def lower(builder, args):
        dst, di, tmap, c0, c1, bars, bi = args
        _void(text, "r,l,r,r,r,~{memory}", [_address(builder, dst, di), _data64(builder, tmap), _u32(builder, c0),
                                             _u32(builder, c1), _address(builder, bars, bi)])

    return typer, lower


def _tma_store():
    text = "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$0, {$1, $2}], [$3];"

    def typer(tensor_map, c0, c1, src, src_index):
        _shared("tma_store_2d", "src", src, src_index)
        _int("tma_store_2d", "c0", c0)
        _int("tma_store_2d", "c1", c1)
        return signature(types.void, tensor_map, c0, c1, src, src_index)

    def lower(builder, args):
        tmap, c0, c1, src, si = args
        _void(text, "l,r,r,r,~{memory}", [_data64(builder, tmap), _u32(builder, c0), _u32(builder, c1),
                                           _address(builder, src, si)])

    return typer, lower


def _immediate(name, ptx):
    def typer(n):
        _literal(name, "n" if "wait" in name else "count", n)
        return signature(types.void, n)

    def lower(builder, args):
        _void(ptx.format(_literal_of(builder, args[0])), "~{memory}", [])

    return typer, lower


def _named_barrier():
    def typer(barrier_id, count):
        _int("named_barrier", "barrier_id", barrier_id)
        _int("named_barrier", "count", count)
        return signature(types.void, barrier_id, count)

    def lower(builder, args):
        _void("bar.sync $0, $1;", "r,r,~{memory}", [_u32(builder, args[0]), _u32(builder, args[1])])

    return typer, lower


def _acc(what, t, count):
    if not isinstance(t, types.Array) or t.ndim != 1 or t.dtype != types.float32:
        raise TypingError(f"{what}: acc must be a 1-D float32 cuda.local.array of {count} accumulators, got {t}")


def _struct(count):
    return llvm.StructType.get_literal([T.f32()] * count)


def _through(builder, acc, count, text, constraints, operands):
    """The accumulators ``acc[0:count]`` in and out of one asm statement."""
    ref = builder.load_var(acc)
    values = [memref.load(ref, [arith.constant(T.index(), q)]) for q in range(count)]
    out = asm(_struct(count), values + operands, text, constraints)
    for q in range(count):
        memref.store(llvm.extractvalue(T.f32(), out, [q]), ref, [arith.constant(T.index(), q)])


def _wgmma_wait():
    def typer(n, acc, count):
        _literal("wgmma_wait", "n", n)
        _acc("wgmma_wait", acc, _literal("wgmma_wait", "count", count))
        return signature(types.void, n, acc, count)

    def lower(builder, args):
        n, acc, count = args
        width = _literal_of(builder, count)
        cons = ",".join(["=f"] * width + [str(q) for q in range(width)] + ["~{memory}"])
        _through(builder, acc, width, f"wgmma.wait_group.sync.aligned {_literal_of(builder, n)};", cons, [])

    return typer, lower


def _wgmma(shape: WgmmaShape):
    name, nregs = shape.name, shape.n // 2
    first = 2 * nregs
    a_count = 4 if shape.a_registers else 1
    d = "{" + ",".join(f"${q}" for q in range(nregs)) + "}"
    a = ("{" + ",".join(f"${first + q}" for q in range(4)) + "}") if shape.a_registers else f"${first}"
    b, p = f"${first + a_count}", f"${first + a_count + 1}"

    def typer(acc, *rest):
        _acc(name, acc, nregs)
        want = (3 if shape.a_registers else 2) + 1 + (1 if shape.transposable else 0)
        if len(rest) != want:
            raise TypingError(f"{name}: takes {want + 1} arguments")
        if shape.a_registers:
            a_t = types.float32 if shape.operand == "tf32" else types.uint32
            if not isinstance(rest[0], types.Array) or rest[0].ndim != 1 or rest[0].dtype != a_t:
                raise TypingError(f"{name}: a must be a 1-D {a_t} cuda.local.array (the A fragment), got {rest[0]}")
            ints = rest[1:4]
        else:
            ints = rest[0:3]
        for t in ints:
            _int(name, "a descriptor, a_at or scale_d", t)
        if shape.transposable and _literal(name, "trans_b", rest[-1]) not in (0, 1):
            raise TypingError(f"{name}: trans_b must be 0 (B k-major) or 1 (B n-major)")
        return signature(types.void, acc, *rest)

    def lower(builder, args):
        acc, *rest = args
        tb = _literal_of(builder, rest[-1]) if shape.transposable else 0
        tail = "p, 1, 1" + ("" if not shape.transposable else f", {tb}" if shape.a_registers else f", 0, {tb}")
        text = "{ .reg .pred p; setp.ne.b32 p, " + p + ", 0; " + f"{shape.ptx} {d}, {a}, {b}, {tail}; }}"
        if shape.a_registers:
            regs = builder.load_var(rest[0])
            at = integer(builder, rest[1], T.index())
            a_ops = []
            for q in range(4):
                v = memref.load(regs, [arith.addi(at, arith.constant(T.index(), q)) if q else at])
                a_ops.append(arith.bitcast(T.i32(), v) if shape.operand == "tf32" else v)
            desc_b, scale = rest[2], rest[3]
            a_cons = ["r"] * 4
        else:
            a_ops = [integer(builder, rest[0], T.i64())]
            desc_b, scale = rest[1], rest[2]
            a_cons = ["l"]
        cons = ",".join(["=f"] * nregs + [str(q) for q in range(nregs)] + a_cons + ["l", "r", "~{memory}"])
        _through(builder, acc, nregs, text, cons, a_ops + [integer(builder, desc_b, T.i64()),
                                                           integer(builder, scale, T.i32())])

    return typer, lower


def rules() -> dict:
    out = {name: _simple(name) for name in _SIMPLE}
    out.update(
        shared_address=_shared_address(),
        mbarrier_init=_mbarrier("mbarrier_init", "mbarrier.init.shared::cta.b64 [$0], $1;", ("count",)),
        mbarrier_arrive=_mbarrier("mbarrier_arrive", "mbarrier.arrive.shared::cta.b64 _, [$0];", ()),
        mbarrier_arrive_expect_tx=_mbarrier("mbarrier_arrive_expect_tx",
                                            "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", ("nbytes",)),
        mbarrier_try_wait=_mbarrier("mbarrier_try_wait",
                                    "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2; "
                                    "selp.u32 $0, 1, 0, p; }", ("parity",)),
        tma_load_2d=_tma_load(), tma_store_2d=_tma_store(),
        bulk_wait_read=_immediate("bulk_wait_read", "cp.async.bulk.wait_group.read {};"),
        bulk_wait=_immediate("bulk_wait", "cp.async.bulk.wait_group {};"),
        setmaxnreg_inc=_immediate("setmaxnreg_inc", "setmaxnreg.inc.sync.aligned.u32 {};"),
        setmaxnreg_dec=_immediate("setmaxnreg_dec", "setmaxnreg.dec.sync.aligned.u32 {};"),
        named_barrier=_named_barrier(), wgmma_wait=_wgmma_wait(),
    )
    return out


def register(**objects) -> None:
    """``objects``: ``numbakern.mma.hopper``'s intrinsics by name: the fixed ones, and each wgmma shape a kernel has
    named (registered as it is made)."""
    table = rules()
    for name, obj in objects.items():
        shape = wgmma_shape(name)
        typer, lower = _wgmma(shape) if shape is not None else table[name]
        define(obj, typer, lower, prefer_literal=True)
