"""A launch that can never finish ends in seconds with a DeadlockError naming the spinning threads and their line:
spin-waits on memory no one will write, and barriers some thread never reaches. Spin-waits that do end, run."""

from __future__ import annotations

import time

import numpy as np
import pytest
from numba import cuda

from numbakern import sim

BUDGET = 0.3  # seconds without progress before the deadlock is reported


@cuda.jit
def wait_for_a_flag_nobody_sets(flag, out):
    t = cuda.threadIdx.x
    if t == 0:
        while flag[0] == 0:  # DEFECT: no thread ever sets the flag
            pass
    out[t] = 1


@pytest.mark.parametrize("checks", ["none", "all"])
def test_a_spin_wait_on_memory_nobody_writes_is_a_deadlock(checks):
    flag, out = np.zeros(1, np.int32), np.zeros(4, np.int32)
    start = time.perf_counter()
    with sim.checks(checks), sim.deadlock_after(BUDGET), pytest.raises(sim.DeadlockError) as info:
        wait_for_a_flag_nobody_sets[1, 4](flag, out)
    assert time.perf_counter() - start < BUDGET + 5
    msg = str(info.value)
    assert "kernel 'wait_for_a_flag_nobody_sets', block (0, 0, 0)" in msg
    assert "thread (0, 0, 0) spin in the loop at test_deadlock.py:" in msg and "while flag[0] == 0:" in msg
    assert isinstance(info.value, sim.SimulationError)


@cuda.jit
def set_after_a_barrier(flag, out):
    t = cuda.threadIdx.x
    if t == 0:
        while cuda.atomic.add(flag, 0, 0) == 0:  # DEFECT: the setter waits at a barrier thread 0 never reaches
            pass
    else:
        cuda.syncthreads()
        if t == 1:
            cuda.atomic.exch(flag, 0, 1)
    out[t] = 1


@pytest.mark.parametrize("typing", [True, False])
def test_a_barrier_never_reached_is_a_deadlock(typing):
    # (a spin-wait polling with an atomic is found even in a kernel run without the front end)
    flag, out = np.zeros(1, np.int32), np.zeros(8, np.int32)
    with sim.typing(typing), sim.checks("race,uninit,bounds"), sim.deadlock_after(BUDGET), \
            pytest.raises(sim.DeadlockError) as info:
        set_after_a_barrier[1, 8](flag, out)
    msg = str(info.value)
    assert "thread (0, 0, 0) spin in the loop at" in msg and "cuda.atomic.add(flag, 0, 0) == 0" in msg
    assert "threads (1, 0, 0), (2, 0, 0), (3, 0, 0), (4, 0, 0) and 3 more wait at syncthreads() at" in msg


@cuda.jit
def handshake(flag, out):
    t = cuda.threadIdx.x
    if t == 0:
        while cuda.atomic.add(flag, 0, 0) == 0:  # thread 40 (another warp) sets it: this wait ends
            pass
        out[0] = cuda.atomic.add(flag, 0, 0)
    elif t == 40:
        cuda.atomic.exch(flag, 0, 7)


@pytest.mark.parametrize("checks", ["none", "all"])
def test_a_spin_wait_that_another_thread_ends_runs(checks):
    flag, out = np.zeros(1, np.int32), np.zeros(1, np.int32)
    with sim.checks(checks), sim.deadlock_after(BUDGET):
        handshake[1, 64](flag, out)
    assert out[0] == 7


@cuda.jit
def long_loop(out, n):
    t = cuda.threadIdx.x
    k = 0
    i = 0
    while i < n:  # a long computation in a while loop, not a wait: it ends, and nothing else runs meanwhile
        k += i % 3
        i += 1
    out[t] = k


def test_a_long_while_loop_within_the_budget_is_not_a_deadlock():
    out = np.zeros(2, np.int64)
    with sim.deadlock_after(5):
        long_loop[1, 2](out, 20000)
    assert (out == sum(i % 3 for i in range(20000))).all()


def test_the_budget_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(sim.DEADLOCK_ENV, "0.2")
    assert sim.current().deadlock_seconds == 0.2
    flag, out = np.zeros(1, np.int32), np.zeros(4, np.int32)
    with pytest.raises(sim.DeadlockError, match="for 0.[2-9] s no thread finished"):
        wait_for_a_flag_nobody_sets[1, 4](flag, out)
    monkeypatch.setenv(sim.DEADLOCK_ENV, "soon")
    with pytest.raises(ValueError, match="NUMBAKERN_SIM_DEADLOCK_SECONDS must be a number of seconds"):
        sim.current()
