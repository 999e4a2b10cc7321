"""The building blocks the library kernels share (``numbakern.kernels.tiles`` and friends): their layouts against
independent host arithmetic, in the simulator, and their C: inlined by force, with the caller's tiles and registers."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from numbakern.kernels.tiles import block_tile, swizzled


@cuda.jit
def _offsets(out, per_line, row_chunks, chunk):
    r, c = cuda.grid(2)
    if r < out.shape[0] and c < out.shape[1]:
        out[r, c] = swizzled(r, c, per_line, row_chunks, chunk)


@pytest.mark.parametrize("row_chunks, chunk", [(4, 8), (8, 8), (16, 8), (4, 4), (32, 4)])
def test_swizzled_chunks_fill_the_tile_and_eight_rows_hit_eight_bank_groups(row_chunks, chunk):
    """Every chunk of a tile gets its own 16-byte slot (no padding, nothing shared), and the chunks that eight
    consecutive rows keep at one column (an ldmatrix phase, a warp's copies) lie in eight different bank groups."""
    rows = 32
    per_line = max(1, 8 // row_chunks)
    out = np.full((rows, row_chunks), -1, np.int64)
    _offsets[(2, 2), (16, 16)](out, per_line, row_chunks, chunk)
    slots = out // chunk
    assert (out % chunk == 0).all() and sorted(slots.ravel()) == list(range(rows * row_chunks))
    for r0 in range(0, rows, 8):
        for c in range(row_chunks):
            assert len(set(slots[r0:r0 + 8, c] % 8)) == 8, (r0, c)


@cuda.jit
def _origins(out, group):
    i = cuda.blockIdx.y * cuda.gridDim.x + cuda.blockIdx.x
    row0, col0 = block_tile(group, 3, 5)
    out[i, 0] = row0
    out[i, 1] = col0


@pytest.mark.parametrize("grid, group", [((4, 7), 1), ((4, 7), 3), ((5, 8), 8), ((3, 2), 4)])
def test_block_tiles_cover_the_grid_once_in_bands_of_group_rows(grid, group):
    """Each block gets its own tile; with ``group`` > 1 consecutive blocks walk down a band of ``group`` tile rows
    (fewer in the last band) before the next column, as Triton's grouped order."""
    gx, gy = grid
    out = np.full((gx * gy, 2), -1, np.int64)
    _origins[grid, 1](out, group)
    tiles = [(r // 3, c // 5) for r, c in out]
    assert sorted(tiles) == sorted((r, c) for r in range(gy) for c in range(gx))
    expected = []
    for first in range(0, gy, group):  # the bands, each walked column by column
        rows = min(group, gy - first)
        expected += [(first + r, c) for c in range(gx) for r in range(rows)]
    assert tiles == (expected if group > 1 else [(r, c) for r in range(gy) for c in range(gx)])


def test_the_building_blocks_are_forceinline_device_functions_in_the_c():
    """matmul_bf16 composes tiles' functions: in its C they are ``__device__ __forceinline__`` functions under their
    own names, taking the kernel's shared tiles and registers (the cp.async and mma helpers on parameters), and the
    file compiles."""
    from translate.api import translate_kernel

    result = translate_kernel("matmul_bf16", write=False)
    for name in ("block_tile", "swizzled", "copy_chunks", "fill_stage", "store_accumulators"):
        assert f"__device__ __forceinline__ void {name}(" in result.code or \
            f"__device__ __forceinline__ uint32_t {name}(" in result.code, name
    assert "nk_copy_async16(&dst[" in result.code
    assert result.compile["ok"], result.compile.get("log")
