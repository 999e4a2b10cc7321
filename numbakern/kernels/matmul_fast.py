"""Fast fp32 matrix multiplication in Numba: the lecture's tiled kernel written the numbakern way, and
the flagship register-tiled kernel.

``matmul_tiled_fast(tw)``
    The lecture's tiled kernel with the three numbakern habits applied (``docs/performance.md``): the tile width is
    a compile-time constant (static shared tiles, an unrolled inner loop), every subscript is an unsigned 32-bit
    index (no negative-index wraparound selects), and it is compiled with ``fastmath`` and ``launch_bounds``.

``matmul_flagship(bm, bn, bk, tm, tn)``
    Block tiling through shared memory plus a ``tm``×``tn`` register tile per thread (``cuda.local.array`` with
    constant shapes, indexed only by unrolled loop counters, so it lives in registers). Each block computes a
    ``bm``×``bn`` tile of the output with ``(bm/tm)*(bn/tn)`` threads; the A tile is stored transposed (k-major)
    and padded so that both the transposing store and the reads are free of bank conflicts, and each thread's
    rows and columns come in groups of 4 consecutive elements so that its shared-memory reads can widen to 16
    bytes. Shared memory is double-buffered: the next k-tile is loaded from global memory into registers before
    the current one is multiplied, and one barrier per k-tile suffices. A warp covers a 4x8 patch of the thread
    grid (one shared-memory wavefront per 16-byte fragment load), the k-steps go in pairs with two register
    fragments (the next step's shared loads overlap this step's FMAs), and ``launch_bounds(256, 2)`` keeps two
    256-thread blocks per multiprocessor. Every load and store is bounds-checked,
    so any shape is correct; the checks cost a few integer instructions per ``tm*tn*bk`` multiply-adds.

``matmul_fast(a, b, out=None, config=None)`` is the user-facing entry point; without a ``config`` it asks
``numbakern.autotune`` for the best one for this device and shape class.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..autotune import Autotuner
from ..fastpath import jit_options, u32
from ..launch import launch_config, to_kernel_arg
from ..specialize import specialize
from ..vector_io import vstore4
from .config import for_mode, positive_ints, sizes
from .flagship_config import (
    FLAGSHIP_BENCH_SIZES,
    _check_config,
    _min_blocks,
    flagship_launch,
    flagship_threads,  # noqa: F401 - flagship_threads: part of this module's interface
    thread_grid,
    vec_ready,
)
from .matmul import VERIFY_SIZES as MATMUL_VERIFY_SIZES
from .matmul import checked_matmul_args, matmul_case, register_matmul
from .matmul_pipe import (
    AT_CONFIGS,
    PIPE_CONFIGS,
    SIM_PIPE_CONFIG,
    TransposedA,
    at_ready,
    matmul_pipelined,
    pipe_launch,
    pipe_ready,
)
from .rows import load_group
from .tiles import block_tile, multiply_tile, store_tile, thread_origin

# ---------------------------------------------------------------------------------------------------------------
# the lecture's tiled kernel, the numbakern way


@specialize
def matmul_tiled_fast(tw: int):
    """``matmul_tiled_static`` plus unsigned subscripts, ``fastmath`` and ``launch_bounds``: launch ``tw``×``tw``."""

    @cuda.jit(**jit_options(threads=tw * tw))
    def matmul_tiled_fast(m, n, out):
        tc = cuda.threadIdx.x
        tr = cuda.threadIdx.y
        r = cuda.blockIdx.y * tw + tr
        c = cuda.blockIdx.x * tw + tc
        h = m.shape[0]
        k = m.shape[1]
        w = n.shape[1]

        ms = cuda.shared.array((tw, tw), dtype=np.float32)
        ns = cuda.shared.array((tw, tw), dtype=np.float32)

        p = np.float32(0.0)
        for idx in range(0, k, tw):
            if r < h and idx + tc < k:
                ms[u32(tr), u32(tc)] = m[u32(r), u32(idx + tc)]
            else:
                ms[u32(tr), u32(tc)] = np.float32(0.0)
            if c < w and idx + tr < k:
                ns[u32(tr), u32(tc)] = n[u32(idx + tr), u32(c)]
            else:
                ns[u32(tr), u32(tc)] = np.float32(0.0)
            cuda.syncthreads()
            for i in range(tw):
                p += ms[u32(tr), i] * ns[i, u32(tc)]
            cuda.syncthreads()
        if r < h and c < w:
            out[u32(r), u32(c)] = p

    return matmul_tiled_fast


# ---------------------------------------------------------------------------------------------------------------
# the flagship


@specialize
def matmul_flagship(bm: int = 128, bn: int = 128, bk: int = 8, tm: int = 8, tn: int = 8, vec: bool = False,
                    group: int = 1):
    """The flagship kernel for one tile configuration; launch with ``flagship_launch`` (1-D blocks). ``group`` > 1:
    the blocks in ``tiles.grouped_tile``'s order. ``vec=True`` moves global memory in 16-byte groups
    (``numbakern.vector_io``): the A and B tiles' loads, the B tile's shared store and the output's store; it needs
    ``vec_ready(m, n, out)`` (``matmul_fast`` checks, and falls back to ``vec=False``, which takes any shape)."""
    nt = _check_config(bm, bn, bk, tm, tn, vec)
    positive_ints("matmul_flagship", group=group)
    vm = min(4, tm)  # rows per group of consecutive rows a thread owns
    vn = min(4, tn)
    wx, wy, warps_x, gm, gn = thread_grid(bm, bn, tm, tn, vm, vn)
    vw = 4 if vec else 1  # elements per global access: one 16-byte group, or one float
    a_tpr = bk // vw  # threads loading one row of the A tile
    a_rstep = nt // a_tpr  # rows of the A tile that one pass of all threads loads
    la = bm // a_rstep  # groups of the A tile each thread loads
    b_tpr = bn // vw
    b_rstep = nt // b_tpr
    lb = bk // b_rstep
    la_n = la * vw  # (a local array's shape must be a constant, not an expression)
    lb_n = lb * vw
    pa = bm + 4 if bm % 32 == 0 else bm  # padded row of the transposed A tile: no bank conflicts on the store
    tmn = tm * tn
    tm2 = 2 * tm  # two register fragments, for even and odd k-steps
    tn2 = 2 * tn
    tn_groups = tn // vn
    # launch_bounds(256, 2): at most 128 registers, so two 256-thread blocks share a multiprocessor (without the 2,
    # ptxas spends 147 registers on the double-buffered fragments of an 8x8 tile and only one block fits). Smaller
    # blocks, and per-thread tiles larger than 8x8 (128 accumulators alone), are left uncapped: they would spill.
    opts = jit_options(threads=nt, min_blocks=_min_blocks(nt, tm, tn))

    @cuda.jit(**opts)
    def matmul_flagship(m, n, out):
        tid = cuda.threadIdx.x
        a_base, b_base = thread_origin(wx, wy, warps_x, vm, vn)
        ar = u32(tid // a_tpr)  # the A-tile group this thread loads: rows ar + i * a_rstep, columns ac..ac+vw-1
        ac = u32(tid % a_tpr * vw)
        br = u32(tid // b_tpr)  # the B-tile group: rows br + i * b_rstep, columns bc..bc+vw-1
        bc = u32(tid % b_tpr * vw)
        row0, col0 = block_tile(group, bm, bn)
        h = m.shape[0]
        k = m.shape[1]
        w = n.shape[1]

        a_s = cuda.shared.array((2, bk, pa), dtype=np.float32, alignment=16)
        b_s = cuda.shared.array((2, bk, bn), dtype=np.float32, alignment=16)
        acc = cuda.local.array(tmn, dtype=np.float32)
        a_f = cuda.local.array(tm2, dtype=np.float32)  # fragments of the even k-step, then of the odd one
        b_f = cuda.local.array(tn2, dtype=np.float32)
        a_ld = cuda.local.array(la_n, dtype=np.float32)
        b_ld = cuda.local.array(lb_n, dtype=np.float32)
        for i in range(tmn):
            acc[i] = np.float32(0.0)

        ntiles = (k + bk - 1) // bk
        # Iteration t multiplies k-tile t (from shared buffer t & 1) while the next tile travels global ->
        # registers -> the other buffer; iteration -1 only brings in tile 0.
        for t in range(-1, ntiles):
            cur = t & 1
            k_next = (t + 1) * bk
            more = t + 1 < ntiles
            if more:  # issue the next tile's global loads before the math, so they are in flight during it
                for i in range(la):
                    gr = row0 + ar + i * a_rstep
                    gk = k_next + ac
                    if gr < h and gk < k:  # (vec: k % 4 == 0, so the whole group is inside)
                        load_group(m, u32(gr), gk, a_ld, i * vw, vec)
                    else:
                        for q in range(vw):
                            a_ld[i * vw + q] = np.float32(0.0)
                for i in range(lb):
                    gk = k_next + br + i * b_rstep
                    gc = col0 + bc
                    if gk < k and gc < w:
                        load_group(n, u32(gk), gc, b_ld, i * vw, vec)
                    else:
                        for q in range(vw):
                            b_ld[i * vw + q] = np.float32(0.0)
            if t >= 0:
                multiply_tile(acc, a_f, b_f, a_s, b_s, cur, a_base, b_base, bk, tm, tn, vm, vn, gm, gn)
            if more:
                nxt = cur ^ 1
                for i in range(la):  # A is stored transposed (k-major): element by element
                    for q in range(vw):
                        a_s[nxt, ac + q, ar + i * a_rstep] = a_ld[i * vw + q]
                for i in range(lb):
                    if vec:
                        vstore4(b_s, (u32(nxt), br + i * b_rstep, bc), b_ld, i * vw)
                    else:
                        b_s[nxt, br + i * b_rstep, bc] = b_ld[i]
            cuda.syncthreads()

        store_tile(out, acc, row0 + a_base, col0 + b_base, h, w, tm, tn, vm, vn, tn_groups, gm, gn, vec)

    return matmul_flagship

#: the default configuration (the classic 128x128 block tile, 8x8 per thread, 256 threads)
DEFAULT_CONFIG = {"bm": 128, "bn": 128, "bk": 8, "tm": 8, "tn": 8}

#: the autotuner's candidates on a GPU for any shape (scalar global loads; all fit 48 KiB of static shared memory).
#: The two 16x8 / 8x16 ones (128 accumulators, ~200-220 registers, one 256-thread block per multiprocessor, no
#: spills) beat the default by 1-4% in Numba from 2048^3 up on an H200 (`scripts/bench_matmul.py --sweep` times
#: every candidate).
CONFIGS = (
    DEFAULT_CONFIG,
    {"bm": 256, "bn": 128, "bk": 8, "tm": 16, "tn": 8},
    {"bm": 128, "bn": 256, "bk": 8, "tm": 8, "tn": 16},
    {"bm": 128, "bn": 128, "bk": 16, "tm": 8, "tn": 8},
    {"bm": 128, "bn": 64, "bk": 8, "tm": 8, "tn": 8},
    {"bm": 64, "bn": 128, "bk": 8, "tm": 8, "tn": 8},
    {"bm": 64, "bn": 64, "bk": 16, "tm": 4, "tn": 8},
    {"bm": 64, "bn": 64, "bk": 8, "tm": 4, "tn": 4},
)

#: the default when the matrices allow 16-byte accesses (``vec_ready``): 128x128 tiles, k-tiles of 16, 8x8 per
#: thread, blocks in bands of 8 block rows. At 4096^3 (docs/performance.md, docs/perf/matmul.md): 76-78% of
#: cuBLAS in Numba against 65-68% for DEFAULT_CONFIG; the band order costs nothing there and frees ptxas from a
#: 12-byte spill that the plain order has under the 128-register cap (docs/perf/codegen.md).
VEC_DEFAULT_CONFIG = {"bm": 128, "bn": 128, "bk": 16, "tm": 8, "tn": 8, "vec": True, "group": 8}

#: the autotuner's candidates for 16-byte-ready matrices
VEC_CONFIGS = (
    VEC_DEFAULT_CONFIG,
    {**VEC_DEFAULT_CONFIG, "group": 1},
    {"bm": 128, "bn": 128, "bk": 8, "tm": 8, "tn": 8, "vec": True},
    {"bm": 256, "bn": 128, "bk": 8, "tm": 16, "tn": 8, "vec": True},
    {"bm": 128, "bn": 64, "bk": 16, "tm": 8, "tn": 8, "vec": True},
    {"bm": 64, "bn": 128, "bk": 16, "tm": 8, "tn": 8, "vec": True},
    {"bm": 64, "bn": 64, "bk": 16, "tm": 4, "tn": 4, "vec": True},
)

#: small configurations for the simulator (64 threads; tiles that 33x70x45 and 33x20x44 do not divide)
SIM_CONFIG = {"bm": 16, "bn": 16, "bk": 4, "tm": 2, "tn": 2}
SIM_VEC_CONFIG = {"bm": 32, "bn": 32, "bk": 8, "tm": 4, "tn": 4, "vec": True}


def _matmul_key(a, b, out) -> tuple[int, int, int]:
    return (int(a.shape[0]), int(a.shape[1]), int(b.shape[1]))


KERNELS = ("pipelined", "transposed", "flagship")


def either_kernel(kernel: str = "pipelined", **config):
    """What ``matmul_fast`` launches for a config: ``matmul_pipelined(**config)``, for ``kernel="transposed"`` the
    transpose of A then ``matmul_pipelined(a_t=True, ...)`` (``TransposedA``), or for ``kernel="flagship"``
    ``matmul_flagship(**config)``."""
    if kernel == "pipelined":
        return matmul_pipelined(**config)
    if kernel == "transposed":
        return TransposedA(config)
    if kernel == "flagship":
        return matmul_flagship(**config)
    raise ValueError(f"matmul_fast: config 'kernel' must be one of {', '.join(map(repr, KERNELS))}, got {kernel!r}")


def either_launch(config, a, b, out):
    """The launch of ``either_kernel(**config)`` (without "kernel", the flagship's)."""
    config = dict(config)
    if config.pop("kernel", "flagship") in ("pipelined", "transposed"):
        return pipe_launch(config, int(a.shape[0]), int(b.shape[1]))
    return flagship_launch(config, int(a.shape[0]), int(b.shape[1]))


autotuner = Autotuner("matmul_flagship", matmul_flagship, configs=CONFIGS, key=_matmul_key, launch=either_launch,
                      sim_config=SIM_CONFIG)
#: tunes only over vec=True configs; ``matmul_fast`` uses it when ``vec_ready(a, b, out)``
vec_autotuner = Autotuner("matmul_flagship_vec", matmul_flagship, configs=VEC_CONFIGS, key=_matmul_key,
                          launch=either_launch, sim_config=SIM_VEC_CONFIG)


def _candidates(at: bool, vec: bool) -> tuple[dict, ...]:
    return (*(({"kernel": "transposed", **c} for c in AT_CONFIGS) if at else ()),
            *({"kernel": "pipelined", **c} for c in PIPE_CONFIGS),
            *(({"kernel": "flagship", **c} for c in VEC_CONFIGS) if vec else ()))


def _tuner(name: str, at: bool, vec: bool) -> Autotuner:
    return Autotuner(name, either_kernel, configs=_candidates(at, vec), key=_matmul_key, launch=either_launch,
                     sim_config={"kernel": "pipelined", **SIM_PIPE_CONFIG})


#: ``matmul_fast``'s choices, timed against each other on the device, by what the matrices allow: the pipelined
#: candidates always (``pipe_ready``); the transposed-A ones where h % 4 == 0 too (``at_ready``); the 16-byte
#: flagship's where k % 4 == 0 too (``vec_ready``)
pipe_autotuner = _tuner("matmul_pipelined", at=False, vec=False)
pipe_at_autotuner = _tuner("matmul_fast_at", at=True, vec=False)
ready_autotuner = _tuner("matmul_fast_ready", at=False, vec=True)
ready_at_autotuner = _tuner("matmul_fast_ready_at", at=True, vec=True)


def fast_autotuner(a, b, out) -> Autotuner | None:
    """The autotuner ``matmul_fast`` uses for these (kernel-argument) matrices, or None when only the scalar
    flagship takes them."""
    if not pipe_ready(a, b, out):
        return None
    at, vec = at_ready(a, b, out), vec_ready(a, b, out)
    return {(True, True): ready_at_autotuner, (False, True): ready_autotuner, (True, False): pipe_at_autotuner,
            (False, False): pipe_autotuner}[(at, vec)]


def matmul_fast(a, b, out=None, *, config: dict | None = None):
    """``a @ b`` for float32 matrices with the flagship kernels (autotuned per device and shape class).

    Like Triton, which specializes a kernel on pointer alignment and on sizes divisible by 16, the kernel is picked
    by what the matrices allow, the fastest on this device of the candidates that apply (``numbakern.kernels.
    matmul_pipe.fast_autotuner``): with w a multiple of 4 and 16-byte aligned matrices (``pipe_ready``),
    ``matmul_pipelined``; with h a multiple of 4 as well (``at_ready``), also A transposed by numbakern's
    ``transpose`` and then ``matmul_pipelined(a_t=True)``, both tiles in 16-byte copies; with k a multiple of 4 as
    well (``vec_ready``), also the 16-byte flagship; any other shape, the scalar flagship. An explicit ``config``
    names its kernel (``{"kernel": "pipelined" | "transposed", ...}``; without "kernel", the flagship); one that
    the matrices do not allow is a ValueError.

    Same conventions as ``numbakern.kernels.matmul.matmul``: torch tensors, CuPy arrays or numpy arrays in (numpy
    or CPU tensors under the simulator), the product out, of the same kind on the same device.
    """
    h, w, out = checked_matmul_args(a, b, out)
    args = (to_kernel_arg(a), to_kernel_arg(b), to_kernel_arg(out))
    if h == 0 or w == 0:
        return out
    if config is not None:
        kernel = config.get("kernel", "flagship")
        if config.get("vec", False) and not vec_ready(*args):
            raise ValueError("matmul_fast: config has vec=True, but the matrices are not 16-byte ready (k and w must "
                             "be multiples of 4 and every matrix 16-byte aligned and C-contiguous); pass a config "
                             "without vec")
        if kernel == "pipelined" and not pipe_ready(*args):
            raise ValueError("matmul_fast: config names the pipelined kernel, but b and out are not 16-byte ready (w "
                             "must be a multiple of 4, the matrices 16-byte aligned and C-contiguous)")
        if kernel == "transposed" and not at_ready(*args):
            raise ValueError("matmul_fast: config names the transposed kernel, but the matrices are not ready for it "
                             "(h and w must be multiples of 4, b and out 16-byte aligned and C-contiguous)")
        cfg = either_launch(config, *args)
        either_kernel(**{"kernel": "flagship", **config})[cfg.grid, cfg.block, 0, 0](*args)
        return out
    (fast_autotuner(*args) or autotuner)(*args)
    return out


# ---------------------------------------------------------------------------------------------------------------
# registry

#: GPU verification: non-multiples of every tile size of every config (128, 64, 16, 8, 4), primes, 1
VERIFY_SIZES = (*MATMUL_VERIFY_SIZES, *sizes("h k w", (129, 9, 131), (509, 263, 383)))
#: the vec=True kernel's sizes: k and w multiples of 4 (its precondition), non-multiples of every tile size otherwise
VEC_VERIFY_SIZES = sizes("h k w", (1, 4, 4), (33, 68, 44), (127, 132, 260), (256, 256, 256), (7, 1020, 4),
                         (129, 12, 132), (509, 264, 384))
TILED_FAST_TW = 16
_CONFIG, _VEC_CONFIG = for_mode(SIM_CONFIG, DEFAULT_CONFIG), for_mode(SIM_VEC_CONFIG, VEC_DEFAULT_CONFIG)

register_matmul("matmul_tiled_fast", matmul_tiled_fast(TILED_FAST_TW),
                matmul_case(lambda h, w: launch_config((w, h), (TILED_FAST_TW, TILED_FAST_TW))),
                "the lecture's tiled kernel the numbakern way: constant tile width, unsigned subscripts, fastmath",
                constants={"tw": TILED_FAST_TW}, test_sizes=sizes("h k w", (33, 70, 45), (1, 1, 1), (5, 17, 3)),
                verify_sizes=VERIFY_SIZES)
register_matmul("matmul_flagship", matmul_flagship(**_CONFIG),
                matmul_case(lambda h, w: flagship_launch(_CONFIG, h, w)),
                "block tiles in double-buffered shared memory, a register tile per thread, compile-time tile sizes",
                constants=dict(_CONFIG), verify_sizes=VERIFY_SIZES, bench_sizes=FLAGSHIP_BENCH_SIZES,
                # non-multiples of every tile size of SIM_CONFIG, and 1
                test_sizes=sizes("h k w", (33, 70, 45), (1, 1, 1), (17, 5, 31)))
register_matmul("matmul_flagship_vec", matmul_flagship(**_VEC_CONFIG),
                matmul_case(lambda h, w: flagship_launch(_VEC_CONFIG, h, w)),
                "the flagship with 16-byte global loads and stores (vector_io); k and w must be multiples of 4",
                constants=dict(_VEC_CONFIG), test_sizes=sizes("h k w", (33, 20, 44), (1, 4, 4), (17, 12, 36)),
                verify_sizes=VEC_VERIFY_SIZES, bench_sizes=FLAGSHIP_BENCH_SIZES, size_multiples={"k": 4, "w": 4})
