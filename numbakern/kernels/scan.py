"""Inclusive scan (prefix sum) of a 1-D float32 array, as ``torch.cumsum(x, 0)``, in one pass with decoupled
look-back (Merrill and Garland, "Single-pass Parallel Prefix Scan with Decoupled Look-back", 2016).

Each block scans one tile of ``rounds * nt * 4`` elements and needs the sum of everything before its tile. Rather
than a second and third pass over memory (reduce, scan the block sums, scan again), blocks publish what they know
as soon as they know it, in a small array of tile states: the tile's own total (*aggregate*, flag 1) right after
the block has scanned its tile, and the total up to and including the tile (*inclusive prefix*, flag 2) once it
has the prefix before it. A block finds that prefix by looking back over its predecessors' states, 32 at a time
with one warp, adding aggregates until it meets an inclusive prefix. So the array is read once and written once: 8
bytes per element, the same as a copy.

- **Tiles in the order blocks start.** A block takes its tile from an atomic counter, not from ``blockIdx``: every
  tile it waits for belongs to a block that has already started, so the waiting always ends (no assumption about
  the order in which the hardware schedules blocks).
- **Inside a tile** the loads are coalesced 16-byte loads: in round ``k`` thread ``t`` holds elements
  ``4 * (k * nt + t) ... + 3``. Each thread scans its four, a warp scans its threads' totals with ``shfl_up``, one
  warp scans the ``rounds * warps`` segment totals (they are in memory order), and everything is added back.
- **The states** are read and written with atomics (they are coherent in L2, where plain loads could hit a stale
  L1 line), values before flags with a ``threadfence`` between. The last block to finish (a second counter) puts
  the states and counters back to zeros, so the workspace is ready for the next launch without a memset.
- **Not bit-reproducible**, like every float scan with look-back (CUB's, which ``torch.cumsum`` uses, included):
  whether a tile adds its predecessors' aggregates or finds an inclusive prefix depends on timing, and float
  addition is not associative. The results differ in the last bits from run to run.

``inclusive_scan(x, out=None)`` is the user-facing function.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..fastpath import jit_options, u32
from ..launch import LaunchConfig, cdiv, check_array, to_kernel_arg
from ..registry import Case, KernelSpec, Work, random_array, register
from ..specialize import specialize
from ..vector_io import vload4, vstore4
from . import scratch
from .collectives import FULL_MASK, WARP, check_threads, warp_inclusive_sum, warp_reduce
from .config import checked_out, flags

#: tile states (``flags``)
EMPTY, AGGREGATE, PREFIX = 0, 1, 2


def _check_config(nt: int, rounds: int, vec: bool) -> None:
    check_threads("inclusive_scan", nt)
    slots = rounds * (nt // WARP) if isinstance(rounds, int) else 0
    if not isinstance(rounds, int) or rounds < 1 or (slots > WARP and slots % WARP):
        raise ValueError(f"inclusive_scan: rounds * nt / 32 (segments per tile) must be at most 32 or a multiple of "
                         f"32, got rounds={rounds!r}, nt={nt!r}")
    flags("inclusive_scan", vec=vec)


@specialize
def inclusive_scan_tiles(nt: int = 256, rounds: int = 8, vec: bool = True):
    """``out = cumsum(x)`` for float32 ``x`` and ``out`` of length n; launch with ``scan_launch``. ``flags``
    (tiles, uint32), ``values`` (2 x tiles, float32: aggregates, inclusive prefixes) and ``counters`` (2, uint32:
    next tile, tiles done) must be zeros, and are zeros again after the launch."""
    _check_config(nt, rounds, vec)
    width = 4 if vec else 1
    last = width - 1
    warps = nt // WARP
    slots = rounds * warps  # segment totals per tile: (round, warp), in memory order
    per_lane = max(1, slots // WARP)  # of them for each lane of the warp that scans them
    n_vals = rounds * width
    tile_elems = rounds * nt * width

    @cuda.jit(**jit_options(threads=nt, fastmath=False))
    def inclusive_scan_tiles(x, out, flags, values, counters):
        tid = cuda.threadIdx.x
        lane = tid % WARP
        warp = tid // WARP
        n = x.shape[0]
        tiles = cuda.gridDim.x
        seg = cuda.shared.array(slots, np.float32)
        tickets = cuda.shared.array(2, np.uint32)  # this block's tile; its place among the finished blocks
        carry = cuda.shared.array(1, np.float32)  # the sum of everything before this tile
        vals = cuda.local.array(n_vals, np.float32)
        before = cuda.local.array(rounds, np.float32)  # per round: the sum of the warp's lanes before this thread
        own = cuda.local.array(per_lane, np.float32)

        if tid == 0:
            tickets[0] = cuda.atomic.add(counters, 0, 1)
        cuda.syncthreads()
        tile = np.int64(tickets[0])  # signed: the look-back counts down past tile 0
        base = tile * tile_elems

        # 1. load the tile: every round's load issued before any is used
        for k in range(rounds):
            i = base + (k * nt + tid) * width
            if vec and i + width <= n:
                vload4(x, u32(i), vals, k * width)
            else:
                for q in range(width):
                    vals[k * width + q] = x[u32(i + q)] if i + q < n else np.float32(0.0)

        # 2. scan within each thread's four, then within the warp; the warps' totals go to shared memory
        for k in range(rounds):
            for q in range(last):
                vals[k * width + q + 1] += vals[k * width + q]
            mine = vals[k * width + last]
            upto = warp_inclusive_sum(mine, lane)
            before[k] = upto - mine
            if lane == WARP - 1:
                seg[k * warps + warp] = upto
        cuda.syncthreads()

        # 3. one warp: exclusive scan of the segment totals, the tile's aggregate, the look-back
        if warp == 0:
            mine = np.float32(0.0)
            for j in range(per_lane):
                s = lane * per_lane + j
                own[j] = seg[s] if s < slots else np.float32(0.0)
                mine += own[j]
            upto = warp_inclusive_sum(mine, lane)
            run = upto - mine
            for j in range(per_lane):
                s = lane * per_lane + j
                if s < slots:
                    seg[s] = run
                run += own[j]
            aggregate = cuda.shfl_sync(FULL_MASK, upto, WARP - 1)

            prefix = np.float32(0.0)  # the sum of all tiles before this one
            if tile > 0:
                if lane == 0:  # publish the aggregate at once: successors can use it before this tile has a prefix
                    cuda.atomic.add(values, (0, u32(tile)), aggregate)  # onto a zero
                    cuda.threadfence()
                    cuda.atomic.exch(flags, u32(tile), AGGREGATE)
                end = tile - 1  # the window of predecessors looked at: tiles end - 31 ... end
                found = False
                while not found:
                    i = end - lane
                    flag = np.uint32(PREFIX)  # before tile 0: a prefix of zero
                    if i >= 0:
                        flag = cuda.atomic.add(flags, u32(i), 0)  # an atomic read: coherent in L2
                    while cuda.any_sync(FULL_MASK, flag == EMPTY):
                        if flag == EMPTY:
                            flag = cuda.atomic.add(flags, u32(i), 0)
                    cuda.threadfence()  # the value was written before the flag: read it after
                    v = np.float32(0.0)
                    if i >= 0:
                        v = cuda.atomic.add(values, (u32(flag - 1), u32(i)), np.float32(0.0))
                    ready = cuda.ballot_sync(FULL_MASK, flag == PREFIX)
                    # add the aggregates of the tiles after the nearest one with a prefix, and that prefix
                    nearer = ready & ((1 << lane) - 1)
                    prefix += warp_reduce(v if nearer == 0 else np.float32(0.0), False)
                    found = ready != 0
                    end -= WARP
            if lane == 0:
                cuda.atomic.add(values, (1, u32(tile)), prefix + aggregate)
                cuda.threadfence()
                cuda.atomic.exch(flags, u32(tile), PREFIX)
                carry[0] = prefix
        cuda.syncthreads()

        # 4. add the prefixes back and store
        for k in range(rounds):
            add = carry[0] + seg[k * warps + warp] + before[k]
            i = base + (k * nt + tid) * width
            for q in range(width):
                vals[k * width + q] += add
            if vec and i + width <= n:
                vstore4(out, u32(i), vals, k * width)
            else:
                for q in range(width):
                    if i + q < n:
                        out[u32(i + q)] = vals[k * width + q]

        # 5. the last block to finish puts the tile states and counters back to zeros (no reader is left)
        if tid == 0:
            cuda.threadfence()
            tickets[1] = cuda.atomic.add(counters, 1, 1)
        cuda.syncthreads()
        if tickets[1] == tiles - 1:
            cuda.threadfence()
            for j in range(tid, tiles, nt):
                flags[u32(j)] = 0
                values[0, u32(j)] = np.float32(0.0)
                values[1, u32(j)] = np.float32(0.0)
            if tid == 0:
                cuda.atomic.exch(counters, 0, 0)
                cuda.atomic.exch(counters, 1, 0)

    return inclusive_scan_tiles


def tile_elements(config: dict) -> int:
    return config["rounds"] * config["nt"] * (4 if config.get("vec", True) else 1)


def scan_launch(config: dict, n: int) -> LaunchConfig:
    """One block per tile."""
    return LaunchConfig((max(1, cdiv(n, tile_elements(config))), 1, 1), (config["nt"], 1, 1))


def workspace(tiles: int, like=None):
    """Zeroed ``flags``, ``values`` and ``counters`` for ``tiles`` tiles: new host arrays without ``like``, else the
    cached ones on ``like``'s device (``scratch.zeroed``)."""
    return (scratch.zeroed("scan_flags", (tiles,), np.uint32, like),
            scratch.zeroed("scan_values", (2, tiles), np.float32, like),
            scratch.zeroed("scan_counters", (2,), np.uint32, like))


#: 256 threads, 16 rounds of 16-byte loads: 16384-element tiles, 64 values in registers per thread (about 120
#: registers: two blocks per multiprocessor). Against 8 rounds (8192-element tiles, 80 registers, three blocks) the
#: same bytes are in flight per multiprocessor and there are half as many tiles to publish and look back over
CONFIG = {"nt": 256, "rounds": 16}


def inclusive_scan(x, out=None, *, config: dict | None = None):
    """``torch.cumsum(x, 0)`` for a 1-D float32 ``x``: torch tensors, CuPy arrays or numpy arrays in, the result of
    the same kind on the same device (``out``, if given, a float32 array of ``x``'s shape)."""
    info = check_array("x", x, dtype=np.float32, ndim=1)
    out, o = checked_out("inclusive_scan", out, x, info, info.shape)
    n = info.shape[0]
    if n == 0:
        return out
    config = dict(CONFIG if config is None else config)
    vec = info.address % 16 == 0 and o.address % 16 == 0
    config["vec"] = vec
    cfg = scan_launch(config, n)
    ok = to_kernel_arg(out)
    flags, values, counters = workspace(cfg.grid[0], ok)
    inclusive_scan_tiles(**config)[cfg.grid, cfg.block](to_kernel_arg(x), ok, flags, values, counters)
    return out


# ---------------------------------------------------------------------------------------------------------------
# registry


def _case(size, rng, dist="uniform"):
    n = size["n"]
    x = random_array(rng, (n,), np.float32, dist)
    out = np.full(n, np.nan, np.float32)
    cfg = scan_launch(CONFIG, n)
    return Case((x, out, *workspace(cfg.grid[0])), cfg, dict(size))


def _baseline(x, out, *workspace):
    import torch

    return (lambda: torch.cumsum(x, 0, out=out)), "torch.cumsum"


register(KernelSpec(
    name="inclusive_scan",
    family="scan",
    kernel=inclusive_scan_tiles(**CONFIG),
    signatures=("void(float32[::1], float32[::1], uint32[::1], float32[:, ::1], uint32[::1])",),
    make_case=_case,
    reference=lambda x, out, *ws: {1: np.cumsum(x.astype(np.float64))},
    error_scale=lambda x, out, *ws: {1: np.cumsum(np.abs(x.astype(np.float64)))},
    outputs=(1,),
    workspace=(2, 3, 4),  # tile flags, tile values, counters: zeros before and after
    # float32 sums: within a tile a tree (log2 of 8192 roundings), across tiles a chain of prefixes
    rtol=1e-5,
    constants={**CONFIG, "vec": True},
    test_sizes=({"n": 1}, {"n": 5}, {"n": 8193}, {"n": 20011}),
    verify_sizes=({"n": 1}, {"n": 5}, {"n": 8191}, {"n": 65537}, {"n": 1 << 20}, {"n": 4_000_037}),
    bench_sizes=({"n": 1 << 26},),
    work=lambda size: Work(flops=size["n"], bytes=8.0 * size["n"]),
    description="single-pass inclusive scan, decoupled look-back, 16-byte loads and stores",
    baseline=_baseline,
))
