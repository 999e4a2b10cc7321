"""Bugs planted in copies of the project's kernels, and what numbakern's simulator says about them.

Each planted kernel is the real one with one line changed (the comment says which). On a GPU such a kernel often
gives plausible numbers; the simulator stops at the first bad access and names it.
"""

import numpy as np
import pytest
from mykernels.histogram import BINS, BLOCK
from mykernels.stencil import PADDED, TILE
from numba import cuda

import numbakern.sim

pytestmark = pytest.mark.sim  # the checkers are the simulator's: skipped with pytest --gpu


@cuda.jit
def stencil5_no_barrier(src, dst):
    """``stencil5`` without its ``cuda.syncthreads()``: a thread reads its neighbours' cells before they are stored."""
    tile = cuda.shared.array((PADDED, PADDED), dtype=np.float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    h, w = src.shape
    col = cuda.blockIdx.x * TILE + tx
    row = cuda.blockIdx.y * TILE + ty
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
    # (the barrier was here)

    if row < h and col < w:
        total = tile[ty + 1, tx + 1] + tile[ty, tx + 1] + tile[ty + 2, tx + 1] + tile[ty + 1, tx] + tile[ty + 1, tx + 2]
        dst[row, col] = total * np.float32(0.2)


@cuda.jit
def stencil5_unclamped(src, dst):
    """``stencil5`` whose upper halo forgets the edge: ``src[r - 1, c]`` is ``src[-1, c]`` in the first row."""
    tile = cuda.shared.array((PADDED, PADDED), dtype=np.float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    h, w = src.shape
    col = cuda.blockIdx.x * TILE + tx
    row = cuda.blockIdx.y * TILE + ty
    r = min(row, h - 1)
    c = min(col, w - 1)

    tile[ty + 1, tx + 1] = src[r, c]
    if tx == 0:
        tile[ty + 1, 0] = src[r, max(c - 1, 0)]
    if tx == TILE - 1:
        tile[ty + 1, TILE + 1] = src[r, min(c + 1, w - 1)]
    if ty == 0:
        tile[0, tx + 1] = src[r - 1, c]
    if ty == TILE - 1:
        tile[TILE + 1, tx + 1] = src[min(r + 1, h - 1), c]
    cuda.syncthreads()

    if row < h and col < w:
        total = tile[ty + 1, tx + 1] + tile[ty, tx + 1] + tile[ty + 2, tx + 1] + tile[ty + 1, tx] + tile[ty + 1, tx + 2]
        dst[row, col] = total * np.float32(0.2)


@cuda.jit
def histogram_not_zeroed(data, hist):
    """``histogram`` without the loop that zeroes the block's private copy."""
    local = cuda.shared.array(BINS, dtype=np.int32)
    t = cuda.threadIdx.x
    cuda.syncthreads()

    for i in range(cuda.grid(1), data.shape[0], cuda.gridsize(1)):
        cuda.atomic.add(local, data[i], 1)
    cuda.syncthreads()

    for b in range(t, BINS, cuda.blockDim.x):
        if local[b] > 0:
            cuda.atomic.add(hist, b, local[b])


def image(h=40, w=40):
    return np.random.default_rng(0).random((h, w), dtype=np.float32)


def test_a_missing_barrier_is_a_race_between_a_store_and_a_read():
    src = image()
    with numbakern.sim.checks("all"), pytest.raises(numbakern.sim.RaceError) as caught:
        stencil5_no_barrier[(3, 3), (TILE, TILE)](src, np.empty_like(src))
    message = str(caught.value)
    assert "in kernel 'stencil5_no_barrier': shared array 'tile'" in message
    assert "touched by two threads with no syncthreads() between them" in message
    assert "read it at" in message and "total = tile[ty + 1, tx + 1]" in message
    assert "wrote it at" in message and "tile[ty + 1, tx + 1] = src[r, c]" in message


def test_a_negative_index_is_reported_not_wrapped():
    src = image()
    with numbakern.sim.checks("all"), pytest.raises(numbakern.sim.OutOfBoundsError) as caught:
        stencil5_unclamped[(3, 3), (TILE, TILE)](src, np.empty_like(src))
    message = str(caught.value)
    assert "'src'" in message and "-1" in message and "tile[0, tx + 1] = src[r - 1, c]" in message


def test_a_private_histogram_that_was_never_zeroed():
    data = np.random.default_rng(0).integers(0, 256, 3000, dtype=np.uint8)
    hist = np.zeros(BINS, dtype=np.int32)
    with numbakern.sim.checks("all"), pytest.raises(numbakern.sim.UninitializedReadError) as caught:
        histogram_not_zeroed[2, BLOCK](data, hist)
    assert "shared array 'local'" in str(caught.value) and "cuda.atomic.add(local, data[i], 1)" in str(caught.value)

