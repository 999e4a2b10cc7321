"""Hopper's asynchronous matrix path from Numba kernels (compute capability 9.0, ``sm_90a``): warpgroup MMA
(``wgmma.mma_async``) on shared-memory matrix descriptors, the bulk tensor copy engine (TMA,
``cp.async.bulk.tensor``) and the ``mbarrier``s that say when its copies have landed.

numba-cuda 0.30 compiles for ``compute_90a`` on a 9.0 device (``CUDACodeLibrary._ensure_cc`` adds the ``a``), so
these instructions assemble in Numba's own PTX. They are declared in ``numbakern.intrinsics.hopper``; the simulator
models them (``numbakern.sim.hopper``: asynchronous, with the pipeline's checkers) and ``translate`` writes them as
inline PTX for ``sm_90a``.

The wgmma instructions are named by shape: ``wgmma_m64n{N}k16_{bf16,f16}(acc, desc_a, desc_b, scale_d, trans_b)``
(A and B from shared memory), ``wgmma_m64n{N}k16_{bf16,f16}_rs(acc, a, a_at, desc_b, scale_d, trans_b)`` (A from
registers: four uint32 of ``a`` from ``a_at``, two 16-bit values each, in the m64k16 A-fragment layout),
``wgmma_m64n{N}k8_tf32(acc, desc_a, desc_b, scale_d)`` and ``wgmma_m64n{N}k8_tf32_rs(acc, a, a_at, desc_b,
scale_d)`` (tf32: both operands K-major; register A: four float32 holding tf32 values), for every N that PTX allows
(a multiple of 8 up to 256), declared the first time a kernel names them. ``numbakern.sim.hopper.layout`` has the
register layouts and the descriptors' address formulas. ``named_barrier_sync`` is ``named_barrier`` (``bar.sync``),
named beside ``named_barrier_arrive`` (``bar.arrive``).

Matrix descriptors (``smem_descriptor``) are plain 64-bit integers built in the kernel, as the PTX ISA lays them out
("Matrix Descriptor Format"): bits 0-13 the start address >> 4, 16-29 the leading dimension byte offset >> 4, 32-45
the stride dimension byte offset >> 4, 62-63 the swizzle mode (1: 128-byte). For a 128-byte-swizzled tile:

- K-major (A of a row-major h×k matrix): rows of 64 16-bit values (128 bytes), 8-row groups 1024 bytes apart
  (stride offset 1024; the leading offset is unused); the k-steps of 16 advance the start address by 32 bytes.
- MN-major (B of a row-major k×w matrix, ``trans_b=1``): panels of 64 columns × the tile's k rows, each k row 128
  bytes; the stride offset is 1024 (8 k rows), the leading offset the distance between panels; a k-step of 16
  advances the start by 16 rows (2048 bytes).

The swizzle is a function of the address bits, so each tile must start 1024-byte aligned.

Accumulators are ``cuda.local.array(n / 2, float32)`` per thread of the warpgroup (m64nNk16: row
``16 * warp + lane / 4`` (+8), columns ``8 * j + 2 * (lane % 4)`` (+1) of n8 chunk ``j`` in registers
``4j .. 4j + 3``), indexed only by constants so they stay in registers.
"""

from __future__ import annotations

from ..intrinsics.hopper import NAMED_BARRIER, NAMES, OPS, SWIZZLE_128B, WGMMA_N, WgmmaShape, wgmma, wgmma_shape

# the host side of a launch (tensor maps, the shared-memory limit): numbakern.tensormap's, named here too
from ..tensormap import allow_dynamic_shared, tensor_map, tensor_map_2d

globals().update({op.name: op.function for op in OPS})  # shared_address, mbarrier_init, ..., wgmma_m64n256k16_f16
named_barrier_sync = NAMED_BARRIER.function  # bar.sync: named_barrier, named as the pair of named_barrier_arrive


def __getattr__(name: str):
    """The wgmma instructions, one per shape, declared when a kernel first names one."""
    if wgmma_shape(name) is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    made = globals()[name] = wgmma(name).function
    return made


__all__ = [*NAMES, "SWIZZLE_128B", "WGMMA_N", "WgmmaShape", "allow_dynamic_shared", "named_barrier_sync",
           "tensor_map", "tensor_map_2d", "wgmma_shape"]
