"""Defects are named by their cause, not by their symptom in one schedule: a read of an element another thread
writes in the same barrier interval is a race whichever ran first; a read of memory nobody wrote is uninitialised,
in shared memory and in device allocations made without data."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from numbakern import sim

SEED = 20261128
N = 32


@pytest.fixture
def rng():
    print(f"numpy seed {SEED}")
    return np.random.default_rng(SEED)


# -- shared memory: read before another thread's write is a race, in any order --------------------------------------


@cuda.jit
def reverse_racy(x, out):
    buf = cuda.shared.array(N, dtype=np.float32)
    t = cuda.threadIdx.x
    buf[t] = x[t]
    v = buf[cuda.blockDim.x - 1 - t]  # DEFECT: no barrier between the writes and this read
    out[t] = v


@cuda.jit
def reverse_synced(x, out):
    buf = cuda.shared.array(N, dtype=np.float32)
    t = cuda.threadIdx.x
    buf[t] = x[t]
    cuda.syncthreads()
    out[t] = buf[cuda.blockDim.x - 1 - t]


@pytest.mark.parametrize("seed", [None, 1, 2, 3])
def test_reading_what_another_thread_writes_in_the_same_interval_is_a_race(seed, rng):
    x, out = rng.random(N).astype(np.float32) + 0.5, np.zeros(N, np.float32)
    with sim.checks("all"), sim.shuffled(seed), pytest.raises(sim.RaceError) as info:
        reverse_racy[1, N](x, out)
    msg = str(info.value)
    assert "kernel 'reverse_racy'" in msg and "shared array 'buf'" in msg
    assert "v = buf[cuda.blockDim.x - 1 - t]" in msg and "buf[t] = x[t]" in msg
    assert " read it at " in msg and " wrote it at " in msg


def test_the_fixed_order_names_both_threads(rng):
    x, out = rng.random(N).astype(np.float32) + 0.5, np.zeros(N, np.float32)
    with sim.checks("all"), pytest.raises(sim.RaceError) as info:
        reverse_racy[1, N](x, out)
    # threads 0..15 read buf[31..16] before threads 31..16 write them (once a false UninitializedReadError): the
    # first write to meet such a read is thread 16's, to the element thread 15 read
    msg = str(info.value)
    assert "element [16]" in msg
    assert "thread (15, 0, 0) of block (0, 0, 0) read it" in msg
    assert "thread (16, 0, 0) of block (0, 0, 0) wrote it" in msg


def test_the_race_twin_passes(rng):
    x, out = rng.random(N).astype(np.float32) + 0.5, np.zeros(N, np.float32)
    with sim.checks("all"), sim.shuffled(7):
        reverse_synced[1, N](x, out)
    np.testing.assert_array_equal(out, x[::-1])


@cuda.jit
def reads_an_unwritten_tail(x, out):
    buf = cuda.shared.array(N, dtype=np.float32)
    t = cuda.threadIdx.x
    if t < N - 1:
        buf[t] = x[t]  # DEFECT: buf[N - 1] is never written
    cuda.syncthreads()
    out[t] = buf[N - 1 - t]


def test_reading_what_no_thread_of_the_interval_writes_is_uninitialised(rng):
    x, out = rng.random(N).astype(np.float32) + 0.5, np.zeros(N, np.float32)
    for seed in (None, 5):
        with sim.checks("all"), sim.shuffled(seed), pytest.raises(sim.UninitializedReadError) as info:
            reads_an_unwritten_tail[1, N](x, out)
        msg = str(info.value)
        assert "thread (0, 0, 0) of block (0, 0, 0) read shared array 'buf' element [31]" in msg
        assert "out[t] = buf[N - 1 - t]" in msg


def test_with_the_race_check_off_a_read_before_a_write_is_not_called_uninitialised(rng):
    x, out = rng.random(N).astype(np.float32) + 0.5, np.zeros(N, np.float32)
    with sim.checks("uninit"):
        reverse_racy[1, N](x, out)  # a race, and the race check is off: nothing to report


# -- global memory: device allocations made without data ----------------------------------------------------------


@cuda.jit
def fill_half(out):
    i = cuda.grid(1)
    if i < out.shape[0] // 2:
        out[i] = np.float32(i)


@cuda.jit
def copy_all(src, dst):
    i = cuda.grid(1)
    if i < src.shape[0]:
        dst[i] = src[i]


def test_reading_a_device_array_nobody_wrote_is_uninitialised():
    d = cuda.device_array(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    fill_half[1, 64](d)
    with sim.checks("all"), pytest.raises(sim.UninitializedReadError) as info:
        copy_all[1, 64](d, out)
    msg = str(info.value)
    assert "kernel 'copy_all'" in msg and "global array 'src' element [32]" in msg
    assert "cuda.device_array" in msg and "dst[i] = src[i]" in msg and "thread (32, 0, 0) of block (0, 0, 0)" in msg


def test_device_arrays_written_by_kernels_or_the_host_are_initialised(rng):
    d = cuda.device_array(64, dtype=np.float32)
    fill_half[1, 64](d)
    d[32:] = np.float32(5.0)  # the host writes the rest
    out = np.zeros(64, np.float32)
    with sim.checks("all"):
        copy_all[1, 64](d, out)
    np.testing.assert_array_equal(out, np.concatenate([np.arange(32), np.full(32, 5.0)]).astype(np.float32))
    like = cuda.device_array_like(out)
    like.copy_to_device(rng.random(64).astype(np.float32))
    with sim.checks("all"):
        copy_all[1, 64](like, out)
    np.testing.assert_array_equal(out, like.copy_to_host())


def test_a_view_of_a_device_array_tracks_its_own_elements():
    d = cuda.device_array(64, dtype=np.float32)
    fill_half[1, 64](d)
    out = np.zeros(16, np.float32)
    with sim.checks("all"):
        copy_all[1, 16](d[16:32], out)  # all written
    with sim.checks("all"), pytest.raises(sim.UninitializedReadError, match="element"):
        copy_all[1, 16](d[24:40], out)


@cuda.jit
def neighbour_racy(buf, out):
    i = cuda.grid(1)
    if i + 1 < buf.shape[0]:
        out[i] = buf[i + 1]  # DEFECT: block b reads what block b + 1 writes below, with nothing ordering them
    buf[i] = np.float32(i)


def test_a_global_read_before_another_blocks_write_is_a_race():
    d = cuda.device_array(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    with sim.checks("all"), pytest.raises(sim.RaceError) as info:
        neighbour_racy[2, 32](d, out)
    msg = str(info.value)
    assert "global array 'buf' element" in msg and "read it at" in msg and "wrote it at" in msg


def test_unchecked_launches_leave_no_false_alarm(rng):
    d = cuda.device_array(64, dtype=np.float32)
    with sim.checks("none"):
        fill_half[1, 64](d)  # which elements it wrote, nobody tracked: all are taken as written
    out = np.zeros(64, np.float32)
    with sim.checks("all"):
        copy_all[1, 64](d, out)
