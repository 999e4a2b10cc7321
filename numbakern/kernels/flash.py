"""The steps FlashAttention-2 repeats on ``mma.sync`` fragments, as device functions the tensor-core attention
kernels (``attention_tc``, ``attention_3xtf32``) compose: the tiles' ``cp.async`` copies, the online softmax of a
key block's scores and the final division by the row sums.

A warp owns 16 query rows; a score or output tile is an m16n8 accumulator (``numbakern.mma.layout``): lane
``(g, t) = (lane >> 2, lane % 4)`` holds rows g and g + 8 (registers ``4 j + 2 h`` and ``4 j + 2 h + 1`` of tile j
for row g + 8 h), columns ``8 j + 2 t`` and ``8 j + 2 t + 1``. A row's values are spread over the four lanes of its
quad, so its maximum and sum are two ``shfl_xor`` steps. Every function is inlined (``forceinline``): the arrays it
takes are the kernel's registers and shared tiles. Constants are spelled as literals (``-1.0e30``, the kernels'
``MASKED``: a masked score, ``exp2(MASKED - m)`` is 0 for any finite row maximum m).
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from ..async_copy import copy_async16
from ..unroll import unroll

#: scores and maxima are kept in base-2 units: exp(scale x - m) = exp2(scale log2(e) x - m'), one ex2 a probability
LOG2E = 1.4426950408889634


@cuda.jit(device=True, forceinline=True, fastmath=True)
def copy_rows(tile, src, first, row0, rows, crow, cc, copies, row_step, src_step, chunk):
    """Rows ``r = crow + i * row_step`` (``i < copies``) of a shared tile, chunk ``cc`` of each (``chunk``
    elements), from ``src``'s flat offsets ``first + i * src_step`` by 16-byte ``cp.async`` copies; a row's chunk
    lands XORed with the row mod 8 (the eight rows an ``ldmatrix`` phase or a fragment read touches fall in eight
    bank groups), and the tile's rows ``row0 + r`` past ``rows`` are zero-filled."""
    for i in unroll(range(copies)):
        r = crow + i * row_step
        copy_async16(tile, (r, (cc ^ (r % 8)) * chunk), src, first + i * src_step, row0 + r < rows)


@cuda.jit(device=True, forceinline=True, fastmath=True)
def start_rows(o, m, l, o_regs):
    """The output accumulators zero, the running maxima masked, the partial row sums zero."""
    for i in unroll(range(o_regs)):
        o[i] = np.float32(0.0)
    for h in unroll(range(2)):
        m[h] = np.float32(-1.0e30)
        l[h] = np.float32(0.0)


@cuda.jit(device=True, forceinline=True, fastmath=True)
def online_softmax(s, o, m, l, scale_log2, masked, causal, end, diag, s_tiles, o_tiles):
    """One key block's scores ``s`` (``s_tiles`` n8 tiles) into probabilities, in base 2: scaled by ``scale_log2``,
    masked where ``masked`` (this lane's keys ``8 j + e`` of the block are visible while ``8 j + e < end``, and
    with ``causal`` while ``8 j + e < diag + 8 h`` for row g + 8 h), the running maxima ``m`` raised, the partial
    sums ``l`` and the ``o_tiles`` output tiles ``o`` rescaled by ``exp2(m_old - m_new)``."""
    for h in unroll(range(2)):
        last = end
        if causal:
            last = min(last, diag + 8 * h)
        mx = np.float32(-1.0e30)
        for j in unroll(range(s_tiles)):
            for e in unroll(range(2)):
                x = s[j * 4 + h * 2 + e] * scale_log2
                if masked and j * 8 + e >= last:
                    x = np.float32(-1.0e30)
                s[j * 4 + h * 2 + e] = x
                mx = max(mx, x)
        mx = max(mx, cuda.shfl_xor_sync(0xFFFFFFFF, mx, 1))  # the row's quad: lane bits 0, 1
        mx = max(mx, cuda.shfl_xor_sync(0xFFFFFFFF, mx, 2))
        m_new = max(m[h], mx)
        alpha = math.exp2(m[h] - m_new)
        m[h] = m_new
        total = l[h] * alpha
        for j in unroll(range(s_tiles)):
            for e in unroll(range(2)):
                p = math.exp2(s[j * 4 + h * 2 + e] - m_new)
                s[j * 4 + h * 2 + e] = p
                total += p
        l[h] = total
        for j in unroll(range(o_tiles)):
            o[j * 4 + h * 2] *= alpha
            o[j * 4 + h * 2 + 1] *= alpha


@cuda.jit(device=True, forceinline=True, fastmath=True)
def store_rows(out, o, l, bh, row, lq, t4, o_tiles):
    """Rows ``row`` and ``row + 8`` of ``out[bh]`` (those before ``lq``): the output tiles divided by the row sums,
    whose four parts (one per lane of the quad) are added here."""
    for h in unroll(range(2)):
        total = l[h]
        total += cuda.shfl_xor_sync(0xFFFFFFFF, total, 1)
        total += cuda.shfl_xor_sync(0xFFFFFFFF, total, 2)
        r = row + 8 * h
        if r < lq:
            inv = np.float32(1.0) / total
            for j in unroll(range(o_tiles)):
                out[bh, r, j * 8 + t4 * 2] = o[j * 4 + h * 2] * inv
                out[bh, r, j * 8 + t4 * 2 + 1] = o[j * 4 + h * 2 + 1] * inv
