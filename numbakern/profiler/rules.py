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
warp for accesses of up to 4 bytes, each half-warp for 8 bytes, each quarter-warp for 16 bytes (``ldmatrix``'s
eight row addresses per matrix are a quarter-warp of 16-byte accesses). A pass takes as many *wavefronts* as the
most distinct words any one bank holds among its lanes' words: lanes reading one word share it (a broadcast), two
different words in one bank take two wavefronts. The ideal is one wavefront per pass with an active lane; the bank
conflicts are the wavefronts beyond it.

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


@dataclass(frozen=True)
class Accesses:
    """Lane accesses of ``count`` instructions: row i is lane ``lane[i]`` of instruction ``group[i]`` accessing
    ``nbytes[i]`` bytes at ``addr[i]`` (0 bytes: the lane takes part and moves nothing, a ``cp.async`` that
    zero-fills)."""

    group: np.ndarray
    lane: np.ndarray
    addr: np.ndarray
    nbytes: np.ndarray
    count: int

    @classmethod
    def of(cls, lanes: Sequence[tuple[int, int, int]]) -> Accesses:
        """One instruction from ``(lane, address, bytes)`` per active lane."""
        lane, addr, nbytes = (np.array(c, dtype=np.int64) for c in zip(*lanes)) if lanes else (
            np.zeros(0, np.int64),) * 3
        return cls(np.zeros(len(lane), np.int64), lane, addr, nbytes, 1)


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
    return np.where(access_width <= 4, WARP, np.where(access_width <= 8, WARP // 2, WARP // 4))


def _passes(a: Accesses) -> np.ndarray:
    """Each row's pass within its instruction (0 for the whole warp; 0-1 by half-warp; 0-3 by quarter-warp)."""
    return a.lane // lanes_per_pass(width(a))[a.group]


def wavefronts(a: Accesses) -> np.ndarray:
    """Shared-memory wavefronts of each instruction (the sum over its passes)."""
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


def ideal_wavefronts(a: Accesses) -> np.ndarray:
    """One wavefront per pass with an active lane."""
    group, _ = _count_unique([a.group, _passes(a)])
    return np.bincount(group, minlength=a.count)


def bank_conflicts(a: Accesses) -> np.ndarray:
    """Wavefronts beyond the ideal."""
    return wavefronts(a) - ideal_wavefronts(a)


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
