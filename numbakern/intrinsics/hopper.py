"""Hopper's asynchronous matrix path, declared (``numbakern.mma.hopper``, compute capability 9.0, ``sm_90a``):
warpgroup MMA (``wgmma.mma_async``) on shared-memory matrix descriptors, the bulk tensor copy engine (TMA,
``cp.async.bulk.tensor``), the ``mbarrier``s its copies complete on, and the fences and register reallocation
around them.

numba-cuda lowers them (``numbakern.intrinsics.numba_cuda``, from the templates below). Registration points for
the backends that do not have them yet: the simulator registers a model per Op (``op.register("sim", model)``,
``model(launch, frame, *args)``), the C generator an emitter (``op.register("c", emitter)``); until then a
kernel using them runs on a GPU of compute capability 9.0 only.
"""

from __future__ import annotations

from .op import Data, Element, Immediate, Op, Regs, Scalar, declare

MODULE = "numbakern.mma.hopper"
#: wgmma shapes with their accumulator registers per thread (m64nNk16, f32 accumulators)
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
NAMED_BARRIER = _op("named_barrier", "``bar.sync id, count``: a barrier among ``count`` threads (whole warps) of the "
                    "block, id 1-15 (0 is ``cuda.syncthreads``'s).", ("barrier_id", "count"),
                    _u32("barrier_id", "count"), "bar.sync $barrier_id, $count;")

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


def _wgmma(n: int, operand: str) -> Op:
    return _op(
        f"wgmma_m64n{n}k16_{operand}",
        f"``acc += A @ B`` (``scale_d`` 0: ``acc = A @ B``) for the warpgroup's 64x{n}x16 tile, {operand} operands "
        "from shared memory (matrix descriptors ``desc_a``, ``desc_b``; ``trans_b`` 0: B k-major, 1: B n-major), "
        f"float32 accumulators: ``acc`` holds {n // 2} per thread.",
        ("acc", "desc_a", "desc_b", "scale_d", "trans_b"),
        (Regs("acc", ("float32",), n // 2, tied=True, asm="f32"), Scalar("desc_a", "int", "uint64"),
         Scalar("desc_b", "int", "uint64"), Scalar("scale_d", "int", "int32"),
         Immediate("trans_b", choices=(0, 1), why=" (0: B k-major, 1: B n-major)")),
        "{ .reg .pred p; setp.ne.b32 p, $scale_d, 0; "
        f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{operand}.{operand} {{$acc}}, $desc_a, $desc_b, p, 1, 1, 0, "
        "$trans_b; }")


WGMMA = {f"wgmma_m64n{n}k16_{t}": _wgmma(n, t) for n in WGMMA_N for t in ("bf16", "f16")}

# -- register reallocation between warpgroups ----------------------------------------------------------------------

SETMAXNREG_INC = _op("setmaxnreg_inc", "Raise this warpgroup's registers per thread to ``count`` (a compile-time "
                     "integer).", ("count",), (_immediate("count"),), "setmaxnreg.inc.sync.aligned.u32 $count;")
SETMAXNREG_DEC = _op("setmaxnreg_dec", "Lower this warpgroup's registers per thread to ``count`` (a compile-time "
                     "integer), giving the rest to other warpgroups.", ("count",), (_immediate("count"),),
                     "setmaxnreg.dec.sync.aligned.u32 $count;")

OPS = (SHARED_ADDRESS, MBARRIER_INIT, MBARRIER_ARRIVE, MBARRIER_ARRIVE_EXPECT_TX, MBARRIER_TRY_WAIT,
       FENCE_BARRIER_INIT, FENCE_PROXY_ASYNC, TMA_LOAD_2D, TMA_STORE_2D, BULK_COMMIT, BULK_WAIT_READ, NAMED_BARRIER,
       WGMMA_FENCE, WGMMA_COMMIT, WGMMA_WAIT, SETMAXNREG_INC, SETMAXNREG_DEC, *WGMMA.values())
NAMES = tuple(op.name for op in OPS)
