"""The pipelined tensor-core matmul: ``out (float32) = a @ b`` for bf16 or f16 ``a`` and ``b``, fp32 accumulation.

What the fast ``mma.sync`` GEMMs (CUTLASS's sm80 kernels) do, in Numba:

- **16-byte ``cp.async`` copies** (``copy_async16``: 8 bf16/f16 values) of both tiles, global to shared, in the
  background; ``stages`` shared buffers, ``async_wait(stages - 2)`` and one barrier per k-tile.
- **XOR-swizzled shared tiles, no padding.** A 16-byte chunk's place in its 128-byte line is XORed with the line's
  index, so the eight rows one ``ldmatrix`` phase reads (and the rows one warp's copies write) fall in eight
  different 16-byte bank groups: no conflicts, and every byte of the 48 KiB of static shared memory is data.
- **``ldmatrix_x4``** for A (one m16k16 fragment a call) and **``ldmatrix_x4_trans``** for B (two k16n8 fragments
  a call: B is row-major, the mma wants it column-major).
- **Warp tiles of ``(bm / warps_m) x (bn / warps_n)``** outputs as m16n8 accumulators in registers; every loop over
  fragments unrolled (``numbakern.unroll``), so fragment indices are constants and the fragments registers.
- **Grouped block order**: down a band of ``group`` block rows, then right, so the band's A tiles and the column's
  B tiles are reused from L2.

Preconditions (``tc_ready``): k and w multiples of 8 (each 16-byte chunk of a row is whole), 16-byte aligned
C-contiguous inputs; h is free. Chunks past the matrices' edges are zero-filled by the copies (``valid`` False), so
any such shape is correct.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..async_copy import async_commit, async_wait
from ..fastpath import jit_options, u32
from ..launch import LaunchConfig
from ..mma import ldmatrix_x4, ldmatrix_x4_trans, mma_m16n8k16_bf16, mma_m16n8k16_f16, split_tf32
from ..specialize import specialize
from ..unroll import unroll
from .config import chunks_ready, fits_static_shared, flags, positive_ints, tile_launch
from .tf32x3 import mma_3xtf32
from .tiles import block_tile, copy_chunks, store_accumulators, swizzled

CHUNK = 8  # 16-bit elements in one 16-byte copy (and one ldmatrix row)
B_PAD = 8  # (3xTF32) floats added to each B row: the fragment reads' four k rows land 8 banks apart
LINE = 64  # 16-bit elements in one 128-byte line of shared memory (the XOR pattern repeats every 8 lines)

#: element dtype and mma of each input format, by ``f16`` (bf16 is held as uint16 bit patterns)
FORMATS = {False: (np.uint16, mma_m16n8k16_bf16), True: (np.float16, mma_m16n8k16_f16)}


def check_warp_tiles(what, bm, bn, warps_m, warps_n, n_step, n_why="two n8 tiles per ldmatrix_x4_trans") -> None:
    """A ValueError unless the block tile splits into ``warps_m``×``warps_n`` warp tiles of whole mma tiles."""
    if bm % warps_m or (bm // warps_m) % 16:
        raise ValueError(f"{what}: bm / warps_m = {bm} / {warps_m} must be a multiple of 16 (the mma's m)")
    if bn % warps_n or (bn // warps_n) % n_step:
        raise ValueError(f"{what}: bn / warps_n = {bn} / {warps_n} must be a multiple of {n_step} ({n_why})")


def check_pipeline(what, bm, bn, bk, threads, stages, chunk, nbytes) -> None:
    """A ValueError unless ``stages`` buffers of the A and B tiles (``nbytes`` in all) fit static shared memory and
    split evenly over ``threads`` in 16-byte chunks of ``chunk`` elements, each thread keeping its chunk column."""
    if stages < 2:
        raise ValueError(f"{what}: stages = {stages}: a pipeline needs at least 2 shared buffers")
    if (bm * bk // chunk) % threads or (bk * bn // chunk) % threads or threads % (bk // chunk) \
            or threads % (bn // chunk):
        raise ValueError(f"{what}: the {bm}x{bk} A and {bk}x{bn} B tiles must split evenly over {threads} threads "
                         "in 16-byte chunks, each thread keeping its column of chunks")
    fits_static_shared(what, nbytes, f"{stages} stages of the {bm}x{bk} A and {bk}x{bn} B tiles")


def check_tf32_config(bm, bn, bk, warps_m, warps_n, stages, group) -> int:
    """The 3xTF32 kernel's threads per block, or a ValueError naming the constraint its configuration breaks."""
    what = "matmul_3xtf32"
    positive_ints(what, bm=bm, bn=bn, bk=bk, warps_m=warps_m, warps_n=warps_n, stages=stages, group=group)
    check_warp_tiles(what, bm, bn, warps_m, warps_n, 8, "the mma's n")
    if bk not in (16, 32):
        raise ValueError(f"{what}: bk must be 16 or 32 (A rows of 4 or 8 16-byte chunks: the swizzle), got {bk}")
    threads = 32 * warps_m * warps_n
    check_pipeline(what, bm, bn, bk, threads, stages, 4, stages * (bm * bk + bk * (bn + B_PAD)) * 4)
    return threads


def check_pipe_config(f16, bm, bn, bk, warps_m, warps_n, stages, group, min_blocks=1) -> int:
    """Threads per block of a configuration, or a ValueError naming the constraint it breaks."""
    what = "matmul_tc_pipelined"
    flags(what, f16=f16)
    positive_ints(what, bm=bm, bn=bn, bk=bk, warps_m=warps_m, warps_n=warps_n, stages=stages, group=group,
                  min_blocks=min_blocks)
    check_warp_tiles(what, bm, bn, warps_m, warps_n, 16)
    if bk not in (32, 64):
        raise ValueError(f"{what}: bk must be 32 or 64 (rows of 4 or 8 16-byte chunks: the swizzle), got {bk}")
    if bn % LINE:
        raise ValueError(f"{what}: bn = {bn} must be a multiple of 64 (whole 128-byte lines in a B row)")
    threads = 32 * warps_m * warps_n
    check_pipeline(what, bm, bn, bk, threads, stages, CHUNK, stages * (bm * bk + bk * bn) * 2)
    return threads


@specialize
def matmul_bf16_pipelined(bm: int = 128, bn: int = 128, bk: int = 32, warps_m: int = 2, warps_n: int = 2,
                          stages: int = 3, group: int = 8, min_blocks: int = 1):
    """The kernel for bf16 inputs (uint16 bit patterns) and one tile configuration; launch with ``mma_launch``
    (1-D blocks). ``min_blocks``: the ``launch_bounds`` minimum of resident blocks per multiprocessor (1: the
    compiler's choice)."""
    return pipelined_kernel(False, bm, bn, bk, warps_m, warps_n, stages, group, min_blocks)


@specialize
def matmul_f16_pipelined(bm: int = 128, bn: int = 128, bk: int = 32, warps_m: int = 2, warps_n: int = 2,
                         stages: int = 3, group: int = 8, min_blocks: int = 1):
    """The kernel for float16 inputs and one tile configuration; launch with ``mma_launch``."""
    return pipelined_kernel(True, bm, bn, bk, warps_m, warps_n, stages, group, min_blocks)


def matmul_tc_pipelined(f16: bool = False, **config):
    """The kernel for bf16 (or with ``f16``, float16) inputs and a configuration."""
    return (matmul_f16_pipelined if f16 else matmul_bf16_pipelined)(**config)


def pipelined_kernel(f16, bm, bn, bk, warps_m, warps_n, stages, group, min_blocks, tf32=False):
    """The pipelined tensor-core GEMM for 16-bit inputs, or with ``tf32`` for float32 ones on 3xTF32
    (``matmul_3xtf32`` says what differs): one pipeline of tile copies and one epilogue, each format's k-steps in its
    own branch (compile-time constants: each kernel holds only its own)."""
    if tf32:
        threads = check_tf32_config(bm, bn, bk, warps_m, warps_n, stages, group)
    else:
        threads = check_pipe_config(f16, bm, bn, bk, warps_m, warps_n, stages, group, min_blocks)
    elem, mma = (np.float32, None) if tf32 else FORMATS[f16]
    chunk = 4 if tf32 else CHUNK  # elements in one 16-byte copy and one ldmatrix row
    wm = bm // warps_m
    wn = bn // warps_n
    mi_n = wm // 16  # m16 accumulator tiles per warp, down
    ni_n = wn // 8  # n8 tiles, across
    nj_n = ni_n // 2  # (16-bit) ldmatrix_x4_trans calls per k-step (two n8 tiles each)
    ks_n = bk // (8 if tf32 else 16)  # k-steps per tile
    acc_n = mi_n * ni_n * 4
    a_regs = mi_n * 4
    b_regs = ni_n * 2
    a_tile = bm * bk
    b_cols = bn + B_PAD if tf32 else bn  # (3xTF32) B rows padded: the fragment reads' four k rows 8 banks apart
    b_tile = bk * b_cols
    b_align = 16 if tf32 else 128  # (16-bit: the swizzle's 1024-byte pattern starts on a line)
    a_rc = bk // chunk  # chunks in an A row
    b_rc = bn // chunk
    a_per = a_tile // chunk // threads  # copies per thread and tile
    b_per = bk * bn // chunk // threads
    a_rstep = threads // a_rc  # rows between one thread's copies
    b_rstep = threads // b_rc
    a_rows_per_line = 8 // a_rc  # A rows in a 128-byte line
    ahead = stages - 1
    wait_n = stages - 2

    @cuda.jit(**jit_options(threads=threads, min_blocks=min_blocks if min_blocks > 1 else None))
    def matmul_mma_pipelined(a, b, out):
        tid = cuda.threadIdx.x
        lane = tid % 32
        warp = tid // 32
        h = a.shape[0]
        k = a.shape[1]
        w = b.shape[1]
        row0, col0 = block_tile(group, bm, bn)
        wrow = warp // warps_n % warps_m * wm  # the warp tile's place in the block tile
        wcol = warp % warps_n * wn

        a_s = cuda.shared.array((stages, a_tile), dtype=elem, alignment=128)
        b_s = cuda.shared.array((stages, b_tile), dtype=elem, alignment=b_align)
        acc = cuda.local.array(acc_n, np.float32)
        for i in unroll(range(acc_n)):
            acc[i] = np.float32(0.0)
        if tf32:
            g = lane >> 2  # groupID
            t4 = lane % 4  # threadID_in_group
            af = cuda.local.array(a_regs, np.float32)
            a_big = cuda.local.array(a_regs, np.float32)
            a_small = cuda.local.array(a_regs, np.float32)
            b_big = cuda.local.array(b_regs, np.float32)
            b_small = cuda.local.array(b_regs, np.float32)
            part = cuda.local.array(acc_n, np.float32)  # this k-tile's products, on the tensor cores
            zero = cuda.local.array(4, np.float32)
            for i in unroll(range(4)):
                zero[i] = np.float32(0.0)
        else:
            af = cuda.local.array(a_regs, np.uint32)
            bf = cuda.local.array(b_regs, np.uint32)

        # This thread's copies: A chunk column ac of rows ar + i * a_rstep, B chunk column bc of rows br + i * b_rstep
        # (the steps keep the swizzle's line index mod 8, so destination i is destination 0 plus a constant).
        ac = tid % a_rc
        ar = tid // a_rc
        a_dst = swizzled(ar, ac, a_rows_per_line, a_rc, chunk)
        a_src = (row0 + ar) * k + ac * chunk
        a_left = h - row0 - ar  # copy i is inside while i * a_rstep < a_left (and its k-chunk is)
        bc = tid % b_rc
        br = tid // b_rc
        b_dst = br * b_cols + bc * chunk if tf32 else swizzled(br, bc, 1, b_rc, chunk)
        b_src = br * w + col0 + bc * chunk
        b_in = col0 + bc * chunk < w
        # ldmatrix rows: A lanes 0-15 name rows 0-15 of a 16-row fragment at k-chunk 0, lanes 16-31 at chunk 1;
        # (16-bit) B lanes 0-15 name k-rows 0-15 at an n8 tile's column, lanes 16-31 at the next tile's
        a_ld = swizzled(wrow + lane % 16, lane // 16, a_rows_per_line, a_rc, chunk)
        b_row = lane % 16
        b_chunk = wcol // chunk + lane // 16

        ntiles = (k + bk - 1) // bk
        for s in unroll(range(ahead)):  # the prologue: tiles 0 .. stages-2 start copying
            fill_stage(a_s, b_s, a, b, s, ntiles, stages, bk, k, w, a_dst, a_src, a_left, ac * chunk, a_per, a_rstep,
                       b_dst, b_src, b_in, br, b_per, b_rstep, b_cols)
        for t in range(ntiles):
            async_wait(wait_n)  # this thread's copies of tile t have landed ...
            cuda.syncthreads()  # ... and everyone's; everyone is done with tile t-1, whose stage is refilled now
            fill_stage(a_s, b_s, a, b, t + ahead, ntiles, stages, bk, k, w, a_dst, a_src, a_left, ac * chunk, a_per,
                       a_rstep, b_dst, b_src, b_in, br, b_per, b_rstep, b_cols)
            st = u32(t % stages)
            for ks in unroll(range(ks_n)):
                for mi in unroll(range(mi_n)):
                    # 16 rows down is a whole number of lines (line mod 8 unchanged); k-step ks is chunk 2 * ks more,
                    # a bit the line's XOR never touches
                    ldmatrix_x4(af, mi * 4, a_s, (st, (a_ld + mi * 16 * bk) ^ (ks * 2 * chunk)))
                if tf32:  # each register split once per k-step; three mma per tile into the k-tile's partial sum
                    for i in unroll(range(a_regs)):
                        a_big[i], a_small[i] = split_tf32(af[i])
                    for ni in unroll(range(ni_n)):
                        n = u32(wcol + ni * 8 + g)
                        b_big[ni * 2], b_small[ni * 2] = split_tf32(b_s[st, u32((ks * 8 + t4) * b_cols) + n])
                        b_big[ni * 2 + 1], b_small[ni * 2 + 1] = split_tf32(
                            b_s[st, u32((ks * 8 + t4 + 4) * b_cols) + n])
                    for mi in unroll(range(mi_n)):
                        for ni in unroll(range(ni_n)):
                            c = (mi * ni_n + ni) * 4
                            if ks == 0:  # a fresh partial sum per k-tile
                                mma_3xtf32(part, c, a_big, a_small, mi * 4, b_big, b_small, ni * 2, zero, 0)
                            else:
                                mma_3xtf32(part, c, a_big, a_small, mi * 4, b_big, b_small, ni * 2, part, c)
                else:
                    for nj in unroll(range(nj_n)):
                        # (swizzled: 16 k-rows down keep the row mod 8)
                        ldmatrix_x4_trans(bf, nj * 4, b_s,
                                          (st, (ks * 16 + b_row) * bn + ((b_chunk + nj * 2) ^ (b_row % 8)) * CHUNK))
                    for mi in unroll(range(mi_n)):
                        for ni in unroll(range(ni_n)):
                            mma(acc, (mi * ni_n + ni) * 4, af, mi * 4, bf, ni * 2, acc, (mi * ni_n + ni) * 4)
            if tf32:  # the tensor cores' fp32 sums truncate relative to the running sum's size: kept to one k-tile,
                # they stay small, and the k-tiles add up here with round-to-nearest, as an fp32 GEMM's
                for i in unroll(range(acc_n)):
                    acc[i] += part[i]

        store_accumulators(out, acc, row0 + wrow, col0 + wcol, h, w, lane, mi_n, ni_n, False)

    return matmul_mma_pipelined


@cuda.jit(device=True, forceinline=True, fastmath=True)
def fill_stage(a_s, b_s, a, b, kt, ntiles, stages, bk, k, w, a_dst, a_src, a_left, a_col, a_per, a_rstep, b_dst,
               b_src, b_in, br, b_per, b_rstep, b_cols):
    """The copies of k-tile ``kt`` (if there is one) into stage ``kt % stages``, closed as one group (an empty group
    past the last tile keeps the count of groups in flight). A thread copies chunk column ``a_col`` of A rows
    ``ar + i * a_rstep`` (inside while ``i * a_rstep < a_left``) and chunk column ``bc`` of B k-rows
    ``br + i * b_rstep``, from its first offsets ``a_src``/``b_src`` to ``a_dst``/``b_dst`` of the stage."""
    if kt < ntiles:
        stage = u32(kt % stages)
        k0 = kt * bk
        copy_chunks(a_s, stage, a_dst, a_rstep * bk, a, a_src + k0, a_rstep * k, a_per, k0 + a_col < k, 0, a_rstep,
                    a_left)
        copy_chunks(b_s, stage, b_dst, b_rstep * b_cols, b, b_src + k0 * w, b_rstep * w, b_per, b_in, k0 + br,
                    b_rstep, k)
    async_commit()


def mma_launch(config: dict, h: int, w: int) -> LaunchConfig:
    """Grid and block of the tensor-core matmuls (``warps_m * warps_n`` warps a block) for an ``h``×``w`` output:
    one block per ``bm``×``bn`` tile, 1-D blocks."""
    return tile_launch(h, w, config["bm"], config["bn"], 32 * config["warps_m"] * config["warps_n"])


def tc_ready(a, b, out) -> bool:
    """True when ``a @ b`` may run as ``matmul_tc_pipelined``: k and w multiples of 8 (whole 16-byte chunks),
    16-byte aligned data, inputs under 2**31 elements."""
    return chunks_ready(a, b, out, CHUNK)
