"""ldmatrix against a numpy model of its addressing, and the checkers of the tensor-core instructions: a divergent
or split warp, misaligned and out-of-bounds row addresses, fragment registers read before they are written."""

from __future__ import annotations

import numpy as np
import pytest

from numbakern import sim
from tests.mma import kernels

pytestmark = pytest.mark.sim

LANES = 32


def ldmatrix_model(tile: np.ndarray, rows, cols, count: int, trans: bool) -> np.ndarray:
    """PTX ISA: lanes 8j..8j+7 address rows 0..7 of matrix j; lane l gets, per matrix, row l//4, columns 2(l%4) and
    2(l%4)+1 (transposed: rows 2(l%4), 2(l%4)+1 of column l//4), the first in the low half."""
    out = np.zeros((LANES, count), np.uint64)
    for j in range(count):
        matrix = np.array([tile[rows[8 * j + r], cols[8 * j + r]:cols[8 * j + r] + 8] for r in range(8)])
        if trans:
            matrix = matrix.T
        for lane in range(LANES):
            lo, hi = matrix[lane // 4, 2 * (lane % 4)], matrix[lane // 4, 2 * (lane % 4) + 1]
            out[lane, j] = int(lo) | (int(hi) << 16)
    return out.astype(np.uint32)


def _addresses(rng, count: int):
    """Row addresses in a 16x24 tile: 16-byte aligned (columns 0, 8, 16), every lane a different row start; lanes
    whose address ldmatrix does not use get garbage that would be out of bounds."""
    rows = rng.integers(0, 16, LANES).astype(np.int32)
    cols = (rng.integers(0, 3, LANES) * 8).astype(np.int32)
    rows[8 * count:] = 1000
    cols[8 * count:] = 3
    return rows, cols


@pytest.mark.parametrize("trans", [False, True], ids=["plain", "trans"])
@pytest.mark.parametrize("count", [1, 2, 4])
def test_ldmatrix_matches_the_addressing_model(count, trans, rng):
    src = rng.integers(1, 2**16, (16, 24), dtype=np.uint16)
    rows, cols = _addresses(rng, count)
    out = np.zeros((LANES, count), np.uint32)
    with sim.checks("all"):
        kernels.ldmatrix_kernels[(count, trans)][1, LANES](src, rows, cols, out)
    np.testing.assert_array_equal(out, ldmatrix_model(src, rows, cols, count, trans))


def test_a_row_across_rows_of_the_array_is_read_in_address_order(rng):
    """The 16 bytes a lane addresses are the next eight elements in memory, also where the array's rows are
    shorter than that (a (96, 4) tile: each row address covers two of its rows)."""
    src = rng.integers(1, 2**16, (16, 24), dtype=np.uint16)
    rows, cols = _addresses(rng, 4)
    out = np.zeros((LANES, 4), np.uint32)
    with sim.checks("all"):
        kernels.ldmatrix_x4_of_narrow_rows[1, LANES](src, rows, cols, out)
    np.testing.assert_array_equal(out, ldmatrix_model(src, rows, cols, 4, False))


def test_ldmatrix_x4_of_a_16x16_tile_is_the_mma_a_fragment(rng):
    """The usual addressing: lane l names row l % 16 at column 8 * (l // 16); registers 0..3 are then a0..a3."""
    src = rng.integers(1, 2**16, (16, 24), dtype=np.uint16)
    rows = (np.arange(LANES) % 16).astype(np.int32)
    cols = (8 * (np.arange(LANES) // 16)).astype(np.int32)
    out = np.zeros((LANES, 4), np.uint32)
    kernels.ldmatrix_kernels[(4, False)][1, LANES](src, rows, cols, out)
    for lane in range(LANES):
        g, t = lane >> 2, lane % 4
        want = [(g, 2 * t), (g + 8, 2 * t), (g, 2 * t + 8), (g + 8, 2 * t + 8)]  # a0..a3's first elements
        for reg, (r, c) in enumerate(want):
            assert out[lane, reg] == int(src[r, c]) | (int(src[r, c + 1]) << 16)


def test_misaligned_row_address_is_reported(rng):
    src = rng.integers(1, 2**16, (16, 24), dtype=np.uint16)
    rows, cols = _addresses(rng, 4)
    cols[5] = 4  # 8 bytes into a row
    with sim.checks("all"), pytest.raises(sim.MisalignedAccessError,
                                          match=r"ldmatrix: the row address .* byte offset .*not a multiple of 16, at "
                                                r"kernels\.py:\d+ \(kernel\): load\(regs, 0, tile"):
        kernels.ldmatrix_kernels[(4, False)][1, LANES](src, rows, cols, np.zeros((LANES, 4), np.uint32))


def test_a_tile_aligned_only_by_chance_is_reported(rng):
    """Issue 41: row offsets that are multiples of 16 bytes are not enough when the array itself is declared without
    ``alignment=16`` (numba-cuda and translate's C align a uint16 array to 2 bytes): the simulator places it as
    compiled and names the declaration to fix."""
    src = rng.integers(1, 2**16, (16, 16), dtype=np.uint16)
    with pytest.raises(sim.MisalignedAccessError, match=r"ldmatrix: the row address of element \(\d+, [08]\) .* "
                       r"only 2-byte aligned .*cuda\.shared\.array\(\.\.\., alignment=16\)"):
        kernels.ldmatrix_of_an_unaligned_tile[1, LANES](src, np.zeros((LANES, 4), np.uint32))


def test_row_past_the_end_is_out_of_bounds(rng):
    src = rng.integers(1, 2**16, (16, 24), dtype=np.uint16)
    rows, cols = _addresses(rng, 2)
    rows[9] = 16
    with sim.checks("all"), pytest.raises(sim.OutOfBoundsError, match=r"ldmatrix: the 16-byte row at element \(16, "):
        kernels.ldmatrix_kernels[(2, False)][1, LANES](src, rows, cols, np.zeros((LANES, 2), np.uint32))


def test_unused_lanes_addresses_are_not_checked(rng):
    """x1 reads lanes 0-7's addresses only: the others may hold anything (here: out of bounds, misaligned)."""
    src = rng.integers(1, 2**16, (16, 24), dtype=np.uint16)
    rows, cols = _addresses(rng, 1)
    with sim.checks("all"):
        kernels.ldmatrix_kernels[(1, False)][1, LANES](src, rows, cols, np.zeros((LANES, 1), np.uint32))


def _mma_inputs(rng):
    return (rng.integers(1, 2**32, (LANES, 4), dtype=np.uint32), rng.integers(1, 2**32, (LANES, 2), dtype=np.uint32),
            rng.standard_normal((LANES, 4)).astype(np.float32), np.zeros((LANES, 4), np.float32))


def test_mma_skipped_by_half_the_warp_is_a_divergence_error(rng):
    with sim.checks("all"), pytest.raises(sim.BarrierDivergenceError,
                                          match=r"execute mma\.m16n8k16\.bf16 at kernels\.py:\d+ \(mma_half_warp\): "
                                                r"mma_m16n8k16_bf16\(c, 0, a.*threads \(16, 0, 0\).* already exited"):
        kernels.mma_half_warp[1, LANES](*_mma_inputs(rng))


def test_mma_against_a_barrier_says_the_whole_warp_not_a_mask(rng):
    """Issue 41: the message said "for lanes named in its mask", but mma takes no mask."""
    with sim.checks("all"), pytest.raises(sim.BarrierDivergenceError) as caught:
        kernels.mma_or_barrier[1, LANES](*_mma_inputs(rng))
    message = str(caught.value)
    assert "mask" not in message, message
    assert "wait at mma.m16n8k16.bf16 at kernels.py:" in message
    assert "which every lane of the warp must execute together, but threads (16, 0, 0)" in message
    assert "wait at syncthreads() at kernels.py:" in message


def test_mma_at_two_lines_is_a_divergence_error(rng):
    with sim.checks("all"), pytest.raises(sim.BarrierDivergenceError,
                                          match=r"execute mma\.m16n8k16\.bf16 at different lines: lanes 0, 1, .* at "
                                                r"kernels\.py:(\d+).* and lanes 16, 17, .* at kernels\.py:(?!\1)\d+"):
        kernels.mma_two_lines[1, LANES](*_mma_inputs(rng))


def test_divergence_is_an_error_even_with_checks_off(rng):
    """A warp-wide instruction that part of the warp skips has no result to compute: never silently wrong."""
    with sim.checks("none"), pytest.raises(sim.BarrierDivergenceError):
        kernels.mma_half_warp[1, LANES](*_mma_inputs(rng))


def test_partial_warp_cannot_execute_mma(rng):
    a, b, c, d = _mma_inputs(rng)
    with sim.checks("all"), pytest.raises(sim.BarrierDivergenceError, match=r"this warp has only 16 threads"):
        kernels.mma_bf16_registers[1, 16](a[:16], b[:16], c[:16], d[:16])


def test_fragment_register_read_before_written(rng):
    with sim.checks("all"), pytest.raises(
            sim.UninitializedReadError,
            match=r"thread \(0, 0, 0\) of block \(0, 0, 0\) read local array 'b' element \[1\], which this thread has "
                  r"not written, at kernels\.py:\d+ \(mma_b1_unwritten\): mma_m16n8k16_bf16\(c, 0, a, 0, b, 0, c, 0\)"):
        kernels.mma_b1_unwritten[1, LANES](*_mma_inputs(rng))


def test_unwritten_fragment_passes_with_the_uninit_check_off(rng):
    """The same kernel with every other check on runs (the registers hold whatever was there): the error above
    comes from the uninit check alone."""
    with sim.checks("race,bounds,barrier"):
        kernels.mma_b1_unwritten[1, LANES](*_mma_inputs(rng))
