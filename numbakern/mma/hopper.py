"""Hopper's asynchronous matrix path from Numba kernels (compute capability 9.0, ``sm_90a``): warpgroup MMA
(``wgmma.mma_async``) on shared-memory matrix descriptors, the bulk tensor copy engine (TMA,
``cp.async.bulk.tensor``) and the ``mbarrier``s that say when its copies have landed.

numba-cuda 0.30 compiles for ``compute_90a`` on a 9.0 device (``CUDACodeLibrary._ensure_cc`` adds the ``a``), so
these instructions assemble in Numba's own PTX. In simulator mode each name is a stand-in that runs the simulator's
model of the instruction (``numbakern.sim.hopper``: asynchronous, with the pipeline's checkers).

The wgmma intrinsics are named by shape: ``wgmma_m64n{N}k16_{bf16,f16}(acc, desc_a, desc_b, scale_d, trans_b)``
(A and B from shared memory), ``wgmma_m64n{N}k16_{bf16,f16}_rs(acc, a, a_at, desc_b, scale_d, trans_b)`` (A from
registers: four uint32 of ``a`` from ``a_at``, two 16-bit values each, in the m64k16 A-fragment layout),
``wgmma_m64n{N}k8_tf32(acc, desc_a, desc_b, scale_d)`` and ``wgmma_m64n{N}k8_tf32_rs(acc, a, a_at, desc_b,
scale_d)`` (tf32: both operands K-major; register A: four float32 holding tf32 values), for every N that PTX allows
(a multiple of 8 up to 256), made the first time a kernel names them. ``numbakern.sim.hopper.layout`` has the
register layouts and the descriptors' address formulas.

Matrix descriptors (``smem_descriptor``) are plain 64-bit integers built in the kernel, as the PTX ISA lays them out
("Matrix Descriptor Format"): bits 0-13 the start address >> 4, 16-29 the leading dimension byte offset >> 4, 32-45
the stride dimension byte offset >> 4, 62-63 the swizzle mode (1: 128-byte). For a 128-byte-swizzled tile:

- K-major (A of a row-major h×k matrix): rows of 64 16-bit values (128 bytes), 8-row groups 1024 bytes apart
  (stride offset 1024; the leading offset is unused); the k-steps of 16 advance the start address by 32 bytes.
- MN-major (B of a row-major k×w matrix, ``trans_b=1``): panels of 64 columns × the tile's k rows, each k row 128
  bytes; the stride offset is 1024 (8 k rows), the leading offset the distance between panels; a k-step of 16
  advances the start by 16 rows (2048 bytes).

The swizzle is a function of the address bits, so each tile must start 1024-byte aligned.

Accumulators are ``cuda.local.array(n / 2, float32)`` per thread of the warpgroup (m64nNk16: row
``16 * warp + lane / 4`` (+8), columns ``8 * j + 2 * (lane % 4)`` (+1) of n8 chunk ``j`` in registers
``4j .. 4j + 3``), indexed only by constants so they stay in registers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .. import mlir_lowering

# the host side of a launch (the tensor maps, the shared-memory limit): numbakern.tensormap's, named here too
from ..tensormap import allow_dynamic_shared, tensor_map_2d  # noqa: F401

#: the wgmma shapes the matmul kernel uses (m64nNk16, f32 accumulators); any multiple of 8 up to 256 is valid
WGMMA_N = (64, 128, 256)
SWIZZLE_128B = 1
#: a wgmma intrinsic's name: m64nNk16 for .bf16/.f16, m64nNk8 for .tf32; ``_rs``: A from registers
WGMMA_NAME = re.compile(r"wgmma_m64n(\d+)k(16|8)_(bf16|f16|tf32)(_rs)?$")


@dataclass(frozen=True)
class WgmmaShape:
    """One wgmma variant: ``m64n{n}k{k}``, its A and B format, and where A comes from (f32 accumulators)."""

    n: int
    operand: str  # "bf16", "f16" or "tf32"
    a_registers: bool

    @property
    def element_bytes(self) -> int:
        return 4 if self.operand == "tf32" else 2

    @property
    def k(self) -> int:
        return 32 // self.element_bytes  # 32 bytes of k per instruction

    @property
    def name(self) -> str:
        return f"wgmma_m64n{self.n}k{self.k}_{self.operand}{'_rs' if self.a_registers else ''}"

    @property
    def ptx(self) -> str:
        return f"wgmma.mma_async.sync.aligned.m64n{self.n}k{self.k}.f32.{self.operand}.{self.operand}"

    @property
    def transposable(self) -> bool:
        """Whether B may be MN-major (``trans_b``): 16-bit operands only."""
        return self.operand != "tf32"


def wgmma_shape(name: str) -> WgmmaShape | None:
    """The shape a wgmma intrinsic's name stands for; None if the name is not one; ValueError for an N PTX lacks."""
    found = WGMMA_NAME.match(name)
    if found is None or (found[2] == "8") != (found[3] == "tf32"):
        return None
    n = int(found[1])
    if n % 8 or not 8 <= n <= 256:
        raise ValueError(f"numbakern.mma.hopper.{name}: wgmma's N must be a multiple of 8 in 8..256, got {n}")
    return WgmmaShape(n, found[3], bool(found[4]))


def make_intrinsics() -> dict:
    from llvmlite import ir
    from numba.core.errors import TypingError
    from numba.cuda import cgutils, types
    from numba.cuda.extending import intrinsic

    from ..vector_io import element_pointer

    i32, i64, f32 = ir.IntType(32), ir.IntType(64), ir.FloatType()
    void = ir.VoidType()

    def asm(ret, args, text, constraints):
        return ir.InlineAsm(ir.FunctionType(ret, args), text, constraints, side_effect=True)

    def shared_addr(context, builder, aryty, ary, index_ty, index):
        _, ptr = element_pointer(context, builder, aryty, ary, index_ty, index)
        return builder.ptrtoint(builder.addrspacecast(ptr, ir.PointerType(ptr.type.pointee, 3)), i32)

    def check_index(what, arr, index):
        n = len(index) if isinstance(index, types.BaseTuple) else 1
        tys = list(index) if isinstance(index, types.BaseTuple) else [index]
        if not isinstance(arr, types.Array) or n != arr.ndim or not all(isinstance(t, types.Integer) for t in tys):
            raise TypingError(f"{what}: expected a shared array and one integer index per dimension, got {arr}, "
                              f"{index}")

    def literal_int(what, name, t):
        if not isinstance(t, types.IntegerLiteral):
            raise TypingError(f"{what}: {name} must be a compile-time integer (a literal or a factory's constant), "
                              f"got {t}")
        return t.literal_value

    def simple(name, text):
        def fn(typingctx):
            def codegen(context, builder, sig, args):
                builder.call(asm(void, [], text, "~{memory}"), [])
                return context.get_dummy_value()

            return types.void(), codegen

        fn.__name__ = fn.__qualname__ = name
        return intrinsic(fn)

    out = {}

    @intrinsic
    def shared_address(typingctx, arr, index):
        """The 32-bit shared-state-space address of ``arr[index]``."""
        check_index("shared_address", arr, index)

        def codegen(context, builder, sig, args):
            return shared_addr(context, builder, arr, args[0], index, args[1])

        return types.uint32(arr, index), codegen

    out["shared_address"] = shared_address

    # -- mbarrier ----------------------------------------------------------------------------------------------

    @intrinsic
    def mbarrier_init(typingctx, bars, index, count):
        check_index("mbarrier_init", bars, index)

        def codegen(context, builder, sig, args):
            a = shared_addr(context, builder, bars, args[0], index, args[1])
            n = context.cast(builder, args[2], count, types.uint32)
            builder.call(asm(void, [i32, i32], "mbarrier.init.shared::cta.b64 [$0], $1;", "r,r,~{memory}"), [a, n])
            return context.get_dummy_value()

        return types.void(bars, index, count), codegen

    @intrinsic
    def mbarrier_arrive(typingctx, bars, index):
        check_index("mbarrier_arrive", bars, index)

        def codegen(context, builder, sig, args):
            a = shared_addr(context, builder, bars, args[0], index, args[1])
            builder.call(asm(void, [i32], "mbarrier.arrive.shared::cta.b64 _, [$0];", "r,~{memory}"), [a])
            return context.get_dummy_value()

        return types.void(bars, index), codegen

    @intrinsic
    def mbarrier_arrive_expect_tx(typingctx, bars, index, nbytes):
        check_index("mbarrier_arrive_expect_tx", bars, index)

        def codegen(context, builder, sig, args):
            a = shared_addr(context, builder, bars, args[0], index, args[1])
            n = context.cast(builder, args[2], nbytes, types.uint32)
            builder.call(asm(void, [i32, i32], "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;",
                             "r,r,~{memory}"), [a, n])
            return context.get_dummy_value()

        return types.void(bars, index, nbytes), codegen

    @intrinsic
    def mbarrier_try_wait(typingctx, bars, index, parity):
        """True once the phase of parity ``parity`` has completed (waits a while in hardware first)."""
        check_index("mbarrier_try_wait", bars, index)

        def codegen(context, builder, sig, args):
            a = shared_addr(context, builder, bars, args[0], index, args[1])
            p = context.cast(builder, args[2], parity, types.uint32)
            done = builder.call(asm(i32, [i32, i32],
                                    "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2; "
                                    "selp.u32 $0, 1, 0, p; }", "=r,r,r,~{memory}"), [a, p])
            return builder.icmp_unsigned("!=", done, ir.Constant(i32, 0))

        return types.boolean(bars, index, parity), codegen

    out.update(mbarrier_init=mbarrier_init, mbarrier_arrive=mbarrier_arrive,
               mbarrier_arrive_expect_tx=mbarrier_arrive_expect_tx, mbarrier_try_wait=mbarrier_try_wait)
    # barrier initialisation made visible to the copy engine (the async proxy) before anyone uses it
    out["fence_barrier_init"] = simple("fence_barrier_init", "fence.mbarrier_init.release.cluster;")
    out["fence_proxy_async"] = simple("fence_proxy_async", "fence.proxy.async.shared::cta;")

    # -- the bulk tensor copy ----------------------------------------------------------------------------------

    @intrinsic
    def tma_load_2d(typingctx, dst, dst_index, tensor_map, c0, c1, bars, bar_index):
        """Copy the box at coordinates (``c0`` innermost, ``c1``) of the tensor ``tensor_map`` describes (a device
        array holding the 128-byte CUtensorMap) to ``&dst[dst_index]``; its bytes complete on the mbarrier."""
        check_index("tma_load_2d", dst, dst_index)
        check_index("tma_load_2d", bars, bar_index)
        if not isinstance(tensor_map, types.Array):
            raise TypingError(f"tma_load_2d: tensor_map must be a device array holding a CUtensorMap, got "
                              f"{tensor_map}")

        def codegen(context, builder, sig, args):
            d = shared_addr(context, builder, dst, args[0], dst_index, args[1])
            m = context.make_array(tensor_map)(context, builder, args[2])
            tmap = builder.ptrtoint(m.data, i64)
            x = context.cast(builder, args[3], c0, types.int32)
            y = context.cast(builder, args[4], c1, types.int32)
            b = shared_addr(context, builder, bars, args[5], bar_index, args[6])
            builder.call(asm(void, [i32, i64, i32, i32, i32],
                             "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
                             "[$0], [$1, {$2, $3}], [$4];", "r,l,r,r,r,~{memory}"), [d, tmap, x, y, b])
            return context.get_dummy_value()

        return types.void(dst, dst_index, tensor_map, c0, c1, bars, bar_index), codegen

    out["tma_load_2d"] = tma_load_2d

    @intrinsic
    def tma_store_2d(typingctx, tensor_map, c0, c1, src, src_index):
        """Copy ``&src[src_index]`` (a box in shared memory, laid out as the tensor map's box) to the tensor at
        coordinates (``c0`` innermost, ``c1``); elements past the tensor's edges are not written. A bulk group:
        ``bulk_commit``, then ``bulk_wait_read(n)`` before the shared memory is written again."""
        check_index("tma_store_2d", src, src_index)

        def codegen(context, builder, sig, args):
            m = context.make_array(tensor_map)(context, builder, args[0])
            tmap = builder.ptrtoint(m.data, i64)
            x = context.cast(builder, args[1], c0, types.int32)
            y = context.cast(builder, args[2], c1, types.int32)
            s_addr = shared_addr(context, builder, src, args[3], src_index, args[4])
            builder.call(asm(void, [i64, i32, i32, i32],
                             "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$0, {$1, $2}], [$3];",
                             "l,r,r,r,~{memory}"), [tmap, x, y, s_addr])
            return context.get_dummy_value()

        return types.void(tensor_map, c0, c1, src, src_index), codegen

    out["tma_store_2d"] = tma_store_2d
    out["bulk_commit"] = simple("bulk_commit", "cp.async.bulk.commit_group;")

    @intrinsic
    def bulk_wait_read(typingctx, n):
        """All but the n newest bulk groups of this thread have finished reading their shared memory."""
        groups = literal_int("bulk_wait_read", "n", n)

        def codegen(context, builder, sig, args):
            builder.call(asm(void, [], f"cp.async.bulk.wait_group.read {groups};", "~{memory}"), [])
            return context.get_dummy_value()

        return types.void(n), codegen

    out["bulk_wait_read"] = bulk_wait_read

    @intrinsic
    def bulk_wait(typingctx, n):
        """All but the n newest bulk groups of this thread have completed (their writes to global memory done)."""
        groups = literal_int("bulk_wait", "n", n)

        def codegen(context, builder, sig, args):
            builder.call(asm(void, [], f"cp.async.bulk.wait_group {groups};", "~{memory}"), [])
            return context.get_dummy_value()

        return types.void(n), codegen

    out["bulk_wait"] = bulk_wait

    @intrinsic
    def named_barrier(typingctx, barrier_id, count):
        """``bar.sync id, count``: a barrier among ``count`` threads (whole warps) of the block, id 1-15 (0 is
        ``cuda.syncthreads``'s)."""
        for arg, t in (("barrier_id", barrier_id), ("count", count)):
            if not isinstance(t, types.Integer):
                raise TypingError(f"named_barrier: {arg} must be an integer, got {t}")

        def codegen(context, builder, sig, args):
            i = context.cast(builder, args[0], barrier_id, types.uint32)
            n = context.cast(builder, args[1], count, types.uint32)
            builder.call(asm(void, [i32, i32], "bar.sync $0, $1;", "r,r,~{memory}"), [i, n])
            return context.get_dummy_value()

        return types.void(barrier_id, count), codegen

    out["named_barrier"] = named_barrier

    # -- warpgroup MMA ------------------------------------------------------------------------------------------

    out["wgmma_fence"] = simple("wgmma_fence", "wgmma.fence.sync.aligned;")
    out["wgmma_commit"] = simple("wgmma_commit", "wgmma.commit_group.sync.aligned;")

    def acc_pointer(context, builder, aryty, ary, q):
        arr = context.make_array(aryty)(context, builder, ary)
        return cgutils.get_item_pointer(context, builder, aryty, arr, [ir.Constant(i64, q)], wraparound=False)

    def check_acc(what, acc, count):
        if not isinstance(acc, types.Array) or acc.ndim != 1 or acc.dtype != types.float32:
            raise TypingError(f"{what}: acc must be a 1-D float32 cuda.local.array of {count} accumulators, got {acc}")

    @intrinsic
    def wgmma_wait(typingctx, n, acc, count):
        """``wgmma.wait_group n``: all but the n newest groups done. The ``count`` accumulators of ``acc`` go through
        the instruction as operands, so no read or write of them moves across it."""
        groups = literal_int("wgmma_wait", "n", n)
        nregs = literal_int("wgmma_wait", "count", count)
        check_acc("wgmma_wait", acc, nregs)
        ret = ir.LiteralStructType([f32] * nregs)
        cons = ",".join(["=f"] * nregs + [str(q) for q in range(nregs)] + ["~{memory}"])
        inline = asm(ret, [f32] * nregs, f"wgmma.wait_group.sync.aligned {groups};", cons)

        def codegen(context, builder, sig, args):
            ptrs = [acc_pointer(context, builder, acc, args[1], q) for q in range(nregs)]
            res = builder.call(inline, [builder.load(p) for p in ptrs])
            for q, p in enumerate(ptrs):
                builder.store(builder.extract_value(res, q), p)
            return context.get_dummy_value()

        return types.void(n, acc, count), codegen

    out["wgmma_wait"] = wgmma_wait

    def wgmma_intrinsic(shape: WgmmaShape):
        name = shape.name
        nregs = shape.n // 2
        a_count = 4 if shape.a_registers else 1
        first = 2 * nregs  # inline-asm operands: the accumulators out, the same in (tied), then A, B, scale_d
        d = "{" + ",".join(f"${q}" for q in range(nregs)) + "}"
        a = ("{" + ",".join(f"${first + q}" for q in range(4)) + "}") if shape.a_registers else f"${first}"
        b, p = f"${first + a_count}", f"${first + a_count + 1}"
        # imm-scale-a, imm-scale-b 1; imm-trans-a 0 (A K-major) where A is in shared memory; tf32 has no trans
        tail = "p, 1, 1" + ("" if not shape.transposable else ", TRANS_B" if shape.a_registers else ", 0, TRANS_B")
        text = "{ .reg .pred p; setp.ne.b32 p, " + p + ", 0; " + f"{shape.ptx} {d}, {a}, {b}, {tail}; }}"
        a_type = types.float32 if shape.operand == "tf32" else types.uint32

        def check_int(arg, t):
            if not isinstance(t, types.Integer):
                raise TypingError(f"{name}: {arg} must be an integer, got {t}")

        def build(acc, operands):
            check_acc(name, acc, nregs)
            if shape.a_registers:
                a_arr, a_at, desc_b, scale_d, *rest = operands
                if not isinstance(a_arr, types.Array) or a_arr.ndim != 1 or a_arr.dtype != a_type:
                    raise TypingError(f"{name}: a must be a 1-D {a_type} cuda.local.array holding the A fragment "
                                      f"(4 registers from a_at), got {a_arr}")
                check_int("a_at", a_at)
            else:
                desc_a, desc_b, scale_d, *rest = operands
                check_int("desc_a", desc_a)
            check_int("desc_b", desc_b)
            check_int("scale_d", scale_d)
            if len(rest) != (1 if shape.transposable else 0):
                raise TypingError(f"{name}: expected {'a trans_b argument' if shape.transposable else 'no trans_b'} "
                                  "after scale_d")
            tb = 0
            if shape.transposable:
                tb = literal_int(name, "trans_b", rest[0])
                if tb not in (0, 1):
                    raise TypingError(f"{name}: trans_b must be 0 (B k-major) or 1 (B n-major), got {tb}")
            cons = ",".join(["=f"] * nregs + [str(q) for q in range(nregs)]
                            + (["r"] * 4 if shape.a_registers else ["l"]) + ["l", "r", "~{memory}"])
            a_types = [i32] * 4 if shape.a_registers else [i64]
            inline = asm(ir.LiteralStructType([f32] * nregs), [f32] * nregs + a_types + [i64, i32],
                         text.replace("TRANS_B", str(tb)), cons)

            def codegen(context, builder, sig, args):
                acc_v = args[0]
                ptrs = [acc_pointer(context, builder, acc, acc_v, q) for q in range(nregs)]
                vals = [builder.load(p) for p in ptrs]
                if shape.a_registers:
                    arr = context.make_array(a_arr)(context, builder, args[1])
                    at = context.cast(builder, args[2], a_at, types.intp)
                    a_vals = []
                    for q in range(4):
                        ptr = cgutils.get_item_pointer(context, builder, a_arr, arr,
                                                       [builder.add(at, ir.Constant(at.type, q))], wraparound=False)
                        v = builder.load(ptr)
                        a_vals.append(builder.bitcast(v, i32) if shape.operand == "tf32" else v)
                    db, sd = args[3], args[4]
                    db = context.cast(builder, db, desc_b, types.uint64)
                else:
                    a_vals = [context.cast(builder, args[1], desc_a, types.uint64)]
                    db = context.cast(builder, args[2], desc_b, types.uint64)
                    sd = args[3]
                sd = context.cast(builder, sd, scale_d, types.int32)
                res = builder.call(inline, vals + a_vals + [db, sd])
                for q, p in enumerate(ptrs):
                    builder.store(builder.extract_value(res, q), p)
                return context.get_dummy_value()

            return types.void(acc, *operands), codegen

        # (numba's intrinsics take fixed arguments: one typing function per form)
        if shape.a_registers and shape.transposable:
            def wgmma(typingctx, acc, a, a_at, desc_b, scale_d, trans_b):
                return build(acc, (a, a_at, desc_b, scale_d, trans_b))
        elif shape.a_registers:
            def wgmma(typingctx, acc, a, a_at, desc_b, scale_d):
                return build(acc, (a, a_at, desc_b, scale_d))
        elif shape.transposable:
            def wgmma(typingctx, acc, desc_a, desc_b, scale_d, trans_b):
                return build(acc, (desc_a, desc_b, scale_d, trans_b))
        else:
            def wgmma(typingctx, acc, desc_a, desc_b, scale_d):
                return build(acc, (desc_a, desc_b, scale_d))

        wgmma.__name__ = wgmma.__qualname__ = name
        return intrinsic(wgmma)

    out["wgmma"] = wgmma_intrinsic

    # -- register reallocation between warpgroups ----------------------------------------------------------------

    @intrinsic
    def setmaxnreg_inc(typingctx, count):
        c = literal_int("setmaxnreg_inc", "count", count)

        def codegen(context, builder, sig, args):
            builder.call(asm(void, [], f"setmaxnreg.inc.sync.aligned.u32 {c};", "~{memory}"), [])
            return context.get_dummy_value()

        return types.void(count), codegen

    @intrinsic
    def setmaxnreg_dec(typingctx, count):
        c = literal_int("setmaxnreg_dec", "count", count)

        def codegen(context, builder, sig, args):
            builder.call(asm(void, [], f"setmaxnreg.dec.sync.aligned.u32 {c};", "~{memory}"), [])
            return context.get_dummy_value()

        return types.void(count), codegen

    out.update(setmaxnreg_inc=setmaxnreg_inc, setmaxnreg_dec=setmaxnreg_dec)
    return out


NAMES = ("shared_address", "mbarrier_init", "mbarrier_arrive", "mbarrier_arrive_expect_tx", "mbarrier_try_wait",
         "fence_barrier_init", "fence_proxy_async", "tma_load_2d", "tma_store_2d", "bulk_commit", "bulk_wait_read",
         "bulk_wait", "named_barrier", "wgmma_fence", "wgmma_commit", "wgmma_wait",
         "setmaxnreg_inc", "setmaxnreg_dec")
_make_wgmma = None  # shape -> the wgmma intrinsic (or stand-in) of this mode


def __getattr__(name: str):
    """The wgmma intrinsics, one per shape, made when a kernel first names one."""
    shape = wgmma_shape(name)
    if shape is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    made = globals()[name] = _make_wgmma(shape)
    mlir_lowering.register("hopper", **{name: made})  # numba-cuda-mlir types and lowers this same object
    return made


def _install() -> None:
    global _make_wgmma
    from .. import mode
    from ..frontend.choice import numba_cuda_installed

    if mode.in_simulator() or not numba_cuda_installed():
        # the simulator's stand-ins (numba-cuda-mlir alone on a GPU does not lower these instructions yet)
        from ..sim.intrinsics import simulated

        globals().update({name: simulated(__name__, name) for name in NAMES})
        _make_wgmma = lambda shape: simulated(__name__, shape.name)  # noqa: E731
    else:
        made = make_intrinsics()
        _make_wgmma = made.pop("wgmma")
        globals().update(made)
    mlir_lowering.register("hopper", **{name: globals()[name] for name in NAMES})


_install()
