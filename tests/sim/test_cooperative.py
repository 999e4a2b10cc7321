"""Cooperative launches run as on a GPU: every block is resident, ``grid.sync()`` is a barrier for the whole grid,
and a grid barrier some thread never reaches is reported."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from numbakern import sim

SEED = 20261129
BLOCK = 32


@pytest.fixture
def rng():
    print(f"numpy seed {SEED}")
    return np.random.default_rng(SEED)


@cuda.jit
def grid_sum(x, partial, total):
    """Each block sums its slice into partial[block]; after the grid barrier block 0 adds the partials up."""
    buf = cuda.shared.array(BLOCK, dtype=np.float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[t] = x[i] if i < x.shape[0] else 0.0
    cuda.syncthreads()
    if t == 0:
        s = 0.0
        for j in range(BLOCK):
            s += buf[j]
        partial[cuda.blockIdx.x] = s
    cuda.cg.this_grid().sync()
    if cuda.blockIdx.x == 0 and t == 0:
        s = 0.0
        for b in range(cuda.gridDim.x):
            s += partial[b]  # written by other blocks before the grid barrier: ordered, not a race
        total[0] = s


@pytest.mark.parametrize("seed", [None, 3])
def test_grid_sync_is_a_barrier_across_blocks(seed, rng):
    blocks = 6
    x = rng.random(blocks * BLOCK - 5)
    partial, total = np.full(blocks, np.nan), np.zeros(1)
    with sim.checks("all"), sim.shuffled(seed):
        grid_sum[blocks, BLOCK](x, partial, total)
    sums = [x[b * BLOCK:(b + 1) * BLOCK].sum() for b in range(blocks)]
    np.testing.assert_allclose(partial, sums, rtol=1e-12)
    np.testing.assert_allclose(total[0], x.sum(), rtol=1e-12)


@cuda.jit
def rotate_across_blocks(x, y):
    i = cuda.grid(1)
    n = x.shape[0]
    y[i] = x[i] * 2.0
    cuda.cg.this_grid().sync()
    x[i] = y[(i + BLOCK) % n]  # reads what the next block wrote before the grid barrier


def test_reads_after_the_grid_barrier_see_other_blocks_writes(rng):
    x = rng.random(4 * BLOCK)
    y = np.zeros_like(x)
    expected = np.roll(x * 2.0, -BLOCK)
    with sim.checks("all"):
        rotate_across_blocks[4, BLOCK](x, y)
    np.testing.assert_array_equal(x, expected)


@cuda.jit
def early_exit_before_grid_sync(x):
    i = cuda.grid(1)
    if i >= x.shape[0]:
        return  # DEFECT: these threads never reach the grid barrier
    x[i] = 1.0
    cuda.cg.this_grid().sync()
    x[i] += 1.0


def test_a_grid_barrier_some_threads_never_reach_is_reported():
    x = np.zeros(3 * BLOCK - 4)
    with sim.checks("all"), pytest.raises(sim.BarrierDivergenceError) as info:
        early_exit_before_grid_sync[3, BLOCK](x)
    msg = str(info.value)
    assert "grid barrier" in msg and "already exited" in msg and "of block (2, 0, 0)" in msg


@cuda.jit
def grid_sync_in_one_branch(x):
    i = cuda.grid(1)
    if cuda.blockIdx.x == 0:
        cuda.cg.this_grid().sync()  # DEFECT: the other blocks wait at a block barrier instead
    else:
        cuda.syncthreads()
    x[i] = 1.0


def test_a_grid_barrier_against_a_block_barrier_is_a_deadlock_or_divergence():
    x = np.zeros(2 * BLOCK)
    with sim.checks("all"), sim.deadlock_after(0.3), pytest.raises((sim.DeadlockError, sim.BarrierDivergenceError)):
        grid_sync_in_one_branch[2, BLOCK](x)
