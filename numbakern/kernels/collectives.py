"""Warp collectives and launch sizing shared by the reduction-shaped kernels (reduce, softmax, norm, scan).

The device functions take and return one float32 per lane and must be called by all 32 lanes of a warp together
(full mask): a butterfly of ``shfl_xor_sync`` leaves the warp's total on every lane, so no broadcast is needed
afterwards, and ``shfl_up_sync`` steps give an inclusive prefix sum across the lanes. ``group_collectives(warps)``
extends the sum and the max to a row group of several warps through a few words of shared memory.

``resident_blocks(threads)`` is how many blocks of ``threads`` threads the device runs at once: a grid-stride
kernel launched with that many blocks (or a small multiple) keeps every multiprocessor busy with no tail of
half-empty waves. Under the simulator it is a small number, so that tests still run several blocks and go round
their grid-stride loops.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import cuda

from .. import mode

FULL_MASK = 0xFFFFFFFF
WARP = 32
#: lanes of a warp as powers of two: the butterfly's five steps are 16 >> k for k in range(WARP_STEPS)
WARP_STEPS = 5
#: threads one multiprocessor holds (every GPU from cc 7.5 to 9.0 except cc 8.6/8.9's 1536)
THREADS_PER_SM = 2048
#: blocks ``resident_blocks`` reports under the simulator
SIM_BLOCKS = 3


@cuda.jit(device=True)
def warp_sum(v):
    """The sum of ``v`` over the warp, on every lane (a fixed butterfly order: the same bits every run)."""
    for k in range(WARP_STEPS):
        v += cuda.shfl_xor_sync(FULL_MASK, v, 16 >> k)
    return v


@cuda.jit(device=True)
def nan_max(a, b):
    """``max(a, b)`` that returns NaN if either is NaN (torch.amax semantics), unlike Python's ``max``."""
    return a if a > b or math.isnan(a) else b


@cuda.jit(device=True)
def warp_max(v):
    """The NaN-propagating maximum of ``v`` over the warp, on every lane."""
    for k in range(WARP_STEPS):
        v = nan_max(v, cuda.shfl_xor_sync(FULL_MASK, v, 16 >> k))
    return v


@cuda.jit(device=True)
def warp_inclusive_sum(v, lane):
    """``v`` summed over lanes ``0..lane`` (Hillis-Steele with ``shfl_up_sync``; ``lane`` is this lane's index)."""
    for k in range(WARP_STEPS):
        d = 1 << k
        up = cuda.shfl_up_sync(FULL_MASK, v, d)
        if lane >= d:
            v += up
    return v


@functools.cache
def group_collectives(warps: int):
    """``(group_sum, group_max)``: device functions that combine one float32 per thread over a row group of
    ``warps`` warps and return the result to every thread of it. A warp is a butterfly of shuffles; a block adds a
    word per warp in shared memory, which every thread reads in the same order, then waits at a barrier so that the
    next call may reuse the words."""
    if warps == 1:
        return warp_sum, warp_max

    @cuda.jit(device=True)
    def group_sum(v):
        words = cuda.shared.array(warps, np.float32)
        v = warp_sum(v)
        if cuda.threadIdx.x % WARP == 0:
            words[cuda.threadIdx.x // WARP] = v
        cuda.syncthreads()
        v = words[0]
        for k in range(1, warps):
            v += words[k]
        cuda.syncthreads()
        return v

    @cuda.jit(device=True)
    def group_max(v):
        words = cuda.shared.array(warps, np.float32)
        v = warp_max(v)
        if cuda.threadIdx.x % WARP == 0:
            words[cuda.threadIdx.x // WARP] = v
        cuda.syncthreads()
        v = words[0]
        for k in range(1, warps):
            v = nan_max(v, words[k])
        cuda.syncthreads()
        return v

    return group_sum, group_max


def resident_blocks(threads: int) -> int:
    """Blocks of ``threads`` threads that the current device runs at once (``SIM_BLOCKS`` in the simulator)."""
    if mode.in_simulator():
        return SIM_BLOCKS
    return _multiprocessors() * max(1, THREADS_PER_SM // int(threads))


@functools.cache
def _multiprocessors() -> int:
    return int(cuda.get_current_device().MULTIPROCESSOR_COUNT)


def split_count(rows: int, cols: int, threads: int, per_thread: int, cap: int | None = None) -> int:
    """How many blocks share one row so that ``rows`` rows fill the device: at least one block per row, at most
    enough that every thread has ``per_thread`` elements of its row to load, at most ``cap`` (grid.y limit)."""
    fill = -(-resident_blocks(threads) // max(rows, 1))
    useful = max(1, -(-cols // (threads * per_thread)))
    return int(max(1, min(fill, useful, cap or 65535)))
