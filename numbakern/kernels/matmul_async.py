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
from ..registry import Case, KernelSpec, register
from ..specialize import specialize
from ..vector_io import vstore4
from .flagship_config import FLAGSHIP_BENCH_SIZES, _check_config, _min_blocks, _warp_layout, flagship_launch, vec_ready
from .matmul import MATRIX, _work


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
    tx_count = bn // tn
    ty_count = bm // tm
    wx, wy = _warp_layout(tx_count, ty_count)
    wxy = wx * wy
    warps_x = tx_count // wx
    gm = bm // (tm // 4)  # distance between a thread's groups of 4 rows
    gn = bn // (tn // 4)
    a_cpr = bm // 4  # 16-byte chunks in a row of the A^T tile
    b_cpr = bn // 4
    la = bk * a_cpr // nt  # chunks of the A^T tile each thread copies
    lb = bk * b_cpr // nt
    tmn = tm * tn
    nk2 = bk // 2  # k-steps go in pairs (two register fragments)
    tn_groups = tn // 4
    opts = jit_options(threads=nt, min_blocks=_min_blocks(nt, tm, tn))

    @cuda.jit(**opts)
    def matmul_flagship_async(mt, n, out):
        tid = cuda.threadIdx.x
        wq = tid // wxy
        lq = tid % wxy
        a_base = u32((wq // warps_x * wy + lq // wx) * 4)  # first of this thread's rows in the block tile
        b_base = u32((wq % warps_x * wx + lq % wx) * 4)  # first of its columns
        row0 = cuda.blockIdx.y * bm
        col0 = cuda.blockIdx.x * bn
        k = mt.shape[0]
        h = mt.shape[1]
        w = n.shape[1]

        a_s = cuda.shared.array((2, bk, bm), dtype=np.float32, alignment=16)  # two stages of k-major tiles
        b_s = cuda.shared.array((2, bk, bn), dtype=np.float32, alignment=16)
        acc = cuda.local.array(tmn, dtype=np.float32)
        a_f0 = cuda.local.array(tm, dtype=np.float32)  # fragments of the even k-step
        b_f0 = cuda.local.array(tn, dtype=np.float32)
        a_f1 = cuda.local.array(tm, dtype=np.float32)  # and of the odd one
        b_f1 = cuda.local.array(tn, dtype=np.float32)
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
                for i in range(la):  # chunk tid + i * nt of the A^T tile: row ra, columns ca..ca+3
                    ra = u32((tid + i * nt) // a_cpr)
                    ca = u32((tid + i * nt) % a_cpr * 4)
                    copy_async4(a_s, (nxt, ra, ca), mt, (u32(k0 + ra), u32(row0 + ca)), k0 + ra < k and row0 + ca < h)
                for i in range(lb):
                    rb = u32((tid + i * nt) // b_cpr)
                    cb = u32((tid + i * nt) % b_cpr * 4)
                    copy_async4(b_s, (nxt, rb, cb), n, (u32(k0 + rb), u32(col0 + cb)), k0 + rb < k and col0 + cb < w)
                async_commit()
            if t >= 0:
                cur = t & 1
                for i in range(tm):
                    a_f0[i] = a_s[cur, 0, a_base + ((i // 4) * gm + i % 4)]
                for j in range(tn):
                    b_f0[j] = b_s[cur, 0, b_base + ((j // 4) * gn + j % 4)]
                for k2 in range(u32(nk2)):
                    kk = k2 * u32(2)
                    for i in range(tm):
                        a_f1[i] = a_s[cur, kk + 1, a_base + ((i // 4) * gm + i % 4)]
                    for j in range(tn):
                        b_f1[j] = b_s[cur, kk + 1, b_base + ((j // 4) * gn + j % 4)]
                    for i in range(tm):
                        for j in range(tn):
                            acc[i * tn + j] += a_f0[i] * b_f0[j]
                    if kk + 2 < bk:
                        for i in range(tm):
                            a_f0[i] = a_s[cur, kk + 2, a_base + ((i // 4) * gm + i % 4)]
                        for j in range(tn):
                            b_f0[j] = b_s[cur, kk + 2, b_base + ((j // 4) * gn + j % 4)]
                    for i in range(tm):
                        for j in range(tn):
                            acc[i * tn + j] += a_f1[i] * b_f1[j]

        for i in range(tm):
            r = row0 + a_base + ((i // 4) * gm + i % 4)
            if r < h:
                for g in range(tn_groups):
                    c = col0 + b_base + g * gn
                    if c < w:  # (w % 4 == 0: the whole group is inside)
                        vstore4(out, (u32(r), u32(c)), acc, i * tn + g * 4)

    return matmul_flagship_async


def async_ready(a, b, out) -> bool:
    """True when ``a @ b`` may run as ``matmul_flagship_async`` after ``a`` is transposed into a fresh (aligned)
    buffer: h and w multiples of 4, ``b`` and ``out`` 16-byte ready (``vec_ready``)."""
    return vec_ready(b, out) and int(a.shape[0]) % 4 == 0


#: the default configuration (docs/performance.md: the hand CUDA C of this design, 2 stages, at 90-91% of cuBLAS)
ASYNC_CONFIG = {"bm": 128, "bn": 128, "bk": 16, "tm": 8, "tn": 8}
#: a small configuration for the simulator (64 threads; tiles that 36x70x44 does not divide)
SIM_ASYNC_CONFIG = {"bm": 32, "bn": 32, "bk": 8, "tm": 4, "tn": 4}


def registered_async_config() -> dict:
    from .. import mode

    return dict(SIM_ASYNC_CONFIG if mode.in_simulator() else ASYNC_CONFIG)


def _case(size, rng, dist="uniform"):
    from ..registry import random_array

    h, k, w = size["h"], size["k"], size["w"]
    mt = random_array(rng, (k, h), np.float32, dist)
    n = random_array(rng, (k, w), np.float32, dist)
    out = np.full((h, w), np.nan, dtype=np.float32)
    return Case((mt, n, out), flagship_launch(registered_async_config(), h, w), dict(size))


def _reference(mt, n, out, *_):
    return {2: mt.T.astype(np.float64) @ n.astype(np.float64)}


def _error_scale(mt, n, out, *_):
    return {2: np.abs(mt.T.astype(np.float64)) @ np.abs(n.astype(np.float64))}


#: h and w multiples of 4 (the 16-byte groups), k free; non-multiples of every tile size otherwise
TEST_SIZES = ({"h": 36, "k": 21, "w": 44}, {"h": 4, "k": 1, "w": 4}, {"h": 12, "k": 9, "w": 36})
VERIFY_SIZES = (
    {"h": 4, "k": 1, "w": 4},
    {"h": 36, "k": 70, "w": 44},
    {"h": 128, "k": 131, "w": 260},
    {"h": 256, "k": 256, "w": 256},
    {"h": 4, "k": 1021, "w": 8},
    {"h": 132, "k": 9, "w": 132},
    {"h": 508, "k": 263, "w": 384},
)

register(KernelSpec(
    name="matmul_flagship_async",
    family="matmul",
    kernel=matmul_flagship_async(**registered_async_config()),
    signatures=(f"void({MATRIX}, {MATRIX}, {MATRIX})",),
    make_case=_case,
    reference=_reference,
    error_scale=_error_scale,
    outputs=(2,),
    work=_work,
    constants=registered_async_config(),
    test_sizes=TEST_SIZES,
    verify_sizes=VERIFY_SIZES,
    bench_sizes=FLAGSHIP_BENCH_SIZES,
    size_multiples={"h": 4, "w": 4},
    description="out = mt.T @ n: the flagship's tiles fed by cp.async (two shared stages, no register staging)",
))


def matmul_via_async(a, b, out, config: dict | None = None, mt=None) -> None:
    """``out = a @ b`` with ``matmul_flagship_async``: ``a`` transposed by numbakern's ``transpose`` kernel into
    ``mt`` (a k×h scratch array; allocated like ``a`` when None), then the product. The caller checked
    ``async_ready(a, b, out)``."""
    from ..launch import empty_like_on
    from .transpose import ROWS, TILE, transpose

    config = config or registered_async_config()
    h, k = int(a.shape[0]), int(a.shape[1])
    w = int(b.shape[1])
    if mt is None:
        mt = empty_like_on(a, (k, h), np.dtype(np.float32))
    if k:
        transpose[(max(1, -(-k // TILE)), max(1, -(-h // TILE))), (TILE, ROWS)](a, mt)
    cfg = flagship_launch(config, h, w)
    matmul_flagship_async(**config)[cfg.grid, cfg.block](mt, b, out)
