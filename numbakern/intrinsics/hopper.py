"""Hopper's asynchronous matrix path, declared (``numbakern.mma.hopper``, compute capability 9.0, ``sm_90a``):
warpgroup MMA (``wgmma.mma_async``) on shared-memory matrix descriptors, the bulk tensor copy engine (TMA,
``cp.async.bulk.tensor``), the ``mbarrier``s its copies complete on, and the fences and register reallocation
around them.

numba-cuda and numba-cuda-mlir lower them from the templates below; the simulator registers a model per Op
(``numbakern.sim.hopper.models``), the C generator an emitter (``translate/codegen/hopper.py``).

The wgmma family is one Op per shape (``WgmmaShape``: N, operand format, A from shared memory or from registers),
declared the first time it is asked for (``wgmma``): every N that PTX allows (a multiple of 8 up to 256), bf16 and
f16 at k16 (``trans_b`` chooses B's major), tf32 at k8 (both operands K-major: no ``trans_b``); ``_rs``: A from
four registers of the thread (uint32 holding two 16-bit values each, or float32 holding tf32 values).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .op import OPS as TABLE
from .op import Data, Element, Immediate, Op, Regs, Scalar, declare

MODULE = "numbakern.mma.hopper"
#: the wgmma widths the library's kernels use (m64nNk16, f32 accumulators); any multiple of 8 up to 256 is valid
WGMMA_N = (64, 128, 256)
SWIZZLE_128B = 1


def _op(name: str, doc: str, params=(), operands=(), ptx=None, result="void", result_asm=None) -> Op:
    return declare(Op(name, MODULE, doc, params=params, operands=operands, result=result, result_asm=result_asm,
                      ptx=ptx, volatile=True, clobbers_memory=True, family="hopper", instruction=name))


def _shared(name: str, index: str, label: str = "") -> Element:
    return Element(name, index, "shared", label=label, want="a shared array")


def _u32(*names):
    return tuple(Scalar(n, "int", "uint32") for n in names)


def _i32(*names):
    return tuple(Scalar(n, "int", "int32") for n in names)


def _immediate(name: str) -> Immediate:
    return Immediate(name)


SHARED_ADDRESS = declare(Op(
    "shared_address", MODULE, "The 32-bit shared-state-space address of ``arr[index]`` (what a matrix descriptor "
    "holds, shifted right by 4).", params=("arr", "index"), operands=(_shared("arr", "index"),), result="uint32",
    family="hopper"))

# -- mbarrier ------------------------------------------------------------------------------------------------------

MBARRIER_INIT = _op("mbarrier_init", "Initialise the mbarrier ``bars[index]`` (a uint64 in shared memory) to expect "
                    "``count`` arrivals per phase.", ("bars", "index", "count"),
                    (_shared("bars", "index"), *_u32("count")), "mbarrier.init.shared::cta.b64 [$bars], $count;")
MBARRIER_ARRIVE = _op("mbarrier_arrive", "Arrive on the mbarrier ``bars[index]``.", ("bars", "index"),
                      (_shared("bars", "index"),), "mbarrier.arrive.shared::cta.b64 _, [$bars];")
MBARRIER_ARRIVE_EXPECT_TX = _op(
    "mbarrier_arrive_expect_tx", "Arrive on the mbarrier ``bars[index]`` and expect ``nbytes`` more bytes of "
    "copies to complete on its phase.", ("bars", "index", "nbytes"), (_shared("bars", "index"), *_u32("nbytes")),
    "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$bars], $nbytes;")
MBARRIER_TRY_WAIT = _op(
    "mbarrier_try_wait", "True once the phase of parity ``parity`` of the mbarrier ``bars[index]`` has completed "
    "(the hardware waits a while first): spin on it.", ("bars", "index", "parity"),
    (_shared("bars", "index"), *_u32("parity")),
    "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [$bars], $parity; selp.u32 $result, 1, 0, p; }",
    result="bool", result_asm="b32")
# barrier initialisation made visible to the copy engine (the async proxy) before anyone uses it
FENCE_BARRIER_INIT = _op("fence_barrier_init", "Make mbarrier initialisation visible to the copy engine "
                         "(``fence.mbarrier_init.release.cluster``).", ptx="fence.mbarrier_init.release.cluster;")
FENCE_PROXY_ASYNC = _op("fence_proxy_async", "Order this thread's shared-memory writes before later asynchronous "
                        "(TMA, wgmma) reads of them (``fence.proxy.async.shared::cta``).",
                        ptx="fence.proxy.async.shared::cta;")

# -- the bulk tensor copy ------------------------------------------------------------------------------------------

TMA_LOAD_2D = _op(
    "tma_load_2d", "Copy the box at coordinates (``c0`` innermost, ``c1``) of the tensor ``tensor_map`` describes "
    "(a device array holding the 128-byte CUtensorMap) to ``&dst[dst_index]``; its bytes complete on the mbarrier "
    "``bars[bar_index]``.", ("dst", "dst_index", "tensor_map", "c0", "c1", "bars", "bar_index"),
    (_shared("dst", "dst_index"), Data("tensor_map", "a device array holding a CUtensorMap"), *_i32("c0", "c1"),
     _shared("bars", "bar_index")),
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$dst], "
    "[$tensor_map, {$c0, $c1}], [$bars];")
TMA_LOAD_3D = _op(
    "tma_load_3d", "As ``tma_load_2d`` for a 3-D tensor map: the box at coordinates (``c0`` innermost, ``c1``, "
    "``c2``). A (batch, rows, cols) tensor copied in boxes of one batch entry: rows past the entry's end are "
    "zero-filled instead of read from the next one.",
    ("dst", "dst_index", "tensor_map", "c0", "c1", "c2", "bars", "bar_index"),
    (_shared("dst", "dst_index"), Data("tensor_map", "a device array holding a CUtensorMap"), *_i32("c0", "c1", "c2"),
     _shared("bars", "bar_index")),
    "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$dst], "
    "[$tensor_map, {$c0, $c1, $c2}], [$bars];")
TMA_STORE_2D = _op(
    "tma_store_2d", "Copy ``&src[src_index]`` (a box in shared memory, laid out as the tensor map's box) to the "
    "tensor at coordinates (``c0`` innermost, ``c1``); elements past the tensor's edges are not written. A bulk "
    "group: ``bulk_commit``, then ``bulk_wait_read(n)`` before the shared memory is written again.",
    ("tensor_map", "c0", "c1", "src", "src_index"),
    (Data("tensor_map", "a device array holding a CUtensorMap"), *_i32("c0", "c1"), _shared("src", "src_index")),
    "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [$tensor_map, {$c0, $c1}], [$src];")
BULK_COMMIT = _op("bulk_commit", "Close this thread's group of bulk copies (``cp.async.bulk.commit_group``).",
                  ptx="cp.async.bulk.commit_group;")
BULK_WAIT_READ = _op("bulk_wait_read", "All but the ``n`` newest bulk groups of this thread have finished reading "
                     "their shared memory (``n`` a compile-time integer).", ("n",), (_immediate("n"),),
                     "cp.async.bulk.wait_group.read $n;")
BULK_WAIT = _op("bulk_wait", "All but the ``n`` newest bulk groups of this thread have completed: their writes to "
                "global memory done (``n`` a compile-time integer).", ("n",), (_immediate("n"),),
                "cp.async.bulk.wait_group $n;")
NAMED_BARRIER = _op("named_barrier", "``bar.sync id, count``: a barrier among ``count`` threads (whole warps) of the "
                    "block, id 1-15 (0 is ``cuda.syncthreads``'s).", ("barrier_id", "count"),
                    _u32("barrier_id", "count"), "bar.sync $barrier_id, $count;")
NAMED_BARRIER_ARRIVE = _op(
    "named_barrier_arrive", "``bar.arrive id, count``: count this thread's warp towards named barrier ``id`` of "
    "``count`` threads without waiting (the other side of a ``named_barrier`` another warpgroup waits at).",
    ("barrier_id", "count"), _u32("barrier_id", "count"), "bar.arrive $barrier_id, $count;")

# -- warpgroup MMA -------------------------------------------------------------------------------------------------

WGMMA_FENCE = _op("wgmma_fence", "Order register and shared-memory accesses before the next wgmma "
                  "(``wgmma.fence.sync.aligned``).", ptx="wgmma.fence.sync.aligned;")
WGMMA_COMMIT = _op("wgmma_commit", "Close the group of wgmma issued since the last commit "
                   "(``wgmma.commit_group.sync.aligned``).", ptx="wgmma.commit_group.sync.aligned;")
WGMMA_WAIT = _op(
    "wgmma_wait", "``wgmma.wait_group n``: all but the ``n`` newest wgmma groups done. The ``count`` accumulators "
    "of ``acc`` go through the instruction as operands, so no read or write of them moves across it.",
    ("n", "acc", "count"), (_immediate("n"), Regs("acc", ("float32",), "count", tied=True, asm="f32"),
                            _immediate("count")), "wgmma.wait_group.sync.aligned $n;")


#: a wgmma instruction's name: m64nNk16 for .bf16/.f16, m64nNk8 for .tf32; ``_rs``: A from registers
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
    """The shape a wgmma instruction's name stands for; None if the name is not one; ValueError for an N PTX lacks."""
    found = WGMMA_NAME.match(name)
    if found is None or (found[2] == "8") != (found[3] == "tf32"):
        return None
    n = int(found[1])
    if n % 8 or not 8 <= n <= 256:
        raise ValueError(f"{MODULE}.{name}: wgmma's N must be a multiple of 8 in 8..256, got {n}")
    return WgmmaShape(n, found[3], bool(found[4]))


def _wgmma_doc(shape: WgmmaShape) -> str:
    a = ("``a[a_at:a_at + 4]``, this thread's registers of the 64x{k} A fragment ({regs})".format(
        k=shape.k, regs="float32 holding tf32 values" if shape.operand == "tf32" else
        "uint32, two 16-bit values each") if shape.a_registers else "shared memory (matrix descriptor ``desc_a``)")
    b = ("; ``trans_b`` 0: B k-major, 1: B n-major" if shape.transposable else "; both operands K-major")
    return (f"``acc += A @ B`` (``scale_d`` 0: ``acc = A @ B``) for the warpgroup's 64x{shape.n}x{shape.k} tile, "
            f"{shape.operand} operands: A from {a}, B from shared memory (``desc_b``){b}; float32 accumulators: "
            f"``acc`` holds {shape.n // 2} per thread.")


def _wgmma_op(shape: WgmmaShape) -> Op:
    if shape.a_registers:
        a_params = ("a", "a_at")
        a_operands = (Regs("a", ("float32",) if shape.operand == "tf32" else ("uint32",), 4, at="a_at"),)
        a_text = "{$a}"
    else:
        a_params, a_operands, a_text = ("desc_a",), (Scalar("desc_a", "int", "uint64"),), "$desc_a"
    # imm-scale-a, imm-scale-b 1; imm-trans-a 0 (A K-major) where A is in shared memory; tf32 has no trans
    tail = "p, 1, 1" + ("" if not shape.transposable else ", $trans_b" if shape.a_registers else ", 0, $trans_b")
    trans = ((Immediate("trans_b", choices=(0, 1), why=" (0: B k-major, 1: B n-major)"),) if shape.transposable
             else ())
    op = Op(shape.name, MODULE, _wgmma_doc(shape),
            params=("acc", *a_params, "desc_b", "scale_d", *(("trans_b",) if shape.transposable else ())),
            operands=(Regs("acc", ("float32",), shape.n // 2, tied=True, asm="f32"), *a_operands,
                      Scalar("desc_b", "int", "uint64"), Scalar("scale_d", "int", "int32"), *trans),
            ptx="{ .reg .pred p; setp.ne.b32 p, $scale_d, 0; "
                f"{shape.ptx} {{$acc}}, {a_text}, $desc_b, {tail}; }}",
            volatile=True, clobbers_memory=True, family="hopper", instruction=shape.name, shape=shape)
    return declare(op)


#: the wgmma Ops declared so far, by name
WGMMA: dict[str, Op] = {}


def wgmma(shape: WgmmaShape | str) -> Op:
    """The Op of one wgmma variant (a shape or its name), declared the first time it is asked for."""
    if isinstance(shape, str):
        found = wgmma_shape(shape)
        if found is None:
            raise ValueError(f"{MODULE}: {shape!r} is not a wgmma instruction's name (wgmma_m64n<N>k16_<bf16|f16>"
                             "[_rs] or wgmma_m64n<N>k8_tf32[_rs])")
        shape = found
    op = WGMMA.get(shape.name)
    if op is None:
        op = WGMMA[shape.name] = TABLE.get(f"{MODULE}.{shape.name}") or _wgmma_op(shape)
    return op


for _n in WGMMA_N:  # the library's shapes, declared with the rest (the API reference lists them)
    for _t in ("bf16", "f16"):
        wgmma(WgmmaShape(_n, _t, False))

# -- register reallocation between warpgroups ----------------------------------------------------------------------

SETMAXNREG_INC = _op("setmaxnreg_inc", "Raise this warpgroup's registers per thread to ``count`` (a compile-time "
                     "integer).", ("count",), (_immediate("count"),), "setmaxnreg.inc.sync.aligned.u32 $count;")
SETMAXNREG_DEC = _op("setmaxnreg_dec", "Lower this warpgroup's registers per thread to ``count`` (a compile-time "
                     "integer), giving the rest to other warpgroups.", ("count",), (_immediate("count"),),
                     "setmaxnreg.dec.sync.aligned.u32 $count;")

#: the fixed instructions (the wgmma shapes are made on demand: ``wgmma``)
FIXED = (SHARED_ADDRESS, MBARRIER_INIT, MBARRIER_ARRIVE, MBARRIER_ARRIVE_EXPECT_TX, MBARRIER_TRY_WAIT,
         FENCE_BARRIER_INIT, FENCE_PROXY_ASYNC, TMA_LOAD_2D, TMA_LOAD_3D, TMA_STORE_2D, BULK_COMMIT, BULK_WAIT_READ,
         BULK_WAIT, NAMED_BARRIER, NAMED_BARRIER_ARRIVE, WGMMA_FENCE, WGMMA_COMMIT, WGMMA_WAIT, SETMAXNREG_INC,
         SETMAXNREG_DEC)
#: the fixed instructions and the library's wgmma shapes
OPS = (*FIXED, *WGMMA.values())
NAMES = tuple(op.name for op in OPS)
