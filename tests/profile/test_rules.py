"""The counting rules against cases worked out by hand from the hardware's definitions (32-byte sectors; 32 banks of
4-byte words; 64-bit accesses by half-warps, 128-bit by quarter-warps two of which may share a wavefront; one
wavefront per distinct word in the busiest bank of a pass)."""

import numpy as np
import pytest

from numbakern.profiler import rules
from numbakern.profiler.rules import Accesses

FULL = range(32)


def lanes(addr, width=4, active=FULL):
    """One instruction: each active lane ``l`` accesses ``width`` bytes at ``addr(l)``."""
    return Accesses.of([(lane, addr(lane), width) for lane in active])


def counts(a):
    return (int(rules.sectors(a)[0]), int(rules.ideal_sectors(a)[0]), int(rules.wavefronts(a)[0]),
            int(rules.ideal_wavefronts(a)[0]))


# -- global memory: sectors per request ----------------------------------------------------------------------------


@pytest.mark.parametrize("name, access, sectors, ideal", [
    ("coalesced float32", lanes(lambda lane: 4 * lane), 4, 4),
    ("coalesced, starting 4 bytes into a sector", lanes(lambda lane: 4 + 4 * lane), 5, 4),
    ("every other float32", lanes(lambda lane: 8 * lane), 8, 4),
    ("one float32 per sector", lanes(lambda lane: 32 * lane), 32, 4),
    ("a column of a 1024-wide float32 matrix", lanes(lambda lane: 4096 * lane), 32, 4),
    ("broadcast: every lane the same word", lanes(lambda lane: 128), 1, 4),
    ("coalesced float64", lanes(lambda lane: 8 * lane, 8), 8, 8),
    ("coalesced float4 (128-bit)", lanes(lambda lane: 16 * lane, 16), 16, 16),
    ("float4 one per 64 bytes", lanes(lambda lane: 64 * lane, 16), 32, 16),
    ("half a warp active, coalesced", lanes(lambda lane: 4 * lane, active=range(16)), 2, 2),
    ("bytes: 32 lanes in one sector", lanes(lambda lane: lane, 1), 1, 1),
    ("two rows of 16 floats 1 KiB apart (a 16x16 block's warp)",
     lanes(lambda lane: 1024 * (lane // 16) + 4 * (lane % 16)), 4, 4),
])
def test_global_sectors_per_request(name, access, sectors, ideal):
    assert int(rules.sectors(access)[0]) == sectors, name
    assert int(rules.ideal_sectors(access)[0]) == ideal, name


def test_a_lane_that_moves_nothing_takes_part_but_touches_no_sector():
    # a cp.async with a source size of 0 (the zero-filling edge of a tile)
    a = Accesses.of([(0, 0, 16), (1, 16, 16), (2, 999, 0)])
    assert int(rules.sectors(a)[0]) == 1
    assert int(rules.ideal_sectors(a)[0]) == 1


# -- shared memory: wavefronts and bank conflicts ------------------------------------------------------------------

WORD = 4


@pytest.mark.parametrize("name, access, wavefronts, ideal", [
    ("consecutive words", lanes(lambda lane: WORD * lane), 1, 1),
    ("two words apart: 2 lanes per bank", lanes(lambda lane: 2 * WORD * lane), 2, 1),
    ("four words apart", lanes(lambda lane: 4 * WORD * lane), 4, 1),
    ("32 words apart: every lane in bank 0", lanes(lambda lane: 32 * WORD * lane), 32, 1),
    ("33 words apart: every bank once", lanes(lambda lane: 33 * WORD * lane), 1, 1),
    ("broadcast: one word", lanes(lambda lane: 7 * WORD), 1, 1),
    ("two words, each read by 16 lanes, in one bank", lanes(lambda lane: 32 * WORD * (lane % 2)), 2, 1),
    ("float64 consecutive: two half-warp passes", lanes(lambda lane: 8 * lane, 8), 2, 2),
    ("float64 16 apart: each half-warp in two banks", lanes(lambda lane: 128 * lane, 8), 32, 2),
    # 16-byte accesses by quarter-warps, two of a half-warp sharing a wavefront where they can (rules.py; the GPU's
    # own counts of these and more: test_shared_patterns.py)
    ("float4 consecutive: quarters share banks pairwise", lanes(lambda lane: 16 * lane, 16), 4, 4),
    ("float4 32 bytes apart: two words per bank in each quarter", lanes(lambda lane: 32 * lane, 16), 8, 4),
    ("float4 128 bytes apart: a quarter's 8 lanes in banks 0-3", lanes(lambda lane: 128 * lane, 16), 32, 4),
    ("float4 broadcast: one address for the warp", lanes(lambda lane: 48, 16), 2, 2),
    ("float4 one address per quarter-warp", lanes(lambda lane: 16 * (lane // 8), 16), 2, 2),
    ("float4 one address per 2 lanes: 128 bytes per half-warp", lanes(lambda lane: 16 * (lane // 2), 16), 2, 2),
    ("float4 per quarter-warp, 128 bytes apart: one bank group", lanes(lambda lane: 128 * (lane // 8), 16), 4, 2),
    ("float4 the same 8 addresses in every quarter", lanes(lambda lane: 16 * (lane % 8), 16), 4, 4),
    ("only lane 5", lanes(lambda lane: 20, active=[5]), 1, 1),
])
def test_shared_wavefronts(name, access, wavefronts, ideal):
    assert int(rules.wavefronts(access)[0]) == wavefronts, name
    assert int(rules.ideal_wavefronts(access)[0]) == ideal, name
    assert int(rules.bank_conflicts(access)[0]) == wavefronts - ideal, name


def _tile(pad, element=4, tile=32):
    """Byte address of ``tile[r, c]`` in a row-major tile of ``tile`` x ``tile + pad`` elements."""
    return lambda r, c: element * (r * (tile + pad) + c)


# The transpose's two shared accesses, by one warp (32 x 8 blocks: a warp is one row of threads, tx = lane):
# ``tile[ty, tx] = src[...]`` walks a row, ``... = tile[tx, ty]`` walks a column.
@pytest.mark.parametrize("pad, element, row, column", [
    (0, 4, 1, 32),  # float32, 32 x 32: the column is 32 words apart, all in one bank
    (1, 4, 1, 1),  # float32, 32 x 33: 33 words apart, every bank once
    (2, 4, 1, 2),  # float32, 32 x 34: 34 words apart = 2 (mod 32): 16 banks, two words each
    (4, 4, 1, 4),  # float32, 32 x 36: 36 = 4 (mod 32): 8 banks, four words each
    (0, 8, 2, 32),  # float64, 32 x 32: each half-warp's 16 lanes are 64 words apart: 2 banks, 16 words each
    (1, 8, 2, 2),  # float64, 32 x 33: 66 words apart, 2 words per lane: each half-warp covers the 32 banks once
])
def test_every_bank_pattern_of_a_transpose_tile(pad, element, row, column):
    at = _tile(pad, element)
    ty = 3
    write = lanes(lambda lane: at(ty, lane), element)
    read = lanes(lambda lane: at(lane, ty), element)
    assert int(rules.wavefronts(write)[0]) == row
    assert int(rules.wavefronts(read)[0]) == column
    ideal = 32 * element // 128
    assert int(rules.bank_conflicts(read)[0]) == column - ideal


@pytest.mark.parametrize("pitch, wavefronts", [
    (16, 1),  # eight 16-byte rows packed together: 128 bytes, every bank once
    (64, 4),  # rows 64 bytes (16 words) apart: rows 0, 2, 4, 6 share banks 0-3
    (80, 1),  # padded by 16 bytes: rows 20 words apart fall on eight different 4-bank groups
    (128, 8),  # a 64-element bf16 row: all eight rows in banks 0-3
])
def test_ldmatrix_rows(pitch, wavefronts):
    # one ldmatrix matrix: lanes 0-7 give the addresses of its eight 16-byte rows
    a = lanes(lambda lane: pitch * lane, 16, active=range(8))
    assert int(rules.wavefronts(a)[0]) == wavefronts
    assert int(rules.ideal_wavefronts(a)[0]) == 1


def test_ldmatrix_x4_is_four_matrices():
    # x4: lanes 8m..8m+7 address matrix m's rows, each matrix 128 bytes further
    a = lanes(lambda lane: 16 * lane, 16)
    assert counts(a)[2:] == (4, 4)


# -- atomics, strides, many instructions at once -------------------------------------------------------------------


@pytest.mark.parametrize("addr, contention", [
    (lambda lane: 0, 32),
    (lambda lane: 4 * lane, 1),
    (lambda lane: 4 * (lane % 2), 16),
    (lambda lane: 4 * (lane // 8), 8),
])
def test_atomic_contention(addr, contention):
    assert int(rules.contention(lanes(addr))[0]) == contention


def test_lane_strides():
    _, stride = rules.lane_strides(lanes(lambda lane: 4096 * lane))
    assert set(stride.tolist()) == {4096}
    _, stride = rules.lane_strides(lanes(lambda lane: 4 * lane, active=range(0, 32, 2)))
    assert set(stride.tolist()) == {4}  # per lane: two lanes apart, eight bytes apart
    _, stride = rules.lane_strides(lanes(lambda lane: 0))
    assert set(stride.tolist()) == {0}


def test_instructions_are_counted_apart(rng):
    # random instructions, counted together and one by one: the same counts
    singles = []
    for _ in range(20):
        active = sorted(rng.choice(32, size=rng.integers(1, 33), replace=False).tolist())
        width = int(rng.choice([1, 2, 4, 8, 16]))
        base = int(rng.integers(0, 4096)) * width
        step = int(rng.choice([0, 1, 2, 3, 32, 33])) * width
        singles.append([(lane, base + step * lane, width) for lane in active])
    rows = [(g, lane, addr, n) for g, single in enumerate(singles) for lane, addr, n in single]
    group, lane, addr, nbytes = (np.array(c, np.int64) for c in zip(*rows))
    together = Accesses(group, lane, addr, nbytes, len(singles))
    for name in ("sectors", "ideal_sectors", "wavefronts", "ideal_wavefronts", "contention"):
        f = getattr(rules, name)
        assert f(together).tolist() == [int(f(Accesses.of(s))[0]) for s in singles], name


def test_sectors_agree_with_a_direct_count(rng):
    # an independent reference: the set of sectors of every byte
    for _ in range(50):
        width = int(rng.choice([1, 2, 4, 8, 16]))
        addrs = [int(a) * width for a in rng.integers(0, 64, size=32)]
        single = [(lane, a, width) for lane, a in enumerate(addrs)]
        expected = len({(a + b) // 32 for a in addrs for b in range(width)})
        assert int(rules.sectors(Accesses.of(single))[0]) == expected


def test_wavefronts_agree_with_a_direct_count(rng):
    # an independent reference, pass by pass and bank by bank
    for _ in range(50):
        width = int(rng.choice([4, 8]))  # 16 bytes: the GPU's own counts, test_shared_patterns.py
        addrs = [int(a) * width for a in rng.integers(0, 256, size=32)]
        per_pass = 32 if width == 4 else 16
        expected = ideal = 0
        for p in range(32 // per_pass):
            words = {(a + b) // 4 for a in addrs[p * per_pass:(p + 1) * per_pass] for b in range(0, width, 4)}
            expected += max(sum(1 for w in words if w % 32 == bank) for bank in range(32))
            ideal += (len(words) + 31) // 32
        single = Accesses.of([(lane, a, width) for lane, a in enumerate(addrs)])
        assert int(rules.wavefronts(single)[0]) == expected
        assert int(rules.ideal_wavefronts(single)[0]) == ideal
