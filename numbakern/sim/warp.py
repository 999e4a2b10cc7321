"""What warp intrinsics return, once every participating lane has arrived (the scheduler decides when).

Each function gets the participating lanes (``SimThread``s with ``lane`` and the ``value`` they passed) and
returns one result per lane, in the same order, in numba-cuda's types (canonical, see ``numerics``): ballots and
match masks are int32 (lane 31 is the sign bit), ``activemask`` and ``lanemask_lt`` uint32, votes bool.
"""

from __future__ import annotations

WARP_SIZE = 32
FULL_MASK = 0xFFFFFFFF


def shuffle(kind: str, lanes, operands) -> list:
    """shfl_sync / shfl_up_sync / shfl_down_sync / shfl_xor_sync.

    ``operands`` are (value, lane-argument) per lane. A lane whose source lane is outside the warp or not taking
    part gets its own value back (what the hardware does for shfl_up/down off the edge; undefined for the rest).
    """
    value_of = {t.lane: op[0] for t, op in zip(lanes, operands)}
    results = []
    for t, (value, arg) in zip(lanes, operands):
        src = source_lane(kind, t.lane, arg)
        results.append(value_of.get(src, value) if 0 <= src < WARP_SIZE else value)
    return results


def source_lane(kind: str, lane: int, arg: int) -> int:
    """The lane whose value ``lane`` reads in a shuffle of ``kind`` (idx, up, down, xor); outside 0..31 past the
    warp's edge."""
    if kind == "idx":
        return arg % WARP_SIZE
    if kind == "up":
        return lane - arg
    if kind == "down":
        return lane + arg
    return lane ^ arg  # xor


def _int32(bits: int) -> int:
    # numba-cuda types ballot_sync and match_*_sync as int32: lane 31's bit is the sign bit
    return bits - (1 << 32) if bits & 0x80000000 else bits


def ballot(lanes, predicates) -> list:
    bits = 0
    for t, p in zip(lanes, predicates):
        if p:
            bits |= 1 << t.lane
    return [_int32(bits)] * len(lanes)


def vote_all(lanes, predicates) -> list:
    result = all(predicates)
    return [result] * len(lanes)


def vote_any(lanes, predicates) -> list:
    result = any(predicates)
    return [result] * len(lanes)


def vote_eq(lanes, predicates) -> list:
    result = all(predicates) or not any(predicates)
    return [result] * len(lanes)


def match_any(lanes, values) -> list:
    by_value: dict = {}
    for t, v in zip(lanes, values):
        by_value[v] = by_value.get(v, 0) | (1 << t.lane)
    return [_int32(by_value[v]) for v in values]


def match_all(lanes, values) -> list:
    bits = sum(1 << t.lane for t in lanes)
    same = all(v == values[0] for v in values)
    return [(_int32(bits), True) if same else (0, False)] * len(lanes)


def mask_bits(lanes) -> int:
    return sum(1 << t.lane for t in lanes)


COLLECTIVES = {
    "shfl_idx": lambda lanes, ops: shuffle("idx", lanes, ops),
    "shfl_up": lambda lanes, ops: shuffle("up", lanes, ops),
    "shfl_down": lambda lanes, ops: shuffle("down", lanes, ops),
    "shfl_xor": lambda lanes, ops: shuffle("xor", lanes, ops),
    "ballot": ballot,
    "all": vote_all,
    "any": vote_any,
    "eq": vote_eq,
    "match_any": match_any,
    "match_all": match_all,
    "syncwarp": lambda lanes, ops: [None] * len(lanes),
    "activemask": lambda lanes, ops: [mask_bits(lanes)] * len(lanes),
}


#: the kinds of warp instruction that are ``.sync.aligned``: the whole warp, converged, at one instruction (the
#: tensor-core instructions, ``numbakern.sim.tensorcore``)
WHOLE_WARP_PREFIXES = ("mma.", "ldmatrix.")


def whole_warp_collective(kind: str):
    """The completion function of a tensor-core kind (imported when first needed: most kernels have none)."""
    from .tensorcore import COLLECTIVES as TENSOR_CORE

    return TENSOR_CORE[kind]
