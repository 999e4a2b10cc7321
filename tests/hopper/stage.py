"""One stage of a Hopper pipeline by hand (docs/tensor-cores.md, "The Hopper pipeline"): a 64×64 tile of
``out = a @ b`` with k = 64, by a producer warpgroup (TMA loads completing on an mbarrier) and a consumer
warpgroup (four wgmma, staged output, a TMA store). ``bug`` plants one of the defects the simulator's checkers
report (0: none); each ``bug ==`` line is the defect, the line beside it the fix."""

import numpy as np
from numba import cuda

from numbakern.mma import hopper

TILE = 64 * 64 * 2  # bytes of one bf16 64x64 tile (128-byte rows: the 128-byte swizzle)
SHARED = 4 * TILE + 1024  # A, B, the fp32 output staging (two 64x32 boxes: 2 TILE), room to align
#: matrix descriptor fields (PTX ISA "Matrix Descriptor Format"): the 128-byte swizzle (bits 62-63 = 1), 8-row groups
#: 1024 bytes apart (stride offset); A K-major (leading offset unused), B n-major (one 64-column panel)
DESC_A = (1 << 16) | ((1024 >> 4) << 32) | (1 << 62)
DESC_B = ((TILE >> 4) << 16) | ((1024 >> 4) << 32) | (1 << 62)
TO_64B = 3 << 62  # XORed into the layout field: 1 (the 128-byte swizzle) becomes 2 (the 64-byte one)


@cuda.jit
def one_stage(a, b, out, tmap_a, tmap_b, tmap_out, bug):
    smem = cuda.shared.array(0, dtype=np.uint8)
    staging = cuda.shared.array(0, dtype=np.float32)
    bars = cuda.shared.array(2, dtype=np.uint64)  # full: the tiles landed; done: the consumer is finished with A
    tid = cuda.threadIdx.x
    base = hopper.shared_address(smem, 0)
    pad = (1024 - base % 1024) % 1024  # the swizzle is a function of the address: tiles start 1024-aligned
    a_at, b_at, out_at = pad, pad + TILE, pad + 2 * TILE
    if tid == 0:
        hopper.mbarrier_init(bars, 0, 1)
        hopper.mbarrier_init(bars, 1, 2 if bug == 13 else 1)  # bug 13: an arrival that never comes
        hopper.fence_barrier_init()
    cuda.syncthreads()
    if tid < 128:  # the producer warpgroup
        hopper.setmaxnreg_dec(40)
        if tid == 0:
            hopper.mbarrier_arrive_expect_tx(bars, 0, 2 * TILE + (1024 if bug == 3 else 0))  # bug 3: wrong count
            hopper.tma_load_2d(smem, a_at, tmap_a, 0, 0, bars, 0)
            hopper.tma_load_2d(smem, b_at, tmap_b, 0, 0, bars, 0)
            if bug == 2:
                smem[a_at] = 0  # bug 2: a store into a tile the copy engine is still writing
            while not hopper.mbarrier_try_wait(bars, 1, 0):  # the consumer is done with A...
                pass
            hopper.tma_load_2d(smem, a_at, tmap_a, 0, 0, bars, 0)  # ... so A may be refilled (the next tile's)
            hopper.mbarrier_arrive_expect_tx(bars, 0, TILE)
            while not hopper.mbarrier_try_wait(bars, 0, 1):
                pass
    else:  # the consumer warpgroup
        if bug == 12 and tid >= 160:
            hopper.setmaxnreg_inc(224)  # bug 12: not the same count in the whole warpgroup
        else:
            hopper.setmaxnreg_inc(232)
        t = tid - 128
        acc = cuda.local.array(32, np.float32)
        for i in range(32):
            acc[i] = np.float32(0.0)
        if bug != 1:  # bug 1: wgmma reads the tiles without waiting for them
            while not hopper.mbarrier_try_wait(bars, 0, 1 if bug == 11 else 0):  # bug 11: the wrong parity
                pass
        desc_a = np.uint64(DESC_A) | np.uint64((base + a_at) >> 4)
        desc_b = np.uint64(DESC_B) | np.uint64((base + b_at) >> 4)
        if bug == 7:
            desc_a ^= np.uint64(TO_64B)  # bug 7: A read with the 64-byte swizzle, written with the 128-byte one
        if bug == 8:
            desc_b += np.uint64(128 >> 4)  # bug 8: B's tile 128 bytes into its swizzle pattern
        if bug == 9:
            desc_b += np.uint64(65536 >> 4)  # bug 9: B past the end of shared memory
        hopper.wgmma_fence()
        if bug != 6 or t < 64:  # bug 6: half the warpgroup issues
            for kk in range(4):  # k = 64 as 4 k16 steps: A 32 bytes along its rows, B 16 rows (2048 bytes) down
                hopper.wgmma_m64n64k16_bf16(acc, desc_a + np.uint64(kk * 2), desc_b + np.uint64(kk * 128), 1, 1)
        hopper.wgmma_commit()
        if bug == 4 and t == 0:
            hopper.mbarrier_arrive(bars, 1)  # bug 4: A released while the wgmma still reads it
        hopper.wgmma_wait(0, acc, 32)
        if bug != 4 and t == 0:
            hopper.mbarrier_arrive(bars, 1)
        # the epilogue: each thread's accumulators into the staging tile (two 64x32 fp32 boxes), then one TMA store
        r = (t // 32) * 16 + (t % 32) // 4
        for j in range(8):
            for half in range(2):
                col = j * 8 + (t % 4) * 2
                at = out_at // 4 + (col // 32) * 2048 + (r + 8 * half) * 32 + col % 32
                staging[at] = acc[j * 4 + half * 2]
                staging[at + 1] = acc[j * 4 + half * 2 + 1]
        if bug != 5:
            hopper.fence_proxy_async()  # bug 5 drops it: the copy engine may not see the stores above
        hopper.named_barrier(1, 128)
        if t == 0:
            hopper.tma_store_2d(tmap_out, 0, 0, smem, out_at)
            hopper.tma_store_2d(tmap_out, 32, 0, smem, out_at + 8192)
            hopper.bulk_commit()
            if bug != 10:
                hopper.bulk_wait_read(0)  # bug 10 skips it: the staging is written again below
        hopper.named_barrier(1, 128)
        staging[out_at // 4 + t] = np.float32(0.0)  # (the next tile's staging)


def tensor_maps(a, b, out):
    """The three tensor maps: A and B in 64x64 boxes with the 128-byte swizzle, out in 64x32 boxes of float32."""
    from numbakern.tensormap import tensor_map_of

    return tensor_map_of(a, 64, 64), tensor_map_of(b, 64, 64), tensor_map_of(out, 64, 32, swizzle=0)
