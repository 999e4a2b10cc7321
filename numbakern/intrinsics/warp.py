"""numba-cuda's own warp and atomic instructions, declared for the backends that do not get them from numba-cuda.

numba-cuda and numba-cuda-mlir type and lower these themselves, so each Op names the numba-cuda stub a kernel
calls (``cuda.shfl_sync``, ``cuda.atomic.add``: ``stub``) and has no function of its own. What the declaration
gives the others: the C generator registers its emitter on it (``translate/codegen/intrinsics.py``,
``atomics.py``: their CUDA namesakes), the simulator's ``cuda`` module carries them out (``numbakern.sim.fakecuda``
with the warp collectives of ``numbakern.sim.warp``: the registration point of their models), a profiler asks an
atomic what it touches (``accesses``), and every backend can ask which of them synchronise a warp (``sync``).
"""

from __future__ import annotations

from .op import Op, declare

MODULE = "numba.cuda"


def _warp(name: str, params: tuple[str, ...], ptx: str, doc: str) -> Op:
    return declare(Op(name, MODULE, doc, params=params, ptx=ptx, sync="mask" if "mask" in params else None,
                      family="warp", instruction=ptx.split(".")[0], stub=(name,)))


SHFL_SYNC = _warp("shfl_sync", ("mask", "value", "src_lane"), "shfl.sync.idx.b32",
                  "``value`` of lane ``src_lane`` (mod 32) of the lanes in ``mask``.")
SHFL_UP_SYNC = _warp("shfl_up_sync", ("mask", "value", "delta"), "shfl.sync.up.b32",
                     "``value`` of lane ``laneid - delta`` (a lane below 0 gets its own).")
SHFL_DOWN_SYNC = _warp("shfl_down_sync", ("mask", "value", "delta"), "shfl.sync.down.b32",
                       "``value`` of lane ``laneid + delta`` (a lane past 31 gets its own).")
SHFL_XOR_SYNC = _warp("shfl_xor_sync", ("mask", "value", "lane_mask"), "shfl.sync.bfly.b32",
                      "``value`` of lane ``laneid ^ lane_mask``.")
BALLOT_SYNC = _warp("ballot_sync", ("mask", "predicate"), "vote.sync.ballot.b32",
                    "The bits of the lanes in ``mask`` whose ``predicate`` is true.")
ALL_SYNC = _warp("all_sync", ("mask", "predicate"), "vote.sync.all.pred", "Whether every lane's predicate is true.")
ANY_SYNC = _warp("any_sync", ("mask", "predicate"), "vote.sync.any.pred", "Whether any lane's predicate is true.")
EQ_SYNC = _warp("eq_sync", ("mask", "predicate"), "vote.sync.uni.pred", "Whether the lanes' predicates agree.")
MATCH_ANY_SYNC = _warp("match_any_sync", ("mask", "value"), "match.any.sync.b32",
                       "The lanes in ``mask`` holding the same ``value`` as this one.")
MATCH_ALL_SYNC = _warp("match_all_sync", ("mask", "value"), "match.all.sync.b32",
                       "``(mask, True)`` if every lane in ``mask`` holds the same ``value``, else ``(0, False)``.")
ACTIVEMASK = _warp("activemask", (), "activemask.b32", "The lanes executing this instruction together.")
SYNCWARP = _warp("syncwarp", ("mask",), "bar.warp.sync", "A barrier among the lanes in ``mask``.")

WARP = (SHFL_SYNC, SHFL_UP_SYNC, SHFL_DOWN_SYNC, SHFL_XOR_SYNC, BALLOT_SYNC, ALL_SYNC, ANY_SYNC, EQ_SYNC,
        MATCH_ANY_SYNC, MATCH_ALL_SYNC, ACTIVEMASK, SYNCWARP)

# -- atomics -------------------------------------------------------------------------------------------------------


def _touches(args, lane):
    index = (0,) * args["array"].ndim if "index" not in args else args["index"]
    return [("array", index, int(args["array"].dtype.itemsize), "atom")]


def _atomic(name: str, ptx: str, doc: str, params=("array", "index", "val")) -> Op:
    return declare(Op(f"atomic.{name}", MODULE, doc, params=params, ptx=ptx, family="atomic", instruction="atom",
                      stub=("atomic", name), touches=_touches))


ATOMICS = tuple(_atomic(name, ptx, f"``array[index]`` {what}, atomically; returns the element's old value.") for
                name, ptx, what in (
    ("add", "atom.add", "+= val"), ("sub", "atom.add", "-= val (an add of -val)"), ("and_", "atom.and", "&= val"),
    ("or_", "atom.or", "|= val"), ("xor", "atom.xor", "^= val"), ("exch", "atom.exch", "= val"),
    ("inc", "atom.inc", "= 0 if it is >= val, else it + 1"),
    ("dec", "atom.dec", "= val if it is 0 or > val, else it - 1"),
    ("max", "atom.max", "= max(it, val) (floats: NaN-aware, by compare-and-swap)"),
    ("min", "atom.min", "= min(it, val) (floats: NaN-aware, by compare-and-swap)"),
    ("nanmax", "atom.max", "= max(it, val), NaNs ignored"), ("nanmin", "atom.min", "= min(it, val), NaNs ignored")))
ATOMIC_CAS = _atomic("cas", "atom.cas", "``array[index] = val`` if it equals ``old``, atomically; returns the old "
                     "value.", ("array", "index", "old", "val"))
ATOMIC_COMPARE_AND_SWAP = _atomic("compare_and_swap", "atom.cas", "``array[0] = val`` if it equals ``old``, "
                                  "atomically; returns the old value.", ("array", "old", "val"))
ATOMIC = (*ATOMICS, ATOMIC_CAS, ATOMIC_COMPARE_AND_SWAP)
