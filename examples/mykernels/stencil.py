"""A 2-D five-point stencil: each block stages its tile of the image, plus a one-cell halo, in shared memory."""

import numpy as np
from numba import cuda

import numbakern

TILE = 16
# the tile and its halo: one extra cell on each side (a module constant: numba sizes shared arrays only from
# constants, not from expressions such as TILE + 2)
PADDED = TILE + 2


@cuda.jit
def stencil5(src, dst):
    """dst[r, c] = mean of src[r, c] and its four neighbours; cells past the image edge repeat the edge."""
    tile = cuda.shared.array((PADDED, PADDED), dtype=np.float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    h, w = src.shape
    col = cuda.blockIdx.x * TILE + tx
    row = cuda.blockIdx.y * TILE + ty
    # threads past the edge load the edge cell too, so that every cell of the tile is written
    r = min(row, h - 1)
    c = min(col, w - 1)

    tile[ty + 1, tx + 1] = src[r, c]
    if tx == 0:
        tile[ty + 1, 0] = src[r, max(c - 1, 0)]
    if tx == TILE - 1:
        tile[ty + 1, TILE + 1] = src[r, min(c + 1, w - 1)]
    if ty == 0:
        tile[0, tx + 1] = src[max(r - 1, 0), c]
    if ty == TILE - 1:
        tile[TILE + 1, tx + 1] = src[min(r + 1, h - 1), c]
    cuda.syncthreads()

    if row < h and col < w:
        total = tile[ty + 1, tx + 1] + tile[ty, tx + 1] + tile[ty + 2, tx + 1] + tile[ty + 1, tx] + tile[ty + 1, tx + 2]
        dst[row, col] = total * np.float32(0.2)


def stencil_args(rand, h=4096, w=4096):
    src = rand((h, w), np.float32)
    return src, np.empty_like(src)


def _neighbours(src):
    p = np.pad(src.astype(np.float64), 1, mode="edge")
    return p[1:-1, 1:-1], p[:-2, 1:-1], p[2:, 1:-1], p[1:-1, :-2], p[1:-1, 2:]


def stencil_reference(src, dst):
    return sum(_neighbours(src)) / 5


def stencil_error_scale(src, dst):
    # the five-term float32 sum rounds relative to the sum of the terms' magnitudes, not to the (cancelling) result
    return sum(np.abs(n) for n in _neighbours(src)) / 5


numbakern.declare(
    stencil5,
    args=stencil_args,
    launch=lambda src, dst: numbakern.LaunchConfig(
        (numbakern.cdiv(src.shape[1], TILE), numbakern.cdiv(src.shape[0], TILE)), (TILE, TILE)),
    reference=stencil_reference,
    error_scale=stencil_error_scale,
    rtol=1e-6,
    work=lambda h, w: numbakern.Work(flops=5.0 * h * w, bytes=8.0 * h * w),
)
