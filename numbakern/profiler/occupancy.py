"""Theoretical occupancy: how many warps of a launch fit on one multiprocessor, and what stops more from fitting.

The rules of CUDA's occupancy calculator (``cuda_occupancy.h``, what Nsight Compute's "theoretical occupancy" and
``cudaOccupancyMaxActiveBlocksPerMultiprocessor`` compute), for compute capability 8.0 and up:

- warps: a block takes ``ceil(threads / 32)`` warp slots of the multiprocessor's ``max_warps_per_sm``;
- blocks: at most ``max_blocks_per_sm`` resident blocks;
- registers: a warp's registers are allocated in units of 256 (``ceil(registers x 32 / 256) x 256``), within each of
  the four sub-partitions' quarter of the register file, so ``floor(65536 / 4 / per warp) x 4`` warps fit; a block
  needing more than 65,536 (its warps counted in fours), or a thread more than 255, cannot launch;
- shared memory: the block's static and dynamic bytes plus the 1 KB the system reserves per block, rounded up to
  128 bytes, out of the largest shared-memory carveout (the driver picks one large enough for the occupancy the
  other limits allow).
"""

from __future__ import annotations

from .model import Occupancy
from .roofline import GPU

WARP = 32
SUB_PARTITIONS = 4
MAX_REGISTERS_PER_THREAD = 255


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def occupancy(spec: GPU, threads: int, registers: int | None, static_shared: int, dynamic_shared: int,
              source: str = "") -> Occupancy:
    """The theoretical occupancy of blocks of ``threads`` threads using ``registers`` per thread (None: unknown,
    not a limit) and ``static_shared + dynamic_shared`` bytes of shared memory, on ``spec``."""
    warps = -(-threads // WARP)
    limits = {"warps": spec.max_warps_per_sm // warps, "blocks": spec.max_blocks_per_sm}
    if registers is not None:
        per_warp = _round_up(registers * WARP, spec.register_granularity)
        assumed = per_warp * _round_up(warps, SUB_PARTITIONS)
        if registers > MAX_REGISTERS_PER_THREAD or assumed > spec.max_registers_per_block:
            limits["registers"] = 0
        elif per_warp:
            per_partition = spec.registers_per_sm // SUB_PARTITIONS // per_warp
            limits["registers"] = per_partition * SUB_PARTITIONS // warps
    used = static_shared + dynamic_shared
    if used > spec.max_shared_per_block:
        limits["shared memory"] = 0
    else:
        limits["shared memory"] = spec.shared_per_sm // _round_up(used + spec.reserved_shared_per_block,
                                                                  spec.shared_granularity)
    blocks = min(limits.values())
    # the limiter: the resource that allows the fewest blocks (on a tie, the multiprocessor's own warp and block
    # limits: a kernel that fills them is not held back by its registers or shared memory)
    order = ["warps", "blocks", "registers", "shared memory"]
    limiter = min((k for k in order if k in limits), key=lambda k: (limits[k], order.index(k)))
    return Occupancy(spec.name, registers, static_shared, dynamic_shared, threads, blocks, blocks * warps,
                     spec.max_warps_per_sm, limiter, limits, source)
