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

from ..async_copy import async_commit, async_wait, copy_async16
from ..fastpath import jit_options, u32
from ..launch import LaunchConfig, cdiv
from ..mma import ldmatrix_x4, ldmatrix_x4_trans, mma_m16n8k16_bf16, mma_m16n8k16_f16
from ..specialize import specialize
from ..unroll import unroll

#: static shared memory a kernel may declare without opting in to more
STATIC_SHARED_LIMIT = 48 * 1024
CHUNK = 8  # 16-bit elements in one 16-byte copy (and one ldmatrix row)
LINE = 64  # 16-bit elements in one 128-byte line of shared memory (the XOR pattern repeats every 8 lines)

#: element dtype and mma of each input format, by ``f16`` (bf16 is held as uint16 bit patterns)
FORMATS = {False: (np.uint16, mma_m16n8k16_bf16), True: (np.float16, mma_m16n8k16_f16)}


def check_pipe_config(f16, bm, bn, bk, warps_m, warps_n, stages, group, min_blocks=1) -> int:
    """Threads per block of a configuration, or a ValueError naming the constraint it breaks."""
    what = "matmul_tc_pipelined"
    if not isinstance(min_blocks, int) or isinstance(min_blocks, bool) or min_blocks < 1:
        raise ValueError(f"{what}: min_blocks must be a positive int, got {min_blocks!r}")
    if not isinstance(f16, bool):
        raise ValueError(f"{what}: f16 must be True (f16 inputs) or False (bf16), got {f16!r}")
    for name, v in (("bm", bm), ("bn", bn), ("bk", bk), ("warps_m", warps_m), ("warps_n", warps_n),
                    ("stages", stages), ("group", group)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{what}: {name} must be a positive int, got {v!r}")
    threads = 32 * warps_m * warps_n
    if bm % warps_m or (bm // warps_m) % 16:
        raise ValueError(f"{what}: bm / warps_m = {bm} / {warps_m} must be a multiple of 16 (the mma's m)")
    if bn % warps_n or (bn // warps_n) % 16:
        raise ValueError(f"{what}: bn / warps_n = {bn} / {warps_n} must be a multiple of 16 (two n8 tiles per "
                         "ldmatrix_x4_trans)")
    if bk not in (32, 64):
        raise ValueError(f"{what}: bk must be 32 or 64 (rows of 4 or 8 16-byte chunks: the swizzle), got {bk}")
    if bn % LINE:
        raise ValueError(f"{what}: bn = {bn} must be a multiple of 64 (whole 128-byte lines in a B row)")
    if stages < 2:
        raise ValueError(f"{what}: stages = {stages}: a pipeline needs at least 2 shared buffers")
    a_chunks, b_chunks = bm * bk // CHUNK, bk * bn // CHUNK
    if a_chunks % threads or b_chunks % threads or threads % (bk // CHUNK) or threads % (bn // CHUNK):
        raise ValueError(f"{what}: the {bm}x{bk} A and {bk}x{bn} B tiles must split evenly over {threads} threads "
                         "in 16-byte chunks, each thread keeping its column of chunks")
    if stages * (bm * bk + bk * bn) * 2 > STATIC_SHARED_LIMIT:
        raise ValueError(f"{what}: {stages} stages of the {bm}x{bk} A and {bk}x{bn} B tiles need "
                         f"{stages * (bm * bk + bk * bn) * 2} bytes, more than 48 KiB of static shared memory")
    return threads


def a_offset(r, c, bk):
    """Where chunk ``c`` of row ``r`` of an A tile (``bk`` 16-bit elements a row) starts, in elements: rows are
    packed into 128-byte lines, and a chunk's place in its line is XORed with the line's index mod 8."""
    row_chunks = bk // CHUNK
    rows_per_line = CHUNK // row_chunks
    line = r // rows_per_line
    return line * LINE + (((r % rows_per_line) * row_chunks + c) ^ (line % 8)) * CHUNK


def b_offset(r, c, bn):
    """Where chunk ``c`` of row ``r`` of a B tile (``bn`` elements a row, whole lines) starts: XOR with r mod 8."""
    return r * bn + (c ^ (r % 8)) * CHUNK


@specialize
def matmul_bf16_pipelined(bm: int = 128, bn: int = 128, bk: int = 32, warps_m: int = 2, warps_n: int = 2,
                          stages: int = 3, group: int = 8, min_blocks: int = 1):
    """The kernel for bf16 inputs (uint16 bit patterns) and one tile configuration; launch with ``tc_pipe_launch``
    (1-D blocks). ``min_blocks``: the ``launch_bounds`` minimum of resident blocks per multiprocessor (1: the
    compiler's choice)."""
    return _pipelined(False, bm, bn, bk, warps_m, warps_n, stages, group, min_blocks)


@specialize
def matmul_f16_pipelined(bm: int = 128, bn: int = 128, bk: int = 32, warps_m: int = 2, warps_n: int = 2,
                         stages: int = 3, group: int = 8, min_blocks: int = 1):
    """The kernel for float16 inputs and one tile configuration; launch with ``tc_pipe_launch``."""
    return _pipelined(True, bm, bn, bk, warps_m, warps_n, stages, group, min_blocks)


def matmul_tc_pipelined(f16: bool = False, **config):
    """The kernel for bf16 (or with ``f16``, float16) inputs and a configuration."""
    return (matmul_f16_pipelined if f16 else matmul_bf16_pipelined)(**config)


def _pipelined(f16, bm, bn, bk, warps_m, warps_n, stages, group, min_blocks):
    threads = check_pipe_config(f16, bm, bn, bk, warps_m, warps_n, stages, group, min_blocks)
    elem, mma = FORMATS[f16]
    wm = bm // warps_m
    wn = bn // warps_n
    mi_n = wm // 16  # m16 accumulator tiles per warp, down
    ni_n = wn // 8  # n8 tiles, across
    nj_n = ni_n // 2  # ldmatrix_x4_trans calls per k-step (two n8 tiles each)
    ks_n = bk // 16  # k-steps per tile
    acc_n = mi_n * ni_n * 4
    a_regs = mi_n * 4
    b_regs = ni_n * 2
    a_tile = bm * bk
    b_tile = bk * bn
    a_rc = bk // CHUNK  # chunks in an A row
    b_rc = bn // CHUNK
    a_per = a_tile // CHUNK // threads  # copies per thread and tile
    b_per = b_tile // CHUNK // threads
    a_rstep = threads // a_rc  # rows between one thread's copies
    b_rstep = threads // b_rc
    a_rows_per_line = CHUNK // a_rc
    ahead = stages - 1
    wait_n = stages - 2

    @cuda.jit(**jit_options(threads=threads, min_blocks=min_blocks if min_blocks > 1 else None))
    def matmul_tc_pipelined(a, b, out):
        tid = cuda.threadIdx.x
        lane = tid % 32
        warp = tid // 32
        h = a.shape[0]
        k = a.shape[1]
        w = b.shape[1]
        # the block's tile in grouped order: down a band of `group` block rows, then right
        lin = cuda.blockIdx.y * cuda.gridDim.x + cuda.blockIdx.x
        band = group * cuda.gridDim.x
        first = lin // band * group
        rows = min(cuda.gridDim.y - first, group)
        row0 = (first + lin % band % rows) * bm
        col0 = lin % band // rows * bn
        wrow = warp // warps_n % warps_m * wm  # the warp tile's place in the block tile
        wcol = warp % warps_n * wn

        a_s = cuda.shared.array((stages, a_tile), dtype=elem, alignment=128)
        b_s = cuda.shared.array((stages, b_tile), dtype=elem, alignment=128)
        af = cuda.local.array(a_regs, np.uint32)
        bf = cuda.local.array(b_regs, np.uint32)
        acc = cuda.local.array(acc_n, np.float32)
        for i in unroll(range(acc_n)):
            acc[i] = np.float32(0.0)

        # This thread's copies: A chunk column ac of rows ar + i * a_rstep, B chunk column bc of rows br + i * b_rstep
        # (the steps keep the swizzle's line index mod 8, so destination i is destination 0 plus a constant).
        ac = tid % a_rc
        ar = tid // a_rc
        a_line = ar // a_rows_per_line  # (a_offset, written out: kernels call no host functions)
        a_dst = u32(a_line * LINE + ((ar % a_rows_per_line * a_rc + ac) ^ (a_line % 8)) * CHUNK)
        a_src = (row0 + ar) * k + ac * CHUNK
        a_left = h - row0 - ar  # copy i is inside while i * a_rstep < a_left (and its k-chunk is)
        bc = tid % b_rc
        br = tid // b_rc
        b_dst = u32(br * bn + (bc ^ (br % 8)) * CHUNK)  # (b_offset)
        b_src = br * w + col0 + bc * CHUNK
        b_in = col0 + bc * CHUNK < w
        # ldmatrix rows: A lanes 0-15 name rows 0-15 of a 16x16 fragment at k-chunk 0, lanes 16-31 at chunk 1;
        # B lanes 0-15 name k-rows 0-15 at an n8 tile's column, lanes 16-31 at the next tile's
        ld_row = wrow + lane % 16
        ld_line = ld_row // a_rows_per_line
        a_ld = u32(ld_line * LINE + ((ld_row % a_rows_per_line * a_rc + lane // 16) ^ (ld_line % 8)) * CHUNK)
        b_row = lane % 16
        b_chunk = wcol // CHUNK + lane // 16

        ntiles = (k + bk - 1) // bk
        for s in unroll(range(ahead)):  # the prologue: tiles 0 .. stages-2 start copying
            if s < ntiles:
                for i in unroll(range(a_per)):
                    copy_async16(a_s, (u32(s), a_dst + i * a_rstep * bk), a, a_src + s * bk + i * a_rstep * k,
                                 i * a_rstep < a_left and s * bk + ac * CHUNK < k)
                for i in unroll(range(b_per)):
                    copy_async16(b_s, (u32(s), b_dst + i * b_rstep * bn), b, b_src + (s * bk + i * b_rstep) * w,
                                 b_in and s * bk + br + i * b_rstep < k)
            async_commit()
        for t in range(ntiles):
            async_wait(wait_n)  # this thread's copies of tile t have landed ...
            cuda.syncthreads()  # ... and everyone's; everyone is done with tile t-1, whose stage is refilled now
            nxt = t + ahead
            if nxt < ntiles:
                ns = u32(nxt % stages)
                k0 = nxt * bk
                for i in unroll(range(a_per)):
                    copy_async16(a_s, (ns, a_dst + i * a_rstep * bk), a, a_src + k0 + i * a_rstep * k,
                                 i * a_rstep < a_left and k0 + ac * CHUNK < k)
                for i in unroll(range(b_per)):
                    copy_async16(b_s, (ns, b_dst + i * b_rstep * bn), b, b_src + (k0 + i * b_rstep) * w,
                                 b_in and k0 + br + i * b_rstep < k)
            async_commit()
            st = u32(t % stages)
            for ks in unroll(range(ks_n)):
                for mi in unroll(range(mi_n)):
                    # 16 rows down is a whole number of lines (line mod 8 unchanged); k-step ks is chunk 2 * ks more,
                    # a bit the line's XOR never touches
                    ldmatrix_x4(af, mi * 4, a_s, (st, (a_ld + mi * 16 * bk) ^ (ks * 16)))
                for nj in unroll(range(nj_n)):
                    # (b_offset: 16 k-rows down keep the row mod 8)
                    ldmatrix_x4_trans(bf, nj * 4, b_s,
                                      (st, (ks * 16 + b_row) * bn + ((b_chunk + nj * 2) ^ (b_row % 8)) * CHUNK))
                for mi in unroll(range(mi_n)):
                    for ni in unroll(range(ni_n)):
                        mma(acc, (mi * ni_n + ni) * 4, af, mi * 4, bf, ni * 2, acc, (mi * ni_n + ni) * 4)

        g = lane >> 2  # groupID: c0, c1 in row g, c2, c3 in row g + 8
        t4 = lane % 4  # threadID_in_group: columns 2 * t4, 2 * t4 + 1
        for mi in unroll(range(mi_n)):
            for half in unroll(range(2)):
                r = row0 + wrow + mi * 16 + half * 8 + g
                if r < h:
                    for ni in unroll(range(ni_n)):
                        c = col0 + wcol + ni * 8 + t4 * 2
                        if c < w:  # (w even: the pair is inside)
                            out[u32(r), u32(c)] = acc[(mi * ni_n + ni) * 4 + half * 2]
                            out[u32(r), u32(c + 1)] = acc[(mi * ni_n + ni) * 4 + half * 2 + 1]

    return matmul_tc_pipelined


def tc_pipe_launch(config: dict, h: int, w: int) -> LaunchConfig:
    """Grid and block for an ``h``×``w`` output: one block per ``bm``×``bn`` tile, 1-D blocks."""
    threads = 32 * config["warps_m"] * config["warps_n"]
    return LaunchConfig((max(1, cdiv(w, config["bn"])), max(1, cdiv(h, config["bm"]))), (threads,), 0)


def tc_ready(a, b, out) -> bool:
    """True when ``a @ b`` may run as ``matmul_tc_pipelined``: k and w multiples of 8 (whole 16-byte chunks),
    16-byte aligned data, inputs under 2**31 elements."""
    from ..launch import array_info

    infos = [array_info(name, x) for name, x in (("a", a), ("b", b), ("out", out))]
    k, w = infos[0].shape[1], infos[1].shape[1]
    return (k % CHUNK == 0 and w % CHUNK == 0 and all(i.c_contiguous and i.address % 16 == 0 for i in infos)
            and all(int(np.prod(i.shape)) < 2**31 for i in infos[:2]))
