"""Matrix transpose through a shared-memory tile, padded by one column against bank conflicts."""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..fastpath import u32
from ..launch import LaunchConfig, cdiv
from ..registry import Case, KernelSpec, Work, random_array, register

#: the tile is TILE×TILE elements; each block has TILE×ROWS threads, so each thread moves TILE/ROWS elements
TILE = 32
ROWS = 8
# TILE + 1 columns: a column of the tile then spans all 32 banks instead of hitting one. (A module constant,
# because numba sizes shared arrays only from constants, not from expressions such as TILE + 1.)
TILE_PADDED = TILE + 1


@cuda.jit
def transpose(src, dst):
    """``dst = src.T``: reads rows of a tile and writes them as columns, both coalesced."""
    tile = cuda.shared.array((TILE, TILE_PADDED), dtype=np.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    h, w = src.shape

    # unsigned subscripts (numbakern.fastpath.u32): no negative-index wraparound selects in numba's code
    col = cuda.blockIdx.x * TILE + tx
    row = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, ROWS):
        if row + j < h and col < w:
            tile[u32(ty + j), u32(tx)] = src[u32(row + j), u32(col)]
    cuda.syncthreads()

    col = cuda.blockIdx.y * TILE + tx
    row = cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, ROWS):
        if row + j < w and col < h:
            dst[u32(row + j), u32(col)] = tile[u32(tx), u32(ty + j)]


def transpose_launch(h: int, w: int) -> LaunchConfig:
    """The launch for an ``h``×``w`` ``src``: one block per TILE×TILE tile, but only TILE×ROWS threads in it."""
    return LaunchConfig((max(1, cdiv(w, TILE)), max(1, cdiv(h, TILE))), (TILE, ROWS))


def _case(size, rng, dist="uniform"):
    h, w = size["h"], size["w"]
    src = random_array(rng, (h, w), np.float32, dist)
    dst = np.full((w, h), np.nan, dtype=np.float32)
    return Case((src, dst), transpose_launch(h, w), dict(size))


register(KernelSpec(
    name="transpose",
    family="transpose",
    kernel=transpose,
    signatures=("void(float32[:, ::1], float32[:, ::1])",),
    make_case=_case,
    reference=lambda src, dst: {1: src.T.copy()},
    outputs=(1,),
    rtol=0.0,  # a transpose moves values, it computes nothing: exact
    test_sizes=({"h": 1, "w": 1}, {"h": 33, "w": 70}, {"h": 40, "w": 9}),
    verify_sizes=({"h": 1, "w": 1}, {"h": 33, "w": 70}, {"h": 1021, "w": 257}, {"h": 4096, "w": 4096}),
    bench_sizes=({"h": 8192, "w": 8192},),
    work=lambda size: Work(bytes=8.0 * size["h"] * size["w"]),
    description="tiled transpose, static 2-D shared tile padded against bank conflicts",
))
