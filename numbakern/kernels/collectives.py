"""Warp collectives and launch sizing shared by the reduction-shaped kernels (reduce, softmax, norm, scan).

The device functions take and return one float32 per lane and must be called by all 32 lanes of a warp together
(full mask): a butterfly of ``shfl_xor_sync`` leaves the warp's total on every lane, so no broadcast is needed
afterwards, and ``shfl_up_sync`` steps give an inclusive prefix sum across the lanes. ``over_block`` extends the sum
and the max to a whole block through a word per warp in shared memory, and ``group_reduce`` to the *row
group* of the row-wise kernels: a few lanes of a warp, a warp, or a block.

``resident_blocks(threads)`` is how many blocks of ``threads`` threads the device runs at once: a grid-stride
kernel launched with that many blocks (or a small multiple) keeps every multiprocessor busy with no tail of
half-empty waves. Under the simulator it is a small number, so that tests still run several blocks and go round
their grid-stride loops.
"""

from __future__ import annotations

import functools
import math
import os

import numpy as np
from numba import cuda

from .. import mode
from .config import sim_as_gpu, sim_shaped

FULL_MASK = 0xFFFFFFFF
WARP = 32
#: threads one multiprocessor holds (every GPU from cc 7.5 to 9.0 except cc 8.6/8.9's 1536)
THREADS_PER_SM = 2048
#: blocks ``resident_blocks`` reports under the simulator
SIM_BLOCKS = 3

# The device functions spell their constants as literals (the full mask 0xFFFFFFFF, the butterfly's five steps
# 16 >> k): ``translate --check`` looks a device function's named constants up in the calling kernel's module.


@cuda.jit(device=True)
def nan_max(a, b):
    """``max(a, b)`` that returns NaN if either is NaN (torch.amax semantics), unlike Python's ``max``."""
    return a if a > b or math.isnan(a) else b


@cuda.jit(device=True)
def combine(a, b, is_max):
    """``a + b``, or with ``is_max`` the NaN-propagating maximum of ``a`` and ``b``."""
    return nan_max(a, b) if is_max else a + b


@cuda.jit(device=True)
def warp_reduce(v, is_max):
    """The sum (with ``is_max`` the NaN-propagating maximum) of ``v`` over the warp, on every lane (a fixed
    butterfly order: the same bits every run)."""
    for k in range(5):
        v = combine(v, cuda.shfl_xor_sync(0xFFFFFFFF, v, 16 >> k), is_max)
    return v


@cuda.jit(device=True)
def warp_inclusive_sum(v, lane):
    """``v`` summed over lanes ``0..lane`` (Hillis-Steele with ``shfl_up_sync``; ``lane`` is this lane's index)."""
    for k in range(5):
        d = 1 << k
        up = cuda.shfl_up_sync(0xFFFFFFFF, v, d)
        if lane >= d:
            v += up
    return v


@cuda.jit(device=True)
def over_block(v, is_max):
    """The sum (or with ``is_max`` the NaN-propagating maximum) of ``v`` over the block (up to 32 warps), on every
    thread: the warps' results go to shared memory, and every warp combines them with the same butterfly (a fixed
    order: every thread gets the same bits). Lanes past the last warp take 0 (the maximum: the first warp's word,
    which leaves it unchanged). Ends with a barrier, so it can be called again at once."""
    words = cuda.shared.array(32, np.float32)
    v = warp_reduce(v, is_max)
    lane = cuda.threadIdx.x % 32
    if lane == 0:
        words[cuda.threadIdx.x // 32] = v
    cuda.syncthreads()
    # five shuffles instead of a loop over the warps' words: that loop, with a run-time trip count, stays rolled in
    # numba's code, one dependent shared load after another (31 for a block of 1024)
    if lane < cuda.blockDim.x // 32:
        v = words[lane]
    elif is_max:
        v = words[0]
    else:
        v = np.float32(0.0)
    v = warp_reduce(v, is_max)
    cuda.syncthreads()
    return v


@cuda.jit(device=True)
def group_reduce(v, group, is_max):
    """The sum (with ``is_max`` the NaN-propagating maximum) of ``v`` over a row group of ``group`` consecutive
    threads, on each of them: an aligned power of two of lanes up to a warp (a butterfly over ``group / 2 ... 1``
    lanes), or the whole block (``group > 32``). ``group`` is the kernel's compile-time constant, so the branch and
    the loop fold away."""
    if group > 32:
        return over_block(v, is_max)
    lanes = group >> 1
    while lanes > 0:
        v = combine(v, cuda.shfl_xor_sync(0xFFFFFFFF, v, lanes), is_max)
        lanes >>= 1
    return v


def check_threads(what: str, nt: int) -> None:
    """A block of ``nt`` threads is whole warps, at most 1024 threads."""
    if not isinstance(nt, int) or nt % WARP or not WARP <= nt <= 1024:
        raise ValueError(f"{what}: nt must be a multiple of {WARP} from {WARP} to 1024, got {nt!r}")


def check_group(what: str, nt: int, group: int) -> None:
    """A row group is an aligned power of two of lanes up to a warp, or the whole block of ``nt`` threads."""
    check_threads(what, nt)
    if group != nt and group not in (1, 2, 4, 8, 16, 32):
        raise ValueError(f"{what}: group must be a power of two up to {WARP} (lanes of a warp per row) or nt={nt} "
                         f"(a block per row), got {group!r}")


def resident_blocks(threads: int) -> int:
    """Blocks of ``threads`` threads that the current device runs at once (``SIM_BLOCKS`` in the simulator)."""
    return multiprocessors() * (1 if sim_shaped() else max(1, THREADS_PER_SM // int(threads)))


#: set by a process that knows the device's multiprocessors for a child that must not start Numba's CUDA driver:
#: the process compute-sanitizer watches (``translate.verify.sancase``), where the driver's start is reported as
#: CUDA API errors once a candidate's own runtime holds the context
MULTIPROCESSORS_ENV = "NUMBAKERN_MULTIPROCESSORS"


def multiprocessors() -> int:
    """The current device's multiprocessors (``SIM_BLOCKS`` in the simulator, or the GPU's it is asked to launch as:
    ``config.sim_as_gpu``; ``$NUMBAKERN_MULTIPROCESSORS`` when set)."""
    if mode.in_simulator():
        return sim_as_gpu() or SIM_BLOCKS
    given = os.environ.get(MULTIPROCESSORS_ENV, "")
    if given:
        if not given.isdigit() or int(given) < 1:
            raise ValueError(f"{MULTIPROCESSORS_ENV} must be a positive whole number of multiprocessors, got {given!r}")
        return int(given)
    return _device_multiprocessors()


@functools.cache
def _device_multiprocessors() -> int:
    return int(cuda.get_current_device().MULTIPROCESSOR_COUNT)


def split_count(rows: int, cols: int, threads: int, per_thread: int, cap: int | None = None) -> int:
    """How many blocks share one row so that ``rows`` rows fill the device: at least one block per row, at most
    enough that every thread has ``per_thread`` elements of its row to load, at most ``cap`` (grid.y limit)."""
    fill = -(-resident_blocks(threads) // max(rows, 1))
    useful = max(1, -(-cols // (threads * per_thread)))
    return int(max(1, min(fill, useful, cap or 65535)))
