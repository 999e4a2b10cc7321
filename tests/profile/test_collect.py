"""What ``numbakern.profile`` counts for whole launches in the simulator: warp instructions put together from the
lanes (a lane's access at a site, in a pass of the loops around it, with the others' there in that pass), stand-ins
that are one instruction (16-byte vector loads, ldmatrix, cp.async), atomics, flops, sampling; each against counts
worked out independently from the launch's index arithmetic."""

import json
import math

import numpy as np
import pytest
from numba import cuda

import numbakern
from numbakern.async_copy import async_commit, async_wait_all, copy_async, copy_async4
from numbakern.mma import formats, ldmatrix_x4, mma_m16n8k16_bf16
from numbakern.profiler import collect, lessons
from numbakern.unroll import rolled_function, unroll, unrolled
from numbakern.vector_io import vload4, vstore4

pytestmark = pytest.mark.sim


def sectors_of(addresses_by_warp, width=4):
    """Sectors per warp instruction, from byte addresses (an independent count)."""
    return sum(len({(a + b) // 32 for a in addrs for b in range(width)}) for addrs in addresses_by_warp)


def warps(indices, threads=None):
    """Group the active threads' linear indices into warps (32 consecutive threads of a block)."""
    by_warp = {}
    for t in indices:
        by_warp.setdefault(t // 32, []).append(t)
    return list(by_warp.values())


@cuda.jit
def gather(src, dst, stride):
    i = cuda.grid(1)
    if i < dst.shape[0]:
        dst[i] = src[i * stride] + src[0]


@pytest.mark.parametrize("stride", [1, 2, 8, 33])
def test_coalesced_strided_and_broadcast_loads(stride, rng):
    n, block = 1000, 128
    src = rng.random(n * stride, dtype=np.float32)
    dst = np.zeros(n, np.float32)
    p = numbakern.profile(gather, math.ceil(n / block), block, src, dst, stride)
    np.testing.assert_array_equal(dst, src[::stride][:n] + src[0])  # the launch ran, as a launch would
    row = p.line(gather.py_func.__code__.co_firstlineno + 4)
    by_warp = warps(range(n))
    ld, st = row.memory["global_ld"], row.memory["global_st"]
    assert ld.requests == 2 * len(by_warp)  # two loads per warp: the strided one and the broadcast
    assert ld.sectors == sectors_of([[4 * i * stride for i in w] for w in by_warp]) + len(by_warp)
    assert ld.ideal_sectors == 2 * sum(math.ceil(4 * len(w) / 32) for w in by_warp)
    assert st.requests == len(by_warp)
    assert st.sectors == sectors_of([[4 * i for i in w] for w in by_warp])
    assert row.executions == len(by_warp) and row.thread_executions == n
    assert p.kernel.unique_bytes_read == 32 * len({4 * i * stride // 32 for i in range(n)} | {0})
    assert p.kernel.unique_bytes_written == 32 * math.ceil(4 * n / 32)


@cuda.jit
def uneven_loops(x, out):
    lane = cuda.threadIdx.x
    acc = np.float32(0.0)
    for j in range(lane % 4 + 1):
        acc += x[j * 32 + lane]
    out[lane] = acc


def test_lanes_that_leave_a_loop_early_take_no_part_in_its_later_instructions(rng):
    x = rng.random(128, dtype=np.float32)
    out = np.zeros(32, np.float32)
    p = numbakern.profile(uneven_loops, 1, 32, x, out)
    load = p.line(uneven_loops.py_func.__code__.co_firstlineno + 5)
    m = load.memory["global_ld"]
    # iteration k (0..3) runs on the lanes with lane % 4 >= k: 32, 24, 16 and 8 lanes, each iteration one request
    assert m.requests == 4 and m.accesses == 32 + 24 + 16 + 8
    assert m.sectors == sectors_of([[4 * (k * 32 + lane) for lane in range(32) if lane % 4 >= k] for k in range(4)])
    assert load.executions == 4 and load.thread_executions == 80
    assert load.active_lanes == pytest.approx(20.0)


@cuda.jit
def copy4(src, dst):
    i = cuda.grid(1)
    regs = cuda.local.array(4, np.float32)
    if 4 * i < src.shape[0]:
        vload4(src, (4 * i,), regs, 0)
        vstore4(dst, (4 * i,), regs, 0)


def test_a_16_byte_vector_access_is_one_instruction(rng):
    src = rng.random(4 * 96, dtype=np.float32)
    dst = np.zeros_like(src)
    p = numbakern.profile(copy4, 1, 96, src, dst)
    np.testing.assert_array_equal(dst, src)
    first = copy4.py_func.__code__.co_firstlineno
    ld = p.line(first + 5).memory["global_ld"]
    st = p.line(first + 6).memory["global_st"]
    for m in (ld, st):
        assert (m.requests, m.accesses, m.width) == (3, 96, 16)
        assert m.sectors == m.ideal_sectors == 3 * 16
        assert m.instruction == "vector"


@cuda.jit(device=True)
def load_twice(a, i):
    return a[i] + a[i + 1]


@cuda.jit
def two_calls(a, out):
    i = cuda.grid(1)
    out[i] = load_twice(a, 2 * i)
    out[i] += load_twice(a, 2 * i + 64)


def test_each_call_of_a_device_function_is_an_instruction_of_its_own(rng):
    a = rng.random(128, dtype=np.float32)
    out = np.zeros(32, np.float32)
    p = numbakern.profile(two_calls, 1, 32, a, out)
    row = p.line(load_twice.py_func.__code__.co_firstlineno + 2, load_twice.py_func.__code__.co_filename)
    m = row.memory["global_ld"]
    assert m.requests == 4  # two loads in the device function, two calls
    assert m.sectors == 4 * sectors_of([[8 * lane for lane in range(32)]])  # 8 bytes apart: 8 sectors each


@cuda.jit
def bins(keys, hist):
    i = cuda.grid(1)
    if i < keys.shape[0]:
        cuda.atomic.add(hist, keys[i], 1)


def test_atomics_and_their_contention():
    keys = (np.arange(64) % 4).astype(np.int32)  # a warp's lanes fall on 4 bins, 8 lanes each
    hist = np.zeros(4, np.int32)
    p = numbakern.profile(bins, 1, 64, keys, hist)
    np.testing.assert_array_equal(hist, [16, 16, 16, 16])
    m = p.line(bins.py_func.__code__.co_firstlineno + 4).memory["global_atom"]
    assert (m.requests, m.accesses, m.max_contention, m.serialized) == (2, 64, 8, 16)
    assert m.sectors == 2  # the 4 bins are 16 bytes: one sector per request


@pytest.mark.parametrize("kernel, column_wavefronts", [(lessons.transpose_unpadded, 32),
                                                       (numbakern.kernels.transpose.transpose, 1)])
def test_the_transpose_tile_with_and_without_padding(kernel, column_wavefronts, rng):
    n = 64
    src = rng.random((n, n), dtype=np.float32)
    dst = np.zeros_like(src)
    p = numbakern.profile(kernel, (2, 2), (32, 8), src, dst)
    np.testing.assert_array_equal(dst, src.T)
    shared_ld = p.kernel.memory["shared_ld"]
    shared_st = p.kernel.memory["shared_st"]
    requests = 4 * 8 * 4  # blocks x warps x passes of the j loop
    assert shared_st.requests == shared_ld.requests == requests
    assert shared_st.wavefronts == requests  # a row of the tile: every bank once
    assert shared_ld.wavefronts == requests * column_wavefronts
    assert shared_ld.bank_conflicts == requests * (column_wavefronts - 1)


@cuda.jit
def stage(src, out):
    t = cuda.threadIdx.x
    tile = cuda.shared.array((64, 4), dtype=np.float32, alignment=16)
    copy_async4(tile, (t, 0), src, (t, 0), t < src.shape[0])
    async_commit()
    async_wait_all()
    cuda.syncthreads()
    out[t] = tile[t, 0] + tile[t, 3]


def test_cp_async_is_counted_where_it_is_issued_not_where_it_lands(rng):
    src = rng.random((40, 4), dtype=np.float32)  # lanes 40..63 copy nothing (zero-fill)
    out = np.zeros(64, np.float32)
    p = numbakern.profile(stage, 1, 64, src, out)
    np.testing.assert_allclose(out[:40], src[:, 0] + src[:, 3])
    assert (out[40:] == 0).all()
    issued = p.line(stage.py_func.__code__.co_firstlineno + 4)
    g, s = issued.memory["global_ldgsts"], issued.memory["shared_ldgsts"]
    assert g.requests == 2 and g.accesses == 64 and g.instruction == "cp.async"
    assert g.sectors == 16 + 4  # warp 0: 32 x 16 bytes; warp 1: lanes 32..39 only (8 x 16 bytes)
    assert s.requests == 2 and s.wavefronts == 8 and s.ideal_wavefronts == 8
    assert "shared_st" not in p.kernel.memory  # the landing at the wait is not counted again


@cuda.jit
def gather_rows(src, per_row, out):
    t = cuda.threadIdx.x
    tile = cuda.shared.array(32, dtype=np.float32)
    copy_async(tile, (t,), src, (t // per_row, t % per_row), True)  # 32 consecutive words, from 32 // per_row rows
    async_commit()
    async_wait_all()
    cuda.syncthreads()
    out[t] = tile[t]


@pytest.mark.parametrize("rows", [1, 4, 32])
def test_a_cp_async_writes_shared_memory_one_source_line_at_a_time(rows, rng):
    src = rng.random((rows, 128), dtype=np.float32)  # rows 512 bytes apart: each in its own 128-byte lines
    out = np.zeros(32, np.float32)
    p = numbakern.profile(gather_rows, 1, 32, src, 32 // rows, out)
    np.testing.assert_array_equal(out, src[:, :32 // rows].reshape(-1))
    s = p.line(gather_rows.py_func.__code__.co_firstlineno + 4).memory["shared_ldgsts"]
    # the destinations take one wavefront as a store would; the H200 takes one per source line
    # (tests/profile/shared_copy_store_patterns.json)
    assert (s.requests, s.wavefronts, s.ideal_wavefronts) == (1, rows, 1)


def per_pass(passes, width=4):
    """``(requests, accesses, sectors)`` of one access site from the byte addresses of its warp instructions, one list
    per pass of the loops around it (the hardware's rule: a warp runs its loops' passes together, and a site in a
    pass is one instruction of the lanes that reach it then; a pass no lane reaches issues none)."""
    issued = [addrs for addrs in passes if addrs]
    return len(issued), sum(map(len, issued)), sectors_of(issued, width)


def ld(p, kernel, offset):
    """The global loads at line ``offset`` of ``kernel`` (a kernel or device function)."""
    code = kernel.py_func.__code__
    m = p.line(code.co_firstlineno + offset, code.co_filename).memory["global_ld"]
    return m.requests, m.accesses, m.sectors


@cuda.jit
def skip_some(src, out):
    t = cuda.threadIdx.x
    acc = np.float32(0.0)
    for k in range(2):
        if t % 3 + k > 0:  # lanes 0, 3, 6, .. skip the load in iteration 0 only
            acc += src[k * 32 + t]
    out[t] = acc


def test_a_load_some_lanes_skip_in_some_iterations(rng):
    src = rng.random(64, dtype=np.float32)
    out = np.zeros(32, np.float32)
    p = numbakern.profile(skip_some, 1, 32, src, out)
    m = p.line(skip_some.py_func.__code__.co_firstlineno + 6).memory["global_ld"]
    # the GPU: iteration 0 reads src[t] for the lanes t % 3 > 0 (4 sectors), iteration 1 src[32..63] (4 more). (The
    # k-th execution of each lane joined would put the skipping lanes' iteration-1 reads into iteration 0's
    # instruction: 8 sectors, then 4.)
    assert (m.requests, m.sectors) == (2, 8)
    np.testing.assert_allclose(out, [src[t] * (t % 3 > 0) + src[32 + t] for t in range(32)], rtol=1e-6)


@cuda.jit
def skip_inner(src, out):
    t = cuda.threadIdx.x
    acc = np.float32(0.0)
    for i in range(3):
        for j in range(4):
            if (t + i + j) % 3 != 0:  # each lane skips a different pass of the inner loop in each outer pass
                acc += src[(4 * i + j) * 64 + t]
    out[t] = acc


def test_a_load_skipped_in_some_passes_of_an_inner_loop(rng):
    src = rng.random(12 * 64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    p = numbakern.profile(skip_inner, 1, 64, src, out)
    # per warp, one instruction per pass (i, j) of the lanes with (t + i + j) % 3 != 0: 12 passes of 2 warps
    expected = per_pass([[4 * ((4 * i + j) * 64 + t) for t in range(w, w + 32) if (t + i + j) % 3]
                         for w in (0, 32) for i in range(3) for j in range(4)])
    assert expected[0] == 24
    assert ld(p, skip_inner, 7) == expected
    np.testing.assert_allclose(out, [sum(src[(4 * i + j) * 64 + t] for i in range(3) for j in range(4)
                                         if (t + i + j) % 3) for t in range(64)], rtol=1e-5)


@cuda.jit
def skip_in_while(src, out):
    t = cuda.threadIdx.x
    acc = np.float32(0.0)
    k = 0
    while k < 4:
        if (t + k) % 4 != 0:  # each lane skips one pass of the four, lanes t, t + 4, .. the same one
            acc += src[k * 32 + t]
        k += 1
    out[t] = acc


def test_a_load_some_lanes_skip_in_some_passes_of_a_while_loop(rng):
    src = rng.random(4 * 32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    p = numbakern.profile(skip_in_while, 1, 32, src, out)
    # pass k: one instruction of the 24 lanes with (t + k) % 4 != 0, reading row k (every sector of it: 4)
    expected = per_pass([[4 * (k * 32 + t) for t in range(32) if (t + k) % 4] for k in range(4)])
    assert expected == (4, 96, 16)
    assert ld(p, skip_in_while, 7) == expected
    load = p.line(skip_in_while.py_func.__code__.co_firstlineno + 7)
    assert (load.executions, load.thread_executions) == (4, 96)  # 4 warp runs, 24 lanes each
    np.testing.assert_allclose(out, [sum(src[k * 32 + t] for k in range(4) if (t + k) % 4) for t in range(32)],
                               rtol=1e-6)


@cuda.jit
def leave_at_break(src, stop, out):
    t = cuda.threadIdx.x
    last = stop[t]
    acc = np.float32(0.0)
    for k in range(4):
        acc += src[k * 32 + t]
        if k == last:
            break
        if (t + k) % 2 == 1:  # odd passes for the even lanes, even passes for the odd ones
            acc += src[128 + k * 32 + t]
    out[t] = acc


def test_a_break_some_lanes_take(rng):
    stop = rng.integers(0, 5, size=32).astype(np.int32)  # the pass each lane leaves in (4: none, it runs all 4)
    src = rng.random(8 * 32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    p = numbakern.profile(leave_at_break, 1, 32, src, stop, out)
    # pass k runs on the lanes that have not left: stop[t] >= k; of those, the ones that do not leave in it
    # (stop[t] > k) and whose pass it is ((t + k) odd) make the second load
    first = per_pass([[4 * (k * 32 + t) for t in range(32) if stop[t] >= k] for k in range(4)])
    second = per_pass([[4 * (128 + k * 32 + t) for t in range(32) if stop[t] > k and (t + k) % 2]
                       for k in range(4)])
    assert ld(p, leave_at_break, 6) == first
    assert ld(p, leave_at_break, 10) == second
    np.testing.assert_allclose(out, [sum(src[k * 32 + t] + (src[128 + k * 32 + t] if k < stop[t] and (t + k) % 2
                                                             else 0) for k in range(min(stop[t], 3) + 1))
                                     for t in range(32)], rtol=1e-6)


@cuda.jit(device=True)
def load_if_mine(src, k, t):
    if (t + k) % 3 == 0:  # a third of the lanes in each pass of the caller's loop, not the same third
        return src[k * 32 + t]
    return np.float32(0.0)


@cuda.jit(device=True)
def first_above(src, t, limit):
    for j in range(4):
        v = src[j * 32 + t]
        if v > limit:
            return v  # out of the loop, and out of the function
    return np.float32(0.0)


@cuda.jit
def calls_in_a_loop(src, out):
    t = cuda.threadIdx.x
    acc = np.float32(0.0)
    for k in range(3):
        acc += load_if_mine(src, k, t)
        acc += first_above(src, t, np.float32(0.5))
        if (t + k) % 2 == 0:
            acc += src[96 + k * 32 + t]
    out[t] = acc


def test_a_load_skipped_in_a_device_function_called_in_a_loop(rng):
    src = rng.random(6 * 32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    p = numbakern.profile(calls_in_a_loop, 1, 32, src, out)
    # the device function's load: in pass k of the kernel's loop, one instruction of the lanes with (t + k) % 3 == 0
    assert ld(p, load_if_mine, 3) == per_pass([[4 * (k * 32 + t) for t in range(32) if (t + k) % 3 == 0]
                                               for k in range(3)])
    # the other's loop: pass j of each call runs on the lanes whose src[j' * 32 + t] was not above 0.5 for j' < j
    reached = [[j <= next((jj for jj in range(4) if src[jj * 32 + t] > 0.5), 3) for t in range(32)] for j in range(4)]
    assert ld(p, first_above, 3) == per_pass([[4 * (j * 32 + t) for t in range(32) if reached[j][t]]
                                              for k in range(3) for j in range(4)])
    # back in the kernel's pass k whichever pass of the device function's loop each lane returned from
    assert ld(p, calls_in_a_loop, 8) == per_pass([[4 * (96 + k * 32 + t) for t in range(32) if (t + k) % 2 == 0]
                                                  for k in range(3)])
    found = [next((src[j * 32 + t] for j in range(4) if src[j * 32 + t] > 0.5), 0.0) for t in range(32)]
    np.testing.assert_allclose(out, [sum((src[k * 32 + t] if (t + k) % 3 == 0 else 0) + found[t] +
                                         (src[96 + k * 32 + t] if (t + k) % 2 == 0 else 0) for k in range(3))
                                     for t in range(32)], rtol=1e-5)


@cuda.jit
def strided_sum(src, out, n):
    t = cuda.threadIdx.x
    acc = np.float32(0.0)
    for e in range(t, n, 32):  # lanes t < n % 32 run one pass more
        if e % 3 != 0:
            acc += src[e]
    out[t] = acc


@pytest.mark.parametrize("n", [100, 45])
def test_lanes_with_different_trip_counts(n, rng):
    src = rng.random(n, dtype=np.float32)
    out = np.zeros(32, np.float32)
    p = numbakern.profile(strided_sum, 1, 32, src, out, n)
    # pass q: the lanes with t + 32 q < n, of them those whose element is not a multiple of 3
    expected = per_pass([[4 * e for e in range(32 * q, min(32 * q + 32, n)) if e % 3]
                         for q in range(math.ceil(n / 32))])
    assert ld(p, strided_sum, 6) == expected
    np.testing.assert_allclose(out, [sum(src[e] for e in range(t, n, 32) if e % 3) for t in range(32)], rtol=1e-6)


@cuda.jit
@unrolled
def skip_unrolled(src, out):
    t = cuda.threadIdx.x
    acc = np.float32(0.0)
    for k in unroll(range(4), 2):  # a loop of 2 passes, its body 2 copies: for k and k + 1
        if (t + k) % 3 != 0:
            acc += src[k * 32 + t]
    out[t] = acc


def test_a_load_skipped_in_some_passes_of_a_partly_unrolled_loop(rng):
    src = rng.random(4 * 32, dtype=np.float32)
    out = np.zeros(32, np.float32)
    p = numbakern.profile(skip_unrolled, 1, 32, src, out)
    # each copy of the load is an instruction of its own, run once a pass: one instruction for each k (the line's
    # two copies together), of the lanes with (t + k) % 3 != 0
    code = rolled_function(skip_unrolled.py_func).__code__
    m = p.line(code.co_firstlineno + 7, code.co_filename).memory["global_ld"]
    assert (m.requests, m.accesses, m.sectors) == per_pass([[4 * (k * 32 + t) for t in range(32) if (t + k) % 3]
                                                            for k in range(4)])
    np.testing.assert_allclose(out, [sum(src[k * 32 + t] for k in range(4) if (t + k) % 3) for t in range(32)],
                               rtol=1e-6)


def _ldmatrix_kernel(cols):
    @cuda.jit
    def kernel(src, out):
        tid = cuda.threadIdx.x
        tile = cuda.shared.array((32, cols), dtype=np.uint16, alignment=16)  # ldmatrix reads 16-byte rows
        for e in range(tid, 32 * cols, 32):
            tile[e // cols, e % cols] = src[e // cols, e % cols]
        cuda.syncthreads()
        regs = cuda.local.array(4, np.uint32)
        ldmatrix_x4(regs, 0, tile, (tid, 0))
        for j in range(4):
            out[tid, j] = regs[j]

    return kernel


LDMATRIX = {8: _ldmatrix_kernel(8), 32: _ldmatrix_kernel(32)}


@pytest.mark.parametrize("cols, wavefronts", [(8, 4), (32, 16)])
def test_ldmatrix_is_a_16_byte_load_per_row_address(cols, wavefronts, rng):
    kernel = LDMATRIX[cols]
    src = rng.integers(0, 1 << 16, size=(32, cols), dtype=np.uint16)
    p = numbakern.profile(kernel, 1, 32, src, np.zeros((32, 4), np.uint32))
    m = p.line(kernel.py_func.__code__.co_firstlineno + 8).memory["shared_ld"]
    assert (m.requests, m.width, m.instruction) == (1, 16, "ldmatrix")
    assert m.wavefronts == wavefronts and m.ideal_wavefronts == 4  # rows 16 bytes apart, or 64 (4-way per matrix)


@cuda.jit
def arithmetic(a, b, out, k):
    i = cuda.grid(1)
    if i < out.shape[0]:
        acc = a[i] * b[i] + np.float32(1.0)
        for _ in range(math.ceil(k / 4)):
            acc = math.exp(acc) * np.float32(0.5)
        out[i] = acc


def test_operations_by_type(rng):
    n = 70
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    p = numbakern.profile(arithmetic, 3, 32, a, b, out, 12)
    # per thread: a mul and an add, then 3 iterations of exp and a mul; k / 4 is a float64 division, done once
    assert p.kernel.flops == {"fp32": n * (2 + 3), "sfu_fp32": n * 3, "fp64": n}
    assert p.roofline.flops == n * (2 + 3 + 1)


@cuda.jit
def mma_loop(a_bits, b_bits, out, k):
    lane = cuda.threadIdx.x % 32
    a = cuda.local.array(4, np.uint32)
    b = cuda.local.array(2, np.uint32)
    d = cuda.local.array(4, np.float32)
    for j in range(4):
        a[j] = a_bits[lane, j]
        d[j] = np.float32(0.0)
    for j in range(2):
        b[j] = b_bits[lane, j]
    for _ in range(k):
        mma_m16n8k16_bf16(d, 0, a, 0, b, 0, d, 0)
    for j in range(4):
        out[cuda.threadIdx.x, j] = d[j]


def test_tensor_core_operations_per_warp(rng):
    """An m16n8k16 mma is 2 * 16 * 8 * 16 bf16 operations per warp, whichever lane's line counts them."""
    def packed(shape):
        bits = formats.f32_to_bf16_bits(rng.standard_normal((*shape, 2)).astype(np.float32)).astype(np.uint32)
        return bits[..., 0] | bits[..., 1] << 16

    warps, k = 2, 3
    out = np.zeros((32 * warps, 4), np.float32)
    p = numbakern.profile(mma_loop, 1, 32 * warps, packed((32, 4)), packed((32, 2)), out, k)
    assert p.kernel.flops == {"tensor_bf16": warps * k * 2 * 16 * 8 * 16}


@cuda.jit
def add(a, b, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = a[i] + b[i]


def test_a_sample_of_blocks_extrapolates_to_the_grid(rng):
    n = 100 * 64 + 17  # 101 blocks of 64, the last one mostly idle
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    full = numbakern.profile(add, 101, 64, a, b, np.zeros(n, np.float32), sample=None)
    sampled = numbakern.profile(add, 101, 64, a, b, np.zeros(n, np.float32), sample=8)
    assert full.sampling.profiled == 101 and sampled.sampling.profiled < 12
    for kind in ("global_ld", "global_st"):
        f, s = full.kernel.memory[kind], sampled.kernel.memory[kind]
        assert (s.requests, s.sectors, s.accesses) == pytest.approx((f.requests, f.sectors, f.accesses))
    assert sampled.kernel.unique_bytes == pytest.approx(full.kernel.unique_bytes)
    assert sampled.kernel.flops == pytest.approx(full.kernel.flops)


@pytest.mark.parametrize("grid, budget", [((101, 1, 1), 8), ((30, 20, 1), 64), ((7, 5, 3), 10), ((4, 4, 1), None)])
def test_the_sample_plan_covers_the_grid(grid, budget):
    blocks, how = collect.plan(grid, budget)
    total = grid[0] * grid[1] * grid[2]
    assert sum(w for w, _ in blocks.values()) == pytest.approx(total)
    assert sum(lw for _, lw in blocks.values()) == pytest.approx(total)
    strata = 2 ** sum(1 for g in grid if g > 1)
    assert sum(1 for _, lw in blocks.values() if lw) == strata  # lines traced in one block of each stratum
    assert all(0 <= b < total for b in blocks)
    if budget is not None and total > budget:
        # the picks are distinct (their weights assume it) and, where a stratum has rows, not all in one column
        assert len(blocks) == sum(max(1, round(budget * s / total)) for s in _strata_sizes(grid))
        interior = [b for b in blocks if b % grid[0] < grid[0] - 1 and b // grid[0] % grid[1] < grid[1] - 1]
        if grid[1] > 2 and len(interior) > 1:
            assert len({b % grid[0] for b in interior}) > 1
    last = (grid[0] - 1) + grid[0] * ((grid[1] - 1) + grid[1] * (grid[2] - 1))
    assert last in blocks  # the corner block, whose tiles hang over every edge, is always run
    assert (how == "all") == (budget is None or total <= budget)


def _strata_sizes(grid):
    sizes = []
    for dims in ((g - 1, 1) for g in grid):
        sizes = [a * b for a in (sizes or [1]) for b in dims if b]
    return [s for s in sizes if s]


def test_the_profile_is_plain_data(rng):
    a = rng.random(100, dtype=np.float32)
    p = numbakern.profile(add, 2, 64, a, a, np.zeros(100, np.float32))
    data = json.loads(json.dumps(p.to_json()))
    assert data["kernel_name"] == "add" and data["grid"] == [2, 1, 1]
    assert {row["line"] for row in data["lines"]} >= {add.py_func.__code__.co_firstlineno + 4}
    assert data["kernel"]["memory"]["global_ld"]["requests"] == 8
    assert data["roofline"]["limiter"] in data["roofline"]["seconds"]


@pytest.mark.parametrize("kwargs, message", [
    ({"grid": 0}, "grid must be a positive int"),
    ({"block": (32, -1)}, "block must be a positive int"),
    ({"gpu": "V100"}, "unknown GPU 'V100'; expected one of H100, H200, A100, L4, RTX4090"),
    ({"sample": 0}, "sample must be a positive number of blocks"),
])
def test_bad_arguments_are_named(kwargs, message):
    a = np.zeros(4, np.float32)
    call = {"grid": 1, "block": 4, **kwargs}
    grid, block = call.pop("grid"), call.pop("block")
    with pytest.raises(ValueError, match=message):
        numbakern.profile(add, grid, block, a, a, a, **call)
