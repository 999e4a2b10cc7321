"""Launches and random inputs for coverage_kernels.py (verified against Numba on a GPU like the corpus)."""

import os

import ml_dtypes
import numpy as np

from .corpus.spec import Entry, Launch, complexes, custom, fixed, floats, ints

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "coverage_kernels.py")
L = Launch.of


def _e(kernel, sig, launch, args, **kw):
    return Entry(HERE, kernel, sig, launch, tuple(args), **kw)


def _starts(n, width, extent):
    """``n`` start offsets of disjoint ``width``-long segments inside ``extent`` (the last one may overlap the end:
    the slice is cut short there, as numba cuts it). Disjoint: two threads writing one element would race, and the
    GPU's order of their writes is not Numba's (a mismatch on an H200 with overlapping random starts)."""
    return custom(lambda rng: rng.choice(np.arange(0, extent - 2, width), n, replace=False).astype(np.int64))


def _small_complex(rng, dtype):
    """Complex numbers with parts 0, 1 or 2, so that many are equal (1j and 2 among them)."""
    return (rng.integers(0, 3, 99) + 1j * rng.integers(0, 3, 99)).astype(dtype)


def _halves_and_two_to_the_24(rng):
    """Whole numbers and halves, 2**24 among the first four (float32 holds it; 2**24 + 1 rounds to it)."""
    x = (rng.integers(-12, 12, 99) / 2).astype(np.float32)
    x[rng.integers(4)] = 2.0 ** 24
    return x


def _with_nans_and_zeros(shape, nans=0.1, zeros=0.15):
    """Random float32 in [-1, 1) with NaN and zeros (0.0 and -0.0) among them."""
    def make(rng):
        x = rng.uniform(-1, 1, size=shape).astype(np.float32)
        pick = rng.random(size=shape)
        x[pick < zeros] = np.float32(0.0)
        x[pick < zeros / 2] = np.float32(-0.0)
        x[pick > 1 - nans] = np.nan
        return x

    return custom(make)


def _small_and_two_to_the_24_plus_one(rng):
    big = rng.integers(-3, 45, 99).astype(np.int64)
    big[rng.choice(99, 20, replace=False)] = 2 ** 24 + 1
    return big


def _records(n):
    from .coverage_kernels import PAIR_DTYPE

    def make(rng):
        r = np.zeros(n, PAIR_DTYPE)
        r["a"] = rng.random(n)
        r["b"] = rng.integers(-5, 5, n)
        return r
    return custom(make)


COVERAGE = [
    _e("slice_to_device", "void(float64[::1], float64[::1])", L(2, 64), (floats(101 * 5, np.float64), floats(
        101, np.float64))),
    _e("window_to_device", "void(float32[:, ::1], float64[:, ::1])", L((3, 3), (16, 16)),
       (floats((37, 41), np.float32, -1, 1), floats((37, 41), np.float64))),
    _e("local_slice", "void(float32[::1], float32[::1], int64[::1])", L(1, 64),
       (floats(50, np.float32), floats(203, np.float32), _starts(50, 4, 203))),
    _e("strided_slice", "void(float64[::1], float64[::1])", L(1, 32), (floats(37, np.float64),
                                                                       floats(19, np.float64))),
    _e("array_from_device", "void(float64[::1], float64[::1], float64[::1])", L(2, 64),
       (floats(100, np.float64), floats(60, np.float64), floats(100, np.float64))),
    _e("shared_slices", "void(float32[::1], float32[::1])", L(4, 32), (floats(111, np.float32),
                                                                       floats(111, np.float32))),
    _e("row_view", "void(float64[:, ::1], float64[::1])", L(2, 64), (floats((100, 3), np.float64, -1, 1),
                                                                     floats(100, np.float64))),
    _e("complex_parts", "void(complex128[::1], float64[::1], float64[::1], complex128[::1])", L(2, 64),
       (complexes(99, np.complex128), floats(99, np.float64), floats(99, np.float64),
        fixed(np.zeros(1, np.complex128))), rtol=1e-9),
    _e("float_bits_max", "void(float32[::1], float32[::1])", L(4, 64),
       (floats(250, np.float32, -100, 100), fixed(np.full(1, -1e30, np.float32)))),
    _e("dtype_of", "void(float32[::1], float32[::1])", L(2, 64), (floats(99, np.float32), floats(99, np.float32))),
    _e("transpose_view", "void(float64[:, ::1], float64[:, ::1])", L((2, 2), (16, 16)),
       (floats((23, 29), np.float64), floats((29, 23), np.float64))),
    _e("iterate_array", "void(int32[::1], int32[::1], int32[::1])", L(2, 64),
       (ints(120, np.int32, 0, 10), ints(4, np.int32, 0, 10), ints(120, np.int32, 0, 1))),
    _e("iterate_tuple", "void(float32[::1], float64[::1])", L(2, 64), (floats(99, np.float32),
                                                                       floats(99, np.float64))),
    _e("enumerate_zip", "void(float64[::1], float64[::1], float64[::1])", L(1, 32),
       (floats(33, np.float64), floats(33, np.float64), floats(1, np.float64))),
    _e("device_keywords", "void(float32[::1], float64[::1])", L(2, 64),
       (floats(99, np.float32), floats(99, np.float64))),
    _e("tuple_argument", "void(float64[::1], UniTuple(int64, 2), float64[::1])", L(2, 64),
       (floats(77, np.float64), fixed((7, 11)), floats(77, np.float64))),
    _e("namedtuple_value", "void(float64[::1], float64[::1], float64[::1])", L(2, 64),
       (floats(99, np.float64), floats(99, np.float64), floats(99, np.float64))),
    _e("record_scalars", "void(PAIR[::1], float64[::1])", L(2, 64), (_records(90), floats(90, np.float64))),
    _e("chained_assignment", "void(int64[::1], int64[::1])", L(2, 64), (ints(99, np.int64, -50, 50),
                                                                        ints(99, np.int64, 0, 1))),
    _e("array_sums", "void(int32[::1], float32[:, ::1], float64[::1])", L(2, 64),
       (ints(99, np.int32, -1000, 1000), floats((99, 13), np.float32), floats(99, np.float64))),
    _e("array_sums_nd", "void(float32[:, ::1], int32[:, :, ::1], float64[::1])", L(2, 64),
       (floats((99, 7), np.float32), ints((99, 4, 5), np.int32, -1000, 1000), floats(99, np.float64))),
    _e("membership", "void(int64[::1], int64[::1])", L(2, 64), (ints(99, np.int64, -8, 8),
                                                                ints(99, np.int64, 0, 1))),
    _e("membership_mixed", "void(float32[::1], int32[::1], int64[::1])", L(2, 64),
       (custom(lambda rng: (rng.integers(-4, 8, 99) / 2).astype(np.float32)), ints(99, np.int32, -2, 9),
        ints(99, np.int64, 0, 1))),
    _e("complex_equality", "void(complex64[::1], complex128[::1], int64[::1])", L(2, 64),
       (custom(lambda rng: _small_complex(rng, np.complex64)), custom(lambda rng: _small_complex(rng, np.complex128)),
        ints(99, np.int64, 0, 1))),
    _e("membership_containers", "void(float32[::1], int64[::1], int32[:, ::1], int64[::1])", L(2, 64),
       (custom(_halves_and_two_to_the_24), custom(_small_and_two_to_the_24_plus_one), ints((5, 4), np.int32, -6, 6),
        ints(99, np.int64, 0, 1))),
    _e("reductions", "void(float32[:, ::1], float32[:, ::1])", L(2, 64),
       (floats((100, 3), np.float32, -1, 1), floats((100, 4), np.float32))),
    _e("slice_fill", "void(float64[:, ::1], float64[:, ::1])", L(2, 64),
       (floats((99, 7), np.float64, -1, 1), floats((99, 5), np.float64))),
    _e("annotated_rotate", "void(complex64[::1], float32[::1], complex64[::1])", L(2, 64),
       (complexes(99, np.complex64), floats(99, np.float32, -3, 3), complexes(99, np.complex64)), rtol=1e-5),
    _e("window_mask", "void(int32[::1], int64, int64, float64[::1], int64)", L(2, 64),
       (ints(100, np.int32, 0, 2), fixed(-3), fixed(2), floats(100, np.float64), fixed(100))),
    _e("libdevice_calls", "void(float32[::1], float32[:, ::1])", L(2, 64),
       (floats(99, np.float32, 0.1, 2), floats((99, 4), np.float32)), rtol=1e-4),
    _e("half_arrays", "void(float16[::1], float32[::1])", L(2, 64), (floats(99, np.float16, -2, 2),
                                                                    floats(99, np.float32)), rtol=1e-3),
    _e("inlined_predicate", "void(float32[::1], float32[::1], float32[::1], int32[::1])", L(2, 64),
       (floats(99, np.float32, -1, 1), floats(99, np.float32, -1, 1),
        custom(lambda rng: np.sort(rng.uniform(-0.8, 0.8, 4)).astype(np.float32)),  # x0 <= y0 <= x1 <= y1
        ints(99, np.int32, 0, 1))),
    _e("nested_tuples", "void(float32[::1], int64[::1], float64[::1])", L(2, 64),
       (custom(lambda rng: (rng.integers(0, 5, 99) / 2).astype(np.float32)), ints(99, np.int64, 0, 3),
        floats(99, np.float64))),
    _e("inner_functions", "void(float32[::1], float64[::1], float32)", L(2, 64),
       (floats(99, np.float32, -1, 1), floats(99, np.float64), fixed(np.float32(1.5)))),
    _e("retyped_while", "void(float32[::1], float64[::1], int64[::1])", L(2, 64),
       (custom(lambda rng: np.where(rng.random(99) < 0.2, 0, rng.uniform(-1, 4, 99)).astype(np.float32)),
        floats(99, np.float64), ints(99, np.int64, -5, 5))),
    _e("bfloat16_arrays", "void(bfloat16[::1], bfloat16[::1], float32)", L(2, 64),
       (floats(99, ml_dtypes.bfloat16, -2, 2), floats(99, ml_dtypes.bfloat16), fixed(np.float32(1.5))), rtol=1e-2),
    # n = 23: the sizes of the miscompiled loop in docs/translate.md (m = 11)
    _e("downward_ranges", "void(float32[::1], float64[::1], int64)", L(2, 64),
       (floats(99, np.float32), floats(99, np.float64), fixed(np.int64(23)))),
    # x whole numbers in [-12, 12), so that `x[i] in down` is sometimes true
    _e("held_ranges", "void(float32[::1], float64[::1], int64)", L(2, 64),
       (custom(lambda rng: rng.integers(-12, 12, 99).astype(np.float32)), floats(99, np.float64),
        fixed(np.int64(23)))),
    _e("zipped_ranges", "void(float32[::1], float64[::1], int64)", L(2, 64),
       (floats(99, np.float32), floats(99, np.float64), fixed(np.int64(23)))),
    # x in [-1, 1) and a limit of 0.5: a quarter of the threads raise, a quarter fail the assert
    _e("raising", "void(float32[::1], float32[::1], float32)", L(2, 64),
       (floats(99, np.float32, -1, 1), floats(99, np.float32), fixed(np.float32(0.5)))),
    # x in [-1, 1): log(x) is NaN where x < 0
    _e("numpy_scalar_functions", "void(float32[::1], float64[::1], boolean[::1])", L(2, 64),
       (floats(99, np.float32, -1, 1), floats(99, np.float64), custom(lambda rng: rng.random(99) < 0.5))),
    _e("array_reductions", "void(float32[:, ::1], int32[:, ::1], float64[::1], int64[:, ::1])", L(2, 64),
       (_with_nans_and_zeros((99, 7), nans=0.03), ints((99, 5), np.int32, -2, 3), floats(99, np.float64),
        ints((99, 6), np.int64, 0, 1))),
    _e("numpy_elementwise", "void(float32[::1], float32[::1], int32[::1], complex64[::1], float64[:, ::1], int64[::1])",
       L(2, 64), (_with_nans_and_zeros(99), _with_nans_and_zeros(99), ints(99, np.int32, -3, 4),
                  complexes(99, np.complex64), floats((99, 7), np.float64), ints(99, np.int64, 0, 1))),
    # a in [-0.1, 1): some rows hold a negative number (the for loop breaks), some one above 0.9 (the while loop does)
    _e("loop_else", "void(float32[:, ::1], float32[::1], int64[::1])", L(2, 64),
       (floats((99, 6), np.float32, -0.1, 1), floats(99, np.float32), ints(99, np.int64, 0, 1))),
    # x * 1e38 above float32's largest number in about two thirds of the threads
    _e("number_limits", "void(float32[::1], float64[::1], int16[::1])", L(2, 64),
       (floats(99, np.float32, 0, 10), floats(99, np.float64), ints(99, np.int16, 0, 1))),
    # b % 3 is 0 for a third of the threads (a / 0: inf, -inf or NaN); a and b small, some equal
    _e("numpy_operators", "void(int32[::1], int64[::1], float32[::1], float32[::1], float64[:, ::1], int64[::1], "
                          "int64[::1])", L(2, 64),
       (ints(99, np.int32, -4, 5), ints(99, np.int64, -4, 5), _with_nans_and_zeros(99, nans=0.05),
        floats(99, np.float32, -1, 1), floats((99, 2), np.float64), ints(99, np.int64, 0, 1),
        ints(99, np.int64, 0, 1))),
    _e("numpy_angles_and_traces", "void(complex64[::1], float32[::1], float32[:, ::1], float64[:, ::1])", L(2, 64),
       (complexes(99, np.complex64), _with_nans_and_zeros(99, nans=0.05), floats((5, 6), np.float32, -1, 1),
        floats((99, 3), np.float64))),
    # a third of the flags false: some rows all true (prod 1), most not
    _e("boolean_reductions", "void(boolean[:, ::1], float64[::1])", L(2, 64),
       (custom(lambda rng: rng.random((99, 4)) < 0.8), floats(99, np.float64))),
    _e("starred_call", "void(float32[::1], float64[::1])", L(2, 64),
       (floats(99, np.float32, -2, 2), floats(99, np.float64))),
    # m and n of different widths: each array's own extents travel with it
    _e("tuple_of_arrays", "void(float64[::1], float64[::1], float64[:, ::1], float64[:, ::1], float64[::1], "
                          "float64[::1])", L(2, 64),
       (floats(99, np.float64, -1, 1), floats(99, np.float64, -1, 1), floats((99, 3), np.float64, -1, 1),
        floats((99, 5), np.float64, -1, 1), floats(99, np.float64), floats(99, np.float64))),
    _e("iterate_rows", "void(float32[:, ::1], float64[:, :, ::1], float64[::1])", L(2, 64),
       (floats((7, 13), np.float32, -1, 1), floats((3, 6, 4), np.float64, -1, 1), floats(99, np.float64))),
    _e("array_tuple_argument", "void(UniTuple(float64[::1], 2), float64[::1])", L(2, 64),
       (custom(lambda rng: (rng.uniform(-1, 1, 99), rng.uniform(-1, 1, 99))), floats(99, np.float64))),
]
