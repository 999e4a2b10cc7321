"""The lecture's lessons, as launches docs/profiling.md profiles (and ``scripts/profile_ncu.py`` measures on a GPU).

Three pairs, each a kernel with the mistake and one without: the naive matmul with ``threadIdx.x`` along the rows
(uncoalesced) and along the columns, against the tiled one; a transpose through an unpadded 32 x 32 tile (bank
conflicts) and through the library's padded one; a reduction whose active threads are spread over every warp
(divergent) and one that reduces within warps by shuffles. The library's kernels are used where it has them; the
others are here. They are not registered kernels: nothing translates or verifies them.

``LESSONS`` maps a name to ``(kernel, case maker)``; a case maker takes a seeded generator and returns a registry
``Case`` (arguments and launch) at the size the docs use.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..kernels import matmul, transpose
from ..kernels.reduce import block_sum
from ..launch import LaunchConfig, cdiv, launch_config
from ..registry import Case, random_array

TILE = transpose.TILE
ROWS = transpose.ROWS
BLOCK = 256
WARP = 32
WARPS = BLOCK // WARP  # (numba sizes shared arrays by constants only, not by expressions of them)
FULL_MASK = 0xFFFFFFFF
MATMUL = 256  # h = k = w of the matmul lessons
TRANSPOSE = 2048  # h = w
REDUCE = 1 << 22  # elements


@cuda.jit
def matmul_naive_rows(m, n, out):
    """The naive matmul with ``threadIdx.x`` along the rows: a warp reads a column of ``m`` (32 rows apart) and
    writes a column of ``out``: each lane's access needs a sector of its own."""
    r, c = cuda.grid(2)
    h, k = m.shape
    w = n.shape[1]
    if r < h and c < w:
        acc = np.float32(0.0)
        for i in range(k):
            acc += m[r, i] * n[i, c]
        out[r, c] = acc


@cuda.jit
def transpose_unpadded(src, dst):
    """``transpose`` with a 32 x 32 tile: reading a column of it, all 32 lanes hit the same bank."""
    tile = cuda.shared.array((TILE, TILE), dtype=np.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    h, w = src.shape
    col = cuda.blockIdx.x * TILE + tx
    row = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, ROWS):
        if row + j < h and col < w:
            tile[ty + j, tx] = src[row + j, col]
    cuda.syncthreads()
    col = cuda.blockIdx.y * TILE + tx
    row = cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, ROWS):
        if row + j < w and col < h:
            dst[row + j, col] = tile[tx, ty + j]


@cuda.jit
def reduce_divergent(x, out):
    """``out[0] += sum(x)``, the textbook first try: at each step the threads whose index is a multiple of twice the
    stride add, so every warp keeps a few active lanes until the end."""
    partial = cuda.shared.array(BLOCK, dtype=np.float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    partial[tid] = x[i] if i < x.shape[0] else np.float32(0.0)
    cuda.syncthreads()
    stride = 1
    while stride < BLOCK:
        if tid % (2 * stride) == 0:
            partial[tid] += partial[tid + stride]
        cuda.syncthreads()
        stride *= 2
    if tid == 0:
        cuda.atomic.add(out, 0, partial[0])


@cuda.jit
def reduce_shuffle(x, out):
    """``out[0] += sum(x)``: each warp sums its 32 values with shuffles, one value per warp goes through shared
    memory, and the first warp sums those."""
    sums = cuda.shared.array(WARPS, dtype=np.float32)
    tid = cuda.threadIdx.x
    lane = tid % WARP
    i = cuda.grid(1)
    v = x[i] if i < x.shape[0] else np.float32(0.0)
    offset = WARP // 2
    while offset > 0:
        v += cuda.shfl_down_sync(FULL_MASK, v, offset)
        offset //= 2
    if lane == 0:
        sums[tid // WARP] = v
    cuda.syncthreads()
    if tid < WARP:
        v = sums[lane] if lane < WARPS else np.float32(0.0)
        offset = WARP // 2
        while offset > 0:
            v += cuda.shfl_down_sync(FULL_MASK, v, offset)
            offset //= 2
        if lane == 0:
            cuda.atomic.add(out, 0, v)


def _matmul(rng, tiled: bool) -> Case:
    a = random_array(rng, (MATMUL, MATMUL), np.float32)
    b = random_array(rng, (MATMUL, MATMUL), np.float32)
    out = np.zeros((MATMUL, MATMUL), np.float32)
    tw = matmul.TILE_WIDTH
    grid = (cdiv(MATMUL, tw), cdiv(MATMUL, tw))
    if tiled:
        return Case((a, b, out, tw), LaunchConfig(grid, (tw, tw), 2 * tw * tw * 4), {"n": MATMUL})
    return Case((a, b, out), LaunchConfig(grid, (tw, tw)), {"n": MATMUL})


def _transpose(rng) -> Case:
    src = random_array(rng, (TRANSPOSE, TRANSPOSE), np.float32)
    dst = np.zeros((TRANSPOSE, TRANSPOSE), np.float32)
    grid = (cdiv(TRANSPOSE, TILE), cdiv(TRANSPOSE, TILE))
    return Case((src, dst), LaunchConfig(grid, (TILE, ROWS)), {"n": TRANSPOSE})


def _reduce(rng) -> Case:
    x = random_array(rng, (REDUCE,), np.float32)
    return Case((x, np.zeros(1, np.float32)), launch_config(REDUCE, BLOCK), {"n": REDUCE})


#: lesson -> (the kernel, its case); in the order docs/profiling.md shows them
LESSONS = {
    "matmul_naive_rows": (matmul_naive_rows, lambda rng: _matmul(rng, False)),
    "matmul_naive": (matmul.matmul_naive, lambda rng: _matmul(rng, False)),
    "matmul_tiled": (matmul.matmul_tiled, lambda rng: _matmul(rng, True)),
    "transpose_unpadded": (transpose_unpadded, _transpose),
    "transpose": (transpose.transpose, _transpose),
    "reduce_divergent": (reduce_divergent, _reduce),
    "block_sum": (block_sum, _reduce),
    "reduce_shuffle": (reduce_shuffle, _reduce),
}
