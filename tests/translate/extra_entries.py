"""Launches and random inputs for extra_kernels.py (verified against Numba on a GPU like the corpus)."""

import os

import numpy as np

from .corpus.spec import Entry, Launch, complexes, custom, fixed, floats, ints, scalar

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "extra_kernels.py")
L = Launch.of


def _e(kernel, sig, launch, args, **kw):
    return Entry(HERE, kernel, sig, launch, tuple(args), **kw)


def _with_nans(n):
    def make(rng):
        a = rng.standard_normal(n).astype(np.float32)
        a[rng.random(n) < 0.25] = np.nan
        return a
    return custom(make)


def _complex_plane(n, dtype):
    """Complex numbers all over the plane, zero and the axes included (the special cases of cmath; -1 divides by
    zero in complex_functions, which ends the thread on a GPU)."""
    def make(rng):
        z = (rng.uniform(-4, 4, n) + 1j * rng.uniform(-4, 4, n)).astype(dtype)
        z[:8] = [0, 1, -1, 1j, -1j, 2.5, -3.0, -2j]
        return z
    return custom(make)


EXTRA = [
    _e("softmax_rows", "void(float32[:, ::1], float32[:, ::1])", L(37, 32),
       (floats((37, 100), np.float32, -5, 5), floats((37, 100), np.float32))),
    _e("sort_pairs", "void(float32[::1], float32[::1])", L(4, 128),
       (floats(1001, np.float32, -1, 1), floats(1001, np.float32))),
    _e("block_scan", "void(int32[::1], int32[::1])", L(4, 256), (ints(1000, np.int32, -100, 100),
                                                              ints(1000, np.int32, -9, 9))),
    _e("atomic_float_max", "void(float32[::1], float32[::1])", L(8, 128),
       (floats(1000, np.float32, -100, 100), fixed(np.array([-1e30], np.float32)))),
    _e("gaussian", "void(float64[::1], float64[::1])", L(4, 256), (floats(1000, np.float64, -4, 4),
                                                                 floats(1000, np.float64))),
    _e("laplace_2d", "void(float32[:, ::1], float32[:, ::1])", L((3, 4), (16, 16)),
       (floats((53, 41), np.float32, -1, 1), floats((53, 41), np.float32))),
    _e("warp_vote_count", "void(float32[::1], int32[::1])", L(4, 256),
       (floats(1000, np.float32, -1, 1), ints(32, np.int32, -9, 9))),
    _e("rms_norm", "void(float32[:, ::1], float32[:, ::1])", L(19, 128),
       (floats((19, 300), np.float32, -2, 2), floats((19, 300), np.float32))),
    _e("stencil_1d", "void(float32[::1], float32[::1], int64)", L(4, 128, (128 + 2 * 3) * 4),
       (floats(500, np.float32, -1, 1), floats(500, np.float32), fixed(3))),
    _e("shadow_extent", "void(int64[::1])", L(4, 128), (ints(500, np.int64, -9, 9),)),
    _e("launcher_names", "void(int64[::1], int64, int64, int64, int64)", L(4, 128),
       (ints(500, np.int64, -9, 9), scalar(np.int64, -50, 50), scalar(np.int64, -50, 50),
        scalar(np.int64, -50, 50), scalar(np.int64, -50, 50))),
    _e("keyword_names", "void(float64[::1], int64, int64, int64)", L(4, 128),
       (floats(500, np.float64), scalar(np.int64, -50, 50), scalar(np.int64, -50, 50), scalar(np.int64, -50, 50))),
    _e("overflow_mod", "void(int64[::1])", L(2, 128), (ints(200, np.int64, -9, 9),)),
    _e("floor_div_mod", "void(int64[::1], int64[::1], int64[::1], int64[::1])", L(4, 128),
       (ints(500, np.int64, -1000, 1000), ints(500, np.int64, -7, 8), ints(500, np.int64, -9, 9),
        ints(500, np.int64, -9, 9))),
    _e("signed_shifts", "void(int64[::1], int64[:, ::1])", L(4, 128),
       (custom(lambda rng: rng.integers(-2 ** 62, 2 ** 62, 500)), ints((500, 2), np.int64, -9, 9))),
    _e("mixed_signedness", "void(uint32[::1], int32[::1], int64[:, ::1])", L(4, 128),
       (ints(500, np.uint32, 0, 2 ** 32), ints(500, np.int32, -2 ** 31, 2 ** 31), ints((500, 3), np.int64, -9, 9))),
    _e("chained_compare", "void(int32[::1], float64[::1], int32[::1])", L(4, 128),
       (ints(500, np.int32, -3, 4), floats(500, np.float64, -3, 4), ints(500, np.int32, -9, 9))),
    _e("powers", "void(float32[::1], int64[::1], float64[:, ::1])", L(4, 128),
       (floats(500, np.float32, 0.5, 2), ints(500, np.int64, -6, 7), floats((500, 4), np.float64))),
    _e("nan_min_max", "void(float32[::1], float32[::1], float32[:, ::1])", L(4, 128),
       (_with_nans(500), _with_nans(500), floats((500, 3), np.float32))),
    _e("retyped_accumulator", "void(float64[:, ::1], float64[::1])", L(2, 128),
       (floats((200, 7), np.float64, -1, 1), floats(200, np.float64))),
    _e("global_array", "void(float64[::1], float64[::1])", L(1, 128),
       (floats(100, np.float64, 0, 10), floats(100, np.float64))),
    _e("casts_and_constants", "void(float64[::1], float64[:, ::1])", L(4, 128),
       (floats(500, np.float64, -10, 10), floats((500, 3), np.float64))),
    _e("brent_kung_scan", "void(float32[::1], float32[::1])", L(4, 128, 2 * 128 * 4),
       (floats(1000, np.float32, -1, 1), floats(1000, np.float32))),
    _e("dynamic_shared_wrap", "void(int64[::1], int64[::1], int64[::1])", L(4, 128, 128 * 8),
       (ints(500, np.int64, -100, 100), ints(500, np.int64, -128, 128), ints(500, np.int64, -9, 9))),
    _e("mandelbrot", "void(int32[:, ::1], int64)", L((4, 5), (16, 16)),
       (ints((61, 77), np.int32, -9, 9), fixed(200))),
    _e("twiddle", "void(complex64[::1], complex64[::1])", L(4, 128),
       (complexes(500, np.complex64), complexes(500, np.complex64))),
    _e("complex_functions", "void(complex128[::1], complex128[::1], float64[::1])", L(4, 128),
       (_complex_plane(500, np.complex128), complexes(500, np.complex128), floats(500, np.float64))),
    _e("complex_functions", "void(complex64[::1], complex64[::1], float32[::1])", L(4, 128),
       (_complex_plane(500, np.complex64), complexes(500, np.complex64), floats(500, np.float32)),
       variant="complex64", rtol=1e-4),
    _e("loop_name_reused", "void(float64[::1], float64[::1])", L(4, 128),
       (floats(500, np.float64, -1, 1), floats(500, np.float64))),
    _e("loop_bounds_own_name", "void(float64[::1], int64, int64, int64, float64[::1])", L(4, 128),
       (floats(500, np.float64, -1, 1), fixed(4), fixed(3), fixed(5), floats(500, np.float64))),
    _e("histogram_optional", "void(float64[::1], int32[::1], float64, float64)", L(4, 128),
       (floats(500, np.float64, -1.5, 1.5), fixed(np.zeros(10, np.int32)), fixed(-1.0), fixed(1.0))),
    _e("chained_index", "void(float32[:, ::1], float32[:, ::1])", L((3, 4), (16, 16)),
       (floats((53, 41), np.float32, -1, 1), floats((53, 41), np.float32))),
    _e("break_state", "void(float32[:, ::1], float32[::1], float32[::1])", L(4, 128),
       (floats((500, 4), np.float32, -1, 1), floats(7, np.float32, -1, 1), floats(500, np.float32))),
    _e("elif_state", "void(float32[::1], float32[::1], float32[::1])", L(4, 128),
       (floats(500, np.float32, -1, 1), floats(500, np.float32, -1, 1), floats(500, np.float32))),
    _e("while_test_state", "void(float32[::1], int64[::1])", L(4, 128),
       (floats(9, np.float32, -1, 1), ints(500, np.int64, -9, 9))),
    _e("reversed_blocks", "void(float32[::1], float32[::1])", L(4, 128),
       (floats(500, np.float32, -1, 1), floats(500, np.float32))),
    _e("shape_loop", "void(float64[:, :, ::1], float64[::1])", L(2, 64),
       (floats((5, 3, 4), np.float64, -1, 1), floats(100, np.float64))),
    _e("rows_to_device", "void(float64[:, ::1], float64[:, :, ::1])", L(2, 64),
       (floats((100, 7), np.float64, -1, 1), floats((100, 3, 1), np.float64))),
    _e("const_of_argument", "void(float64[::1], float64[::1])", L(2, 64),
       (floats(9, np.float64, -1, 1), floats(100, np.float64))),
    _e("greek_names", "void(float64[::1], float64[::1], float64[::1])", L(2, 64),
       (floats(100, np.float64, -1, 1), floats(100, np.float64, 0.5, 2), floats(100, np.float64, -1, 1))),
    _e("complex_trig", "void(complex128[::1], complex128[:, ::1])", L(4, 128),
       (_complex_plane(500, np.complex128), complexes((500, 4), np.complex128))),
    _e("complex_trig", "void(complex64[::1], complex64[:, ::1])", L(4, 128),
       (_complex_plane(500, np.complex64), complexes((500, 4), np.complex64)), variant="complex64", rtol=1e-4),
    _e("stencil_guarded", "void(float32[:, ::1], float32[:, ::1])", L((4, 3), (16, 16)),
       (floats((53, 41), np.float32, -1, 1), floats((53, 41), np.float32))),
    _e("made_rows_dot", "void(float32[:, ::1], float32[::1], float64[::1])", L(4, 128),
       (floats((500, 7), np.float32, -1, 1), floats(7, np.float32, -1, 1), floats(500, np.float64))),
    _e("calls_made_device", "void(float64[::1], float64[::1])", L(4, 128),
       (floats(500, np.float64, -30, 30), floats(500, np.float64))),
    _e("mbarrier_in_device_function", "void(float32[::1], float32[::1])", L(4, 128),
       (floats(500, np.float32, -1, 1), floats(500, np.float32))),
]
