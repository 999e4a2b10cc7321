"""``async_wait(n)``: cp.async commit groups, the oldest land first; ``copy_async`` (4 bytes, transposing) and
flat source offsets. In the simulator (which models the groups) and on a GPU with ``pytest --gpu``."""

import numpy as np
import pytest
from numba import cuda

from numbakern import mode
from numbakern.async_copy import async_commit, async_wait, copy_async, copy_async4


@cuda.jit
def two_groups(src, out):
    # group 1: row 0 of src; group 2: row 1, as a flat offset; after async_wait(1) only group 1 must have landed
    t = cuda.threadIdx.x
    tile = cuda.shared.array((2, 16), dtype=np.float32, alignment=16)
    for q in range(4):
        tile[0, t * 4 + q] = np.float32(-1.0)
        tile[1, t * 4 + q] = np.float32(-1.0)
    cuda.syncthreads()
    copy_async4(tile, (0, t * 4), src, (0, t * 4), True)
    async_commit()
    copy_async4(tile, (1, t * 4), src, 16 + t * 4, True)
    async_commit()
    async_wait(1)
    for q in range(4):
        out[0, t * 4 + q] = tile[0, t * 4 + q]
        out[2, t * 4 + q] = tile[1, t * 4 + q]  # this thread's group 2: may still be in flight on a GPU
    async_wait(0)
    for q in range(4):
        out[1, t * 4 + q] = tile[1, t * 4 + q]


@cuda.jit
def transpose_in(src, out):
    # one float per copy, transposed on its way into shared memory; rows past the end zero-filled
    r = cuda.threadIdx.y
    c = cuda.threadIdx.x
    tile = cuda.shared.array((8, 8), dtype=np.float32)
    copy_async(tile, (c, r), src, (r, c), r < src.shape[0] and c < src.shape[1])
    async_commit()
    async_wait(0)
    cuda.syncthreads()
    out[r, c] = tile[r, c]


def _run(kernel, grid, block, *arrays):
    if mode.in_simulator():
        kernel[grid, block](*arrays)
        return arrays[-1]
    d = [cuda.to_device(a) for a in arrays]
    kernel[grid, block](*d)
    return d[-1].copy_to_host()


def test_the_oldest_group_lands_first(rng):
    src = rng.standard_normal((2, 16)).astype(np.float32)
    out = _run(two_groups, 1, 4, src, np.zeros((3, 16), np.float32))
    np.testing.assert_array_equal(out[0], src[0])
    np.testing.assert_array_equal(out[1], src[1])


@pytest.mark.sim
def test_a_group_not_waited_for_has_not_landed_in_the_simulator(rng):
    src = rng.standard_normal((2, 16)).astype(np.float32)
    out = _run(two_groups, 1, 4, src, np.zeros((3, 16), np.float32))
    np.testing.assert_array_equal(out[2], -1.0)  # on a GPU this read races with the copy


def test_copy_async_transposes_and_zero_fills(rng):
    src = rng.standard_normal((5, 7)).astype(np.float32)
    out = _run(transpose_in, 1, (8, 8), src, np.full((8, 8), np.nan, np.float32))
    expected = np.zeros((8, 8), np.float32)
    expected[:7, :5] = src.T
    np.testing.assert_array_equal(out, expected)
