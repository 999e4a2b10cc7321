"""A shared element read by two threads and written by none this epoch is *quiet*: further reads of it skip the
race tracker (``TrackedArray._quiet``). A write ordered after those reads (by ``syncwarp``) makes it loud again:
a later read by a thread the write is not ordered with is still a race. These kernels make an element quiet,
write it that way, then read it from another warp in the same epoch -- through the array itself, through the
whole array after a write through a slice of it, in a 2-D array, and through a row of one (a view made per access,
which is never marked)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda, int32

from numbakern import sim

BLOCK = 64  # two warps
TWO_BLOCKS = 128  # numba sizes shared arrays from constants, not from expressions


@cuda.jit
def quiet_then_written_1d(x, out):
    s = cuda.shared.array(BLOCK, dtype=np.float32)
    flag = cuda.shared.array(1, dtype=int32)
    i = cuda.threadIdx.x
    s[i] = x[i]
    if i == 0:
        flag[0] = 0
    cuda.syncthreads()
    if i < 32:
        v = s[0]  # every lane of warp 0: s[0] quiet from the third read on
        cuda.syncwarp()
        if i == 1:
            s[0] = v + np.float32(1.0)  # ordered after warp 0's reads: no race with them
            cuda.atomic.add(flag, 0, 1)
    else:
        while cuda.atomic.add(flag, 0, 0) == 0:  # until lane 1 has written
            pass
        v = s[0]  # DEFECT: warp 1's read is not ordered with lane 1's write (no barrier between them)
    out[i] = v


@cuda.jit
def quiet_then_written_slice(x, out):
    buf = cuda.shared.array(TWO_BLOCKS, dtype=np.float32)
    flag = cuda.shared.array(1, dtype=int32)
    s = buf[BLOCK:]
    i = cuda.threadIdx.x
    s[i] = x[i]
    if i == 0:
        flag[0] = 0
    cuda.syncthreads()
    if i < 32:
        v = buf[BLOCK + 3]  # quiet, marked on the whole array
        cuda.syncwarp()
        if i == 1:
            s[3] = v + np.float32(1.0)  # written through the slice: the same element
            cuda.atomic.add(flag, 0, 1)
    else:
        while cuda.atomic.add(flag, 0, 0) == 0:
            pass
        v = buf[BLOCK + 3]  # DEFECT
    out[i] = v


@cuda.jit
def quiet_then_written_2d(x, out, rows):
    s = cuda.shared.array((8, 8), dtype=np.float32)
    flag = cuda.shared.array(1, dtype=int32)
    i = cuda.threadIdx.x
    s[i // 8, i % 8] = x[i]
    if i == 0:
        flag[0] = 0
    cuda.syncthreads()
    if i < 32:
        v = s[2, 5] if rows == 0 else s[2][5]
        cuda.syncwarp()
        if i == 1:
            s[2, 5] = v + np.float32(1.0)
            cuda.atomic.add(flag, 0, 1)
    else:
        while cuda.atomic.add(flag, 0, 0) == 0:
            pass
        v = s[2, 5] if rows == 0 else s[2][5]  # DEFECT
    out[i] = v


def _inputs():
    return (np.random.default_rng(20261126).random(BLOCK) + 0.5).astype(np.float32)


@pytest.mark.parametrize("kernel, extra, element", [
    (quiet_then_written_1d, (), "[0]"),
    (quiet_then_written_slice, (), f"[{BLOCK + 3}]"),
    (quiet_then_written_2d, (0,), "[2, 5]"),
    (quiet_then_written_2d, (1,), "[2, 5]"),
])
def test_a_write_ordered_after_quiet_reads_still_races_with_other_warps(kernel, extra, element):
    out = np.zeros(BLOCK, np.float32)
    with sim.checks("all"), pytest.raises(sim.RaceError) as info:
        kernel[1, BLOCK](_inputs(), out, *extra)
    message = str(info.value)
    assert element in message and "thread (1, 0, 0)" in message and "wrote" in message and "read" in message


@cuda.jit
def quiet_reads_synced(x, out):
    s = cuda.shared.array(BLOCK, dtype=np.float32)
    i = cuda.threadIdx.x
    s[i] = x[i]
    cuda.syncthreads()
    v = s[0] + s[i]  # s[0] read by every thread: quiet for most
    cuda.syncthreads()
    if i == 0:
        s[0] = v  # a new epoch: nothing of the last one's reads is left
    cuda.syncthreads()
    out[i] = s[0] * s[BLOCK - 1 - i]


def test_quiet_reads_of_a_correct_kernel_compute_the_right_answer():
    x, out = _inputs(), np.zeros(BLOCK, np.float32)
    with sim.checks("all"):
        quiet_reads_synced[1, BLOCK](x, out)
    s = x.copy()
    s[0] = x[0] + x[0]
    np.testing.assert_array_equal(out, s[0] * s[::-1])


@cuda.jit
def quiet_then_race_in_the_next_epoch(x, out):
    s = cuda.shared.array(BLOCK, dtype=np.float32)
    i = cuda.threadIdx.x
    s[i] = x[i]
    cuda.syncthreads()
    v = s[0]  # quiet for this epoch only
    cuda.syncthreads()
    if i == 1:
        s[0] = v * np.float32(2.0)
    elif i > 1:
        v = s[0]  # DEFECT: read in the epoch thread 1 writes it, after the write (threads run in order)
    out[i] = v


def test_quiet_marks_end_with_their_epoch():
    out = np.zeros(BLOCK, np.float32)
    with sim.checks("all"), pytest.raises(sim.RaceError) as info:
        quiet_then_race_in_the_next_epoch[1, BLOCK](_inputs(), out)
    assert "[0]" in str(info.value) and "thread (1, 0, 0)" in str(info.value)
