"""Kernels that call every numbakern.mma intrinsic, for the C tests (test_mma_c.py)."""

import numpy as np
from numba import cuda

from numbakern.mma import (
    bf16_to_f32,
    f16_to_f32,
    f32_to_bf16,
    f32_to_f16,
    f32_to_tf32,
    ldmatrix_x1,
    ldmatrix_x1_trans,
    ldmatrix_x2,
    ldmatrix_x2_trans,
    ldmatrix_x4,
    ldmatrix_x4_trans,
    mma_m16n8k8_tf32,
    mma_m16n8k16_bf16,
    mma_m16n8k16_f16,
    pack_b16x2,
    pack_bf16x2,
    pack_f16x2,
    split_tf32,
    unpack_b16x2,
    unpack_bf16x2,
    unpack_f16x2,
)


@cuda.jit
def every_mma(a_regs, b_regs, x_regs, c_regs, d):
    """Each lane's registers from row ``lane`` of the arrays; the three shapes, accumulated into one D."""
    lane = cuda.laneid
    a = cuda.local.array(4, np.uint32)
    b = cuda.local.array(2, np.uint32)
    x = cuda.local.array(6, np.float32)
    acc = cuda.local.array(4, np.float32)
    for i in range(4):
        a[i] = a_regs[lane, i]
        x[i] = x_regs[lane, i]
        acc[i] = c_regs[lane, i]
    for i in range(2):
        b[i] = b_regs[lane, i]
        x[4 + i] = x_regs[lane, 4 + i]
    mma_m16n8k16_bf16(acc, 0, a, 0, b, 0, acc, 0)
    mma_m16n8k16_f16(acc, 0, a, 0, b, 0, acc, 0)
    mma_m16n8k8_tf32(acc, 0, x, 0, x, 4, acc, 0)
    for i in range(4):
        d[lane, i] = acc[i]


@cuda.jit
def every_ldmatrix(src, out):
    """A 32x16 tile of 16-bit values in shared memory; each ldmatrix form from row ``t`` (the lane: one warp),
    column 0 or 8."""
    t = cuda.threadIdx.x
    tile = cuda.shared.array((32, 16), dtype=np.uint16)
    for e in range(t, 32 * 16, 32):
        tile[e // 16, e % 16] = src[e // 16, e % 16]
    cuda.syncwarp()
    regs = cuda.local.array(24, np.uint32)
    ldmatrix_x1(regs, 0, tile, (t, 0))
    ldmatrix_x2(regs, 1, tile, (t, 8))
    ldmatrix_x4(regs, 3, tile, (t, 0))
    ldmatrix_x1_trans(regs, 7, tile, (t, 8))
    ldmatrix_x2_trans(regs, 8, tile, (t, 0))
    ldmatrix_x4_trans(regs, 10, tile, (t, 8))
    for j in range(14):
        out[t, j] = regs[j]


@cuda.jit
def conversions(x, bits, f32_out, u32_out, u16_out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        u32_out[i, 0] = pack_bf16x2(x[i], -x[i])
        u32_out[i, 1] = pack_f16x2(x[i], x[i] * np.float32(0.5))
        u32_out[i, 2] = pack_b16x2(bits[i], bits[i] ^ np.uint16(0x8000))
        lo, hi = unpack_bf16x2(u32_out[i, 0])
        f32_out[i, 0] = lo + hi
        lo, hi = unpack_f16x2(u32_out[i, 1])
        f32_out[i, 1] = lo - hi
        p, q = unpack_b16x2(u32_out[i, 2])
        u16_out[i, 0] = p
        u16_out[i, 1] = q
        u16_out[i, 2] = f32_to_bf16(x[i])
        u16_out[i, 3] = f32_to_f16(x[i])
        f32_out[i, 2] = bf16_to_f32(bits[i])
        f32_out[i, 3] = f16_to_f32(bits[i])
        f32_out[i, 4] = f32_to_tf32(x[i])
        big, small = split_tf32(x[i])
        f32_out[i, 5] = big
        f32_out[i, 6] = small
