"""The coverage corpus: every kernel of twenty numba-cuda source files (nine documentation examples, eleven cudapy
test modules), copied as written into ``kernels/``, each with the signature its test compiles it with and a launch
on inputs like the test's.

Which kernels are in: every kernel of those files that its test compiles and runs, except kernels whose test
expects numba to reject them, kernels of numba's extension-API tests (test-only data models), and kernels built
inside a test helper from the helper's arguments (they exist only as closures). A kernel used with several
signatures appears once, with the first signature of its own test (``fill3d_threadidx`` also with the Fortran
layout its test checks).
"""

from __future__ import annotations

import numpy as np

from .spec import Entry, Launch, arange, bools, complexes, custom, fixed, floats, ints, scalar

L = Launch.of
E = Entry


def _xoroshiro_states(n, seed=1):
    def make(rng):
        from numba.cuda.random import init_xoroshiro128p_states_cpu, xoroshiro128p_dtype

        states = np.empty(n, dtype=xoroshiro128p_dtype)
        init_xoroshiro128p_states_cpu(states, int(rng.integers(1, 2**31)), 0)
        return states
    return custom(make)


def _cas_res(n, fill, unfill, dtype, shape=None):
    def make(rng):
        res = np.asarray([fill] * (n // 2) + [unfill] * (n // 2), dtype=dtype)
        res = rng.permutation(res)
        return res.reshape(shape) if shape else res
    return custom(make)


def _with_nans(shape, dtype, lo, hi, fill):
    def make(rng):
        vals = rng.integers(lo, hi, size=shape).astype(dtype)
        vals[1::2] = fill
        return vals
    return custom(make)


def _sessions():
    ids = np.array([1, 1, 1, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4])
    sec = np.array([1, 2, 3, 5000, 5001, 5002, 1, 2, 3, 1, 2, 5000, 5001, 10000, 10001, 10002, 10003, 15000,
                    150001, 1, 5000, 50001, 15000, 20000, 25000, 25001, 25002, 25003], dtype="datetime64[ns]")
    return fixed(ids.astype(np.int64)), fixed(sec.astype(np.int64)), fixed(np.zeros(len(ids)))


DOCS = [
    E("doc_vecadd.py", "f", "void(float64[::1], float64[::1], float64[::1])", L(4, 256),
      (floats(1000, np.float64), floats(1000, np.float64), floats(1000, np.float64))),
    E("doc_matmul.py", "matmul", "void(int64[:, ::1], float64[:, ::1], float64[:, ::1])", L((3, 2), (16, 16)),
      (ints((37, 29), np.int64, 0, 100), floats((29, 23), np.float64), floats((37, 23), np.float64))),
    E("doc_matmul.py", "fast_matmul", "void(int64[:, ::1], float64[:, ::1], float64[:, ::1])", L((2, 2), (16, 16)),
      (ints((5, 23), np.int64, 0, 115), floats((23, 7), np.float64), floats((5, 7), np.float64))),
    E("doc_reduction.py", "array_sum", "void(int64[::1])", L(1, 1024), (ints(1024, np.int64, 0, 1000),)),
    E("doc_laplace.py", "solve_heat_equation", "void(float64[::1], float64[::1], int64, float64)", L(4, 256),
      (floats(1001, np.float64, 0, 100), floats(1001, np.float64), scalar(np.int64, 50, 100), fixed(0.25))),
    E("doc_sessionize.py", "sessionize", "void(int64[::1], int64[::1], float64[::1])", L(1, 32), _sessions()),
    E("doc_montecarlo.py", "mc_integrator_kernel",
      "void(float32[::1], numba.cuda.random.xoroshiro128p_type[::1], int64, int64)", L(4, 256),
      (floats(1000, np.float32), _xoroshiro_states(1000), fixed(1), fixed(2))),
    E("doc_random.py", "random_3d", "void(float32[:, :, ::1], numba.cuda.random.xoroshiro128p_type[::1])",
      L((2, 2, 2), (4, 4, 4)), (floats((13, 11, 9), np.float32), _xoroshiro_states(512))),
    E("doc_cg.py", "sequential_rows", "void(int32[:, ::1])", L(2, 32), (ints((64, 64), np.int32, 0, 1000),)),
    E("doc_cpu_gpu_compat.py", "f", "void(float64[::1], int64[::1], int64[::1], int64[::1])", L(1, 128),
      (floats(100, np.float64), ints(100, np.int64, 1, 5000), ints(100, np.int64, 1, 5000),
       ints(100, np.int64, 1, 5000))),
]

# -- cudapy/test_atomics.py ------------------------------------------------------------------------------------
_u32_1d = (ints(32, np.uint32, 0, 32),)
_u32_2d = (ints((4, 8), np.uint32, 0, 32),)


def _a(kernel, sig, launch, args, **kw):
    return E("cudapy_atomics.py", kernel, sig, launch, tuple(args), **kw)


_B1, _B2 = L(1, 32), L(1, (4, 8))
_i64idx = ints(32, np.int64, 0, 32)
_i32idx = ints(32, np.int32, 0, 32)
ATOMICS = [
    _a("atomic_add", "void(uint32[:])", _B1, _u32_1d),
    _a("atomic_add_wrap", "void(uint32[:])", _B1, _u32_1d),
    _a("atomic_add2", "void(uint32[:,:])", _B2, _u32_2d),
    _a("atomic_add2_wrap", "void(uint32[:,:])", _B2, _u32_2d),
    _a("atomic_add3", "void(uint32[:,:])", _B2, _u32_2d),
    _a("atomic_add_float", "void(float32[:])", _B1, (ints(32, np.float32, 0, 32),)),
    _a("atomic_add_float_wrap", "void(float32[:])", _B1, (ints(32, np.float32, 0, 32),)),
    _a("atomic_add_float_2", "void(float32[:,:])", _B2, (ints((4, 8), np.float32, 0, 32),)),
    _a("atomic_add_float_2_wrap", "void(float32[:,:])", _B2, (ints((4, 8), np.float32, 0, 32),)),
    _a("atomic_add_float_3", "void(float32[:,:])", _B2, (ints((4, 8), np.float32, 0, 32),)),
    _a("atomic_add_double", "void(int64[:], float64[:])", _B1, (_i64idx, floats(32, np.float64))),
    _a("atomic_add_double_wrap", "void(int64[:], float64[:])", _B1, (_i64idx, floats(32, np.float64))),
    _a("atomic_add_double_2", "void(float64[:,:])", _B2, (ints((4, 8), np.float64, 0, 32),)),
    _a("atomic_add_double_2_wrap", "void(float64[:,:])", _B2, (ints((4, 8), np.float64, 0, 32),)),
    _a("atomic_add_double_3", "void(float64[:,:])", _B2, (ints((4, 8), np.float64, 0, 32),)),
    _a("atomic_add_double_global", "void(int64[:], float64[:])", _B1, (_i64idx, ints(32, np.float64, 0, 32))),
    _a("atomic_add_double_global_wrap", "void(int64[:], float64[:])", _B1, (_i64idx, ints(32, np.float64, 0, 32))),
    _a("atomic_add_double_global_2", "void(float64[:,:])", _B2, (ints((4, 8), np.float64, 0, 32),)),
    _a("atomic_add_double_global_2_wrap", "void(float64[:,:])", _B2, (ints((4, 8), np.float64, 0, 32),)),
    _a("atomic_add_double_global_3", "void(float64[:,:])", _B2, (ints((4, 8), np.float64, 0, 32),)),
    _a("atomic_sub", "void(int32[:])", _B1, (ints(32, np.int32, 0, 32),)),
    _a("atomic_sub2", "void(int32[:,:])", _B2, (ints((4, 8), np.int32, 0, 32),)),
    _a("atomic_sub3", "void(int32[:,:])", _B2, (ints((4, 8), np.int32, 0, 32),)),
    _a("atomic_sub_float", "void(float32[:])", _B1, (ints(32, np.float32, 0, 32),)),
    _a("atomic_sub_float_2", "void(float32[:,:])", _B2, (ints((4, 8), np.float32, 0, 32),)),
    _a("atomic_sub_float_3", "void(float32[:,:])", _B2, (ints((4, 8), np.float32, 0, 32),)),
    _a("atomic_sub_double", "void(int64[:], float64[:])", _B1, (_i64idx, floats(32, np.float64))),
    _a("atomic_sub_double_2", "void(float64[:,:])", _B2, (ints((4, 8), np.float64, 0, 32),)),
    _a("atomic_sub_double_3", "void(float64[:,:])", _B2, (ints((4, 8), np.float64, 0, 32),)),
    _a("atomic_sub_double_global", "void(int64[:], float64[:])", _B1, (_i64idx, floats(32, np.float64))),
    _a("atomic_sub_double_global_2", "void(float64[:,:])", _B2, (ints((4, 8), np.float64, 0, 32),)),
    _a("atomic_sub_double_global_3", "void(float64[:,:])", _B2, (ints((4, 8), np.float64, 0, 32),)),
    _a("atomic_and", "void(uint32[:], uint32)", _B1, _u32_1d + (scalar(np.uint32, 0, 500),)),
    _a("atomic_and2", "void(uint32[:,:], uint32)", _B2, _u32_2d + (scalar(np.uint32, 0, 500),)),
    _a("atomic_and3", "void(uint32[:,:], uint32)", _B2, _u32_2d + (scalar(np.uint32, 0, 500),)),
    _a("atomic_and_global", "void(int32[:], int32[:], int32)", _B1,
       (_i32idx, ints(32, np.int32, 0, 32), scalar(np.int32, 0, 500))),
    _a("atomic_and_global_2", "void(uint32[:,:], uint32)", _B2, _u32_2d + (scalar(np.uint32, 0, 500),)),
    _a("atomic_or", "void(uint32[:], uint32)", _B1, _u32_1d + (scalar(np.uint32, 0, 500),)),
    _a("atomic_or2", "void(uint32[:,:], uint32)", _B2, _u32_2d + (scalar(np.uint32, 0, 500),)),
    _a("atomic_or3", "void(uint32[:,:], uint32)", _B2, _u32_2d + (scalar(np.uint32, 0, 500),)),
    _a("atomic_or_global", "void(int32[:], int32[:], int32)", _B1,
       (_i32idx, ints(32, np.int32, 0, 32), scalar(np.int32, 0, 500))),
    _a("atomic_or_global_2", "void(uint32[:,:], uint32)", _B2, _u32_2d + (scalar(np.uint32, 0, 500),)),
    _a("atomic_xor", "void(uint32[:], uint32)", _B1, _u32_1d + (scalar(np.uint32, 0, 500),)),
    _a("atomic_xor2", "void(uint32[:,:], uint32)", _B2, _u32_2d + (scalar(np.uint32, 0, 500),)),
    _a("atomic_xor3", "void(uint32[:,:], uint32)", _B2, _u32_2d + (scalar(np.uint32, 0, 500),)),
    _a("atomic_xor_global", "void(int32[:], int32[:], int32)", _B1,
       (_i32idx, ints(32, np.int32, 0, 32), scalar(np.int32, 0, 500))),
    _a("atomic_xor_global_2", "void(uint32[:,:], uint32)", _B2, _u32_2d + (scalar(np.uint32, 0, 500),)),
    _a("atomic_inc32", "void(uint32[:], uint32[:], uint32)", _B1,
       (ints(32, np.uint32, 0, 32), arange(32, np.uint32), scalar(np.uint32, 0, 32))),
    _a("atomic_inc64", "void(uint64[:], uint64[:], uint64)", _B1,
       (ints(32, np.uint64, 0, 32), arange(32, np.uint64), scalar(np.uint64, 0, 32))),
    _a("atomic_inc2_32", "void(uint32[:,:], uint32)", _B2, _u32_2d + (scalar(np.uint32, 0, 32),)),
    _a("atomic_inc2_64", "void(uint64[:,:], uint64)", _B2,
       (ints((4, 8), np.uint64, 0, 32), scalar(np.uint64, 0, 32))),
    _a("atomic_inc3", "void(uint32[:,:], uint32)", _B2, _u32_2d + (scalar(np.uint32, 0, 32),)),
    _a("atomic_inc_global", "void(uint32[:], uint32[:], uint32)", _B1,
       (arange(32, np.uint32), ints(32, np.uint32, 0, 32), scalar(np.uint32, 0, 32))),
    _a("atomic_inc_global_2", "void(uint32[:,:], uint32)", _B2, _u32_2d + (scalar(np.uint32, 0, 32),)),
    _a("atomic_dec32", "void(uint32[:], uint32[:], uint32)", _B1,
       (ints(32, np.uint32, 0, 32), arange(32, np.uint32), scalar(np.uint32, 0, 32))),
    _a("atomic_dec64", "void(uint64[:], uint64[:], uint64)", _B1,
       (ints(32, np.uint64, 0, 32), arange(32, np.uint64), scalar(np.uint64, 0, 32))),
    _a("atomic_dec2_32", "void(uint32[:,:], uint32)", _B2, _u32_2d + (scalar(np.uint32, 0, 32),)),
    _a("atomic_dec2_64", "void(uint64[:,:], uint64)", _B2,
       (ints((4, 8), np.uint64, 0, 32), scalar(np.uint64, 0, 32))),
    _a("atomic_dec3", "void(uint32[:,:], uint32)", _B2, _u32_2d + (scalar(np.uint32, 0, 32),)),
    _a("atomic_dec_global", "void(uint32[:], uint32[:], uint32)", _B1,
       (arange(32, np.uint32), ints(32, np.uint32, 0, 32), scalar(np.uint32, 0, 32))),
    _a("atomic_dec_global_2", "void(uint32[:,:], uint32)", _B2, _u32_2d + (scalar(np.uint32, 0, 32),)),
    _a("atomic_exch", "void(uint32[:], uint32[:], uint32)", _B1,
       (ints(32, np.uint32, 0, 32), arange(32, np.uint32), scalar(np.uint32, 50, 100))),
    _a("atomic_exch2", "void(uint32[:,:], uint32)", _B2, _u32_2d + (scalar(np.uint32, 50, 100),)),
    _a("atomic_exch3", "void(uint64[:,:], uint64)", _B2,
       (ints((4, 8), np.uint64, 0, 32), scalar(np.uint64, 50, 100))),
    _a("atomic_exch_global", "void(uint32[:], uint32[:], uint32)", _B1,
       (arange(32, np.uint32), ints(32, np.uint32, 0, 32), scalar(np.uint32, 50, 100))),
    # generated from a template string by exec() in the test module
    _a("atomic_max", "void(int32[::1], int32[:, ::1])", L(32, 32),
       (fixed(np.zeros(1, np.int32)), ints((32, 32), np.int32, -65535, 65535))),
    _a("atomic_max_double_normalizedindex", "void(float64[:], float64[:,:])", L(32, 32),
       (fixed(np.zeros(1)), ints((32, 32), np.float64, 0, 65535))),
    _a("atomic_max_double_oneindex", "void(float64[:], float64[:])", L(1, 32),
       (fixed(np.zeros(1)), ints(32, np.float64, 0, 128))),
    _a("atomic_max_double_shared", "void(float64[:], float64[:])", L(1, 32),
       (fixed(np.zeros(1)), ints(32, np.float64, 0, 32))),
    _a("atomic_min", "void(int32[::1], int32[:, ::1])", L(32, 32),
       (fixed(np.array([65535], np.int32)), ints((32, 32), np.int32, -65535, 65535))),
    _a("atomic_min_double_normalizedindex", "void(float64[:], float64[:,:])", L(32, 32),
       (fixed(np.array([65535.0])), ints((32, 32), np.float64, 0, 65535))),
    _a("atomic_min_double_oneindex", "void(float64[:], float64[:])", L(1, 32),
       (fixed(np.array([128.0])), ints(32, np.float64, 0, 128))),
    _a("atomic_min_double_shared", "void(float64[:], float64[:])", L(1, 32),
       (fixed(np.array([32.0])), ints(32, np.float64, 0, 32))),
    _a("atomic_nanmax", "void(int32[::1], int32[:, ::1])", L(32, 32),
       (fixed(np.zeros(1, np.int32)), _with_nans((32, 32), np.int32, -65535, 65535, 0))),
    _a("atomic_nanmax_double_normalizedindex", "void(float64[:], float64[:,:])", L(32, 32),
       (fixed(np.zeros(1)), _with_nans((32, 32), np.float64, 0, 65535, np.nan))),
    _a("atomic_nanmax_double_oneindex", "void(float64[:], float64[:])", L(1, 32),
       (fixed(np.zeros(1)), _with_nans(32, np.float64, 0, 128, np.nan))),
    _a("atomic_nanmax_double_shared", "void(float64[:], float64[:])", L(1, 32),
       (fixed(np.zeros(1)), _with_nans(32, np.float64, 0, 32, np.nan))),
    _a("atomic_nanmin", "void(int32[::1], int32[:, ::1])", L(32, 32),
       (fixed(np.array([65535], np.int32)), _with_nans((32, 32), np.int32, -65535, 65535, 0))),
    _a("atomic_nanmin_double_normalizedindex", "void(float64[:], float64[:,:])", L(32, 32),
       (fixed(np.array([65535.0])), _with_nans((32, 32), np.float64, 0, 65535, np.nan))),
    _a("atomic_nanmin_double_oneindex", "void(float64[:], float64[:])", L(1, 32),
       (fixed(np.array([128.0])), _with_nans(32, np.float64, 0, 128, np.nan))),
    _a("atomic_nanmin_double_shared", "void(float64[:], float64[:])", L(1, 32),
       (fixed(np.array([32.0])), _with_nans(32, np.float64, 0, 32, np.nan))),
    _a("atomic_compare_and_swap", "void(int32[::1], int32[::1], int32[::1], int64)", L(10, 10),
       (_cas_res(100, -99, -1, np.int32), fixed(np.zeros(100, np.int32)), ints(100, np.int32, 1, 10), fixed(-99))),
    _a("atomic_cas_1dim", "void(int32[::1], int32[::1], int32[::1], int64)", L(10, 10),
       (_cas_res(100, -99, -1, np.int32), fixed(np.zeros(100, np.int32)), ints(100, np.int32, 1, 10), fixed(-99))),
    _a("atomic_cas_2dim", "void(int32[:, ::1], int32[:, ::1], int32[:, ::1], int64)", L((10, 10), (10, 10)),
       (_cas_res(100, -99, -1, np.int32, (10, 10)), fixed(np.zeros((10, 10), np.int32)),
        ints((10, 10), np.int32, 1, 10), fixed(-99))),
]

ATOMICS_NESTED = [
    E(f"cudapy_atomics__{test}.py", "kernel", "void(float32[::1])", L(1, 1),
      (fixed(np.array([initial, np.nan if nan_x1 else 0.0], np.float32)),))
    for test, initial, nan_x1 in [
        ("atomic_add_returns_old", 10, False), ("atomic_max_returns_no_replace", 10, False),
        ("atomic_max_returns_old_replace", 1, False), ("atomic_max_returns_old_nan_in_array", np.nan, False),
        ("atomic_max_returns_old_nan_val", 10, False), ("atomic_min_returns_old_no_replace", 10, False),
        ("atomic_min_returns_old_replace", 11, False), ("atomic_min_returns_old_nan_in_array", np.nan, False),
        ("atomic_min_returns_old_nan_val", 11, False), ("atomic_nanmax_returns_old_no_replace", 10, True),
        ("atomic_nanmax_returns_old_replace", 1, True), ("atomic_nanmax_returns_old_nan_in_array", np.nan, True),
        ("atomic_nanmax_returns_old_nan_val", 10, True), ("atomic_nanmin_returns_old_no_replace", 10, True),
        ("atomic_nanmin_returns_old_replace", 11, True), ("atomic_nanmin_returns_old_nan_in_array", np.nan, True),
        ("atomic_nanmin_returns_old_nan_val", 11, True),
    ]
]

# -- cudapy/test_warp_ops.py -----------------------------------------------------------------------------------
_i32_32 = ints(32, np.int32, -1000, 1000)


def _w(kernel, sig, launch, args, file="cudapy_warp_ops.py", **kw):
    return E(file, kernel, sig, launch, tuple(args), **kw)


WARP = [
    _w("useful_syncwarp", "void(int32[:])", L(1, 32), (_i32_32,)),
    _w("use_shfl_sync_idx", "void(int32[:], int32)", L(1, 32), (_i32_32, scalar(np.int32, 0, 32))),
    _w("use_shfl_sync_up", "void(int32[:], int32)", L(1, 32), (_i32_32, scalar(np.int32, 0, 32))),
    _w("use_shfl_sync_down", "void(int32[:], int32)", L(1, 32), (_i32_32, scalar(np.int32, 0, 32))),
    _w("use_shfl_sync_xor", "void(int32[:], int32)", L(1, 32), (_i32_32, scalar(np.int32, 0, 32))),
    _w("use_shfl_sync_with_val", "void(int32[:], int32)", L(1, 32), (_i32_32, scalar(np.int32, -1000, 1000))),
    _w("use_vote_sync_all", "void(int32[:], int32[:])", L(1, 32), (ints(32, np.int32, 0, 2), _i32_32)),
    _w("use_vote_sync_any", "void(int32[:], int32[:])", L(1, 32), (ints(32, np.int32, 0, 2), _i32_32)),
    _w("use_vote_sync_eq", "void(int32[:], int32[:])", L(1, 32), (ints(32, np.int32, 0, 2), _i32_32)),
    _w("use_vote_sync_ballot", "void(uint32[:])", L(1, 32), (ints(32, np.uint32, 0, 1000),)),
    _w("use_match_any_sync", "void(int32[:], int32[:])", L(1, 10),
       (ints(10, np.int32, 0, 3), ints(10, np.int32, 0, 9))),
    _w("use_match_all_sync", "void(int32[:], int32[:])", L(1, 10),
       (ints(10, np.int32, 0, 2), ints(10, np.int32, 0, 9))),
    _w("use_independent_scheduling", "void(uint32[:])", L(1, 32), (ints(32, np.uint32, 0, 1000),)),
    _w("use_vote_sync_all_with_mask", "void(uint32[:], uint32[:], int32[:])", L(1, 32),
       (fixed(np.full(32, 0xFFFFFFFF, np.uint32)), ints(32, np.uint32, 0, 2), _i32_32)),
    _w("use_vote_sync_all_with_literal", "void(int32[::1])", L(1, 32), (_i32_32,)),
    _w("use_vote_sync_all_with_predicate_literal", "void(uint32[::1], int32[::1])", L(1, 32),
       (fixed(np.full(32, 0xFFFFFFFF, np.uint32)), _i32_32)),
    _w("use_activemask", "void(uint32[::1])", L(1, 32), (ints(32, np.uint32, 0, 1000),)),
    _w("use_lanemask_lt", "void(uint32[::1])", L(1, 32), (ints(32, np.uint32, 0, 1000),)),
]

# -- cudapy/test_localmem.py, test_sync.py ---------------------------------------------------------------------
LOCALMEM = [
    E("cudapy_localmem.py", "culocal", "void(int32[:], int32[:])", L(1, 1),
      (ints(1000, np.int32, -1000, 1000), ints(1000, np.int32, -1000, 1000))),
    E("cudapy_localmem.py", "culocalcomplex", "void(complex128[:], complex128[:])", L(1, 1),
      (complexes(100, np.complex128), complexes(100, np.complex128))),
    E("cudapy_localmem.py", "culocal1tuple", "void(int32[:], int32[:])", L(1, 1),
      (ints(5, np.int32, -1000, 1000), ints(5, np.int32, -1000, 1000))),
] + [E(f"cudapy_localmem__{t}.py", "f", "void(int32[::1])", L(1, 1), (ints(1, np.int32, -1000, 1000),))
     for t in ("numba_dtype", "numpy_dtype", "string_dtype")]


def _s(kernel, sig, launch, args, **kw):
    return E("cudapy_sync.py", kernel, sig, launch, tuple(args), **kw)


SYNC = [
    _s("useless_syncthreads", "void(int32[::1])", L(1, 10), (ints(10, np.int32, -9, 9),)),
    _s("useless_syncwarp", "void(int32[::1])", L(1, 10), (ints(10, np.int32, -9, 9),)),
    _s("useless_syncwarp_with_mask", "void(int32[::1])", L(1, 10), (ints(10, np.int32, -9, 9),)),
    _s("coop_syncwarp", "void(int32[::1])", L(1, 32), (ints(1, np.int32, -9, 9),)),
    _s("simple_smem", "void(int32[::1])", L(1, 100), (ints(100, np.int32, -9, 9),)),
    _s("coop_smem2d", "void(float32[:,::1])", L(1, (10, 20)), (floats((10, 20), np.float32),)),
    _s("dyn_shared_memory", "void(float32[::1])", L(1, 50, 200), (floats(50, np.float32),)),
    _s("use_threadfence", "void(int32[:])", L(1, 1), (ints(10, np.int32, -9, 9),)),
    _s("use_threadfence_block", "void(int32[:])", L(1, 1), (ints(10, np.int32, -9, 9),)),
    _s("use_threadfence_system", "void(int32[:])", L(1, 1), (ints(10, np.int32, -9, 9),)),
    _s("use_syncthreads_count", "void(int32[::1], int32[::1])", L(1, 72),
       (ints(72, np.int32, 0, 2), ints(72, np.int32, -9, 9))),
    _s("use_syncthreads_and", "void(int32[::1], int32[::1])", L(1, 100),
       (ints(100, np.int32, 0, 2), ints(100, np.int32, -9, 9))),
    _s("use_syncthreads_or", "void(int32[::1], int32[::1])", L(1, 100),
       (ints(100, np.int32, 0, 2), ints(100, np.int32, -9, 9))),
]

# -- cudapy/test_intrinsics.py ---------------------------------------------------------------------------------


def _i(kernel, sig, launch, args, file="cudapy_intrinsics.py", **kw):
    return E(file, kernel, sig, launch, tuple(args), **kw)


_o32 = ints(1, np.int32, -9, 9)
def _f2(n=1):
    return floats(n, np.float16, 1, 10)
_h2 = scalar(np.float16, 1, 10)
FP16_UNARY = ["simple_hsin", "simple_hcos", "simple_hlog", "simple_hlog2", "simple_hlog10", "simple_hsqrt",
              "simple_hceil", "simple_hfloor", "simple_hrcp", "simple_htrunc", "simple_hrint", "simple_hrsqrt",
              "simple_hexp", "simple_hexp2"]
INTRINSICS = [
    _i("simple_threadidx", "void(int32[:])", L(1, 1), (_o32,)),
    _i("fill_threadidx", "void(int32[:])", L(1, 10), (ints(10, np.int32, -9, 9),)),
    _i("fill3d_threadidx", "void(int32[:,:,::1])", L(1, (4, 5, 6)), (ints((4, 5, 6), np.int32, -9, 9),)),
    _i("fill3d_threadidx", "void(int32[::1,:,:])", L(1, (4, 5, 6)),
       (custom(lambda rng: np.asfortranarray(rng.integers(-9, 9, size=(4, 5, 6)).astype(np.int32))),),
       variant="F"),
    _i("simple_grid1d", "void(int32[::1])", L(7, 3), (ints(21, np.int32, -9, 9),)),
    _i("simple_grid2d", "void(int32[:,::1])", L((5, 6), (4, 3)), (ints((20, 18), np.int32, -9, 9),)),
    _i("simple_gridsize1d", "void(int32[::1])", L(7, 3), (_o32,)),
    _i("simple_gridsize2d", "void(int32[::1])", L((5, 6), (4, 3)), (ints(2, np.int32, -9, 9),)),
    _i("intrinsic_forloop_step", "void(int32[:,::1])", L((5, 6), (4, 3)), (ints((18, 20), np.int32, -9, 9),)),
    _i("simple_popc", "void(int32[:], uint8)", L(1, 1), (_o32, scalar(np.uint8, 0, 256))),
    _i("simple_bit_count", "void(int32[:], uint8)", L(1, 1), (_o32, scalar(np.uint8, 0, 256))),
    _i("simple_fma", "void(f4[:], f4, f4, f4)", L(1, 1),
       (floats(1, np.float32), scalar(np.float32, -4, 4), scalar(np.float32, -4, 4), scalar(np.float32, -4, 4))),
    _i("simple_hadd", "void(f2[:], f2[:], f2[:])", L(1, 1), (_f2(), _f2(), _f2())),
    _i("simple_hadd_scalar", "void(f2[:], f2, f2)", L(1, 1), (_f2(), _h2, _h2)),
    _i("simple_hfma", "void(f2[:], f2[:], f2[:], f2[:])", L(1, 1), (_f2(), _f2(), _f2(), _f2())),
    _i("simple_hfma_scalar", "void(f2[:], f2, f2, f2)", L(1, 1), (_f2(), _h2, _h2, _h2)),
    _i("simple_hsub", "void(f2[:], f2[:], f2[:])", L(1, 1), (_f2(), _f2(), _f2())),
    _i("simple_hsub_scalar", "void(f2[:], f2, f2)", L(1, 1), (_f2(), _h2, _h2)),
    _i("simple_hmul", "void(float16[::1], float16[::1], float16[::1])", L(1, 1), (_f2(), _f2(), _f2())),
    _i("simple_hmul_scalar", "void(f2[:], f2, f2)", L(1, 1), (_f2(), _h2, _h2)),
    _i("simple_hdiv_scalar", "void(f2[:], f2, f2)", L(1, 1), (_f2(), _h2, _h2)),
    _i("simple_hdiv_kernel", "void(f2[:], f2[:], f2[:])", L(2, 256),
       (floats(500, np.float16, -100, 100), floats(500, np.float16, -100, 100), floats(500, np.float16, 1, 100))),
    _i("simple_hneg", "void(f2[:], f2[:])", L(1, 1), (_f2(), _f2())),
    _i("simple_hneg_scalar", "void(f2[:], f2)", L(1, 1), (_f2(), _h2)),
    _i("simple_habs", "void(float16[::1], float16[::1])", L(1, 1), (_f2(), floats(1, np.float16, -10, 10))),
    _i("simple_habs_scalar", "void(f2[:], f2)", L(1, 1), (_f2(), scalar(np.float16, -10, 10))),
] + [_i(k, "void(f2[:], f2[:])", L(1, 32), (_f2(32), floats(32, np.float16, 1, 10))) for k in FP16_UNARY] + [
    _i(f"simple_h{op}_scalar", "void(b1[:], f2, f2)", L(1, 1), (bools(1), scalar(np.float16, 2, 5),
                                                               scalar(np.float16, 2, 5)))
    for op in ("eq", "ne", "ge", "gt", "le", "lt")
] + [
    _i(f"multiple_hcmp_{n}", "void(b1[:], f2, f2, f2)", L(1, 1), (bools(1), _h2, _h2, _h2)) for n in range(1, 6)
] + [
    _i("simple_hmax_scalar", "void(f2[:], f2, f2)", L(1, 1), (_f2(), _h2, _h2)),
    _i("simple_hmin_scalar", "void(f2[:], f2, f2)", L(1, 1), (_f2(), _h2, _h2)),
    _i("simple_cbrt", "void(float32[:], float32)", L(1, 1), (floats(1, np.float32), scalar(np.float32, -8, 8))),
    _i("simple_brev", "void(uint32[:], uint32)", L(1, 1), (ints(1, np.uint32, 0, 9), scalar(np.uint32, 0, 2**32))),
    _i("simple_clz", "void(int32[:], int32)", L(1, 1), (_o32, scalar(np.int32, -2**31, 2**31))),
    _i("simple_ffs", "void(int32[:], int32)", L(1, 1), (_o32, scalar(np.int32, -2**31, 2**31))),
    _i("simple_round", "void(int64[:], float32)", L(1, 1), (ints(1, np.int64, -9, 9), scalar(np.float32, -4, 4))),
    _i("simple_round_to", "void(float32[:], float32, int32)", L(1, 1),
       (floats(1, np.float32), scalar(np.float32, 0, 1), scalar(np.int32, -5, 6))),
    _i("branching_with_ifs", "void(int64[:], int64, int64[:])", L(32, 1),
       (arange(32, np.int64), scalar(np.int64, 0, 10), ints(32, np.int64, 0, 30))),
    _i("branching_with_selps", "void(int64[:], int64, int64[:])", L(32, 1),
       (arange(32, np.int64), scalar(np.int64, 0, 10), ints(32, np.int64, 0, 30))),
    _i("simple_laneid", "void(int32[:])", L(1, 64), (ints(64, np.int32, -9, 9),)),
    _i("simple_warpsize", "void(int32[:])", L(1, 1), (_o32,)),
    _i("f", "void(uint64[::1], uint64[::1])", L(64, 256), (ints(1, np.uint64, 0, 9), ints(1, np.uint64, 0, 9)),
       note="the test launches 22121216 blocks to overflow int32 thread ids; 64 blocks here"),
    _i("hexp10_vectors", "void(float16[::1], float16[::1])", L(1, 32), (_f2(32), floats(32, np.float16, 0, 1))),
    _i("foo", "void(int32[:, :, ::1])", L((3, 3, 3), (3, 3, 3)), (ints((9, 9, 9), np.int32, -9, 9),),
       file="cudapy_intrinsics__3dgrid.py"),
    _i("foo", "void(boolean[:, :, ::1])", L((4, 3, 2), (3, 2, 4)), (bools((12, 6, 8)),),
       file="cudapy_intrinsics__3dgrid_2.py"),
]

# -- cudapy/test_math.py: each kernel with the first signature of its own test ----------------------------------
_UNARY = {  # kernel -> (input range)
    "math_acos": (0, 1), "math_asin": (0, 1), "math_atan": (0, 1), "math_acosh": (1, 2), "math_asinh": (0, 1),
    "math_atanh": (0, 0.9), "math_cos": (0, 1), "math_sin": (0, 1), "math_tan": (0, 1), "math_cosh": (0, 1),
    "math_sinh": (0, 1), "math_tanh": (0, 1), "math_exp": (0, 1), "math_exp2": (0, 1), "math_erf": (0, 1),
    "math_erfc": (0, 1), "math_expm1": (0, 1), "math_fabs": (-1, 1), "math_gamma": (0.1, 1),
    "math_lgamma": (0.1, 1), "math_log": (1, 2), "math_log2": (1, 2), "math_log10": (1, 2), "math_log1p": (0, 1),
    "math_sqrt": (0, 1), "math_ceil": (-2, 2), "math_floor": (-2, 2), "math_degrees": (0, 1),
    "math_radians": (0, 1),
}
_BINARY = {"math_atan2": (0, 1), "math_remainder": (1e-11, 1), "math_nextafter": (1e-11, 1), "math_hypot": (0, 1),
           "math_pow": (0, 1), "math_copysign": (-1, 1), "math_fmod": (1, 2), "math_pow_binop": (0, 1),
           "math_mod_binop": (1, 2)}
_F32 = "float32[::1]"


def _m(kernel, sig, n, args, **kw):
    return E("cudapy_math.py", kernel, sig, L(1, n), tuple(args), **kw)


MATH = [_m(k, f"void({_F32}, {_F32})", 50, (floats(50, np.float32, lo, hi), floats(50, np.float32)))
        for k, (lo, hi) in _UNARY.items()] + [
    _m(k, f"void({_F32}, {_F32}, {_F32})", 50,
       (floats(50, np.float32, lo, hi), floats(50, np.float32, lo, hi), floats(50, np.float32)))
    for k, (lo, hi) in _BINARY.items()] + [
    _m(k, "void(float32[::1], int32[::1])", 50, (floats(50, np.float32, -2, 2), ints(50, np.int32, -9, 9)))
    for k in ("math_isnan", "math_isinf", "math_isfinite")] + [
    _m("math_trunc", "void(float64[::1], float64[::1])", 50, (floats(50, np.float64, -2, 2), floats(50, np.float64))),
    _m("math_modf", "void(float32[:], float32[:], float32[:])", 50,
       (floats(50, np.float32, 0, 10), floats(50, np.float32), floats(50, np.float32))),
    _m("test_0_0", "void(float64[::1], int64, int64)", 1,
       (floats(1, np.float64), scalar(np.int64, -9, 9), scalar(np.int64, 1, 9))),
]

# -- the other cudapy modules ----------------------------------------------------------------------------------
OTHERS = [
    E("cudapy_idiv.py", "div", "void(float32[:, :], int32, int32)", L(1, 1),
      (floats((2, 3), np.float32), fixed(2), fixed(3))),
    E("cudapy_idiv.py", "div_double", "void(float64[:, :], int32, int32)", L(1, 1),
      (floats((2, 3), np.float64), fixed(2), fixed(3))),
    E("cudapy_blackscholes.py", "black_scholes_cuda",
      "void(double[:], double[:], double[:], double[:], double[:], double, double)", L(1, (512, 1)),
      (floats(400, np.float64), floats(400, np.float64), floats(400, np.float64, 5, 30),
       floats(400, np.float64, 1, 100), floats(400, np.float64, 0.25, 10), fixed(0.02), fixed(0.30))),
    E("cudapy_laplace.py", "jocabi_relax_core", "void(float64[:, :], float64[:, :], float64[:, :])",
      L((3, 3), (16, 16)), (floats((48, 48), np.float64), floats((48, 48), np.float64), floats((3, 3), np.float64))),
    E("cudapy_matmul.py", "cu_square_matrix_mul", "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])",
      L((50, 50), (32, 32)), (floats((1600, 1600), np.float32), floats((1600, 1600), np.float32),
                              floats((1600, 1600), np.float32))),
    E("cudapy_constmem.py", "cuconstEmpty", "void(int64[:])", L(1, 1), (ints(1, np.int64, -9, 9),)),
    E("cudapy_constmem.py", "cuconst", "void(float64[:])", L(2, 5), (floats(10, np.float64),)),
    E("cudapy_constmem.py", "cuconst2d", "void(int32[:, :])", L((2, 2), (5, 5)), (ints((10, 10), np.int32, -9, 9),)),
    E("cudapy_constmem.py", "cuconst3d", "void(complex64[:, :, :])", L(1, (5, 5, 5)),
      (custom(lambda rng: np.asfortranarray(complexes((5, 5, 5), np.complex64)(rng))),)),
    E("cudapy_constmem.py", "cuconstRecEmpty", "void(int64[:])", L(1, 1), (ints(1, np.int64, -9, 9),)),
    E("cudapy_constmem.py", "cuconstRec", "void(float64[::1], int64[::1])", L(2, 1),
      (floats(2, np.float64), ints(2, np.int64, -9, 9))),
    E("cudapy_constmem.py", "cuconstRecAlign",
      "void(float64[::1], float64[::1], float64[::1], float64[::1], float64[::1])", L(2, 1),
      tuple(floats(2, np.float64) for _ in range(5))),
    E("cudapy_constmem.py", "cuconstAlign", "void(float64[:])", L(1, 3), (floats(3, np.float64),)),
]

ENTRIES: list[Entry] = DOCS + ATOMICS + ATOMICS_NESTED + WARP + LOCALMEM + SYNC + INTRINSICS + MATH + OTHERS


def by_id() -> dict[str, Entry]:
    out = {}
    for e in ENTRIES:
        assert e.id not in out, e.id
        out[e.id] = e
    return out
