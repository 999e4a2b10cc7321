"""What to fix first: the profile's costliest departures from the ideal, each at a line and in words.

Every candidate is priced in time on the chosen GPU, at the peak rate of the resource it wastes (the roofline's):
sectors beyond the ideal at the L1's four sectors per clock per multiprocessor, wavefronts beyond one per pass at
one per clock, idle lanes as the warp instructions' issue slots (four per clock per multiprocessor), lanes of an
atomic serialised on one address at one per clock. Low occupancy has no such price; it is weighed as the share of
the launch's bound that the missing warps leave unhidden. The estimates rank the advice; they are not a
prediction of the speed-up. What would save less than a fiftieth of the launch's bound is left out.
"""

from __future__ import annotations

import math

from .model import Advice, Line, Profile
from .roofline import GPU

WARP = 32
_WHAT = {"ld": "load", "st": "store", "atom": "atomic", "ldgsts": "cp.async"}


def advise(profile: Profile, spec: GPU, count: int = 3) -> list[Advice]:
    """The ``count`` costliest things to fix, costliest first."""
    found: list[Advice] = []
    for row in profile.lines:
        found += _memory_advice(row, spec)
        divergence = _divergence_advice(row, profile, spec)
        if divergence is not None:
            found.append(divergence)
    occupancy = _occupancy_advice(profile)
    if occupancy is not None:
        found.append(occupancy)
    # what costs less than a fiftieth of the launch's bound is not worth a line of advice
    floor = profile.roofline.bound_seconds / 50 if profile.roofline is not None else 0.0
    found = [a for a in found if a.seconds > floor]
    found.sort(key=lambda a: -a.seconds)
    return found[:count]


def _memory_advice(row: Line, spec: GPU) -> list[Advice]:
    out = []
    for kind, m in row.memory.items():
        space, op = kind.split("_")
        what = _WHAT[op] if space == "global" or op != "ldgsts" else "cp.async's shared store"
        if m.requests and space == "global" and m.sectors > 1.05 * m.ideal_sectors:
            excess = m.sectors - m.ideal_sectors
            message = (f"the global {what} at line {row.line} uses {m.sectors_per_request:.1f} sectors per request "
                       f"where {m.ideal_sectors_per_request:.0f} would do: {_coalescing_reason(m.stride, m.width)}")
            out.append(Advice(row.file, row.line, "coalescing", message, excess / spec.l1_sectors_per_s))
        if m.requests and space == "shared" and m.wavefronts > 1.05 * m.ideal_wavefronts:
            excess = m.wavefronts - m.ideal_wavefronts
            message = (f"the shared-memory {what} at line {row.line} takes {m.wavefronts / m.requests:.1f} "
                       f"wavefronts per request where {m.ideal_wavefronts / m.requests:.0f} would do: "
                       f"{_conflict_reason(m.stride, m.width)}")
            out.append(Advice(row.file, row.line, "bank conflicts", message, excess / spec.shared_wavefronts_per_s))
        if m.requests and op == "atom" and m.max_contention > 1:
            extra = m.serialized - m.requests
            message = (f"the {space} atomic at line {row.line} has up to {m.max_contention} lanes of a warp on one "
                       f"address ({m.serialized / m.requests:.1f} per request on average), which the hardware "
                       "serialises: combine the warp's values first (a shuffle reduction) and let one lane update")
            out.append(Advice(row.file, row.line, "atomics", message, extra / (spec.sms * spec.clock_hz)))
    return out


def _coalescing_reason(stride: int | None, width: int) -> str:
    if stride is None:
        return "each warp's lanes touch scattered sectors"
    if abs(stride) > width:
        return (f"consecutive threads access addresses {abs(stride)} bytes apart, so each {width}-byte access needs "
                f"a sector of its own; let threadIdx.x run along the array's last (contiguous) dimension, or stage "
                f"the data through shared memory")
    if stride == 0:
        return "the lanes' addresses repeat but the warp's requests straddle sectors"
    return ("the warp's accesses are contiguous but do not start at a 32-byte boundary, so each request touches one "
            "more sector")


def _conflict_reason(stride: int | None, width: int) -> str:
    if stride is None or stride == 0:
        return "lanes read different words of the same banks"
    words = abs(stride) // 4 if abs(stride) >= 4 else 1
    ways = math.gcd(words, WARP)
    if abs(stride) >= 4 and words % WARP == 0:
        return (f"neighbouring lanes are {abs(stride)} bytes apart, a multiple of 128 bytes, so every lane falls in "
                "the same bank; pad each row by one element (a 32 x 33 tile for 32 x 32)")
    if ways > 1:
        return (f"neighbouring lanes are {abs(stride)} bytes ({words} words) apart, so only {WARP // ways} of the 32 "
                f"banks are used, {ways} lanes on each; make the row pitch an odd number of words")
    return f"lanes {abs(stride)} bytes apart fall in the same banks with different words"


def _divergence_advice(row: Line, profile: Profile, spec: GPU) -> Advice | None:
    lanes_per_warp = min(WARP, profile.block[0] * profile.block[1] * profile.block[2])
    if not row.executions or row.active_lanes >= 0.95 * lanes_per_warp:
        return None
    idle = row.executions * (lanes_per_warp - row.active_lanes) / WARP
    branch = _branch_above(row, profile)
    why = ""
    if branch is not None:
        share = branch.branch.divergent / branch.branch.executions
        why = (f"; the branch at line {branch.line} splits the lanes of a warp in {100 * share:.0f}% of its runs: "
               "arrange the work so that whole warps take the same side (test a warp-uniform value)")
    message = (f"line {row.line} runs with {row.active_lanes:.1f} of {lanes_per_warp} lanes active per warp "
               f"instruction on average{why}")
    return Advice(row.file, row.line, "divergence", message, idle / (4 * spec.sms * spec.clock_hz))


def _branch_above(row: Line, profile: Profile) -> Line | None:
    """The nearest divergent branch at or above ``row`` in its file."""
    best = None
    for other in profile.lines:
        if other.file == row.file and other.line <= row.line and other.branch and other.branch.divergent:
            if best is None or other.line > best.line:
                best = other
    return best


def _occupancy_advice(profile: Profile) -> Advice | None:
    occ = profile.occupancy
    if occ is None or occ.fraction >= 0.5 or occ.limiter not in ("registers", "shared memory") or not profile.lines:
        return None
    what = (f"{occ.registers} registers per thread" if occ.limiter == "registers"
            else f"{occ.static_shared + occ.dynamic_shared} bytes of shared memory per block")
    first = min(profile.lines, key=lambda r: r.line)
    message = (f"theoretical occupancy is {100 * occ.fraction:.0f}% ({occ.warps_per_sm} of {occ.max_warps_per_sm} "
               f"warps per multiprocessor), limited by {occ.limiter}: {what}")
    bound = profile.roofline.bound_seconds if profile.roofline is not None else 0.0
    return Advice(first.file, first.line, "occupancy", message, bound * (0.5 - occ.fraction))
