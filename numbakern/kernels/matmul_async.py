"""The flagship matmul fed by ``cp.async``: ``out = mt.T @ n`` with A given transposed.

``matmul_flagship`` stages each k-tile through registers: global loads into a register array, then stores into
shared memory (A transposed on the way, element by element). With A already transposed in global memory (``mt``,
k×h), both tiles are k-major rows, and a 16-byte ``cp.async`` copy (``numbakern.async_copy``) can put them straight
into the layout the 16-byte fragment reads want: no staging registers, no transposing stores, and the copy of
tile t+1 runs in the background while tile t is multiplied (two shared-memory stages). The thread tiles, the warp
layout and the register double buffering of the fragments are ``matmul_flagship``'s.

Preconditions (``async_ready``): h and w multiples of 4 and 16-byte aligned matrices (k is free). ``matmul_fast``
transposes A with numbakern's ``transpose`` kernel and uses this kernel when they hold.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..async_copy import async_commit, async_wait_all, copy_async4
from ..fastpath import jit_options, u32
from ..specialize import specialize
from .config import for_mode, sizes
from .flagship_config import FLAGSHIP_BENCH_SIZES, _check_config, _min_blocks, flagship_launch, thread_grid, vec_ready
from .matmul import matmul_case, register_matmul
from .tiles import multiply_tile, store_tile, thread_origin


def _check_async_config(bm: int, bn: int, bk: int, tm: int, tn: int) -> int:
    nt = _check_config(bm, bn, bk, tm, tn, vec=True)
    if (bk * bm // 4) % nt or (bk * bn // 4) % nt:
        raise ValueError(f"matmul_flagship_async: the {bk}x{bm} and {bk}x{bn} tiles must split evenly over {nt} "
                         "threads in 16-byte groups")
    return nt


@specialize
def matmul_flagship_async(bm: int = 128, bn: int = 128, bk: int = 16, tm: int = 8, tn: int = 8):
    """``out = mt.T @ n`` for one tile configuration; launch with ``flagship_launch`` (1-D blocks)."""
    nt = _check_async_config(bm, bn, bk, tm, tn)
    wx, wy, warps_x, gm, gn = thread_grid(bm, bn, tm, tn, 4, 4)
    a_cpr = bm // 4  # 16-byte chunks in a row of the A^T tile
    b_cpr = bn // 4
    la = bk * a_cpr // nt  # chunks of the A^T tile each thread copies
    lb = bk * b_cpr // nt
    tmn = tm * tn
    tm2 = 2 * tm  # two register fragments, for even and odd k-steps
    tn2 = 2 * tn
    tn_groups = tn // 4
    opts = jit_options(threads=nt, min_blocks=_min_blocks(nt, tm, tn))

    @cuda.jit(**opts)
    def matmul_flagship_async(mt, n, out):
        a_base, b_base = thread_origin(wx, wy, warps_x, 4, 4)
        row0 = cuda.blockIdx.y * bm
        col0 = cuda.blockIdx.x * bn
        k = mt.shape[0]
        h = mt.shape[1]
        w = n.shape[1]

        a_s = cuda.shared.array((2, bk, bm), dtype=np.float32, alignment=16)  # two stages of k-major tiles
        b_s = cuda.shared.array((2, bk, bn), dtype=np.float32, alignment=16)
        acc = cuda.local.array(tmn, dtype=np.float32)
        a_f = cuda.local.array(tm2, dtype=np.float32)  # fragments of the even k-step, then of the odd one
        b_f = cuda.local.array(tn2, dtype=np.float32)
        for i in range(tmn):
            acc[i] = np.float32(0.0)

        ntiles = (k + bk - 1) // bk
        # Iteration t multiplies k-tile t (stage t & 1) while tile t+1 is copied into the other stage; iteration -1
        # only starts the copy of tile 0.
        for t in range(-1, ntiles):
            if t >= 0:
                async_wait_all()  # this thread's copies of tile t have landed ...
                cuda.syncthreads()  # ... and everyone's; everyone is also done with tile t-1, whose stage is reused
            if t + 1 < ntiles:
                nxt = u32((t + 1) & 1)
                k0 = (t + 1) * bk
                copy_k_major(a_s, nxt, mt, k0, row0, k, h, la, nt, a_cpr)
                copy_k_major(b_s, nxt, n, k0, col0, k, w, lb, nt, b_cpr)
                async_commit()
            if t >= 0:
                multiply_tile(acc, a_f, b_f, a_s, b_s, t & 1, a_base, b_base, bk, tm, tn, 4, 4, gm, gn)

        store_tile(out, acc, row0 + a_base, col0 + b_base, h, w, tm, tn, 4, 4, tn_groups, gm, gn, True)

    return matmul_flagship_async


@cuda.jit(device=True, forceinline=True, fastmath=True)
def copy_k_major(tile, stage, src, k0, c0, k, cols, copies, threads, row_chunks):
    """A thread's 16-byte ``cp.async`` copies of a k-major tile of ``row_chunks`` chunks a row: chunk
    ``tid + i * threads`` (``i < copies``) is row r, floats c..c+3 of the tile, from ``src[k0 + r, c0 + c]``, zeros
    past ``k`` rows and ``cols`` columns (``cols`` a multiple of 4)."""
    tid = cuda.threadIdx.x
    for i in range(copies):
        r = u32((tid + i * threads) // row_chunks)
        c = u32((tid + i * threads) % row_chunks * 4)
        copy_async4(tile, (stage, r, c), src, (u32(k0 + r), u32(c0 + c)), k0 + r < k and c0 + c < cols)


def async_ready(a, b, out) -> bool:
    """True when ``a @ b`` may run as ``matmul_flagship_async`` after ``a`` is transposed into a fresh (aligned)
    buffer: h and w multiples of 4, ``b`` and ``out`` 16-byte ready (``vec_ready``)."""
    return vec_ready(b, out) and int(a.shape[0]) % 4 == 0


#: the default configuration (docs/performance.md: the hand CUDA C of this design, 2 stages, at 90-91% of cuBLAS)
ASYNC_CONFIG = {"bm": 128, "bn": 128, "bk": 16, "tm": 8, "tn": 8}
#: a small configuration for the simulator (64 threads; tiles that 36x70x44 does not divide)
SIM_ASYNC_CONFIG = {"bm": 32, "bn": 32, "bk": 8, "tm": 4, "tn": 4}
_CONFIG = for_mode(SIM_ASYNC_CONFIG, ASYNC_CONFIG)

#: h and w multiples of 4 (the 16-byte groups), k free; non-multiples of every tile size otherwise
TEST_SIZES = sizes("h k w", (36, 21, 44), (4, 1, 4), (12, 9, 36))
VERIFY_SIZES = sizes("h k w", (4, 1, 4), (36, 70, 44), (128, 131, 260), (256, 256, 256), (4, 1021, 8), (132, 9, 132),
                     (508, 263, 384))

register_matmul("matmul_flagship_async", matmul_flagship_async(**_CONFIG),
                matmul_case(lambda h, w: flagship_launch(_CONFIG, h, w), transposed=True),
                "out = mt.T @ n: the flagship's tiles fed by cp.async (two shared stages, no register staging)",
                transposed=True, constants=dict(_CONFIG), test_sizes=TEST_SIZES, verify_sizes=VERIFY_SIZES,
                bench_sizes=FLAGSHIP_BENCH_SIZES, size_multiples={"h": 4, "w": 4})


def matmul_via_async(a, b, out, config: dict | None = None, mt=None) -> None:
    """``out = a @ b`` with ``matmul_flagship_async``: ``a`` transposed by numbakern's ``transpose`` kernel into
    ``mt`` (a k×h scratch array; allocated like ``a`` when None), then the product. The caller checked
    ``async_ready(a, b, out)``."""
    from ..launch import empty_like_on
    from .transpose import transpose, transpose_launch

    config = config or dict(_CONFIG)
    h, k = int(a.shape[0]), int(a.shape[1])
    w = int(b.shape[1])
    if mt is None:
        mt = empty_like_on(a, (k, h), np.dtype(np.float32))
    if k:
        tcfg = transpose_launch(h, k)
        transpose[tcfg.grid, tcfg.block](a, mt)
    cfg = flagship_launch(config, h, w)
    matmul_flagship_async(**config)[cfg.grid, cfg.block](mt, b, out)
