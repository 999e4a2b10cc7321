"""The simulator's mma.sync against float64 references built from the same fragments.

The references gather each lane's registers into matrices with the PTX ISA's formulas written out here again
(not with ``numbakern.mma.layout``), so a wrong layout in the library fails these tests.
"""

from __future__ import annotations

import numpy as np
import pytest

from numbakern import sim
from numbakern.mma import formats
from tests.mma import kernels

pytestmark = pytest.mark.sim

LANES = 32


def ptx_a_16x16(lane: int) -> list[tuple[int, int]]:
    """PTX ISA, m16n8k16 .bf16/.f16 A fragment: elements a0..a7 of lane ``lane``."""
    group, tig = lane >> 2, lane % 4
    out = []
    for i in range(8):
        row = group if (i < 2 or 4 <= i < 6) else group + 8
        col = tig * 2 + (i & 1) + (8 if i >= 4 else 0)
        out.append((row, col))
    return out


def ptx_b_16x8(lane: int) -> list[tuple[int, int]]:
    group, tig = lane >> 2, lane % 4
    return [(tig * 2 + (i & 1) + (8 if i >= 2 else 0), group) for i in range(4)]


def ptx_a_16x8_tf32(lane: int) -> list[tuple[int, int]]:
    group, tig = lane >> 2, lane % 4
    return [(group + (8 if i in (1, 3) else 0), tig + (4 if i in (2, 3) else 0)) for i in range(4)]


def ptx_b_8x8_tf32(lane: int) -> list[tuple[int, int]]:
    group, tig = lane >> 2, lane % 4
    return [(tig + (4 if i == 1 else 0), group) for i in range(2)]


def ptx_c(lane: int) -> list[tuple[int, int]]:
    group, tig = lane >> 2, lane % 4
    return [(group + (8 if i >= 2 else 0), tig * 2 + (i & 1)) for i in range(4)]


def packed_to_matrix(regs: np.ndarray, positions, shape, to_f32) -> np.ndarray:
    """Registers (32 x n uint32, two 16-bit elements each, low half first) -> the float64 matrix they hold."""
    m = np.full(shape, np.nan)
    for lane in range(LANES):
        for e, (r, c) in enumerate(positions(lane)):
            half = (int(regs[lane, e // 2]) >> (16 * (e % 2))) & 0xFFFF
            assert np.isnan(m[r, c]), "two lanes hold one element"
            m[r, c] = float(to_f32(half))
    assert not np.isnan(m).any(), "an element no lane holds"
    return m


def plain_to_matrix(regs: np.ndarray, positions, shape) -> np.ndarray:
    m = np.full(shape, np.nan)
    for lane in range(LANES):
        for e, (r, c) in enumerate(positions(lane)):
            assert np.isnan(m[r, c])
            m[r, c] = float(regs[lane, e])
    assert not np.isnan(m).any()
    return m


def matrix_to_c_regs(m: np.ndarray) -> np.ndarray:
    return np.array([[m[r, c] for r, c in ptx_c(lane)] for lane in range(LANES)])


def random_16bit(rng, shape, fmt: str, scale: float = 1.0) -> np.ndarray:
    x = (rng.standard_normal(shape) * scale).astype(np.float32)
    return formats.f32_to_bf16_bits(x) if fmt == "bf16" else formats.f32_to_f16_bits(x)


def packed_registers(rng, n_regs: int, fmt: str) -> np.ndarray:
    lo, hi = random_16bit(rng, (LANES, n_regs), fmt), random_16bit(rng, (LANES, n_regs), fmt)
    return formats.pack_b16x2(lo, hi)


def assert_rounded_once(d: np.ndarray, exact: np.ndarray, scale: np.ndarray) -> None:
    """``d`` is float32 and within half a float32 ulp of ``exact`` (float64 reference; its own error is far below
    that, relative to ``scale`` = the sum of the magnitudes of the terms)."""
    ulp = np.spacing(np.abs(d).astype(np.float32)).astype(np.float64)
    err = np.abs(d.astype(np.float64) - exact)
    assert (err <= 0.5 * ulp + 1e-14 * scale).all(), float((err / ulp).max())


@pytest.mark.parametrize("fmt", ["bf16", "f16"])
def test_m16n8k16_matches_float64_reference_of_the_fragments(fmt, rng):
    a_regs = packed_registers(rng, 4, fmt)
    b_regs = packed_registers(rng, 2, fmt)
    c_regs = rng.standard_normal((LANES, 4)).astype(np.float32)
    d_regs = np.zeros((LANES, 4), np.float32)
    kernel = kernels.mma_bf16_registers if fmt == "bf16" else kernels.mma_f16_registers
    with sim.checks("all"):
        kernel[1, LANES](a_regs, b_regs, c_regs, d_regs)
    to_f32 = formats.bf16_bits_to_f32 if fmt == "bf16" else formats.f16_bits_to_f32
    a = packed_to_matrix(a_regs, ptx_a_16x16, (16, 16), to_f32)
    b = packed_to_matrix(b_regs, ptx_b_16x8, (16, 8), to_f32)
    c = plain_to_matrix(c_regs, ptx_c, (16, 8))
    exact = a @ b + c
    scale = np.abs(a) @ np.abs(b) + np.abs(c)
    assert_rounded_once(d_regs, matrix_to_c_regs(exact), matrix_to_c_regs(scale))
    assert np.abs(d_regs).min() > 0  # fresh values everywhere


def test_m16n8k8_tf32_matches_float64_reference_of_the_fragments(rng):
    a_regs = formats.f32_to_tf32(rng.standard_normal((LANES, 4)).astype(np.float32))
    b_regs = formats.f32_to_tf32(rng.standard_normal((LANES, 2)).astype(np.float32))
    c_regs = rng.standard_normal((LANES, 4)).astype(np.float32)
    d_regs = np.zeros((LANES, 4), np.float32)
    with sim.checks("all"):
        kernels.mma_tf32_registers[1, LANES](a_regs, b_regs, c_regs, d_regs)
    a = plain_to_matrix(a_regs, ptx_a_16x8_tf32, (16, 8))
    b = plain_to_matrix(b_regs, ptx_b_8x8_tf32, (8, 8))
    c = plain_to_matrix(c_regs, ptx_c, (16, 8))
    assert_rounded_once(d_regs, matrix_to_c_regs(a @ b + c), matrix_to_c_regs(np.abs(a) @ np.abs(b) + np.abs(c)))


def test_tf32_operands_ignore_the_low_13_bits(rng):
    """A float32 that is not a tf32 is read as its top 19 bits (truncated), as the hardware reads it."""
    raw_a = rng.standard_normal((LANES, 4)).astype(np.float32)
    raw_b = rng.standard_normal((LANES, 2)).astype(np.float32)
    c_regs = rng.standard_normal((LANES, 4)).astype(np.float32)
    outs = []
    for a_regs, b_regs in ((raw_a, raw_b), (formats.tf32_operand(raw_a), formats.tf32_operand(raw_b))):
        d = np.zeros((LANES, 4), np.float32)
        kernels.mma_tf32_registers[1, LANES](a_regs, b_regs, c_regs, d)
        outs.append(d)
    np.testing.assert_array_equal(outs[0], outs[1])
    assert not np.array_equal(raw_a, formats.tf32_operand(raw_a))


def test_the_sum_is_rounded_once_not_added_in_float32_steps():
    """C = 2**24 plus sixteen products of 1: sequential float32 adds lose every 1 (2**24 + 1 rounds back to 2**24);
    the model adds exactly and rounds once, to 2**24 + 16, which float32 holds."""
    one = int(formats.f32_to_bf16_bits(np.float32(1.0)))
    a_regs = np.full((LANES, 4), one | (one << 16), np.uint32)
    b_regs = np.full((LANES, 2), one | (one << 16), np.uint32)
    c_regs = np.full((LANES, 4), 2.0**24, np.float32)
    d_regs = np.zeros((LANES, 4), np.float32)
    kernels.mma_bf16_registers[1, LANES](a_regs, b_regs, c_regs, d_regs)
    assert (d_regs == np.float32(2.0**24 + 16)).all()
    sequential = np.float32(2.0**24)
    for _ in range(16):
        sequential = np.float32(sequential + np.float32(1.0))
    assert sequential == np.float32(2.0**24)  # what the other model would give


def test_a_float64_tie_is_settled_by_what_float64_rounded_away():
    """1 + 2**-24 + 2**-80: float64 rounds the sum to 1 + 2**-24, exactly halfway between two float32s, but the
    exact sum is above halfway, so float32 rounds it up (a float64 sum rounded again to float32 would round to 1)."""
    from numbakern.sim.tensorcore import exact_dot_f32

    assert exact_dot_f32([1.0, 2.0**-24, 2.0**-80]) == np.nextafter(np.float32(1), np.float32(2))
    assert exact_dot_f32([1.0, 2.0**-24, -(2.0**-80)]) == np.float32(1)
    assert exact_dot_f32([1.0, 2.0**-24]) == np.float32(1)  # a true tie: to even
    assert np.float32(1.0 + 2.0**-24 + 2.0**-80) == np.float32(1)  # double rounding would be wrong


def test_infinities_and_nans_propagate():
    from numbakern.sim.tensorcore import exact_dot_f32

    assert exact_dot_f32([np.inf, 1.0]) == np.inf
    assert np.isnan(exact_dot_f32([np.inf, -np.inf]))
    assert exact_dot_f32([3.0e38, 3.0e38]) == np.inf  # past float32's range, exactly summed
    assert exact_dot_f32([3.0e38, 3.0e38, -3.0e38]) == np.float32(3.0e38)


def _round_f32(q) -> np.float32:
    """The float32 nearest the rational ``q``, ties to the even neighbour, by exact comparisons."""
    from fractions import Fraction

    f = np.float32(float(q))  # at most one float32 step from the answer (float64, then float32, rounding)
    near = [f, np.nextafter(f, np.float32(np.inf)), np.nextafter(f, np.float32(-np.inf))]
    return min(near, key=lambda v: (abs(Fraction(float(v)) - q), int(v.view(np.uint32)) & 1))


@pytest.mark.parametrize("exponents", [(-3, 3), (-60, 60)], ids=["similar magnitudes", "wide magnitudes"])
def test_every_element_is_the_exact_sum_rounded_once(rng, exponents):
    """mma's (and wgmma's) product, computed for a whole tile at once, against each element's exact sum (Python
    fractions) rounded to float32 here: bf16-like operands (8 significant bits) over a narrow and a wide exponent
    range, float32 accumulators, and rows built to land exactly on a float32 tie, broken either way or not at all."""
    from fractions import Fraction

    from numbakern.sim.tensorcore import exact_matmul_f32

    m, n, k = 16, 8, 16

    def values(shape, low, high):
        mantissa = rng.integers(128, 256, shape) * rng.choice([-1, 1], shape)
        return np.ldexp(mantissa.astype(np.float64), rng.integers(low, high, shape) - 8)

    a, b = values((m, k), *exponents), values((k, n), *exponents)
    c = values((m, n), *exponents).astype(np.float32).astype(np.float64)
    # row 0: 1 + 2**-24 (a float32 tie: to even) plus 0, +2**-80 or -2**-80 (column 0, 1, 2)
    a[0], b[:, :3], c[0, :3] = 0.0, 0.0, 1.0
    a[0, 0], a[0, 1] = 2.0**-12, 2.0**-40
    b[0, :3], b[1, :3] = 2.0**-12, [0.0, 2.0**-40, -(2.0**-40)]
    d = exact_matmul_f32(a, b, c)
    assert d.dtype == np.float32
    want = np.array([[_round_f32(sum(Fraction(x) * Fraction(y) for x, y in zip(a[i], b[:, j])) + Fraction(c[i, j]))
                      for j in range(n)] for i in range(m)], np.float32)
    np.testing.assert_array_equal(d.view(np.uint32), want.view(np.uint32))
    assert d[0, 0] == np.float32(1) and d[0, 1] == np.nextafter(np.float32(1), np.float32(2)) and d[0, 2] == 1


def test_hand_tile_16x8x16_matches_numpy(rng):
    """The docs' first example: one warp, fragments loaded by hand, one mma, D stored."""
    a = random_16bit(rng, (16, 16), "bf16")
    b = random_16bit(rng, (16, 8), "bf16")
    c = rng.standard_normal((16, 8)).astype(np.float32)
    d = np.zeros((16, 8), np.float32)
    with sim.checks("all"):
        kernels.tile_16x8x16_bf16[1, 32](a, b, c, d)
    a64 = formats.bf16_bits_to_f32(a).astype(np.float64)
    b64 = formats.bf16_bits_to_f32(b).astype(np.float64)
    assert_rounded_once(d, a64 @ b64 + c, np.abs(a64) @ np.abs(b64) + np.abs(c))


def test_two_warps_each_compute_their_own_tile(rng):
    a_regs = packed_registers(rng, 4, "bf16")
    b_regs = packed_registers(rng, 2, "bf16")
    c_regs = rng.standard_normal((LANES, 4)).astype(np.float32)
    both = [np.concatenate([x, x[::-1]]) for x in (a_regs, b_regs, c_regs)]  # warp 1: the lanes reversed
    d = np.zeros((2 * LANES, 4), np.float32)
    with sim.checks("all"):
        kernels.mma_bf16_registers[1, 2 * LANES](*both, d)
    single = np.zeros((LANES, 4), np.float32)
    kernels.mma_bf16_registers[1, LANES](*[x[LANES:] for x in both], single)
    np.testing.assert_array_equal(d[LANES:], single)
    assert not np.array_equal(d[:LANES], d[LANES:])


def test_a_bad_argument_is_numba_cuda_s_typing_error():
    """The launch is typed by numba-cuda with the intrinsic's own typing: a float fragment array for a bf16 mma is
    refused before any thread runs, naming the argument."""
    regs = [np.ones((LANES, n), np.float32) for n in (4, 2, 4, 4)]
    with pytest.raises(sim.TypingError, match=r"mma_m16n8k16_bf16: a must be a 1-D uint32 array"):
        kernels.mma_bf16_float_registers[1, LANES](*regs)


def test_packing_16_bit_floats_instead_of_their_bits_names_the_fix():
    """Issue 41: pack_b16x2 of float16 (or bf16) values said only "must be an integer"; it now says how 16-bit
    data reaches a kernel as bit patterns."""
    with pytest.raises(sim.TypingError, match=r"pack_b16x2: lo must be an integer, got float16 \(.*to_kernel_arg.*"
                       r"view\(np\.uint16\)"):
        kernels.pack_halves[1, 4](np.ones(8, np.float16), np.zeros(4, np.uint32))
