"""``numbakern.compare``: special values compare by value, numbers within the tolerance, and nothing in between."""

import importlib

import numpy as np
import pytest

from numbakern.compare import compare

INF, NAN = np.inf, np.nan


def test_equal_special_values_are_equal():
    expected = np.array([INF, -INF, NAN, -0.0, 1.5], dtype=np.float64)
    got = np.array([INF, -INF, NAN, 0.0, 1.5], dtype=np.float32)
    result = compare(got, expected, rtol=1e-6)
    assert result.ok and result.mismatches == 0 and result.max_abs_error == 0.0, result


def test_a_nan_with_another_payload_or_sign_is_still_nan():
    expected = np.array([NAN], dtype=np.float32)
    got = -np.array([NAN], dtype=np.float32) + np.float32(0)  # a NaN with the sign bit set
    assert compare(got, expected).ok


@pytest.mark.parametrize("got, want", [
    (NAN, 1.0),    # a NaN where the reference has a number
    (1.0, NAN),    # a number where the reference has NaN
    (-INF, INF),   # an inf of the wrong sign
    (INF, -INF),
    (INF, 1.0),    # an inf where the reference is finite
    (3.0e38, INF),  # a finite number where the reference is inf: an infinite scale must not let it pass
    (NAN, INF),
])
def test_a_special_value_where_the_reference_has_another_is_a_mismatch(got, want, rng):
    n = 7
    expected = rng.standard_normal(n)
    k = int(rng.integers(n))
    expected[k] = want
    actual = expected.astype(np.float32)
    actual[k] = got
    for scale in (None, np.abs(expected), np.full(n, INF)):
        result = compare(actual, expected, scale=scale, rtol=1e-5, atol=1e-6)
        assert not result.ok and result.mismatches == 1, (got, want, scale, result)
        assert result.first_mismatches[0][0] == (k,)
        assert result.max_abs_error == INF


def test_numbers_still_compare_within_the_tolerance(rng):
    expected = rng.standard_normal(1000)
    assert compare(expected * (1 + 1e-7), expected, rtol=1e-6).ok
    wrong = expected.copy()
    wrong[123] *= 1 + 1e-4
    result = compare(wrong, expected, rtol=1e-6)
    assert not result.ok and result.mismatches == 1 and result.first_mismatches[0][0] == (123,)


def test_a_non_finite_scale_does_not_widen_the_tolerance(rng):
    """Inputs with inf make a sum-of-magnitudes scale infinite; a finite expected element keeps its own bound."""
    expected = rng.standard_normal(5)
    wrong = expected + 1.0
    result = compare(wrong, expected, scale=np.full(5, INF), rtol=1e-5)
    assert not result.ok and result.mismatches == 5


def test_an_output_larger_than_a_chunk_is_compared_whole(rng):
    # the comparison runs a chunk at a time: mismatches in several chunks are all counted, the first ones reported in
    # index order, the largest errors found wherever they are, the never-written ones told apart
    module = importlib.import_module("numbakern.compare")  # (the package exports the function under its name)

    shape = (3, module._CHUNK + 7)  # three rows, each a little over one chunk
    want = rng.standard_normal(shape)
    got = want.astype(np.float32)
    before = np.full(shape, np.nan, np.float32)
    wrong = [(0, 5), (1, module._CHUNK + 3), (2, 0), (2, module._CHUNK + 6)]
    for i, idx in enumerate(wrong):
        got[idx] = np.nan if i == 2 else want[idx] + 10.0 * (i + 1)
    result = compare(got, want, rtol=1e-5, before=before, show=3)
    assert not result.ok and result.mismatches == 4
    assert [idx for idx, _, _ in result.first_mismatches] == wrong[:3]
    assert result.max_abs_error == np.inf  # the NaN where a number was expected
    assert result.never_written == 1 and result.first_never_written == ((2, 0),)
    got[2, 0] = want[2, 0]
    finite = compare(got, want, rtol=1e-5)
    err = np.abs(got.astype(np.float64) - want)
    assert finite.mismatches == 3 and finite.max_abs_error == pytest.approx(err.max())
    assert finite.max_rel_error == pytest.approx((err / np.abs(want)).max())
    # the same bits: nothing to measure, whatever the scale
    same = compare(got, got.copy(), scale=np.abs(want))
    assert same.ok and same.max_abs_error == 0.0 and same.max_rel_error == 0.0
