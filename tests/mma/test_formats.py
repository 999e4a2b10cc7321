"""The bf16/f16/tf32 conversions against independent references: torch's float32 -> bfloat16 (round to nearest
even), numpy's float16, and tf32's round-half-away written with exact fractions; and the fragment layouts' tables
(every element of each operand held by exactly one lane)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from numbakern.mma import formats, layout


def _nasty_floats(rng, n=4000) -> np.ndarray:
    """Random float32s plus the cases rounding gets wrong: exact ties, values next to ties, the largest finite, tiny
    subnormals, signed zeros and infinities."""
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)).astype(np.float32)
    bits = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    ties = ((bits & 0xFFFF0000) | 0x8000).view(np.float32)  # exactly halfway between two bf16s
    extra = np.array([0.0, -0.0, np.inf, -np.inf, 3.4028235e38, -3.4028235e38, 1e-45, 65504.0, 65520.0, 1.0 + 2**-8,
                      1.0 + 2**-9 + 2**-20], np.float32)
    return np.concatenate([x, ties[np.isfinite(ties)], extra])


def test_f32_to_bf16_rounds_as_torch_does(rng):
    torch = pytest.importorskip("torch")
    x = _nasty_floats(rng)
    want = torch.from_numpy(x).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    np.testing.assert_array_equal(formats.f32_to_bf16_bits(x), want)
    np.testing.assert_array_equal(formats.bf16_bits_to_f32(want), torch.from_numpy(x).to(torch.bfloat16).float())


def test_nan_becomes_the_canonical_nan():
    nans = np.array([np.nan, -np.nan], np.float32)
    assert (formats.f32_to_bf16_bits(nans) == 0x7FFF).all() and (formats.f32_to_f16_bits(nans) == 0x7FFF).all()


def test_f16_round_trip_matches_numpy(rng):
    x = _nasty_floats(rng)
    bits = formats.f32_to_f16_bits(x)
    with np.errstate(over="ignore"):
        half = x.astype(np.float16)
    np.testing.assert_array_equal(bits, half.view(np.uint16))
    np.testing.assert_array_equal(formats.f16_bits_to_f32(bits), half.astype(np.float32))


def _tf32_reference(v: np.float32) -> np.float32:
    """Nearest float32 with 10 mantissa bits, ties away from zero, by exact arithmetic."""
    if not np.isfinite(v) or v == 0:
        return v
    _, e = math.frexp(abs(float(v)))  # |v| = m * 2**e, m in [0.5, 1): the leading bit is 2**(e - 1)
    step = Fraction(2) ** (max(e - 1, -126) - 10)
    q = abs(Fraction(float(v))) / step
    r = math.floor(q + Fraction(1, 2)) * step * (1 if v > 0 else -1)
    if abs(r) > Fraction(float(np.finfo(np.float32).max)):
        return np.float32(np.inf if v > 0 else -np.inf)
    return np.float32(float(r))


def test_f32_to_tf32_rounds_half_away_from_zero(rng):
    random_bits = rng.integers(0, 2**32, 200, dtype=np.uint64).astype(np.uint32)
    ties = ((random_bits & np.uint32(0xFFFFE000)) | np.uint32(0x1000)).view(np.float32)  # exactly halfway
    x = np.concatenate([_nasty_floats(rng, 1500), ties])
    x = x[np.isfinite(x)]
    got = formats.f32_to_tf32(x)
    assert (got.view(np.uint32) & 0x1FFF == 0).all()
    want = np.array([_tf32_reference(v) for v in x], np.float32)
    np.testing.assert_array_equal(got, want)
    assert formats.f32_to_tf32(np.float32(1 + 2**-11)) == np.float32(1 + 2**-10)  # a tie goes away from zero
    assert formats.f32_to_tf32(np.float32(-(1 + 2**-11))) == np.float32(-(1 + 2**-10))


def test_one_float32_scalar_rounds_as_the_reference_and_as_an_array_does(rng):
    """The simulator hands the conversions one np.float32 at a time, which they round on a Python int: the same
    bits as the exact reference and as the array path, for every class of float32 (NaN payloads, infinities,
    subnormals, signed zeros, values that round past the largest tf32, exact ties)."""
    random_bits = rng.integers(0, 2**32, 3000, dtype=np.uint64).astype(np.uint32)
    ties = ((random_bits[:300] & np.uint32(0xFFFFE000)) | np.uint32(0x1000)).view(np.float32)
    nans = np.array([0x7FC00001, 0xFFC00000, 0x7F800001, 0xFF812345], np.uint32).view(np.float32)
    x = np.concatenate([_nasty_floats(rng, 500), random_bits.view(np.float32), ties, nans,
                        np.array([3.4028235e38, -3.4028235e38], np.float32)])
    for v in x:
        got = formats.f32_to_tf32(v)
        assert type(got) is np.float32
        assert got.view(np.uint32) == formats.f32_to_tf32(np.array([v]))[0].view(np.uint32)
        if np.isfinite(v):
            assert got.view(np.uint32) == _tf32_reference(v).view(np.uint32)
        big, small = formats.split_tf32(v)
        array_big, array_small = formats.split_tf32(np.array([v]))
        assert (big.view(np.uint32), small.view(np.uint32)) == (array_big[0].view(np.uint32),
                                                                 array_small[0].view(np.uint32))


def test_split_tf32_keeps_21_bits(rng):
    x = rng.standard_normal(5000).astype(np.float32)
    big, small = formats.split_tf32(x)
    assert (big.view(np.uint32) & 0x1FFF == 0).all() and (small.view(np.uint32) & 0x1FFF == 0).all()
    err = np.abs(big.astype(np.float64) + small - x) / np.abs(x)
    assert err.max() <= 2.0**-21 and (err > 0).any()  # not always exact, but about 22 of float32's 24 bits
    assert (np.abs(formats.f32_to_tf32(x).astype(np.float64) - x) / np.abs(x)).max() > 2.0**-13


def test_pack_puts_the_first_element_in_the_low_half():
    assert formats.pack_b16x2(np.uint16(0x1234), np.uint16(0xABCD)) == 0xABCD1234
    assert formats.unpack_b16x2(np.uint32(0xABCD1234)) == (0x1234, 0xABCD)


@pytest.mark.parametrize("shape", list(layout.SHAPES.values()), ids=list(layout.SHAPES))
def test_every_fragment_element_is_held_by_exactly_one_lane(shape):
    for elements, rows, cols in ((layout.a_elements, shape.m, shape.k), (layout.b_elements, shape.k, shape.n),
                                 (layout.c_elements, shape.m, shape.n)):
        held = [rc for lane in range(32) for rc in elements(shape, lane)]
        assert sorted(held) == [(r, c) for r in range(rows) for c in range(cols)]
