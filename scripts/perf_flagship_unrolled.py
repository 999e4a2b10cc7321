"""Experiment (docs/performance.md, round 3): the flagship with its bk=8 k-steps written out as straight-line code
instead of the rolled ``for k2 in range(bk // 2)`` loop that NVVM leaves rolled. Generated from
numbakern/kernels/matmul_fast.py by text substitution; time it with
``python scripts/perf_flagship_variants.py --baseline scripts/perf_flagship_unrolled.py``.
"""
import numpy as np
from numba import cuda
from numbakern.fastpath import jit_options, u32
from numbakern.specialize import specialize
from numbakern.kernels.matmul_fast import _check_config, _min_blocks, _warp_layout


@specialize
def matmul_flagship(bm: int = 128, bn: int = 128, bk: int = 8, tm: int = 8, tn: int = 8):
    """The flagship kernel for one tile configuration; launch with ``flagship_launch`` (1-D blocks)."""
    nt = _check_config(bm, bn, bk, tm, tn)
    assert bk == 8, "the straight-line k-steps are written for bk=8"
    tx_count = bn // tn  # threads along a row of the block tile
    ty_count = bm // tm
    wx, wy = _warp_layout(tx_count, ty_count)  # a warp is a wy x wx patch of the thread grid
    wxy = wx * wy
    warps_x = tx_count // wx
    vm = min(4, tm)  # rows per group of consecutive rows a thread owns
    vn = min(4, tn)
    gm = bm // (tm // vm)  # distance between a thread's groups of rows
    gn = bn // (tn // vn)
    la = (bm * bk) // nt  # elements of the A tile each thread loads
    lb = (bk * bn) // nt
    pa = bm + 4 if bm % 32 == 0 else bm  # padded row of the transposed A tile: no bank conflicts on the store
    la_step = nt // bk  # rows of the A tile that one pass of all threads loads
    lb_step = nt // bn
    tmn = tm * tn  # (a local array's shape must be a constant, not an expression)
    nk2 = bk // 2  # k-steps go in pairs (two register fragments)
    # launch_bounds(256, 2): at most 128 registers, so two 256-thread blocks share a multiprocessor (without the 2,
    # ptxas spends 147 registers on the double-buffered fragments of an 8x8 tile and only one block fits). Smaller
    # blocks, and per-thread tiles larger than 8x8 (128 accumulators alone), are left uncapped: they would spill.
    opts = jit_options(threads=nt, min_blocks=_min_blocks(nt, tm, tn))

    @cuda.jit(**opts)
    def matmul_flagship(m, n, out):
        tid = cuda.threadIdx.x
        wq = tid // wxy  # warp (patch) index
        lq = tid % wxy  # lane within the patch
        # Per-thread offsets, cast to uint32 once: an index "u32(base) + constant" is provably non-negative (no
        # wraparound select) and the constant folds into the load's immediate offset.
        a_base = u32((wq // warps_x * wy + lq // wx) * vm)  # first of this thread's rows in the block tile
        b_base = u32((wq % warps_x * wx + lq % wx) * vn)  # first of its columns
        la_r = u32(tid // bk)  # the A-tile element this thread loads: row la_r + i * la_step, column la_c
        la_c = u32(tid % bk)
        lb_r = u32(tid // bn)  # the B-tile element: row lb_r + i * lb_step, column lb_c
        lb_c = u32(tid % bn)
        row0 = cuda.blockIdx.y * bm
        col0 = cuda.blockIdx.x * bn
        h = m.shape[0]
        k = m.shape[1]
        w = n.shape[1]

        a_s = cuda.shared.array((2, bk, pa), dtype=np.float32, alignment=16)
        b_s = cuda.shared.array((2, bk, bn), dtype=np.float32, alignment=16)
        acc = cuda.local.array(tmn, dtype=np.float32)
        a_f0 = cuda.local.array(tm, dtype=np.float32)  # fragments of the even k-step
        b_f0 = cuda.local.array(tn, dtype=np.float32)
        a_f1 = cuda.local.array(tm, dtype=np.float32)  # and of the odd one
        b_f1 = cuda.local.array(tn, dtype=np.float32)
        a_ld = cuda.local.array(la, dtype=np.float32)
        b_ld = cuda.local.array(lb, dtype=np.float32)
        for i in range(tmn):
            acc[i] = np.float32(0.0)

        ntiles = (k + bk - 1) // bk
        # k-tile 0: global -> registers -> shared buffer 0
        for i in range(la):
            gr = row0 + la_r + i * la_step
            if gr < h and la_c < k:
                a_ld[i] = m[u32(gr), la_c]
            else:
                a_ld[i] = np.float32(0.0)
        for i in range(lb):
            gc = col0 + lb_c
            if lb_r + i * lb_step < k and gc < w:
                b_ld[i] = n[lb_r + i * lb_step, u32(gc)]
            else:
                b_ld[i] = np.float32(0.0)
        for i in range(la):
            a_s[0, la_c, la_r + i * la_step] = a_ld[i]
        for i in range(lb):
            b_s[0, lb_r + i * lb_step, lb_c] = b_ld[i]
        cuda.syncthreads()

        for t in range(ntiles):
            cur = t & 1
            k_next = (t + 1) * bk
            more = t + 1 < ntiles
            if more:  # issue the next tile's global loads before the math, so they are in flight during it
                for i in range(la):
                    gr = row0 + la_r + i * la_step
                    gk = k_next + la_c
                    if gr < h and gk < k:
                        a_ld[i] = m[u32(gr), u32(gk)]
                    else:
                        a_ld[i] = np.float32(0.0)
                for i in range(lb):
                    gk = k_next + lb_r + i * lb_step
                    gc = col0 + lb_c
                    if gk < k and gc < w:
                        b_ld[i] = n[u32(gk), u32(gc)]
                    else:
                        b_ld[i] = np.float32(0.0)
            # Fragments double-buffered in registers: step kk+1's shared loads are in flight during step kk's
            # multiply-adds. NVVM does not unroll this loop (its body is too large), so the two steps are spelled out.
            for i in range(tm):
                a_f0[i] = a_s[cur, 0, a_base + ((i // vm) * gm + i % vm)]
            for j in range(tn):
                b_f0[j] = b_s[cur, 0, b_base + ((j // vn) * gn + j % vn)]
            for i in range(tm):
                a_f1[i] = a_s[cur, 1, a_base + ((i // vm) * gm + i % vm)]
            for j in range(tn):
                b_f1[j] = b_s[cur, 1, b_base + ((j // vn) * gn + j % vn)]
            for i in range(tm):
                for j in range(tn):
                    acc[i * tn + j] += a_f0[i] * b_f0[j]
            for i in range(tm):
                a_f0[i] = a_s[cur, 2, a_base + ((i // vm) * gm + i % vm)]
            for j in range(tn):
                b_f0[j] = b_s[cur, 2, b_base + ((j // vn) * gn + j % vn)]
            for i in range(tm):
                for j in range(tn):
                    acc[i * tn + j] += a_f1[i] * b_f1[j]
            for i in range(tm):
                a_f1[i] = a_s[cur, 3, a_base + ((i // vm) * gm + i % vm)]
            for j in range(tn):
                b_f1[j] = b_s[cur, 3, b_base + ((j // vn) * gn + j % vn)]
            for i in range(tm):
                for j in range(tn):
                    acc[i * tn + j] += a_f0[i] * b_f0[j]
            for i in range(tm):
                a_f0[i] = a_s[cur, 4, a_base + ((i // vm) * gm + i % vm)]
            for j in range(tn):
                b_f0[j] = b_s[cur, 4, b_base + ((j // vn) * gn + j % vn)]
            for i in range(tm):
                for j in range(tn):
                    acc[i * tn + j] += a_f1[i] * b_f1[j]
            for i in range(tm):
                a_f1[i] = a_s[cur, 5, a_base + ((i // vm) * gm + i % vm)]
            for j in range(tn):
                b_f1[j] = b_s[cur, 5, b_base + ((j // vn) * gn + j % vn)]
            for i in range(tm):
                for j in range(tn):
                    acc[i * tn + j] += a_f0[i] * b_f0[j]
            for i in range(tm):
                a_f0[i] = a_s[cur, 6, a_base + ((i // vm) * gm + i % vm)]
            for j in range(tn):
                b_f0[j] = b_s[cur, 6, b_base + ((j // vn) * gn + j % vn)]
            for i in range(tm):
                for j in range(tn):
                    acc[i * tn + j] += a_f1[i] * b_f1[j]
            for i in range(tm):
                a_f1[i] = a_s[cur, 7, a_base + ((i // vm) * gm + i % vm)]
            for j in range(tn):
                b_f1[j] = b_s[cur, 7, b_base + ((j // vn) * gn + j % vn)]
            for i in range(tm):
                for j in range(tn):
                    acc[i * tn + j] += a_f0[i] * b_f0[j]
            for i in range(tm):
                for j in range(tn):
                    acc[i * tn + j] += a_f1[i] * b_f1[j]
            if more:
                nxt = cur ^ 1
                for i in range(la):
                    a_s[nxt, la_c, la_r + i * la_step] = a_ld[i]
                for i in range(lb):
                    b_s[nxt, lb_r + i * lb_step, lb_c] = b_ld[i]
            cuda.syncthreads()

        for i in range(tm):
            r = row0 + a_base + ((i // vm) * gm + i % vm)
            if r < h:
                for j in range(tn):
                    c = col0 + b_base + ((j // vn) * gn + j % vn)
                    if c < w:
                        out[u32(r), u32(c)] = acc[i * tn + j]

    return matmul_flagship
