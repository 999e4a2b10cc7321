"""The simulator computes with Numba's types: integer widths, signedness and wrap-around, float32 staying float32,
the CUDA target's int/float promotions. Every expected value is computed here independently, with numpy and
explicit dtypes (the Numba rule each follows is stated next to it), never by the simulator."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from numba import cuda, int32, int64, uint8, uint32

from numbakern import sim

SEED = 20261124
FULL = 0xFFFFFFFF


@pytest.fixture
def rng():
    return np.random.default_rng(SEED)


def _ints(a):
    return np.asarray(a, dtype=np.int64)


# -- the issue's integer edge cases -------------------------------------------------------------------------------


@cuda.jit
def issue_edges(out64, outu32):
    x = cuda.threadIdx.x
    out64[x, 0] = x * int32(2147483647)  # int32 * int32 is int64 in Numba: exact
    out64[x, 1] = uint32(x) - uint32(3)  # uint32 - uint32 is uint64: wraps below zero
    out64[x, 2] = (x + 1) * int64(2**63 - 1)  # int64 overflow wraps
    outu32[x] = uint32(x) - uint32(3)


def test_the_issues_integer_edge_cases():
    out64, outu32 = np.zeros((4, 3), np.int64), np.zeros(4, np.uint32)
    issue_edges[1, 4](out64, outu32)
    x = np.arange(4)
    with np.errstate(over="ignore"):
        expected = np.stack([
            x.astype(np.int64) * np.int64(2147483647),
            (x.astype(np.uint64) - np.uint64(3)).astype(np.int64),  # stored to int64: the same 64 bits
            (x.astype(np.int64) + 1) * np.int64(2**63 - 1),
        ], axis=1)
    np.testing.assert_array_equal(out64, expected)
    np.testing.assert_array_equal(out64[:, 1], [-3, -2, -1, 0])
    np.testing.assert_array_equal(out64[:, 2], [2**63 - 1, -2, 2**63 - 3, -4])
    np.testing.assert_array_equal(outu32, (x.astype(np.uint64) - np.uint64(3)).astype(np.uint32))
    np.testing.assert_array_equal(outu32, [4294967293, 4294967294, 4294967295, 0])


def test_without_numbas_types_the_issue_saw_other_numbers():
    # the check above can fail: Python's and numpy's own arithmetic gives different values
    out64, outu32 = np.zeros((4, 3), np.int64), np.zeros(4, np.uint32)
    with sim.typing(False), np.errstate(over="ignore"), pytest.warns(RuntimeWarning):
        issue_edges[1, 4](out64, outu32)
    assert out64[2, 0] != 4294967294 or out64[0, 1] != -3


# -- integers read from arrays, shifts, mixed signedness, floor division ------------------------------------------


@cuda.jit
def from_int32_arrays(a, b, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i, 0] = a[i] * b[i]  # int32 * int32 -> int64: no wrap
        out[i, 1] = a[i] // b[i]  # floor division, in int64: INT32_MIN // -1 does not overflow
        out[i, 2] = a[i] % b[i]  # Python's sign rule: the remainder has the divisor's sign
        out[i, 3] = a[i] << 40  # int32 << is int64
        out[i, 4] = a[i] >> 3  # arithmetic shift of a negative
        out[i, 5] = -a[i]  # int64: -INT32_MIN fits


def test_integers_from_int32_arrays(rng):
    n = 300
    a = rng.integers(-(2**31), 2**31, n, dtype=np.int32)
    b = rng.integers(-50, 50, n, dtype=np.int32)
    b[b == 0] = 7
    a[:3], b[:3] = [-(2**31), -7, 7], [-1, 2, -2]
    out = np.zeros((n, 6), np.int64)
    from_int32_arrays[(n + 63) // 64, 64](a, b, out)
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    expected = np.stack([a64 * b64, a64 // b64, a64 % b64, a64 << 40, a64 >> 3, -a64], axis=1)
    np.testing.assert_array_equal(out, expected, err_msg=f"seed {SEED}")
    np.testing.assert_array_equal(out[:3, 1], [2**31, -4, -4])
    np.testing.assert_array_equal(out[:3, 2], [0, 1, -1])


@cuda.jit
def unsigned_and_small(a8, b8, out8, out64, cmp):
    i = cuda.grid(1)
    if i < a8.shape[0]:
        out8[i] = a8[i] + b8[i]  # uint8 + uint8 is uint64, truncated to uint8 when stored
        out64[i, 0] = a8[i] + b8[i]  # ... and kept whole in an int64
        out64[i, 1] = uint32(i) << 31  # uint32 << is uint64
        out64[i, 2] = ~uint32(i)  # uint64: ~ flips 64 bits
        out64[i, 3] = uint8(i) - uint8(1)  # uint64 wrap at i == 0
        cmp[i, 0] = int32(-1) < uint32(i)  # int32 vs uint32 compares in int64: -1 < i
        cmp[i, 1] = int64(-1) < np.uint64(i)  # int64 vs uint64 compares in float64: -1.0 < i


def test_unsigned_and_small_integers(rng):
    n = 70
    a8 = rng.integers(0, 256, n, dtype=np.uint8)
    b8 = rng.integers(0, 256, n, dtype=np.uint8)
    out8, out64, cmp = np.zeros(n, np.uint8), np.zeros((n, 4), np.int64), np.zeros((n, 2), np.int64)
    unsigned_and_small[(n + 31) // 32, 32](a8, b8, out8, out64, cmp)
    i = np.arange(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        whole = a8.astype(np.uint64) + b8.astype(np.uint64)
        np.testing.assert_array_equal(out8, whole.astype(np.uint8), err_msg=f"seed {SEED}")
        np.testing.assert_array_equal(out64[:, 0], whole.astype(np.int64))
        np.testing.assert_array_equal(out64[:, 1], (i << np.uint64(31)).astype(np.int64))
        np.testing.assert_array_equal(out64[:, 2], (~i).astype(np.int64))
        np.testing.assert_array_equal(out64[:, 3], (i - np.uint64(1)).astype(np.int64))
    assert out64[0, 3] == -1 and (out8 == (a8.astype(np.int64) + b8) % 256).all()
    np.testing.assert_array_equal(cmp[:, 0], np.ones(n))
    np.testing.assert_array_equal(cmp[:, 1], (-1.0 < i.astype(np.float64)).astype(np.int64))


@cuda.jit
def casts(f, out_i, out_f):
    i = cuda.grid(1)
    if i < f.shape[0]:
        out_i[i, 0] = np.int32(f[i])  # float -> int truncates toward zero
        out_i[i, 1] = int(f[i])
        out_i[i, 2] = np.uint32(np.int64(f[i]) - 5)  # int64 -> uint32 wraps instead of refusing
        out_f[i] = np.float32(i) / np.float32(3)  # an int to float32, float32 division


def test_casts_truncate_and_wrap(rng):
    n = 50
    f = (rng.standard_normal(n) * 100).astype(np.float32)
    out_i, out_f = np.zeros((n, 3), np.int64), np.zeros(n, np.float32)
    casts[1, 64](f, out_i, out_f)
    t = np.trunc(f.astype(np.float64)).astype(np.int64)
    np.testing.assert_array_equal(out_i[:, 0], t, err_msg=f"seed {SEED}")
    np.testing.assert_array_equal(out_i[:, 1], t)
    np.testing.assert_array_equal(out_i[:, 2], (t - 5).astype(np.uint32).astype(np.int64))
    np.testing.assert_array_equal(out_f, np.arange(n, dtype=np.float32) / np.float32(3))


@cuda.jit
def saturating_casts(f, out8, out32, outu32):
    i = cuda.grid(1)
    if i < f.shape[0]:
        out8[i] = np.int8(f[i])
        out32[i] = np.int32(f[i])
        outu32[i] = np.uint32(f[i])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_float_to_int_casts_saturate_without_numpys_overflow_warnings(rng, dtype):
    # the GPU's cvt.rzi: truncate toward zero, saturate at the type's bounds, NaN to 0; numpy would warn converting
    # the bounds to float16 (a failure under pytest's filterwarnings = error, as numba-cuda's own suite runs)
    big = float(np.finfo(dtype).max)
    f = np.concatenate([(rng.standard_normal(37) * 100), [big, -big, np.inf, -np.inf, np.nan, 12.3, -12.3]])
    f = f.astype(dtype)
    out8, out32, outu32 = np.zeros(len(f), np.int8), np.zeros(len(f), np.int32), np.zeros(len(f), np.uint32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        saturating_casts[2, 32](f, out8, out32, outu32)

    def saturate(t):
        info = np.iinfo(t)
        with np.errstate(invalid="ignore"):
            exact = np.trunc(f.astype(np.float64))
        return np.where(np.isnan(exact), 0, np.clip(np.nan_to_num(exact, posinf=info.max, neginf=info.min),
                                                     info.min, info.max)).astype(np.float64).astype(t)

    np.testing.assert_array_equal(out8, saturate(np.int8), err_msg=f"seed {SEED}")
    np.testing.assert_array_equal(out32, saturate(np.int32))
    np.testing.assert_array_equal(outu32, saturate(np.uint32))


# -- floats: float32 stays float32, float64 literals promote ------------------------------------------------------


@cuda.jit
def accumulations(x, out32, out64):
    if cuda.grid(1) == 0:
        a = np.float32(0.0)
        b = 0.0
        c = 0  # int64 at first, float64 once float32 values are added: Numba unifies the two
        for j in range(x.shape[0]):
            a += x[j]  # float32 + float32: float32
            b += x[j]  # float64 + float32: float64
            c += x[j]
        out32[0] = a
        out64[0] = b
        out64[1] = c


def test_float32_accumulation_stays_float32_and_literals_promote(rng):
    x = rng.random(1000).astype(np.float32)
    out32, out64 = np.zeros(1, np.float32), np.zeros(2, np.float64)
    accumulations[1, 32](x, out32, out64)
    assert out32[0] == np.cumsum(x, dtype=np.float32)[-1], f"seed {SEED}"
    assert out64[0] == np.cumsum(x.astype(np.float64))[-1] and out64[1] == out64[0]
    assert out32[0] != np.float32(out64[0]), "float32 and float64 sums must differ here for the test to mean much"


@cuda.jit
def mixed_float(x, out, out64):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i, 0] = x[i] * 0.1  # float32 * float64 literal: float64, rounded once when stored
        out[i, 1] = x[i] * np.float32(0.1)  # float32 throughout
        out[i, 2] = x[i] + 1  # float32 + int64: float64
        out64[i, 0] = math.sqrt(x[i]) * np.float32(3)  # math.sqrt of a float32 is float32 in Numba
        out64[i, 1] = math.sqrt(float(x[i])) * 3  # float() of a float32 is still float32 in Numba
        out64[i, 3] = math.sqrt(np.float64(x[i])) * 3
        out64[i, 2] = x[i] / 3  # float32 / int64: float64


def test_float32_with_float64_literals(rng):
    n = 2000
    x = (rng.random(n) * 1000).astype(np.float32)
    out, out64 = np.zeros((n, 3), np.float32), np.zeros((n, 4))
    mixed_float[(n + 255) // 256, 256](x, out, out64)
    x64 = x.astype(np.float64)
    np.testing.assert_array_equal(out[:, 0], (x64 * 0.1).astype(np.float32), err_msg=f"seed {SEED}")
    np.testing.assert_array_equal(out[:, 1], x * np.float32(0.1))
    np.testing.assert_array_equal(out[:, 2], (x64 + 1).astype(np.float32))
    np.testing.assert_array_equal(out64[:, 0], (np.sqrt(x) * np.float32(3)).astype(np.float64))
    np.testing.assert_array_equal(out64[:, 1], np.sqrt(x).astype(np.float64) * 3)
    np.testing.assert_array_equal(out64[:, 2], x64 / 3)
    np.testing.assert_array_equal(out64[:, 3], np.sqrt(x64) * 3)
    # the checks can fail: numpy's own float32 * 0.1 (the literal cast to float32 first) differs somewhere
    assert (out[:, 0] != x * np.float32(0.1)).any()
    assert (out64[:, 0] != np.sqrt(x64) * 3).any()


# -- device functions, warp intrinsics, atomics ------------------------------------------------------------------


@cuda.jit(device=True)
def product(a, b):
    return a * b


@cuda.jit
def through_a_device_function(a, b, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i] = product(a[i], b[i]) + product(np.int16(i), np.int16(1000))


def test_device_functions_compute_with_numbas_types(rng):
    n = 100
    a = rng.integers(-(2**31), 2**31, n, dtype=np.int32)
    b = rng.integers(-(2**31), 2**31, n, dtype=np.int32)
    out = np.zeros(n, np.int64)
    through_a_device_function[1, 128](a, b, out)
    np.testing.assert_array_equal(out, a.astype(np.int64) * b + np.arange(n) * 1000, err_msg=f"seed {SEED}")


@cuda.jit
def masks(x, out32, out64):
    t = cuda.threadIdx.x
    out32[t, 0] = cuda.ballot_sync(FULL, x[t] > 0)  # numba-cuda types ballot_sync as int32
    out64[t, 0] = cuda.ballot_sync(FULL, x[t] > 0)  # ... so an int64 gets it sign-extended
    out32[t, 1] = cuda.activemask()  # uint32: stored to int32 it wraps
    out64[t, 1] = cuda.activemask()
    out64[t, 2] = cuda.lanemask_lt()  # uint32
    out32[t, 2] = cuda.match_any_sync(FULL, t // 16)  # int32: lanes 16-31 have the sign bit


def test_warp_masks_have_numba_cudas_types():
    x = np.ones(32, np.float32)
    out32, out64 = np.zeros((32, 3), np.int32), np.zeros((32, 3), np.int64)
    masks[1, 32](x, out32, out64)
    lane = np.arange(32)
    np.testing.assert_array_equal(out32[:, 0], -1)
    np.testing.assert_array_equal(out64[:, 0], -1)
    np.testing.assert_array_equal(out32[:, 1], -1)
    np.testing.assert_array_equal(out64[:, 1], FULL)
    np.testing.assert_array_equal(out64[:, 2], (1 << lane) - 1)
    np.testing.assert_array_equal(out32[:, 2], np.where(lane < 16, 0xFFFF, np.int64(0xFFFF0000) - 2**32))


@cuda.jit
def wrapping_atomic(acc, x):
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.add(acc, 0, x[i])


def test_integer_atomics_wrap_around(rng):
    x = rng.integers(2**30, 2**31 - 1, 64, dtype=np.int32)
    acc = np.zeros(1, np.int32)
    with sim.checks("race,bounds"):
        wrapping_atomic[1, 64](acc, x)
    with np.errstate(over="ignore"):
        assert acc[0] == np.sum(x, dtype=np.int32), f"seed {SEED}"


@cuda.jit
def unsigned_index(x, out):
    i = cuda.threadIdx.x
    out[i] = x[np.uint32(i) - np.uint32(1)]  # DEFECT at i == 0: uint32 0 - 1 is a huge uint64 index, not -1


def test_an_unsigned_index_below_zero_is_huge_not_negative(rng):
    x, out = rng.random(4).astype(np.float32), np.zeros(4, np.float32)
    with sim.checks("bounds"), pytest.raises(sim.OutOfBoundsError, match=r"index \[18446744073709551615\]"):
        unsigned_index[1, 4](x, out)


@cuda.jit
def bit_operations(a, b, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i, 0] = cuda.popc(a[i])  # on the int32's 32 bits: popc(-1) is 32
        out[i, 1] = cuda.clz(a[i])
        out[i, 2] = cuda.ffs(a[i])
        out[i, 3] = cuda.brev(np.uint32(a[i]))
        out[i, 4] = cuda.popc(b[i])  # uint64
        out[i, 5] = cuda.clz(b[i])


def test_bit_operations_work_on_the_types_width(rng):
    n = 200
    a = rng.integers(-(2**31), 2**31, n, dtype=np.int32)
    b = rng.integers(0, 2**64, n, dtype=np.uint64, endpoint=False)
    a[:3], b[:3] = [-1, 0, 1 << 30], [0, 2**64 - 1, 1]
    out = np.zeros((n, 6), np.int64)
    bit_operations[1, 256](a, b, out)
    u32 = [int(v) & 0xFFFFFFFF for v in a]
    np.testing.assert_array_equal(out[:, 0], [bin(v).count("1") for v in u32], err_msg=f"seed {SEED}")
    np.testing.assert_array_equal(out[:, 1], [32 - v.bit_length() for v in u32])
    np.testing.assert_array_equal(out[:, 2], [(v & -v).bit_length() for v in u32])
    np.testing.assert_array_equal(out[:, 3], [int(f"{v:032b}"[::-1], 2) for v in u32])
    np.testing.assert_array_equal(out[:, 4], [bin(int(v)).count("1") for v in b])
    np.testing.assert_array_equal(out[:, 5], [64 - int(v).bit_length() for v in b])
    assert out[0, 0] == 32 and out[1, 1] == 32 and out[1, 2] == 0 and out[0, 5] == 64


@cuda.jit
def fused(x, out):
    out[0] = cuda.fma(x[0], x[1], x[2])  # one rounding
    out[1] = x[0] * x[1] + x[2]  # two (the simulator does not contract; NVVM may, see docs)


def test_fma_rounds_once():
    a = np.float32(1 + 2**-12)
    x = np.array([a, a, -(1 + 2**-11)], np.float32)
    out = np.zeros(2, np.float32)
    fused[1, 1](x, out)
    assert out[0] == np.float32(2**-24)  # (1 + 2**-12)**2 - (1 + 2**-11), exactly
    assert out[1] == (x[0] * x[1]) + x[2] == 0.0  # the float32 product rounds the 2**-24 away


@cuda.jit
def complex_parts_in_float32(x, y, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        # numba: complex() of two float32 is a complex64, so the conjugate's .imag is a float32
        out[i] = x[i] / y[i] + np.conjugate(complex(x[i], y[i])).imag


def test_complex_of_two_float32_is_a_complex64(rng):
    """Python's complex() is a complex128; numba's of two float32 is a complex64: the sum stays float32."""
    x, y = (rng.random(500) + 0.5).astype(np.float32), (rng.random(500) + 0.5).astype(np.float32)
    out = np.zeros(500, np.float64)
    complex_parts_in_float32[4, 128](x, y, out)
    np.testing.assert_array_equal(out, (x / y - y).astype(np.float64), err_msg=f"seed {SEED}")
    assert (out != (x / y).astype(np.float64) - y).any(), "the float32 and float64 sums must differ here"
