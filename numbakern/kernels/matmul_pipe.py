"""The flagship matmul as a multi-stage ``cp.async`` pipeline with fully unrolled k-steps: ``matmul_pipelined``.

What the hand-written CUDA C that reaches 90-92% of cuBLAS has (``docs/performance.md``), in Numba:

- **Both tiles copied by ``cp.async``, straight into the layout the fragment reads want.** B's k-major rows go in
  16-byte copies (``copy_async4``). A is row-major, but the outer-product k-step wants it k-major, so its tile is
  transposed on the way, one float per copy (``copy_async``, 4 bytes, any alignment): a warp copies 8 consecutive
  k-columns of 4 rows (4 full 32-byte sectors) into ``a_s[stage, c, r]``, whose row of ``bm + 4`` floats puts the
  32 lanes on 32 different banks. No transpose pass over A, no staging registers, and A may have any shape.
- **``stages`` shared buffers** (2 by default; ``async_wait(stages - 2)``): the copies of tile ``t + stages - 1``
  run while tile ``t`` is multiplied; one barrier per tile.
- **The prologue peeled out of the tile loop** (the loop is the steady state only, the shape nvcc schedules well).
- **Every k-step unrolled** (``numbakern.unroll``): the ``bk`` steps are straight-line code, so the two register
  fragments alternate by constant index (loads of step kk + 1 overlap the multiply-adds of step kk), and every
  shared-memory read is the stage's base plus an immediate offset.
- **32-bit per-thread offsets** (``u32``) everywhere an index is built, so no negative-index selects.

The thread tiles, warp layout and grouped block order are ``matmul_flagship``'s. Preconditions (``pipe_ready``):
``n`` and ``out`` 16-byte ready (w a multiple of 4, aligned, contiguous); h and k are free.

With ``a_t=True`` the first argument is A^T (k×h, h a multiple of 4: ``at_ready``) and both tiles go in 16-byte
copies, the hand kernel's design (registered as ``matmul_pipelined_at``, 8×16 outputs per thread). ``matmul_fast``
reaches it for a row-major A through ``TransposedA``: numbakern's ``transpose`` into a kept buffer, then the
product; its autotuner times that pair against the kernels that take A as it is.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..async_copy import async_commit, async_wait, copy_async, copy_async4
from ..fastpath import jit_options, u32
from ..specialize import specialize
from ..unroll import unroll
from ..vector_io import vload4
from .config import fits_static_shared, flags, for_mode, positive_ints, sizes
from .flagship_config import FLAGSHIP_BENCH_SIZES, _check_config, _min_blocks, flagship_launch, thread_grid, vec_ready
from .matmul import matmul_case, register_matmul
from .matmul_async import TEST_SIZES as AT_TEST_SIZES
from .matmul_async import VERIFY_SIZES as AT_VERIFY_SIZES
from .tiles import block_tile, outer_product, store_tile, thread_origin


def _check_pipe_config(bm: int, bn: int, bk: int, tm: int, tn: int, stages: int, group: int,
                       a_t: bool = False) -> int:
    """Threads per block for a pipelined config, or a ValueError saying which constraint fails."""
    what = "matmul_pipelined"
    nt = _check_config(bm, bn, bk, tm, tn, vec=True)
    positive_ints(what, stages=stages, group=group)
    flags(what, a_t=a_t)
    if stages < 2:
        raise ValueError(f"{what}: stages={stages}: a pipeline needs at least 2 shared buffers")
    if nt % 32:
        raise ValueError(f"{what}: {nt} threads per block is not a whole number of warps")
    if a_t:
        if nt % (bm // 4) or (bk * bm // 4) % nt:
            raise ValueError(f"{what}: the {bk}x{bm} A^T tile must split evenly over {nt} threads in 16-byte groups")
    else:
        kb = bk // 8
        if bk % 8 or (nt // 32) % kb or bm % (4 * (nt // 32) // kb):
            raise ValueError(f"{what}: the A tile ({bm}x{bk}) is copied by warps in blocks of 4 rows x 8 k-columns: "
                             f"bk must be a multiple of 8 and the {nt // 32} warps must cover it evenly")
    if nt % (bn // 4) or (bk * bn // 4) % nt:
        raise ValueError(f"{what}: the {bk}x{bn} B tile must split evenly over {nt} threads in 16-byte groups")
    fits_static_shared(what, stages * (bk * (bm if a_t else bm + 4) + bk * bn) * 4,
                       f"{stages} stages of the {bm}x{bk} A and {bk}x{bn} B tiles")
    return nt


@specialize
def matmul_pipelined(bm: int = 128, bn: int = 128, bk: int = 16, tm: int = 8, tn: int = 8, stages: int = 2,
                     group: int = 8, a_t: bool = False):
    """``out = m @ n`` for one tile configuration (``out = m.T @ n`` with ``a_t``: ``m`` is A^T, k×h); launch with
    ``pipe_launch`` (1-D blocks)."""
    nt = _check_pipe_config(bm, bn, bk, tm, tn, stages, group, a_t)
    wx, wy, warps_x, gm, gn = thread_grid(bm, bn, tm, tn, 4, 4)
    pa = bm if a_t else bm + 4  # a row of the k-major A tile (padded when 4-byte copies transpose it)
    kb = bk // 8  # (4-byte copies) warp blocks of 8 k-columns across the A tile
    if a_t:
        a_cpr = bm // 4  # 16-byte chunks in a k-row of the A^T tile
        a_rstep = nt // a_cpr  # k-rows between one thread's copies
        la = bk // a_rstep
    else:
        a_cpr = 8
        a_rstep = 4 * (nt // 32) // kb  # rows between one thread's A copies
        la = bm // a_rstep
    b_cpr = bn // 4  # 16-byte chunks in a row of the B tile
    b_rstep = nt // b_cpr
    lb = bk // b_rstep  # B copies per thread and tile
    tmn = tm * tn
    tm2 = 2 * tm  # two register fragments, for even and odd k-steps
    tn2 = 2 * tn
    tm_groups = tm // 4
    tn_groups = tn // 4
    ahead = stages - 1  # tiles in flight while one is multiplied
    wait_n = stages - 2  # groups that may stay in flight when the oldest must have landed
    opts = jit_options(threads=nt, min_blocks=_min_blocks(nt, tm, tn))

    @cuda.jit(**opts)
    def matmul_pipelined(m, n, out):
        tid = cuda.threadIdx.x
        a_base, b_base = thread_origin(wx, wy, warps_x, 4, 4)
        bc = u32(tid % b_cpr * 4)  # its B copies: columns bc..bc+3 of rows br + i * b_rstep
        br = u32(tid // b_cpr)
        row0, col0 = block_tile(group, bm, bn)
        h = m.shape[1] if a_t else m.shape[0]
        k = m.shape[0] if a_t else m.shape[1]
        w = n.shape[1]

        a_s = cuda.shared.array((stages, bk, pa), dtype=np.float32, alignment=16)  # A^T tiles, k-major
        b_s = cuda.shared.array((stages, bk, bn), dtype=np.float32, alignment=16)
        acc = cuda.local.array(tmn, dtype=np.float32)
        a_f = cuda.local.array(tm2, dtype=np.float32)
        b_f = cuda.local.array(tn2, dtype=np.float32)
        for i in unroll(range(tmn)):
            acc[i] = np.float32(0.0)

        ntiles = (k + bk - 1) // bk
        # This thread's copies. Running 32-bit flat offsets into the sources (fewer than 2**32 elements): copy i
        # of tile q reads a_off + q * a_tile + i * a_step (B: b_off + q * b_tile + i * b_step).
        if a_t:  # A^T: 16-byte chunks of its k-rows; rows ar + i * a_rstep, columns (rows of A) ac..ac+3
            ar_i = tid // a_cpr  # (signed, for the bounds below)
            ar = u32(ar_i)
            ac = u32(tid % a_cpr * 4)
            a_off = u32(ar * h + row0 + ac)
            a_step = u32(a_rstep * h)
            a_tile = u32(bk * h)
            a_rows = k - ar_i  # a copy is inside while q * bk + i * a_rstep < a_rows
            a_cols = row0 + ac < h  # (h % 4 == 0: the whole chunk is inside)
        else:  # 4 bytes at a time: a warp copies k-columns ac of rows ar + i * a_rstep, 8 columns x 4 rows
            lane = tid % 32
            warp = tid // 32
            ac = u32(warp % kb * 8 + lane % 8)
            ar_i = warp // kb * 4 + lane // 8
            ar = u32(ar_i)
            a_off = u32((row0 + ar) * k + ac)
            a_step = u32(a_rstep * k)
            a_tile = u32(bk)
            a_rows = h - row0 - ar_i
            a_cols = ac < k
        b_off = u32(br * w + col0 + bc)
        b_step = u32(b_rstep * w)
        b_tile = u32(bk * w)
        b_cols = col0 + bc < w
        # the prologue: tiles 0 .. stages-2 start copying (one group each, empty past the last tile)
        for s in unroll(range(ahead)):
            if s < ntiles:
                for i in unroll(range(la)):
                    if a_t:
                        copy_async4(a_s, (u32(s), ar + i * a_rstep, ac), m, u32(a_off + s * a_tile + i * a_step),
                                    a_cols and s * bk + i * a_rstep < a_rows)
                    else:
                        copy_async(a_s, (u32(s), ac, ar + i * a_rstep), m, u32(a_off + s * a_tile + i * a_step),
                                   i * a_rstep < a_rows and s * bk + ac < k)
                for i in unroll(range(lb)):
                    copy_async4(b_s, (u32(s), br + i * b_rstep, bc), n, u32(b_off + s * b_tile + i * b_step),
                                b_cols and s * bk + br + i * b_rstep < k)
            async_commit()
        # the steady state: tile t is multiplied while tiles t+1 .. t+stages-1 are on their way
        for t in range(ntiles):
            async_wait(wait_n)  # this thread's copies of tile t have landed ...
            cuda.syncthreads()  # ... and everyone's; everyone is done with tile t-1, whose stage is refilled now
            nxt = t + ahead
            if nxt < ntiles:
                ns = u32(nxt) % u32(stages)
                a_next = u32(a_off + u32(nxt) * a_tile)
                b_next = u32(b_off + u32(nxt) * b_tile)
                k0 = nxt * bk
                for i in unroll(range(la)):
                    if a_t:
                        copy_async4(a_s, (ns, ar + i * a_rstep, ac), m, u32(a_next + i * a_step),
                                    a_cols and k0 + i * a_rstep < a_rows)
                    else:
                        copy_async(a_s, (ns, ac, ar + i * a_rstep), m, u32(a_next + i * a_step),
                                   i * a_rstep < a_rows and k0 + ac < k)
                for i in unroll(range(lb)):
                    copy_async4(b_s, (ns, br + i * b_rstep, bc), n, u32(b_next + i * b_step),
                                b_cols and k0 + br + i * b_rstep < k)
            async_commit()
            st = u32(t) % u32(stages)
            for g in unroll(range(tm_groups)):
                vload4(a_s, (st, 0, a_base + g * gm), a_f, g * 4)
            for g in unroll(range(tn_groups)):
                vload4(b_s, (st, 0, b_base + g * gn), b_f, g * 4)
            for kk in unroll(range(bk)):
                if kk + 1 < bk:  # the next step's fragments, into the other half of a_f / b_f
                    for g in range(tm_groups):
                        vload4(a_s, (st, kk + 1, a_base + g * gm), a_f, (kk + 1) % 2 * tm + g * 4)
                    for g in range(tn_groups):
                        vload4(b_s, (st, kk + 1, b_base + g * gn), b_f, (kk + 1) % 2 * tn + g * 4)
                outer_product(acc, a_f, kk % 2 * tm, b_f, kk % 2 * tn, tm, tn)

        store_tile(out, acc, row0 + a_base, col0 + b_base, h, w, tm, tn, 4, 4, tn_groups, gm, gn, True)

    return matmul_pipelined


def pipe_threads(config: dict) -> int:
    return _check_pipe_config(config["bm"], config["bn"], config["bk"], config["tm"], config["tn"],
                              config.get("stages", 2), config.get("group", 8), config.get("a_t", False))


def pipe_launch(config: dict, h: int, w: int):
    """Grid and block for an ``h``×``w`` output (one block per ``bm``×``bn`` tile, 1-D blocks)."""
    pipe_threads(config)
    return flagship_launch({**config, "vec": True, "group": 1}, h, w)


def pipe_ready(a, b, out) -> bool:
    """True when ``a @ b`` may run as ``matmul_pipelined``: ``b`` and ``out`` 16-byte ready (``vec_ready``: w a
    multiple of 4, aligned, C-contiguous), ``a`` any float32 matrix, and both inputs under 2**32 elements (the
    copies' running offsets are 32-bit)."""
    sizes = [int(np.prod(tuple(int(d) for d in x.shape))) for x in (a, b)]
    return vec_ready(b, out) and all(n < 2**32 for n in sizes)


def at_ready(a, b, out) -> bool:
    """True when ``a @ b`` may run as ``matmul_pipelined(a_t=True)`` on A^T: ``pipe_ready`` and h (A's rows, the
    row length of A^T) a multiple of 4, so that A^T's rows go in 16-byte copies too."""
    return pipe_ready(a, b, out) and int(a.shape[0]) % 4 == 0


class TransposedA:
    """``matmul_pipelined(a_t=True)`` launched on a row-major A, as one launchable:
    ``TransposedA(config)[grid, block, 0, 0](a, b, out)`` writes A^T into a scratch array with numbakern's
    ``transpose`` (k×h on ``a``'s device, kept for the next call of the same shape: ``scratch.buffer``), then
    multiplies. The transpose moves 8 bytes per element of A, a few percent of a large product's time; in exchange
    both tiles of the product go in 16-byte copies."""

    def __init__(self, config: dict):
        if not config.get("a_t"):
            raise ValueError(f"TransposedA: the config must have a_t=True, got {config!r}")
        self.kernel = matmul_pipelined(**config)

    def __getitem__(self, launch):
        grid, block = launch[0], launch[1]

        def run(a, b, out):
            from . import scratch
            from .transpose import transpose, transpose_launch

            h, k = int(a.shape[0]), int(a.shape[1])
            mt = scratch.buffer("matmul_at", (k, h), np.float32, a)
            if h and k:
                cfg = transpose_launch(h, k)
                transpose[cfg.grid, cfg.block](a, mt)
            self.kernel[grid, block](mt, b, out)

        return run


#: the default: the hand CUDA C of this design (2 stages, 128x128x16, 8x8 per thread) ran at 90-92% of cuBLAS
PIPE_DEFAULT_CONFIG = {"bm": 128, "bn": 128, "bk": 16, "tm": 8, "tn": 8, "stages": 2, "group": 8}
#: the autotuner's candidates (all under the 48 KiB static shared limit; 128-thread blocks for grids that 128x128
#: tiles leave too small, e.g. 1024^3: 64 blocks for 132 multiprocessors)
PIPE_CONFIGS = (
    PIPE_DEFAULT_CONFIG,
    {**PIPE_DEFAULT_CONFIG, "group": 1},
    {"bm": 128, "bn": 128, "bk": 8, "tm": 8, "tn": 8, "stages": 3, "group": 8},
    {"bm": 128, "bn": 64, "bk": 16, "tm": 8, "tn": 8, "stages": 2, "group": 8},
    {"bm": 64, "bn": 128, "bk": 16, "tm": 8, "tn": 8, "stages": 2, "group": 8},
    {"bm": 64, "bn": 64, "bk": 16, "tm": 4, "tn": 8, "stages": 3, "group": 8},
)
#: a small configuration for the simulator (64 threads; tiles that the test sizes do not divide)
SIM_PIPE_CONFIG = {"bm": 32, "bn": 32, "bk": 8, "tm": 4, "tn": 4, "stages": 2, "group": 1}

#: A given transposed (``a_t``): both tiles in 16-byte copies. The default: 128 threads with 8x16 outputs each
#: (about 220 registers, two blocks per multiprocessor), the shape of cuBLAS's own fp32 kernel (128x128 tiles, 4
#: warps), blocks in plain order (on an H200 as fast as bands of 8 block rows in C, and faster in Numba); with 256
#: threads of 8x8 and 3 stages the other large-tile candidate, and 64x128 tiles for small grids
AT_DEFAULT_CONFIG = {"bm": 128, "bn": 128, "bk": 16, "tm": 8, "tn": 16, "stages": 2, "group": 1, "a_t": True}
AT_CONFIGS = (
    AT_DEFAULT_CONFIG,
    {"bm": 128, "bn": 128, "bk": 16, "tm": 8, "tn": 8, "stages": 3, "group": 8, "a_t": True},
    {"bm": 64, "bn": 128, "bk": 16, "tm": 8, "tn": 8, "stages": 3, "group": 8, "a_t": True},
)
SIM_AT_CONFIG = {**SIM_PIPE_CONFIG, "a_t": True}


_CONFIG, _AT_CONFIG = for_mode(SIM_PIPE_CONFIG, PIPE_DEFAULT_CONFIG), for_mode(SIM_AT_CONFIG, AT_DEFAULT_CONFIG)

register_matmul("matmul_pipelined", matmul_pipelined(**_CONFIG), matmul_case(lambda h, w: pipe_launch(_CONFIG, h, w)),
                "the flagship as a cp.async pipeline (A transposed by 4-byte copies, B by 16-byte ones), k-steps "
                "unrolled", constants=dict(_CONFIG), bench_sizes=FLAGSHIP_BENCH_SIZES, size_multiples={"w": 4},
                # w a multiple of 4 (the 16-byte groups of B and the output); h and k free, not multiples of any tile
                test_sizes=sizes("h k w", (33, 21, 44), (1, 1, 4), (17, 70, 36)),
                verify_sizes=sizes("h k w", (1, 1, 4), (33, 70, 44), (127, 131, 260), (256, 256, 256), (7, 1021, 4),
                                   (129, 9, 132), (509, 263, 384)))
register_matmul("matmul_pipelined_at", matmul_pipelined(**_AT_CONFIG),
                matmul_case(lambda h, w: pipe_launch(_AT_CONFIG, h, w), transposed=True),
                "out = mt.T @ n: the pipelined flagship on A^T given, both tiles in 16-byte cp.async copies, 8x16 "
                "outputs per thread", transposed=True, constants=dict(_AT_CONFIG), bench_sizes=FLAGSHIP_BENCH_SIZES,
                # matmul_flagship_async's sizes: h and w multiples of 4, k free
                size_multiples={"h": 4, "w": 4}, test_sizes=AT_TEST_SIZES, verify_sizes=AT_VERIFY_SIZES)
