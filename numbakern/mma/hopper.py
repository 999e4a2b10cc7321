"""Hopper's asynchronous matrix path from Numba kernels (compute capability 9.0, ``sm_90a``): warpgroup MMA
(``wgmma.mma_async``) on shared-memory matrix descriptors, the bulk tensor copy engine (TMA,
``cp.async.bulk.tensor``) and the ``mbarrier``s that say when its copies have landed.

numba-cuda 0.30 compiles for ``compute_90a`` on a 9.0 device (``CUDACodeLibrary._ensure_cc`` adds the ``a``), so
these instructions assemble in Numba's own PTX. They are declared in ``numbakern.intrinsics.hopper``; GPU only for
now: the simulator has no models of them (a kernel using them is GPU-only), and ``translate`` does not know them.

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

from ..intrinsics.hopper import NAMES, OPS, SWIZZLE_128B, WGMMA_N

globals().update({op.name: op.function for op in OPS})  # shared_address, mbarrier_init, ..., wgmma_m64n256k16_f16


def tensor_map_2d(address: int, rows: int, cols: int, row_bytes: int, box_rows: int, box_cols: int,
                  element_bytes: int = 2):
    """The 128-byte ``CUtensorMap`` of a row-major ``rows``×``cols`` matrix at device ``address`` (rows
    ``row_bytes`` apart), copied in boxes of ``box_rows``×``box_cols`` with the 128-byte swizzle, elements past the
    edges read as zeros; as 16 ``uint64`` (host memory: copy it to the device for ``tma_load_2d``)."""
    import numpy as np
    from cuda.bindings import driver as cu

    kinds = {2: cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_UINT16,
             4: cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT32}
    if box_cols * element_bytes > 128:
        raise ValueError(f"tensor_map_2d: a box row of {box_cols} elements is more than the 128 bytes the 128-byte "
                         "swizzle allows")
    u64, u32 = cu.cuuint64_t, cu.cuuint32_t
    err, tmap = cu.cuTensorMapEncodeTiled(
        kinds[element_bytes], 2, address, [u64(cols), u64(rows)], [u64(row_bytes)], [u32(box_cols), u32(box_rows)],
        [u32(1), u32(1)],
        cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"tensor_map_2d: cuTensorMapEncodeTiled failed ({err}) for a {rows}x{cols} matrix, "
                           f"{row_bytes}-byte rows, {box_rows}x{box_cols} boxes")
    return np.array([int(x) for x in tmap.opaque], dtype=np.uint64)


def allow_dynamic_shared(kernel, nbytes: int) -> None:
    """Let every compiled version of numba-cuda ``kernel`` launch with ``nbytes`` of dynamic shared memory (past the
    48 KiB a launch gets without asking: ``cudaFuncAttributeMaxDynamicSharedMemorySize``)."""
    from numba.cuda.cudadrv.driver import binding, driver

    attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    for compiled in kernel.overloads.values():
        cufunc = compiled._codelibrary.get_cufunc()
        driver.cuKernelSetAttribute(attr, int(nbytes), cufunc.handle, cufunc.device.id)


__all__ = [*NAMES, "SWIZZLE_128B", "WGMMA_N", "allow_dynamic_shared", "tensor_map_2d"]
