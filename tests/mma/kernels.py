"""Kernels the tensor-core tests launch (a module of their own, so the front end can read their source)."""

import numpy as np
from numba import cuda

from numbakern.mma import (
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
)


@cuda.jit
def tile_16x8x16_bf16(a, b, c, d):
    """One warp computes d = a @ b + c for a 16x16 A and a 16x8 B of bf16 (uint16 bit patterns), float32 C and D,
    its fragments loaded by hand from global memory with the PTX ISA's formulas."""
    lane = cuda.laneid
    g = lane >> 2  # groupID
    t = lane % 4  # threadID_in_group
    af = cuda.local.array(4, np.uint32)
    bf = cuda.local.array(2, np.uint32)
    acc = cuda.local.array(4, np.float32)
    af[0] = pack_b16x2(a[g, 2 * t], a[g, 2 * t + 1])
    af[1] = pack_b16x2(a[g + 8, 2 * t], a[g + 8, 2 * t + 1])
    af[2] = pack_b16x2(a[g, 2 * t + 8], a[g, 2 * t + 9])
    af[3] = pack_b16x2(a[g + 8, 2 * t + 8], a[g + 8, 2 * t + 9])
    bf[0] = pack_b16x2(b[2 * t, g], b[2 * t + 1, g])
    bf[1] = pack_b16x2(b[2 * t + 8, g], b[2 * t + 9, g])
    for i in range(4):
        acc[i] = c[g + 8 * (i // 2), 2 * t + i % 2]
    mma_m16n8k16_bf16(acc, 0, af, 0, bf, 0, acc, 0)
    for i in range(4):
        d[g + 8 * (i // 2), 2 * t + i % 2] = acc[i]


def _from_registers(mma, operand_dtype):
    """A kernel: each thread loads its own A, B and C registers from rows of global arrays (row = thread index),
    runs one mma with C in registers 0..3 and D in 4..7 of one local array, and stores D."""

    @cuda.jit
    def kernel(a_regs, b_regs, c_regs, d_regs):
        tid = cuda.threadIdx.x
        a = cuda.local.array(4, operand_dtype)
        b = cuda.local.array(2, operand_dtype)
        cd = cuda.local.array(8, np.float32)
        for i in range(4):
            a[i] = a_regs[tid, i]
            cd[i] = c_regs[tid, i]
        for i in range(2):
            b[i] = b_regs[tid, i]
        mma(cd, 4, a, 0, b, 0, cd, 0)
        for i in range(4):
            d_regs[tid, i] = cd[4 + i]

    return kernel


mma_bf16_registers = _from_registers(mma_m16n8k16_bf16, np.uint32)
mma_f16_registers = _from_registers(mma_m16n8k16_f16, np.uint32)
mma_tf32_registers = _from_registers(mma_m16n8k8_tf32, np.float32)
#: float32 registers for a bf16 mma: numba-cuda refuses it (the intrinsic's typing)
mma_bf16_float_registers = _from_registers(mma_m16n8k16_bf16, np.float32)


@cuda.jit(device=True)
def _load_fragments(a_regs, b_regs, c_regs, a, b, c):
    """This lane's A, B and C registers from its rows of the inputs."""
    tid = cuda.threadIdx.x
    for i in range(4):
        a[i] = a_regs[tid, i]
        c[i] = c_regs[tid, i]
    for i in range(2):
        b[i] = b_regs[tid, i]


@cuda.jit
def mma_half_warp(a_regs, b_regs, c_regs, d_regs):
    """Only lanes 0-15 execute the mma: a divergent warp-wide instruction."""
    tid = cuda.threadIdx.x
    a = cuda.local.array(4, np.uint32)
    b = cuda.local.array(2, np.uint32)
    c = cuda.local.array(4, np.float32)
    _load_fragments(a_regs, b_regs, c_regs, a, b, c)
    if cuda.laneid < 16:
        mma_m16n8k16_bf16(c, 0, a, 0, b, 0, c, 0)
    for i in range(4):
        d_regs[tid, i] = c[i]


@cuda.jit
def pack_halves(x, out):
    """Packs two 16-bit floats' values (not their bits) with pack_b16x2: refused, pointing at the bit patterns."""
    i = cuda.grid(1)
    out[i] = pack_b16x2(x[2 * i], x[2 * i + 1])


@cuda.jit
def mma_or_barrier(a_regs, b_regs, c_regs, d_regs):
    """Lanes 0-15 execute the mma, lanes 16-31 wait at a block barrier instead."""
    tid = cuda.threadIdx.x
    a = cuda.local.array(4, np.uint32)
    b = cuda.local.array(2, np.uint32)
    c = cuda.local.array(4, np.float32)
    _load_fragments(a_regs, b_regs, c_regs, a, b, c)
    if cuda.laneid < 16:
        mma_m16n8k16_bf16(c, 0, a, 0, b, 0, c, 0)
    else:
        cuda.syncthreads()
    for i in range(4):
        d_regs[tid, i] = c[i]


@cuda.jit
def mma_two_lines(a_regs, b_regs, c_regs, d_regs):
    """Both halves of the warp execute an mma, but at different lines (two instructions, not one)."""
    tid = cuda.threadIdx.x
    a = cuda.local.array(4, np.uint32)
    b = cuda.local.array(2, np.uint32)
    c = cuda.local.array(4, np.float32)
    _load_fragments(a_regs, b_regs, c_regs, a, b, c)
    if cuda.laneid < 16:
        mma_m16n8k16_bf16(c, 0, a, 0, b, 0, c, 0)
    else:
        mma_m16n8k16_bf16(c, 0, a, 0, b, 0, c, 0)
    for i in range(4):
        d_regs[tid, i] = c[i]


@cuda.jit
def mma_b1_unwritten(a_regs, b_regs, c_regs, d_regs):
    """Register b[1] is never written before the mma reads it."""
    tid = cuda.threadIdx.x
    a = cuda.local.array(4, np.uint32)
    b = cuda.local.array(2, np.uint32)
    c = cuda.local.array(4, np.float32)
    for i in range(4):
        a[i] = a_regs[tid, i]
        c[i] = c_regs[tid, i]
    b[0] = b_regs[tid, 0]
    mma_m16n8k16_bf16(c, 0, a, 0, b, 0, c, 0)
    for i in range(4):
        d_regs[tid, i] = c[i]


def _ldmatrix_kernel(load, count, row_len=24):
    """Copy ``src`` (uint16, 16x24) into a shared tile of rows of ``row_len`` values, in the same order (24: the same
    shape; 4: each 16-byte row a lane addresses spans two rows of the tile), then each lane loads from element
    (rows[lane], cols[lane]) of ``src``'s shape."""
    shape = (16 * 24 // row_len, row_len)

    @cuda.jit
    def kernel(src, rows, cols, out):
        tid = cuda.threadIdx.x
        tile = cuda.shared.array(shape, dtype=np.uint16, alignment=16)
        for e in range(tid, 16 * 24, 32):
            tile[e // row_len, e % row_len] = src[e // 24, e % 24]
        cuda.syncthreads()
        regs = cuda.local.array(4, np.uint32)
        at = rows[tid] * 24 + cols[tid]
        load(regs, 0, tile, (at // row_len, at % row_len))
        for j in range(count):
            out[tid, j] = regs[j]

    return kernel


@cuda.jit
def ldmatrix_of_an_unaligned_tile(src, out):
    """ldmatrix from a tile declared without ``alignment``: numba-cuda aligns a uint16 array to 2 bytes, so no row
    address is 16-byte aligned as compiled, whatever its offset."""
    tid = cuda.threadIdx.x
    pad = cuda.shared.array(3, dtype=np.uint16)  # another array, as a kernel has: the tile may land after it
    tile = cuda.shared.array((16, 16), dtype=np.uint16)
    for e in range(tid, 16 * 16, 32):
        tile[e // 16, e % 16] = src[e // 16, e % 16]
    if tid < 3:
        pad[tid] = 0
    cuda.syncthreads()
    regs = cuda.local.array(4, np.uint32)
    ldmatrix_x4(regs, 0, tile, (tid % 16, (tid // 16) * 8))
    for j in range(4):
        out[tid, j] = regs[j]


ldmatrix_kernels = {
    (count, trans): _ldmatrix_kernel(fn, count)
    for (count, trans), fn in {
        (1, False): ldmatrix_x1, (2, False): ldmatrix_x2, (4, False): ldmatrix_x4,
        (1, True): ldmatrix_x1_trans, (2, True): ldmatrix_x2_trans, (4, True): ldmatrix_x4_trans,
    }.items()
}
#: the x4 load from a (96, 4) tile of the same values
ldmatrix_x4_of_narrow_rows = _ldmatrix_kernel(ldmatrix_x4, 4, row_len=4)
