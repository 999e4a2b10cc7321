"""Every checker: a kernel with a planted defect must be reported with the right class and a message naming the
kernel, array, index, threads and source line; its correct twin must pass and compute the right answer."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from numbakern import sim

BLOCK = 64
BLOCK_HALO = BLOCK + 2  # numba sizes shared arrays from constants, not from expressions such as BLOCK + 2


SEED = 20261126


@pytest.fixture
def rng(request):
    # failures name the seed (pytest shows this fixture's value in the report's captured output)
    print(f"numpy seed {SEED}")
    return np.random.default_rng(SEED)


def _inputs(rng, n):
    return (rng.random(n) + 0.5).astype(np.float32)  # never zero


# -- race: shared memory -----------------------------------------------------------------------------------------


@cuda.jit
def rotate_racy(x, out):
    buf = cuda.shared.array(BLOCK, dtype=np.float32)
    t = cuda.threadIdx.x
    buf[t] = x[t]
    cuda.syncthreads()
    v = buf[(t + 1) % BLOCK]
    buf[t] = v * np.float32(2.0)  # DEFECT: thread t-1 reads buf[t] in this same epoch
    cuda.syncthreads()
    out[t] = buf[t]


@cuda.jit
def rotate_synced(x, out):
    buf = cuda.shared.array(BLOCK, dtype=np.float32)
    t = cuda.threadIdx.x
    buf[t] = x[t]
    cuda.syncthreads()
    v = buf[(t + 1) % BLOCK]
    cuda.syncthreads()
    buf[t] = v * np.float32(2.0)
    cuda.syncthreads()
    out[t] = buf[t]


def test_shared_race_is_reported(rng):
    x, out = _inputs(rng, BLOCK), np.zeros(BLOCK, np.float32)
    with sim.checks("all"), pytest.raises(sim.RaceError) as info:
        rotate_racy[1, BLOCK](x, out)
    msg = str(info.value)
    assert "kernel 'rotate_racy'" in msg and "shared array 'buf'" in msg and "element [1]" in msg
    assert "thread (0, 0, 0) of block (0, 0, 0) read it" in msg
    assert "thread (1, 0, 0) of block (0, 0, 0) wrote it" in msg
    assert "v = buf[(t + 1) % BLOCK]" in msg and "buf[t] = v * np.float32(2.0)" in msg
    assert "test_checkers.py:" in msg


def test_shared_race_twin_passes(rng):
    x, out = _inputs(rng, BLOCK), np.zeros(BLOCK, np.float32)
    with sim.checks("all"):
        rotate_synced[1, BLOCK](x, out)
    np.testing.assert_array_equal(out, np.roll(x, -1) * np.float32(2.0))


# -- race: global memory ------------------------------------------------------------------------------------------


@cuda.jit
def total_racy(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[0] += x[i]  # DEFECT: plain read-modify-write from every thread


@cuda.jit
def total_atomic(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.add(out, 0, x[i])


def test_global_write_race_is_reported(rng):
    x, out = _inputs(rng, 100), np.zeros(1, np.float32)
    with sim.checks("race"), pytest.raises(sim.RaceError) as info:
        total_racy[2, 64](x, out)
    msg = str(info.value)
    assert "kernel 'total_racy'" in msg and "global array 'out'" in msg and "element [0]" in msg
    assert "thread (0, 0, 0) of block (0, 0, 0)" in msg and "thread (1, 0, 0) of block (0, 0, 0)" in msg
    assert "out[0] += x[i]" in msg


def test_global_atomic_twin_passes(rng):
    x, out = _inputs(rng, 100), np.zeros(1, np.float32)
    with sim.checks("all"):
        total_atomic[2, 64](x, out)
    np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=1e-5)


# -- uninit: static and dynamic shared memory ---------------------------------------------------------------------


@cuda.jit
def blur_without_halo(x, out):
    buf = cuda.shared.array(BLOCK_HALO, dtype=np.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[t + 1] = x[i]  # DEFECT: the halo cells buf[0] and buf[BLOCK + 1] are never loaded
    cuda.syncthreads()
    out[i] = buf[t] + buf[t + 1] + buf[t + 2]


@cuda.jit
def blur_with_halo(x, out):
    buf = cuda.shared.array(BLOCK_HALO, dtype=np.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    n = x.shape[0]
    buf[t + 1] = x[i]
    if t == 0:
        buf[0] = x[i - 1] if i > 0 else np.float32(0.0)
    if t == BLOCK - 1:
        buf[BLOCK + 1] = x[i + 1] if i + 1 < n else np.float32(0.0)
    cuda.syncthreads()
    out[i] = buf[t] + buf[t + 1] + buf[t + 2]


def test_uninitialized_static_shared_read_is_reported(rng):
    x, out = _inputs(rng, 2 * BLOCK), np.zeros(2 * BLOCK, np.float32)
    with sim.checks("all"), pytest.raises(sim.UninitializedReadError) as info:
        blur_without_halo[2, BLOCK](x, out)
    msg = str(info.value)
    assert "kernel 'blur_without_halo'" in msg and "shared array 'buf' element [0]" in msg
    assert "thread (0, 0, 0) of block (0, 0, 0)" in msg and "out[i] = buf[t] + buf[t + 1]" in msg


def test_uninitialized_static_twin_passes(rng):
    x, out = _inputs(rng, 2 * BLOCK), np.zeros(2 * BLOCK, np.float32)
    with sim.checks("all"):
        blur_with_halo[2, BLOCK](x, out)
    padded = np.concatenate([[0.0], x.astype(np.float64), [0.0]])
    np.testing.assert_allclose(out, padded[:-2] + padded[1:-1] + padded[2:], rtol=1e-6)


@cuda.jit
def pairs_dynamic(x, out, fill_second):
    dyn = cuda.shared.array(0, dtype=np.float32)
    t = cuda.threadIdx.x
    n = cuda.blockDim.x
    first, second = dyn[:n], dyn[n : 2 * n]
    first[t] = x[t]
    if fill_second:
        second[t] = x[t] * np.float32(3.0)
    cuda.syncthreads()
    out[t] = first[n - 1 - t] + second[n - 1 - t]  # DEFECT unless fill_second: second is never written


def test_uninitialized_dynamic_shared_read_through_a_slice_is_reported(rng):
    x, out = _inputs(rng, 32), np.zeros(32, np.float32)
    with sim.checks("uninit"), pytest.raises(sim.UninitializedReadError) as info:
        pairs_dynamic[1, 32, 0, 2 * 32 * 4](x, out, False)
    msg = str(info.value)
    # thread 0 reads second[31], which is element 32 + 31 of the dynamic buffer
    assert "dynamic shared array 'dyn' element [63] (index [31] of a view of it)" in msg
    assert "kernel 'pairs_dynamic'" in msg and "thread (0, 0, 0) of block (0, 0, 0)" in msg


def test_uninitialized_dynamic_twin_passes(rng):
    x, out = _inputs(rng, 32), np.zeros(32, np.float32)
    with sim.checks("all"):
        pairs_dynamic[1, 32, 0, 2 * 32 * 4](x, out, True)
    np.testing.assert_allclose(out, (x * np.float32(4.0))[::-1], rtol=1e-6)


def test_shared_memory_is_fresh_for_every_block(rng):
    # block 1 must not see block 0's writes: its halo read is still uninitialized
    x, out = _inputs(rng, 2 * BLOCK), np.zeros(2 * BLOCK, np.float32)
    with sim.checks("uninit"), sim.shuffled(None), pytest.raises(sim.UninitializedReadError,
                                                                 match="block \\(0, 0, 0\\)"):
        blur_without_halo[2, BLOCK](x, out)


# -- bounds --------------------------------------------------------------------------------------------------------


@cuda.jit
def difference_wraps(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] - x[i - 1]  # DEFECT at i == 0: x[-1]


@cuda.jit
def difference_guarded(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] - x[i - 1] if i > 0 else x[i]


@cuda.jit
def copy_unguarded(x, out):
    i = cuda.grid(1)
    out[i] = x[i]  # DEFECT: the grid has more threads than elements


def test_a_computed_negative_index_is_reported_with_what_numba_and_the_c_do(rng):
    x, out = _inputs(rng, 50), np.zeros(50, np.float32)
    with sim.checks("bounds"), pytest.raises(sim.OutOfBoundsError) as info:
        difference_wraps[1, 64](x, out)
    msg = str(info.value)
    assert "kernel 'difference_wraps'" in msg and "index [-1]" in msg and "global array 'x'" in msg
    assert "shape (50,)" in msg and "thread (0, 0, 0) of block (0, 0, 0)" in msg
    assert "out[i] = x[i] - x[i - 1]" in msg and "allow_negative_indices" in msg
    # what happens to it elsewhere: Numba and numbakern's C wrap it, to the last element
    assert "Numba wraps a negative index around" in msg and "would read index 49" in msg and "nk_wrap" in msg
    assert "out of bounds in CUDA C" not in msg


@cuda.jit
def ends_and_corners(x, m, out):
    """Deliberate last-element reads, as Numba means them: literal negative indices."""
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i, 0] = x[-1] - x[i]
        out[i, 1] = m[-1, i % m.shape[1]] + m[i % m.shape[0], -2]
        m2 = m[i % m.shape[0]]
        out[i, 2] = m2[-3]


@cuda.jit
def store_last(x):
    if cuda.grid(1) == 0:
        x[-1] = 7.0


def test_literal_negative_indices_mean_what_numba_means(rng):
    x, m = _inputs(rng, 11), _inputs(rng, 30).reshape(5, 6)
    out = np.zeros((9, 3), np.float32)
    with sim.checks("all"):
        ends_and_corners[1, 32](x, m, out)
    i = np.arange(9)
    np.testing.assert_array_equal(out[:, 0], x[-1] - x[:9])
    np.testing.assert_array_equal(out[:, 1], m[-1, i % 6] + m[i % 5, -2])
    np.testing.assert_array_equal(out[:, 2], m[i % 5, -3])
    y = _inputs(rng, 4)
    with sim.checks("all"):
        store_last[1, 32](y)
    assert y[-1] == 7.0


def test_a_literal_negative_index_past_the_start_is_still_out_of_bounds(rng):
    with sim.checks("bounds"), pytest.raises(sim.OutOfBoundsError, match=r"index \[-1\].*size 0.*even then"):
        store_last[1, 1](np.zeros(0, np.float32))


def test_positive_out_of_bounds_is_reported(rng):
    x, out = _inputs(rng, 50), np.zeros(50, np.float32)
    with sim.checks("bounds"), pytest.raises(sim.OutOfBoundsError) as info:
        copy_unguarded[1, 64](x, out)
    msg = str(info.value)
    assert "index [50]" in msg and "global array 'x'" in msg and "thread (50, 0, 0) of block (0, 0, 0)" in msg


def test_bounds_twin_passes(rng):
    x, out = _inputs(rng, 50), np.zeros(50, np.float32)
    with sim.checks("all"):
        difference_guarded[1, 64](x, out)
    np.testing.assert_array_equal(out, np.concatenate([[x[0]], x[1:] - x[:-1]]))


def test_negative_indices_can_be_allowed_for_a_region(rng):
    x, out = _inputs(rng, 50), np.zeros(50, np.float32)
    with sim.checks("all"), sim.allow_negative_indices():
        difference_wraps[1, 64](x, out)
    np.testing.assert_array_equal(out, x - np.roll(x, 1))  # wrapped, as numpy does


def test_negative_indices_can_be_allowed_for_one_kernel(rng):
    @sim.allow_negative_indices
    @cuda.jit
    def last_minus_first(x, out):
        out[0] = x[cuda.grid(1) - 1] - x[0]  # a computed -1 (a literal one needs no permission)

    x, out = _inputs(rng, 8), np.zeros(1, np.float32)
    with sim.checks("all"):
        last_minus_first[1, 1](x, out)
    assert out[0] == x[-1] - x[0]


@cuda.jit
def shared_negative(out):
    buf = cuda.shared.array((4, 8), dtype=np.float32)
    t = cuda.threadIdx.x
    buf[t % 4, t] = np.float32(t)
    cuda.syncthreads()
    out[t] = buf[t % 4, t - 1]  # DEFECT at t == 0: column -1


def test_negative_index_into_2d_shared_array_is_reported():
    with sim.checks("bounds"), pytest.raises(sim.OutOfBoundsError, match=r"index \[0, -1\].*shared array 'buf'"):
        shared_negative[1, 8](np.zeros(8, np.float32))


# -- barrier divergence --------------------------------------------------------------------------------------------


@cuda.jit
def scale_early_exit(x, out):
    buf = cuda.shared.array(BLOCK, dtype=np.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if i >= x.shape[0]:
        return  # DEFECT: these threads never reach the barrier below
    buf[t] = x[i]
    cuda.syncthreads()
    out[i] = buf[t] * np.float32(2.0)


@cuda.jit
def scale_guarded(x, out):
    buf = cuda.shared.array(BLOCK, dtype=np.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    if i < x.shape[0]:
        buf[t] = x[i]
    cuda.syncthreads()
    if i < x.shape[0]:
        out[i] = buf[t] * np.float32(2.0)


@cuda.jit
def split_barriers(out):
    t = cuda.threadIdx.x
    if t % 2 == 0:
        cuda.syncthreads()  # DEFECT: even and odd threads wait at different barriers
    else:
        cuda.syncthreads()
    out[t] = t


def test_barrier_with_exited_threads_is_reported(rng):
    x, out = _inputs(rng, 100), np.zeros(100, np.float32)
    with sim.checks("barrier"), pytest.raises(sim.BarrierDivergenceError) as info:
        scale_early_exit[2, BLOCK](x, out)
    msg = str(info.value)
    assert "kernel 'scale_early_exit', block (1, 0, 0)" in msg
    assert "threads (0, 0, 0), (1, 0, 0)" in msg and "already exited" in msg
    assert "threads (36, 0, 0), (37, 0, 0)" in msg and "cuda.syncthreads()" in msg


def test_barriers_at_different_call_sites_are_reported():
    with sim.checks("barrier"), pytest.raises(sim.BarrierDivergenceError) as info:
        split_barriers[1, 8](np.zeros(8, np.float32))
    msg = str(info.value)
    assert "different barrier" in msg
    assert "threads (0, 0, 0), (2, 0, 0)" in msg and "threads (1, 0, 0), (3, 0, 0)" in msg


def test_barrier_twin_passes(rng):
    x, out = _inputs(rng, 100), np.zeros(100, np.float32)
    with sim.checks("all"):
        scale_guarded[2, BLOCK](x, out)
    np.testing.assert_array_equal(out, x * np.float32(2.0))


def test_without_the_barrier_check_exited_threads_are_ignored_as_in_the_stock_simulator(rng):
    x, out = _inputs(rng, 100), np.zeros(100, np.float32)
    with sim.checks("none"):
        scale_early_exit[2, BLOCK](x, out)
    np.testing.assert_array_equal(out, x * np.float32(2.0))


# -- configuration -------------------------------------------------------------------------------------------------


def test_checks_are_read_from_the_environment_at_launch(monkeypatch, rng):
    x, out = _inputs(rng, 50), np.zeros(50, np.float32)
    monkeypatch.setenv(sim.CHECKS_ENV, "none")
    difference_wraps[1, 64](x, out)  # not reported
    monkeypatch.setenv(sim.CHECKS_ENV, "uninit,bounds")
    with pytest.raises(sim.OutOfBoundsError):
        difference_wraps[1, 64](x, out)


def test_configure_overrides_the_environment(monkeypatch, rng):
    x, out = _inputs(rng, 50), np.zeros(50, np.float32)
    monkeypatch.setenv(sim.CHECKS_ENV, "all")
    try:
        assert sim.configure(checks="race,barrier").checks == {"race", "barrier"}
        difference_wraps[1, 64](x, out)
    finally:
        sim.configure(checks=None)
    assert sim.current().checks == set(sim.CHECK_NAMES)


def test_unknown_check_names_are_refused():
    with pytest.raises(ValueError, match="unknown simulator check.*'races'"):
        sim.checks("races,bounds")


@cuda.jit
def atomic_past_the_end(hist, x):
    t = cuda.threadIdx.x
    cuda.atomic.add(hist, t, x[t])  # DEFECT: hist has fewer bins than there are threads


def test_out_of_bounds_atomic_is_reported_at_the_kernel_line(rng):
    with sim.checks("bounds"), pytest.raises(sim.OutOfBoundsError) as info:
        atomic_past_the_end[1, 8](np.zeros(4, np.float32), _inputs(rng, 8))
    msg = str(info.value)
    assert "index [4]" in msg and "global array 'hist'" in msg and "thread (4, 0, 0)" in msg
    assert "cuda.atomic.add(hist, t, x[t])" in msg


@cuda.jit
def matmul_tiled_one_barrier(m, n, out, tw):
    # the lecture's kernel with the second syncthreads() forgotten
    tc, tr = cuda.threadIdx.x, cuda.threadIdx.y
    r, c = cuda.blockIdx.y * cuda.blockDim.y + tr, cuda.blockIdx.x * cuda.blockDim.x + tc
    h, k = m.shape
    w = n.shape[1]
    shar = cuda.shared.array(0, dtype=np.float32)
    ms, ns = shar[: tw * tw], shar[tw * tw : 2 * tw * tw]
    p = np.float32(0.0)
    for ph in range((k + tw - 1) // tw):
        idx = ph * tw
        ms[tr * tw + tc] = m[r, tc + idx] if r < h and idx + tc < k else 0.0
        ns[tr * tw + tc] = n[tr + idx, c] if c < w and idx + tr < k else 0.0
        cuda.syncthreads()
        for i in range(tw):
            p += ms[tr * tw + i] * ns[tw * i + tc]
        # DEFECT: no syncthreads() here, the next phase overwrites tiles other threads still read
    if r < h and c < w:
        out[r, c] = p


def test_forgotten_second_barrier_of_the_tiled_matmul_is_a_race(rng):
    from numbakern.kernels.matmul import matmul_tiled

    m, n = (rng.random((8, 16)) + 0.5).astype(np.float32), (rng.random((16, 8)) + 0.5).astype(np.float32)
    out = np.zeros((8, 8), np.float32)
    with sim.checks("all"), pytest.raises(sim.RaceError) as info:
        matmul_tiled_one_barrier[1, (8, 8), 0, 2 * 64 * 4](m, n, out, 8)
    msg = str(info.value)
    # thread (0, 0) runs on into phase 1 and overwrites ms[0] before thread (1, 0) has read it for phase 0
    assert "dynamic shared array 'shar' element [0] (index [0] of a view of it)" in msg
    assert "thread (0, 0, 0) of block (0, 0, 0) wrote it" in msg
    assert "thread (1, 0, 0) of block (0, 0, 0) read it" in msg
    assert "p += ms[tr * tw + i] * ns[tw * i + tc]" in msg and "ms[tr * tw + tc] = m[r, tc + idx]" in msg

    with sim.checks("all"):  # the registered kernel, its correct twin
        matmul_tiled[1, (8, 8), 0, 2 * 64 * 4](m, n, out, 8)
    np.testing.assert_allclose(out, m.astype(np.float64) @ n.astype(np.float64), rtol=1e-5)


@cuda.jit
def handover(out, x):
    t = cuda.threadIdx.x
    if t == 0:
        out[0] = x[0]
    cuda.syncthreads()
    if t == 1:
        out[0] = out[0] + x[1]  # ordered after thread 0's store by the barrier: not a race


def test_global_stores_separated_by_a_barrier_are_not_a_race(rng):
    x, out = _inputs(rng, 2), np.zeros(1, np.float32)
    with sim.checks("all"):
        handover[1, 2](out, x)
    assert out[0] == x[0] + x[1]


@cuda.jit
def one_element_per_block(x, out):
    i = cuda.blockIdx.x
    out[i] = x[i] * np.float32(2.0)


def test_the_global_race_tracker_costs_a_few_bytes_per_element(rng):
    import tracemalloc

    n = 20000  # one thread per block: a tracker holding thread or block objects would keep every block alive
    x, out = _inputs(rng, n), np.zeros(n, np.float32)
    with sim.checks("all"):
        one_element_per_block[8, 1](x[:8], out[:8])  # typed and warmed up outside the measurement
        tracemalloc.start()
        try:
            one_element_per_block[n, 1](x, out)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    np.testing.assert_array_equal(out, x * np.float32(2.0))
    # the argument copies (2 * 4 bytes per element) plus the tracker: well under 100 bytes per element
    assert peak < 100 * n + 2_000_000, f"{peak / n:.0f} bytes per element"
