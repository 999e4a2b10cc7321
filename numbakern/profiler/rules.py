"""How the hardware counts a warp-level memory instruction, in the terms of Nsight Compute's metrics.

The functions take many instructions at once (``Accesses``: one row per active lane of each instruction, numbered
``group``) and return one count per instruction. ``Accesses.of([(lane, address, bytes), ...])`` makes a single
instruction. Addresses are byte addresses; only their differences and their alignment to 32 bytes (sectors) and
4 bytes (banks) matter.

Global memory (``l1tex__t_requests_pipe_lsu_mem_global_op_{ld,st}``, ``l1tex__t_sectors_...``): one warp-level
instruction is one *request*; it touches every 32-byte *sector* that holds a byte an active lane asked for, each
sector once however many lanes read it. The *ideal* for the access width is the sectors the lanes' bytes would
fill if they were contiguous and aligned: 32 lanes of 4 bytes need 4 sectors, of 8 bytes 8, of 16 bytes 16.

Shared memory (``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{ld,st}``, ``l1tex__data_bank_conflicts_...``):
32 banks of 4-byte words; a word's bank is ``(address / 4) mod 32``. The lanes are served in *passes*: the whole
warp for accesses of up to 4 bytes, each half-warp for 8 bytes. A pass takes as many *wavefronts* as the most
distinct words any one bank holds among its lanes' words: lanes reading one word share it (a broadcast), two
different words in one bank take two wavefronts. The ideal is the fewest wavefronts that can carry a pass's
distinct words, 32 per wavefront (at least one per pass with an active lane); the bank conflicts are the
wavefronts beyond it.

16-byte accesses (``LDS.128``, and ``ldmatrix``'s row addresses) are served by quarter-warps, two of which (lanes
0-15, 16-31) can share a wavefront: a quarter takes as many wavefronts as the most distinct words in one bank among
its own lanes' words, and the two quarters of a half-warp take one wavefront together only when each alone takes one,
no bank holds two different words of theirs, and no 16-byte address is read by both, except that two quarters each
reading a single address (broadcasts) share one. Otherwise the half-warp takes the sum of its quarters'. The ideal
of a half-warp is its quarters' distinct bytes over 128, at least one. This is what an H200 counts
(``smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld``, ncu 2025.3.1, one ``LDS.128`` per warp) for each of
47 lane patterns: 17 made up to tell rules apart and the 30 distinct patterns of the 16-byte shared loads of
matmul_pipelined(_at), attention_d64, conv2d_nchw and matmul_flagship_vec (docs/profiling.md, "16-byte accesses");
per request: all lanes on one address 2; one address per quarter-warp 2 (128 bytes apart, so in the same banks: 4);
32 consecutive addresses 4, 32 bytes apart 8, 128 bytes apart 32; the same 8 consecutive addresses in each
quarter-warp 4. The rule is not measured for 16-byte stores and for partly overlapping quarters.

``cp.async`` (``LDGSTS``) writes shared memory one global 128-byte line of its sources at a time: its wavefronts are
the sum, over the lines its lanes copy from, of those lanes' wavefronts by the rules above (16-byte copies: at least
one for each 128-byte row of shared memory they write); its ideal is the same bytes' as a store. On an H200 (ncu
2025.3.1, tests/profile/shared_copy_store_patterns.json) this gives the GPU's count for each of 65 copy patterns and
166 patterns of 4-byte stores (the plain rule), made up and taken from six library kernels: 32 lanes writing 32
consecutive words take 1, 4 or 32 wavefronts as their sources lie in 1, 4 or 32 lines. Inside a kernel the GPU at
times serves two lines' halves of one shared row in one wavefront (docs/profiling.md): the count is then an upper
bound.

Atomics: each active lane is one operation; lanes of a warp that update the same address are serialised, so the
instruction takes as many steps as the most lanes on one address (its *contention*).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

WARP = 32
SECTOR = 32  # bytes
BANKS = 32
BANK_WIDTH = 4  # bytes
LINE = 128  # bytes: a global cache line; a row of the 32 banks


@dataclass(frozen=True)
class Accesses:
    """Lane accesses of ``count`` instructions: row i is lane ``lane[i]`` of instruction ``group[i]`` accessing
    ``nbytes[i]`` bytes at ``addr[i]`` (0 bytes: the lane takes part and moves nothing, a ``cp.async`` that
    zero-fills). ``source``, for the shared side of a ``cp.async``: the global address each row copies from (-1 for
    rows of other instructions; None: no row has one)."""

    group: np.ndarray
    lane: np.ndarray
    addr: np.ndarray
    nbytes: np.ndarray
    count: int
    source: np.ndarray | None = None

    @classmethod
    def of(cls, lanes: Sequence[tuple[int, int, int]], sources: Sequence[int] | None = None) -> Accesses:
        """One instruction from ``(lane, address, bytes)`` per active lane (and, for a ``cp.async``'s shared side,
        each lane's global source address)."""
        lane, addr, nbytes = (np.array(c, dtype=np.int64) for c in zip(*lanes)) if lanes else (
            np.zeros(0, np.int64),) * 3
        source = None if sources is None else np.array(sources, dtype=np.int64)
        return cls(np.zeros(len(lane), np.int64), lane, addr, nbytes, 1, source)


def _per_group_max(a: Accesses, values: np.ndarray) -> np.ndarray:
    out = np.zeros(a.count, np.int64)
    np.maximum.at(out, a.group, values)
    return out


def width(a: Accesses) -> np.ndarray:
    """Each instruction's access width in bytes: its widest lane's."""
    return _per_group_max(a, a.nbytes)


def _spans(a: Accesses, unit: int, moving: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(row, unit number)`` for every ``unit``-byte unit (sector, word) a moving row's bytes fall in."""
    rows = np.flatnonzero(moving)
    first = a.addr[rows] // unit
    last = (a.addr[rows] + a.nbytes[rows] - 1) // unit
    span = last - first + 1
    row = np.repeat(rows, span)
    offset = np.arange(len(row)) - np.repeat(np.cumsum(span) - span, span)
    return row, np.repeat(first, span) + offset


def _sorted(*keys: np.ndarray) -> tuple[np.ndarray, ...]:
    """The columns ``keys`` sorted together, by the first, then the second..."""
    order = np.lexsort(keys[::-1])
    return tuple(k[order] for k in keys)


def _new_rows(cols) -> np.ndarray:
    """For sorted columns: True where a row differs from the one before (the first row included)."""
    new = np.ones(len(cols[0]), bool)
    if len(new) > 1:
        new[1:] = np.any([c[1:] != c[:-1] for c in cols], axis=0)
    return new


def _count_unique(keys: list[np.ndarray]) -> tuple[np.ndarray, ...]:
    """The distinct rows of the columns ``keys`` (sorted), as columns."""
    cols = _sorted(*keys)
    new = _new_rows(cols)
    return tuple(c[new] for c in cols)


def sector_rows(a: Accesses) -> tuple[np.ndarray, np.ndarray]:
    """``(row, sector)`` for each 32-byte sector each row's bytes fall in (sector = address // 32)."""
    return _spans(a, SECTOR, a.nbytes > 0)


def sectors(a: Accesses) -> np.ndarray:
    """32-byte sectors each request touches (each once)."""
    row, sector = sector_rows(a)
    groups, _ = _count_unique([a.group[row], sector])
    return np.bincount(groups, minlength=a.count)


def ideal_sectors(a: Accesses) -> np.ndarray:
    """Sectors the active lanes' bytes would fill, contiguous and aligned: ``ceil(lanes x width / 32)``."""
    lanes = np.bincount(a.group[a.nbytes > 0], minlength=a.count)
    return -(-lanes * width(a) // SECTOR)


def lanes_per_pass(access_width: np.ndarray) -> np.ndarray:
    """How many lanes the shared-memory unit serves in one pass, for accesses of ``access_width`` bytes."""
    return np.where(access_width <= 4, WARP, WARP // 2)


def _passes(a: Accesses) -> np.ndarray:
    """Each row's pass within its instruction (0 for the whole warp; 0-1 by half-warp)."""
    return a.lane // lanes_per_pass(width(a))[a.group]


def wavefronts(a: Accesses) -> np.ndarray:
    """Shared-memory wavefronts of each instruction (the sum over its passes)."""
    return shared_wavefronts(a)[0]


def ideal_wavefronts(a: Accesses) -> np.ndarray:
    """The fewest wavefronts that carry each pass's distinct words (a bank's width each): at least one per pass with
    an active lane (16-byte accesses: a half-warp's quarters' distinct bytes over 128, at least one)."""
    return shared_wavefronts(a)[1]


def shared_wavefronts(a: Accesses) -> tuple[np.ndarray, np.ndarray]:
    """``(wavefronts, ideal_wavefronts)`` of each instruction, the 16-byte ones' worked out once for both. A
    ``cp.async`` (rows with a ``source``) writes shared memory one global 128-byte line of its sources at a time."""
    out, ideal = _bank_wavefronts(a)
    if a.source is not None and np.any(a.source >= 0):
        copies = np.unique(a.group[a.source >= 0])
        rows = np.isin(a.group, copies)  # only the copies' rows are split by source line
        out[copies] = _copy_wavefronts(Accesses(a.group[rows], a.lane[rows], a.addr[rows], a.nbytes[rows], a.count,
                                                a.source[rows]))[copies]
    return out, ideal


def _bank_wavefronts(a: Accesses) -> tuple[np.ndarray, np.ndarray]:
    out, ideal = _narrow_wavefronts(a), _narrow_ideal(a)
    for g, (wide, wide_ideal) in _wide_groups(a):
        out[g], ideal[g] = wide, wide_ideal
    return out, ideal


def _copy_wavefronts(a: Accesses) -> np.ndarray:
    """Each instruction's wavefronts as the sum over the global lines its rows copy from of those rows' wavefronts
    (16-byte copies: at least one per 128-byte row of shared memory they write)."""
    line = np.where(a.source >= 0, a.source // LINE, -1)
    _, part = np.unique(np.stack([a.group, line]), axis=1, return_inverse=True)
    part = part.reshape(-1)
    parts = int(part.max()) + 1 if len(part) else 0
    split = Accesses(part, a.lane, a.addr, a.nbytes, parts)
    per_part = _bank_wavefronts(split)[0]
    wide = width(split) > 8
    if np.any(wide):
        moving = split.nbytes > 0
        part_of_row, _ = _count_unique([part[moving], split.addr[moving] // LINE])
        per_part = np.where(wide, np.maximum(per_part, np.bincount(part_of_row, minlength=parts)), per_part)
    group_of_part = np.zeros(parts, np.int64)
    group_of_part[part] = a.group
    return np.bincount(group_of_part, weights=per_part, minlength=a.count).astype(np.int64)


def _narrow_ideal(a: Accesses) -> np.ndarray:
    row, word = _spans(a, BANK_WIDTH, a.nbytes > 0)
    group, pass_, _ = _count_unique([a.group[row], _passes(a)[row], word])
    passes = np.zeros(a.count, np.int64)
    if len(group):
        group, pass_ = _sorted(group, pass_)
        starts = np.flatnonzero(_new_rows([group, pass_]))
        words = np.diff(np.append(starts, len(group)))
        np.add.at(passes, group[starts], -(-words // BANKS))
    # a pass whose active lanes move no bytes (a zero-sized cp.async) still takes one
    active, _ = _count_unique([a.group, _passes(a)])
    return np.maximum(passes, np.bincount(active, minlength=a.count))


def _narrow_wavefronts(a: Accesses) -> np.ndarray:
    row, word = _spans(a, BANK_WIDTH, a.nbytes > 0)
    group, pass_, word = _count_unique([a.group[row], _passes(a)[row], word])
    if not len(group):
        return np.zeros(a.count, np.int64)
    # distinct words per (instruction, pass, bank), then the worst bank of each pass
    group, pass_, bank = _sorted(group, pass_, word % BANKS)
    starts = np.flatnonzero(_new_rows([group, pass_, bank]))
    words = np.diff(np.append(starts, len(group)))
    group, pass_ = group[starts], pass_[starts]
    first = np.flatnonzero(_new_rows([group, pass_]))
    worst = np.maximum.reduceat(words, first)
    return np.bincount(group[first], weights=worst, minlength=a.count).astype(np.int64)


def _wide_groups(a: Accesses):
    """``(instruction, (wavefronts, ideal))`` for each instruction of 16-byte accesses (the quarter-warp rule)."""
    wide = np.flatnonzero(width(a) > 8)
    if not len(wide):
        return
    order = np.argsort(a.group, kind="stable")
    bounds = np.searchsorted(a.group[order], [wide, wide + 1])
    for g, lo, hi in zip(wide.tolist(), bounds[0].tolist(), bounds[1].tolist()):
        rows = order[lo:hi]
        yield g, _wide_instruction(a.lane[rows], a.addr[rows], a.nbytes[rows])


def _wide_instruction(lane: np.ndarray, addr: np.ndarray, nbytes: np.ndarray) -> tuple[int, int]:
    quarters = [_quarter(addr[(lane // 8 == q) & (nbytes > 0)], nbytes[(lane // 8 == q) & (nbytes > 0)],
                         bool(np.any(lane // 8 == q))) for q in range(4)]
    total = ideal = 0
    for first, second in (quarters[0:2], quarters[2:4]):
        if not (first.active or second.active):
            continue
        ideal += max(1, -(-(first.bytes + second.bytes) // 128))
        if not (first.active and second.active):
            total += max(first.wavefronts, second.wavefronts, 1)
            continue
        words = first.words | second.words
        clash = max(_worst_bank(words), 1) > 1
        shared = first.addresses & second.addresses
        broadcasts = len(first.addresses) == 1 and first.addresses == second.addresses
        together = first.wavefronts <= 1 and second.wavefronts <= 1 and not clash and (not shared or broadcasts)
        total += 1 if together else max(first.wavefronts, 1) + max(second.wavefronts, 1)
    return total, ideal


@dataclass(frozen=True)
class _Quarter:
    active: bool
    addresses: frozenset
    words: frozenset
    bytes: int
    wavefronts: int


def _quarter(addr: np.ndarray, nbytes: np.ndarray, active: bool) -> _Quarter:
    words = frozenset((x + b) // BANK_WIDTH for x, n in zip(addr.tolist(), nbytes.tolist())
                      for b in range(0, n, BANK_WIDTH))
    return _Quarter(active, frozenset(addr.tolist()), words, BANK_WIDTH * len(words), _worst_bank(words))


def _worst_bank(words) -> int:
    """The most distinct words in one bank (0 for none)."""
    counts = np.bincount(np.fromiter((w % BANKS for w in words), np.int64, len(words)), minlength=1)
    return int(counts.max())


def bank_conflicts(a: Accesses) -> np.ndarray:
    """Wavefronts beyond the ideal."""
    found, ideal = shared_wavefronts(a)
    return found - ideal


def contention(a: Accesses) -> np.ndarray:
    """Each atomic instruction's serialisation: the most active lanes on one address."""
    out = np.zeros(a.count, np.int64)
    if not len(a.group):
        return out
    group, addr = _sorted(a.group, a.addr)
    starts = np.flatnonzero(_new_rows([group, addr]))
    np.maximum.at(out, group[starts], np.diff(np.append(starts, len(group))))
    return out


def lane_strides(a: Accesses) -> tuple[np.ndarray, np.ndarray]:
    """``(instruction, stride)`` for each pair of neighbouring active lanes: the address step per lane from one to the
    next (4 for a coalesced float32 access, 0 for a broadcast, a row's pitch for a warp walking down a column);
    pairs whose step is not a whole number of bytes per lane are left out."""
    group, lane, addr = _sorted(a.group, a.lane, a.addr)
    same = (group[1:] == group[:-1]) & (lane[1:] != lane[:-1])
    dl, da = (lane[1:] - lane[:-1])[same], (addr[1:] - addr[:-1])[same]
    whole = da % dl == 0
    return group[1:][same][whole], da[whole] // dl[whole]
