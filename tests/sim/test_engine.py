"""The engine keeps the stock simulator's semantics for correct kernels, and runs every registered kernel with all
checks on."""

from __future__ import annotations

import threading
import warnings

import numba
import numpy as np
import pytest
from numba import cuda

from numbakern import sim
from numbakern.sim import intrinsics

SEED = 20261127


@pytest.fixture
def rng(request):
    # failures name the seed (pytest shows this fixture's value in the report's captured output)
    print(f"numpy seed {SEED}")
    return np.random.default_rng(SEED)


def test_launches_run_on_numbakerns_engine():
    assert sim.active_engine() == "numbakern"


# -- barriers and their reductions --------------------------------------------------------------------------------


@cuda.jit
def barrier_votes(x, counts, ands, ors):
    t = cuda.threadIdx.x + cuda.blockDim.x * cuda.threadIdx.y
    # numba-cuda's syncthreads_count/and/or take an int32 predicate (a bool is refused)
    big = np.int32(x[cuda.blockIdx.x, t] > np.float32(1.0))
    counts[cuda.blockIdx.x, t] = cuda.syncthreads_count(big)
    ands[cuda.blockIdx.x, t] = cuda.syncthreads_and(np.int32(x[cuda.blockIdx.x, t] > np.float32(0.0)))
    ors[cuda.blockIdx.x, t] = cuda.syncthreads_or(big)


def test_syncthreads_count_and_or(rng):
    x = (rng.random((3, 48)) + 0.5).astype(np.float32)
    counts, ands, ors = (np.zeros((3, 48), np.int64) for _ in range(3))
    with sim.checks("all"):
        barrier_votes[3, (16, 3)](x, counts, ands, ors)
    for b in range(3):
        assert (counts[b] == (x[b] > 1.0).sum()).all()
        assert (ands[b] == 1).all()
        assert (ors[b] == int((x[b] > 1.0).any())).all()


# -- memory spaces, dtypes, device functions, indices -------------------------------------------------------------


@cuda.jit(device=True)
def lane_weight(v):
    return v * np.float32(cuda.threadIdx.x + 1)


@cuda.jit
def spaces(x, out):
    a = cuda.shared.array(32, dtype=np.float32)
    b = cuda.shared.array(32, dtype=numba.float32)  # a separate array: another call site
    scratch = cuda.local.array(2, dtype=np.float32)
    t = cuda.threadIdx.x
    i, j = cuda.grid(2)
    w, h = cuda.gridsize(2)
    a[t] = x[j, i]
    b[t] = -x[j, i]
    cuda.syncthreads()
    scratch[0] = a[31 - t]
    scratch[1] = b[t]
    out[j, i] = lane_weight(scratch[0]) + scratch[1] + np.float32(w * h)


def test_shared_local_device_functions_and_grid(rng):
    x = (rng.random((2, 64)) + 0.5).astype(np.float32)
    out = np.zeros_like(x)
    with sim.checks("all"):
        spaces[(2, 2), (32, 1)](x, out)
    t = np.arange(32)
    expected = np.empty_like(x)
    for j in range(2):
        for bx in range(2):
            row = x[j, 32 * bx : 32 * bx + 32]
            expected[j, 32 * bx : 32 * bx + 32] = row[::-1] * (t + 1) - row + np.float32(64 * 2)
    np.testing.assert_allclose(out, expected, rtol=1e-6)


@cuda.jit
def atomics(x, total, biggest, hits):
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.add(total, 0, x[i])
        cuda.atomic.max(biggest, 0, x[i])
        cuda.atomic.add(hits, x[i] % 4, 1)


def test_atomics(rng):
    x = rng.integers(1, 1000, size=300).astype(np.int64)
    total, biggest, hits = np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(4, np.int64)
    with sim.checks("all"):
        atomics[3, 128](x, total, biggest, hits)
    assert total[0] == x.sum() and biggest[0] == x.max()
    np.testing.assert_array_equal(hits, np.bincount(x % 4, minlength=4))


@cuda.jit
def shared_atomic_histogram(x, out):
    counts = cuda.shared.array(4, dtype=np.int32)
    t = cuda.threadIdx.x
    if t < 4:
        counts[t] = 0
    cuda.syncthreads()
    cuda.atomic.add(counts, x[t] % 4, 1)  # atomics on shared memory: no race
    cuda.syncthreads()
    if t < 4:
        out[t] = counts[t]


def test_shared_atomics_are_not_races(rng):
    x = rng.integers(1, 100, size=64).astype(np.int32)
    out = np.zeros(4, np.int32)
    with sim.checks("all"):
        shared_atomic_histogram[1, 64](x, out)
    np.testing.assert_array_equal(out, np.bincount(x % 4, minlength=4))


# -- exceptions name the thread and block -------------------------------------------------------------------------


@cuda.jit
def fails_in_one_thread(x):
    if cuda.threadIdx.x == 3 and cuda.blockIdx.x == 1:
        raise ValueError("bad value")
    x[cuda.grid(1)] = 1


def test_exceptions_name_thread_and_block():
    with pytest.raises(ValueError, match=r"^tid=\[3, 0, 0\] ctaid=\[1, 0, 0\]: bad value$"):
        fails_in_one_thread[2, 8](np.zeros(16, np.float32))


@cuda.jit
def fails_after_barriers(x):
    cuda.syncthreads()
    if cuda.threadIdx.x == 5 and cuda.blockIdx.x == 1:
        raise ValueError("bad value")
    cuda.syncthreads()
    x[cuda.grid(1)] = 1


def test_exceptions_after_barriers_name_their_thread():
    # thread 4, at the second barrier, switches straight to thread 5, not through the scheduler: the error still
    # names the thread that raised it, not the one the scheduler resumed (thread 0)
    with pytest.raises(ValueError, match=r"^tid=\[5, 0, 0\] ctaid=\[1, 0, 0\]: bad value$"):
        fails_after_barriers[2, 8](np.zeros(16, np.float32))


# -- thread order ---------------------------------------------------------------------------------------------------


@cuda.jit
def arrival_order(counter, order):
    t = cuda.threadIdx.x
    order[cuda.blockIdx.x, t] = cuda.atomic.add(counter, 0, 1)


def _order(seed):
    counter, order = np.zeros(1, np.int64), np.zeros((2, 64), np.int64)
    with sim.shuffled(seed):
        arrival_order[2, 64](counter, order)
    return order


def test_thread_order_is_fixed_by_default():
    np.testing.assert_array_equal(_order(None), np.arange(128).reshape(2, 64))


def test_shuffled_order_is_reproducible_by_seed():
    first, again, other = _order(7), _order(7), _order(8)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    assert not np.array_equal(first, np.arange(128).reshape(2, 64))
    assert sorted(first.ravel()) == list(range(128))


def test_shuffle_seed_from_the_environment(monkeypatch):
    monkeypatch.setenv(sim.SHUFFLE_ENV, "7")
    counter, order = np.zeros(1, np.int64), np.zeros((2, 64), np.int64)
    arrival_order[2, 64](counter, order)
    np.testing.assert_array_equal(order, _order(7))


# -- the stock engine stays reachable (the benchmark's baseline) ---------------------------------------------------


_seen_from: dict = {}


def _look_from_two_threads():
    """Which launch the stand-ins of GPU intrinsics see, from this thread and from another one."""
    other = threading.Thread(target=lambda: _seen_from.update(other=intrinsics.active_launch()))
    other.start()
    other.join()
    _seen_from["launch"] = intrinsics.active_launch()


@cuda.jit
def looks_from_two_threads(out):
    _look_from_two_threads()
    out[0] = 1.0


def test_another_os_thread_sees_no_launch():
    """The stock simulator runs each GPU thread as an OS thread, and a failed stock launch may leave some running
    into the next launch: their warp intrinsics must not join it (the benchmark saw a warp's lanes 'diverge' so)."""
    _seen_from.clear()
    out = np.zeros(1, np.float32)
    with sim.typing(False):  # (a plain Python call in the kernel)
        looks_from_two_threads[1, 1](out)
    assert out[0] == 1.0 and _seen_from["launch"] is not None and _seen_from["other"] is None


def test_stock_engine_gives_the_same_results(rng):
    x = (rng.random((2, 64)) + 0.5).astype(np.float32)
    ours, stock = np.zeros_like(x), np.zeros_like(x)
    spaces[(2, 2), (32, 1)](x, ours)
    with sim.use_engine("stock"):
        assert sim.active_engine() == "stock"
        spaces[(2, 2), (32, 1)](x, stock)
    assert sim.active_engine() == "numbakern"
    np.testing.assert_array_equal(ours, stock)


def test_the_environment_can_keep_the_stock_engine(monkeypatch):
    monkeypatch.setenv(sim.ENGINE_ENV, "stock")
    try:
        sim.install()
        assert sim.active_engine() == "stock"
    finally:
        monkeypatch.delenv(sim.ENGINE_ENV)
        sim.install()
    assert sim.active_engine() == "numbakern"


@cuda.jit
def through_views(x, out):
    tile = cuda.shared.array((4, 8), dtype=np.float32)
    t = cuda.threadIdx.x
    tile.reshape(32)[t] = x[t]
    cuda.syncthreads()
    out.T[t % 8, t // 8] = tile[t // 8, t % 8]  # out is (4, 8): out.T is an (8, 4) view of it


def test_transposed_and_reshaped_views_of_checked_arrays(rng):
    x, out = (rng.random(32) + 0.5).astype(np.float32), np.zeros((4, 8), np.float32)
    with sim.checks("all"):
        through_views[1, 32](x, out)
    np.testing.assert_array_equal(out, x.reshape(4, 8))


# -- what numba-cuda's simulator raises, numbakern's engine raises ------------------------------------------------


@cuda.jit(debug=True, opt=False)
def divide_in_debug(r, x, y):
    i = cuda.grid(1)
    if i < r.shape[0]:
        r[i] = y[i] / x[i]


@cuda.jit
def divide(r, x, y):
    i = cuda.grid(1)
    if i < r.shape[0]:
        r[i] = y[i] / x[i]


def test_a_debug_kernels_float_division_by_zero_raises_as_numba_cudas_simulator_does(rng):
    n = 37
    x = rng.uniform(1, 2, n)
    y = rng.uniform(-1, 1, n)
    r = np.zeros(n)
    divide_in_debug[2, 32](r, x, y)
    np.testing.assert_array_equal(r, y / x)
    x[n - 3] = 0.0
    r[:] = -1.0
    with pytest.raises(FloatingPointError, match="divide by zero"):
        divide_in_debug[2, 32](r, x, y)
    assert (r == -1.0).all()  # the launch failed: nothing was copied back
    with warnings.catch_warnings():  # without debug=True: inf (numpy's warning said), as numba-cuda computes it
        warnings.simplefilter("ignore", RuntimeWarning)
        divide[2, 32](r, x, y)
        np.testing.assert_array_equal(r, y / x)
