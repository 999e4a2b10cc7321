"""Warp intrinsics, executed in warp lockstep, against results computed by hand from the inputs."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from numbakern import sim

FULL = 0xFFFFFFFF
SEED = 20261125


@pytest.fixture
def x():
    return (np.random.default_rng(SEED).random(64) + 0.5).astype(np.float32)  # two warps, never zero


def _int32(bits: int) -> int:
    """A lane mask as numba-cuda's int32 ballot/match result holds it (lane 31 is the sign bit)."""
    return bits - (1 << 32) if bits & 0x80000000 else bits


def _lanes(n):
    return np.arange(n) % 32


@cuda.jit
def shuffles(x, idx, up, down, xor):
    t = cuda.threadIdx.x
    v = x[t]
    idx[t] = cuda.shfl_sync(FULL, v, 3)
    up[t] = cuda.shfl_up_sync(FULL, v, 2)
    down[t] = cuda.shfl_down_sync(FULL, v, 5)
    xor[t] = cuda.shfl_xor_sync(FULL, v, 1)


def test_shuffles(x):
    n = x.shape[0]
    outs = [np.zeros(n, np.float32) for _ in range(4)]
    with sim.checks("all"):
        shuffles[1, n](x, *outs)
    t, lane = np.arange(n), _lanes(n)
    warp_base = t - lane
    np.testing.assert_array_equal(outs[0], x[warp_base + 3])
    np.testing.assert_array_equal(outs[1], np.where(lane >= 2, x[np.maximum(t - 2, 0)], x))
    np.testing.assert_array_equal(outs[2], np.where(lane + 5 < 32, x[np.minimum(t + 5, n - 1)], x))
    np.testing.assert_array_equal(outs[3], x[t ^ 1])


@cuda.jit
def warp_sum(x, out):
    t = cuda.threadIdx.x
    v = x[t]
    offset = 16
    while offset > 0:
        v += cuda.shfl_down_sync(FULL, v, offset)
        offset //= 2
    if cuda.laneid == 0:
        out[t // 32] = v


def test_shuffle_down_reduction(x):
    out = np.zeros(2, np.float32)
    with sim.checks("all"):
        warp_sum[1, 64](x, out)
    np.testing.assert_allclose(out, x.reshape(2, 32).astype(np.float64).sum(axis=1), rtol=1e-5)


@cuda.jit
def votes(x, ballot, all_, any_, lane):
    t = cuda.threadIdx.x
    big = x[t] > np.float32(1.0)
    ballot[t] = cuda.ballot_sync(FULL, big)
    all_[t] = cuda.all_sync(FULL, x[t] > np.float32(0.0))
    any_[t] = cuda.any_sync(FULL, x[t] > np.float32(1.4))
    lane[t] = cuda.laneid


def test_votes_and_laneid(x):
    n = x.shape[0]
    ballot, all_, any_, lane = (np.zeros(n, np.int64) for _ in range(4))
    with sim.checks("all"):
        votes[1, n](x, ballot, all_, any_, lane)
    for w in range(2):
        chunk = x[32 * w : 32 * (w + 1)]
        expected_bits = _int32(sum(1 << i for i in range(32) if chunk[i] > 1.0))
        assert (ballot[32 * w : 32 * (w + 1)] == expected_bits).all(), f"seed {SEED}"
        assert (all_[32 * w : 32 * (w + 1)] == 1).all()
        assert (any_[32 * w : 32 * (w + 1)] == int((chunk > 1.4).any())).all()
    np.testing.assert_array_equal(lane, _lanes(n))


@cuda.jit
def partial_warp_shuffle(x, out):
    t = cuda.threadIdx.x
    out[t] = cuda.shfl_down_sync(FULL, x[t], 4)


def test_partial_warp_takes_its_own_value_past_the_last_lane(x):
    out = np.zeros(40, np.float32)  # the second warp has 8 lanes
    with sim.checks("all"):
        partial_warp_shuffle[1, 40](x[:40], out)
    t = np.arange(40)
    src = t + 4
    valid = (t % 32 + 4 < 32) & (src < 40)
    np.testing.assert_array_equal(out, np.where(valid, x[np.minimum(src, 39)], x[:40]))


@cuda.jit
def divergent_activemask(out):
    t = cuda.threadIdx.x
    if cuda.laneid < 10:
        out[t] = cuda.activemask()
    else:
        out[t] = cuda.activemask()


def test_activemask_reports_the_lanes_on_the_same_path():
    out = np.zeros(32, np.int64)
    with sim.checks("all"):
        divergent_activemask[1, 32](out)
    assert (out[:10] == 0x3FF).all() and (out[10:] == FULL & ~0x3FF).all()


@cuda.jit
def half_warp_shuffle(x, out):
    t = cuda.threadIdx.x
    if t < 16:
        out[t] = cuda.shfl_xor_sync(0xFFFF, x[t], 8)
    else:
        out[t] = x[t]


def test_shuffle_with_a_partial_mask_completes_without_the_other_lanes(x):
    out = np.zeros(32, np.float32)
    with sim.checks("all"):
        half_warp_shuffle[1, 32](x[:32], out)
    t = np.arange(32)
    np.testing.assert_array_equal(out, np.where(t < 16, x[t ^ 8], x[:32]))


@cuda.jit
def exchange_through_shared(x, out, sync):
    buf = cuda.shared.array(32, dtype=np.float32)
    t = cuda.threadIdx.x
    buf[t] = x[t]
    if sync:
        cuda.syncwarp(FULL)
    out[t] = buf[31 - t]


def test_syncwarp_orders_shared_memory_within_a_warp(x):
    out = np.zeros(32, np.float32)
    with sim.checks("all"):
        exchange_through_shared[1, 32](x[:32], out, True)
    np.testing.assert_array_equal(out, x[:32][::-1])


def test_without_syncwarp_the_exchange_is_a_race(x):
    out = np.zeros(32, np.float32)
    with sim.checks("race"), pytest.raises(sim.RaceError) as info:
        exchange_through_shared[1, 32](x[:32], out, False)
    # thread 15 reads buf[16] before thread 16 (run after it, in the fixed order) writes it
    msg = str(info.value)
    assert "shared array 'buf' element [16]" in msg
    assert "thread (15, 0, 0) of block (0, 0, 0) read it" in msg
    assert "thread (16, 0, 0) of block (0, 0, 0) wrote it" in msg


@cuda.jit
def shuffle_beside_barrier(x, out):
    t = cuda.threadIdx.x
    if t < 16:
        out[t] = cuda.shfl_sync(FULL, x[t], 0)  # DEFECT: lanes 16-31 are named in the mask but wait at a barrier
    cuda.syncthreads()


def test_warp_intrinsic_waiting_for_lanes_at_a_barrier_is_reported(x):
    out = np.zeros(32, np.float32)
    with sim.checks("all"), pytest.raises(sim.BarrierDivergenceError, match="warp intrinsic.*syncthreads"):
        shuffle_beside_barrier[1, 32](x[:32], out)


@cuda.jit
def matches(x, any_out, all_out, all_pred):
    t = cuda.threadIdx.x
    v = x[t]
    any_out[t] = cuda.match_any_sync(FULL, v)
    m, p = cuda.match_all_sync(FULL, v)
    all_out[t] = m
    all_pred[t] = p


def test_match_any_and_all():
    keys = np.random.default_rng(SEED).integers(1, 4, size=32).astype(np.int32)
    any_out, all_out, all_pred = (np.zeros(32, np.int64) for _ in range(3))
    with sim.checks("all"):
        matches[1, 32](keys, any_out, all_out, all_pred)
    for lane in range(32):
        assert any_out[lane] == _int32(sum(1 << j for j in range(32) if keys[j] == keys[lane])), f"seed {SEED}"
    same = (keys == keys[0]).all()
    assert (all_out == (-1 if same else 0)).all() and (all_pred == int(same)).all()


@cuda.jit
def vote_types(x, eq, any_, lanemask):
    t = cuda.threadIdx.x
    eq[t] = cuda.eq_sync(FULL, x[t] > np.float32(1.0))  # true when every lane's predicate is the same
    any_[t] = cuda.any_sync(FULL, x[t] > np.float32(1.0))
    lanemask[t] = cuda.lanemask_lt()


def test_eq_sync_any_sync_and_lanemask_lt(x):
    eq, any_, lanemask = np.zeros(64, np.int32), np.zeros(64, np.int32), np.zeros(64, np.int64)
    same = x.copy()
    same[:32] = 2.0  # the first warp agrees, the second (random values) does not
    with sim.checks("all"):
        vote_types[1, 64](same, eq, any_, lanemask)
    second = same[32:] > 1.0
    assert (eq[:32] == 1).all() and (eq[32:] == int(second.all() or not second.any())).all(), f"seed {SEED}"
    assert (any_[32:] == int(second.any())).all()
    np.testing.assert_array_equal(lanemask, (1 << _lanes(64)) - 1)


@cuda.jit
def sum_then_exit_early(x, out, n):
    i = cuda.grid(1)
    if i >= n:
        return  # lanes past n leave before the shuffle below
    v = x[i]
    v += cuda.shfl_down_sync(FULL, v, 16)
    out[i] = v


@cuda.jit
def sum_keeping_every_lane(x, out, n):
    i = cuda.grid(1)
    v = x[i] if i < n else 0.0  # the lanes past n stay, with a neutral value
    v += cuda.shfl_down_sync(FULL, v, 16)
    if i < n:
        out[i] = v


def test_a_shuffle_that_reads_a_lane_which_has_exited_names_the_lane_its_exit_and_the_shuffle(x):
    out = np.zeros(64, np.float32)
    with sim.checks("all"), pytest.raises(sim.BarrierDivergenceError) as caught:
        sum_then_exit_early[1, 64](x, out, 40)
    message = str(caught.value)
    # lane 0 of warp 1 (thread 32) reads lane 16 (thread 48), which left at the return: thread 40 and up are gone
    assert "warp 1: lane 0 (thread (32, 0, 0)) reads lane 16's value in shfl_down_sync at test_warp.py:" in message
    assert "v += cuda.shfl_down_sync(FULL, v, 16)" in message
    assert "lane 16 (thread (48, 0, 0)) already exited the kernel at test_warp.py:" in message
    assert "return  # lanes past n leave" in message


def test_lanes_that_stay_to_the_shuffle_compute_as_before(x):
    out = np.zeros(64, np.float32)
    with sim.checks("all"):
        sum_keeping_every_lane[1, 64](x, out, 40)
    v = np.where(np.arange(64) < 40, x, np.float32(0))
    # lanes 0-15 add the value 16 lanes down; lanes 16-31 read past the warp's edge and get their own back
    expected = [v[i] + (v[i + 16] if i % 32 < 16 else v[i]) for i in range(40)]
    np.testing.assert_array_equal(out[:40], np.array(expected, np.float32))
