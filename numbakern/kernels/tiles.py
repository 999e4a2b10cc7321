"""The pieces the matmul kernels compose (as CUTLASS/CuTe compose a GEMM from tiles and atoms), as device functions:
which output tile a block computes, a thread's share of a tile's ``cp.async`` copies, and the stores of the
accumulators.

Every function is inlined (``forceinline``, ``__forceinline__`` in the C): the arrays it takes are the kernel's
registers and shared tiles, and its sizes are the kernel's compile-time constants, which fold into the inlined code
as they would have in the kernel itself.
"""

from __future__ import annotations

from numba import cuda

from ..async_copy import copy_async16
from ..fastpath import u32
from ..unroll import unroll
from ..vector_io import vstore4


@cuda.jit(device=True, forceinline=True, fastmath=True)
def grouped_tile(lin, band, group, num_m):
    """``(tm, tn)``: the tile row and column of the ``lin``-th of ``num_m`` rows of tiles walked in bands of
    ``group`` tile rows (``band`` tiles a band), each band down a tile column before moving one right: the tiles
    in flight together share their B columns and A rows in L2 (Triton's ``GROUP_SIZE_M``)."""
    first = lin // band * group
    rows = min(num_m - first, group)
    return first + lin % band % rows, lin % band // rows


@cuda.jit(device=True, forceinline=True, fastmath=True)
def block_tile(group, bm, bn):
    """``(row0, col0)``: where this block's ``bm``×``bn`` output tile starts, the blocks in ``grouped_tile``'s order
    with ``group`` > 1 (the grid is the same either way)."""
    if group > 1:
        tm, tn = grouped_tile(cuda.blockIdx.y * cuda.gridDim.x + cuda.blockIdx.x, group * cuda.gridDim.x, group,
                              cuda.gridDim.y)
        return tm * bm, tn * bn
    return cuda.blockIdx.y * bm, cuda.blockIdx.x * bn


@cuda.jit(device=True, forceinline=True, fastmath=True)
def stage_tile(tile, src, r0, c0, rows, cols, size, tile_cols, threads, zero):
    """``tile[r, c] = src[r0 + r, c0 + c]``, ``zero`` outside ``rows``×``cols``: the ``size`` elements of a tile of
    ``tile_cols`` columns, shared out over the block's ``threads`` element by element (any shape, any alignment)."""
    for e in range(cuda.threadIdx.x, size, threads):
        r = e // tile_cols
        c = e % tile_cols
        gr = r0 + r
        gc = c0 + c
        tile[r, c] = src[gr, gc] if gr < rows and gc < cols else zero


@cuda.jit(device=True, forceinline=True, fastmath=True)
def swizzled(r, c, per_line, row_chunks, chunk):
    """Where chunk ``c`` of row ``r`` of a shared tile starts, in elements, as a 32-bit offset: rows of
    ``row_chunks`` 16-byte chunks (``chunk`` elements each) are packed ``per_line`` to a line of at least 128 bytes,
    and a chunk's place is XORed with the line's index mod 8 (bits of the chunk index from 8 up are left alone), so
    the eight rows that one ``ldmatrix`` phase or one warp's copies touch fall in eight different 16-byte bank
    groups. No padding: every byte is data."""
    line = r // per_line
    return u32(line * per_line * row_chunks * chunk + ((r % per_line * row_chunks + c) ^ (line % 8)) * chunk)


@cuda.jit(device=True, forceinline=True, fastmath=True)
def copy_chunks(dst, stage, dst_at, dst_step, src, src_at, src_step, copies, inside, row, row_step, rows):
    """A thread's ``copies`` 16-byte ``cp.async`` copies of one tile: copy i from ``src``'s flat offset
    ``src_at + i * src_step`` to ``dst[stage, dst_at + i * dst_step]``, zero-filled unless ``inside`` and its row
    ``row + i * row_step`` is before ``rows``."""
    for i in unroll(range(copies)):
        copy_async16(dst, (stage, dst_at + i * dst_step), src, src_at + i * src_step,
                     inside and row + i * row_step < rows)


@cuda.jit(device=True, forceinline=True, fastmath=True)
def store_accumulators(out, acc, row0, col0, h, w, lane, mi_n, ni_n, odd_w):
    """A warp's ``mi_n``×``ni_n`` m16n8 accumulator tiles into ``out`` from ``(row0, col0)``, inside ``h``×``w``
    (``w`` even unless ``odd_w``: a lane's pair of columns is inside or outside together). Lane (g, t) holds rows g
    and g + 8 of a tile, columns 2 t and 2 t + 1 (``numbakern.mma.layout``)."""
    g = lane >> 2
    t4 = lane % 4
    for mi in unroll(range(mi_n)):
        for half in unroll(range(2)):
            r = row0 + mi * 16 + half * 8 + g
            if r < h:
                for ni in unroll(range(ni_n)):
                    c = col0 + ni * 8 + t4 * 2
                    if c < w:
                        out[u32(r), u32(c)] = acc[(mi * ni_n + ni) * 4 + half * 2]
                        if not odd_w or c + 1 < w:
                            out[u32(r), u32(c + 1)] = acc[(mi * ni_n + ni) * 4 + half * 2 + 1]


# ---------------------------------------------------------------------------------------------------------------
# register tiles on the CUDA cores (the flagship kernels): a thread's tm×tn outputs in registers, its rows and
# columns in groups of consecutive ones spaced across the block tile

@cuda.jit(device=True, forceinline=True, fastmath=True)
def thread_origin(wx, wy, warps_x, vm, vn):
    """``(a_base, b_base)``: the first of this thread's rows and of its columns in the block tile, a warp being a
    ``wy``×``wx`` patch of the thread grid and ``warps_x`` patches a row of it; 32-bit, so that ``base + constant``
    is provably non-negative (no wraparound select) and the constant folds into a load's immediate offset."""
    tid = cuda.threadIdx.x
    wq = tid // (wx * wy)  # warp (patch) index
    lq = tid % (wx * wy)  # lane within the patch
    return u32((wq // warps_x * wy + lq // wx) * vm), u32((wq % warps_x * wx + lq % wx) * vn)


@cuda.jit(device=True, forceinline=True, fastmath=True)
def multiply_tile(acc, a_f, b_f, a_s, b_s, cur, a_base, b_base, bk, tm, tn, vm, vn, gm, gn):
    """A thread's multiply-adds of the k-tile in stage ``cur`` of the k-major shared tiles, the fragments
    double-buffered in registers (``a_f``: 2 ``tm``, ``b_f``: 2 ``tn``): step kk + 1's shared loads are in flight
    during step kk's multiply-adds. NVVM leaves the loop over k rolled (its body is too large), so two steps are
    spelled out in it; nvcc unrolls it."""
    load_fragment(a_f, 0, a_s, cur, 0, a_base, tm, vm, gm)
    load_fragment(b_f, 0, b_s, cur, 0, b_base, tn, vn, gn)
    for k2 in unroll(range(u32(bk) // u32(2))):  # an unsigned counter: no wraparound select, no masking
        kk = k2 * u32(2)
        load_fragment(a_f, tm, a_s, cur, kk + 1, a_base, tm, vm, gm)
        load_fragment(b_f, tn, b_s, cur, kk + 1, b_base, tn, vn, gn)
        outer_product(acc, a_f, 0, b_f, 0, tm, tn)
        if kk + 2 < bk:
            load_fragment(a_f, 0, a_s, cur, kk + 2, a_base, tm, vm, gm)
            load_fragment(b_f, 0, b_s, cur, kk + 2, b_base, tn, vn, gn)
        outer_product(acc, a_f, tm, b_f, tn, tm, tn)


@cuda.jit(device=True, forceinline=True, fastmath=True)
def load_fragment(frag, at, tile, stage, kk, base, n, group, spacing):
    """``frag[at + i] = tile[stage, kk, base + i // group * spacing + i % group]`` for ``i < n``: a thread's ``n``
    rows (or columns) at k-step ``kk`` of a k-major tile, ``group`` consecutive ones ``spacing`` apart."""
    for i in unroll(range(n)):
        frag[at + i] = tile[stage, kk, base + ((i // group) * spacing + i % group)]


@cuda.jit(device=True, forceinline=True, fastmath=True)
def outer_product(acc, a_frag, a_at, b_frag, b_at, tm, tn):
    """``acc[i, j] += a[i] * b[j]``: one k-step's multiply-adds into a thread's ``tm``×``tn`` accumulators."""
    for i in unroll(range(tm)):
        for j in unroll(range(tn)):
            acc[i * tn + j] += a_frag[a_at + i] * b_frag[b_at + j]


@cuda.jit(device=True, forceinline=True, fastmath=True)
def store_tile(out, acc, r0, c0, h, w, tm, tn, vm, vn, groups, gm, gn, vec):
    """A thread's ``tm``×``tn`` accumulators into ``out`` inside ``h``×``w``: rows ``r0 + i // vm * gm + i % vm``,
    columns in ``groups`` groups of ``vn`` from ``c0``, ``gn`` apart; with ``vec`` each group of 4 is one 16-byte
    store (``w`` a multiple of 4: a group is inside or outside whole), else element by element."""
    for i in unroll(range(tm)):
        r = r0 + ((i // vm) * gm + i % vm)
        if r < h:
            for g in unroll(range(groups)):
                c = c0 + g * gn
                if vec:
                    if c < w:
                        vstore4(out, (u32(r), u32(c)), acc, i * tn + g * vn)
                else:
                    for q in unroll(range(vn)):
                        if c + q < w:
                            out[u32(r), u32(c + q)] = acc[i * tn + g * vn + q]
