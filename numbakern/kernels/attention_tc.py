"""Attention forward on the tensor cores, FlashAttention-2 style: ``out = softmax(scale * q @ k^T [+ mask]) @ v``
for bf16 or f16 ``q``, ``k``, ``v``, with fp32 accumulation, fp32 softmax statistics and **fp32 output**.

One block computes ``bm`` query rows of one (batch, head) with ``bm / 16`` warps and walks over the keys ``bn`` at a
time. Each warp owns 16 query rows and everything about them lives in its registers, as ``mma.sync`` m16n8k16
fragments (the PTX ISA's layouts, ``numbakern.mma.layout``; ``g = lane >> 2``, ``t = lane % 4``):

- **Q** is read once from shared memory into A fragments (``ldmatrix_x4``, one per 16 columns of the head dim) that
  stay in registers for the whole kernel.
- **S = Q K^T**: K is the mma's column-major B operand, and a row-major K tile *is* K^T column-major, so a plain
  ``ldmatrix_x4`` (no ``.trans``) of 16 keys x 16 head-dim columns gives the b0, b1 of two n8 tiles of keys.
  The scores of a key block are ``bn / 8`` accumulator tiles: lane (g, t) holds rows g and g + 8, keys
  ``8j + 2t, 8j + 2t + 1`` of tile j.
- **Online softmax** in fp32 on those registers, in base 2 (scores times ``scale * log2(e)``, ``exp2``: one
  ``ex2`` per probability, as FlashAttention-2 computes it): a row's ``bn`` scores are spread over the 4 lanes of
  its quad (lanes 4g .. 4g + 3), so its maximum is the lane's own maximum and two ``shfl_xor`` steps (1, 2). The
  running maximum ``m`` and the per-lane partial row sum ``l`` are fp32; the sum's four parts are added once at the
  end.
- **P in registers, no trip through shared memory**: the accumulator layout of two adjacent n8 score tiles is the
  A-fragment layout of one k16 step (a0 = row g, keys 2t, 2t+1 = c0, c1 of the first tile; a1 = its c2, c3 (row
  g + 8); a2, a3 = the same of the second tile), so each ``pack_bf16x2`` / ``pack_f16x2`` of two probabilities is
  an A register of ``P @ V`` as it stands. P is rounded to 16 bits there (that rounding is the kernel's largest
  error: see ``error_bound``); the row sum ``l`` adds the unrounded fp32 probabilities, as FlashAttention-2 does.
- **O += P V**: V row-major is the B operand's transpose, so ``ldmatrix_x4_trans`` gives two n8 tiles' b0, b1.
  O is ``d / 8`` fp32 accumulator tiles per warp, rescaled by ``exp(m_old - m_new)`` when a row's maximum grows
  and divided by ``l`` at the end.

Shared memory holds a Q tile, one K tile and one V tile (16-bit, ``2 * d * (bm + 2 bn)`` bytes), filled by 16-byte
``cp.async`` copies; a chunk's place in its row is XORed with the row mod 8 (``d`` a multiple of 64), so the eight
rows one ``ldmatrix`` phase reads land in eight different bank groups. The copies overlap the math as in the fp32
kernel's ``kv_split``: V of key block t lands during the scores of block t, K of block t + 1 during ``P @ V`` of
block t. Rows and keys past the sequences' ends are zero-filled by the copies and masked. Query blocks run heaviest
first (causal: the last rows see the most keys); causal key blocks past the query block's last row are skipped,
and the mask is applied only in blocks that need it.

Masked scores are a large negative number, not -inf (fastmath guarantees no infinities); the first key block
holds a visible key of every row (key 0), so no row's running maximum stays the mask value once it is processed.

Why fp32 output: the result leaves fp32 accumulators, and writing it costs ``4 * lq * d`` bytes against
``4 * lq * lk * d`` flops (under 1% of the time at the benchmark's sizes); a caller that wants 16-bit rounds once.
torch's flash backend returns the input's dtype; ``scripts/bench.py`` times it as it is.

bf16 data is held as uint16 bit patterns (``numbakern.launch.BFLOAT16``, docs/tensor-cores.md §2):
``attention_bf16`` takes torch bfloat16 tensors, ``ml_dtypes.bfloat16`` arrays or uint16 arrays of bit patterns;
``attention_f16`` float16 tensors or arrays.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from ..async_copy import async_commit, async_wait, copy_async16
from ..fastpath import jit_options
from ..launch import (
    BFLOAT16,
    LaunchConfig,
    cdiv,
    check_array,
    check_same_device,
    empty_like_on,
    to_kernel_arg,
)
from ..mma import (
    formats,
    ldmatrix_x4,
    ldmatrix_x4_trans,
    mma_m16n8k16_bf16,
    mma_m16n8k16_f16,
    pack_bf16x2,
    pack_f16x2,
)
from ..registry import Case, KernelSpec, Work, random_array, register
from ..specialize import specialize
from ..unroll import unroll
from .attention import _as_3d  # (batch, heads, seq, d) as (batch*heads, seq, d)

#: a masked score: exp2(MASKED - m) is 0 for any finite row maximum m
MASKED = -1.0e30
LOG2E = 1.4426950408889634
FULL_MASK = 0xFFFFFFFF
#: static shared memory a kernel may declare without opting in to more
STATIC_SHARED_LIMIT = 48 * 1024
CHUNK = 8  # 16-bit elements in one 16-byte copy and one ldmatrix row
#: element dtype, mma and packing of each input format, by ``f16`` (bf16 is held as uint16 bit patterns)
FORMATS = {False: (np.uint16, mma_m16n8k16_bf16, pack_bf16x2), True: (np.float16, mma_m16n8k16_f16, pack_f16x2)}
#: the unit roundoff of the 16-bit probabilities (round to nearest: half a unit in the last of 8 or 11 bits)
UNIT_ROUNDOFF = {False: 2.0**-8, True: 2.0**-11}


def shared_bytes(d: int, bm: int, bn: int) -> int:
    """Shared memory of one block: a Q tile, a K tile and a V tile of 16-bit values."""
    return 2 * d * (bm + 2 * bn)


def _check_config(f16, d, causal, bm, bn, q_in_regs=True, min_blocks=1) -> int:
    """Threads per block, or a ValueError saying which constraint fails."""
    what = "flash_attention_tc"
    if not isinstance(min_blocks, int) or isinstance(min_blocks, bool) or min_blocks < 1:
        raise ValueError(f"{what}: min_blocks must be a positive int, got {min_blocks!r}")
    for name, v in (("f16", f16), ("causal", causal), ("q_in_regs", q_in_regs)):
        if not isinstance(v, bool):
            raise ValueError(f"{what}: {name} must be True or False, got {v!r}")
    for name, v in (("d", d), ("bm", bm), ("bn", bn)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{what}: {name} must be a positive int, got {v!r}")
    if d % 64:
        raise ValueError(f"{what}: head dim d={d} must be a multiple of 64 (rows of whole 8-chunk swizzle groups)")
    if bm % 16:
        raise ValueError(f"{what}: bm={bm} must be a multiple of 16 (a warp owns 16 query rows)")
    if bn % 16:
        raise ValueError(f"{what}: bn={bn} must be a multiple of 16 (the k of P @ V)")
    nt = bm // 16 * 32
    row_chunks = d // CHUNK
    if nt > 1024 or nt % row_chunks or bm % (nt // row_chunks) or bn % (nt // row_chunks):
        raise ValueError(f"{what}: the {bm}x{d} Q and {bn}x{d} K/V tiles must split evenly over {nt} threads in "
                         "16-byte chunks, each thread keeping its chunk column")
    if shared_bytes(d, bm, bn) > STATIC_SHARED_LIMIT:
        raise ValueError(f"{what}: d={d}, bm={bm}, bn={bn} need {shared_bytes(d, bm, bn)} bytes of shared memory, "
                         "more than the 48 KiB of static shared memory")
    return nt


@specialize
def flash_attention_tc(f16: bool = False, d: int = 64, causal: bool = False, bm: int = 64, bn: int = 64,
                       q_in_regs: bool = True, min_blocks: int = 1):
    """The kernel for one format (bf16 bit patterns, or with ``f16`` float16), head dim and tile configuration:
    ``(q, k, v, out, scale)``, ``q``/``k``/``v`` (batch*heads, seq, d) 16-bit, ``out`` (batch*heads, lq, d) float32;
    launch with ``attention_tc_launch``. ``q_in_regs``: Q's A fragments stay in registers for the whole kernel
    (``d / 4`` registers a thread); without it they are read from the shared Q tile again in every key block (one
    ``ldmatrix_x4`` per 16 head-dim columns, a quarter more shared-memory reads at ``bn = 64``), which keeps
    d = 128 from spilling. ``min_blocks``: the ``launch_bounds`` minimum of resident blocks per multiprocessor
    (1: the compiler's choice)."""
    nt = _check_config(f16, d, causal, bm, bn, q_in_regs, min_blocks)
    elem, mma, pack = FORMATS[f16]
    row_chunks = d // CHUNK  # 16-byte chunks in a row of Q, K or V
    rstep = nt // row_chunks  # rows between one thread's chunks of a tile
    q_copies = bm // rstep
    kv_copies = bn // rstep
    step = rstep * d  # elements between one thread's chunks of a tile
    next_block = bn * d  # elements between two key blocks
    ks_n = d // 16  # k16 steps of Q K^T: Q's A fragments
    sj_n = bn // 16  # pairs of n8 score tiles: ldmatrix_x4 calls of K per k-step, and k16 steps of P V
    oj_n = d // 16  # pairs of n8 output tiles: ldmatrix_x4_trans calls of V per k-step
    q_regs = ks_n * 4 if q_in_regs else 4
    p_regs = sj_n * 4
    s_regs = bn // 8 * 4
    o_regs = d // 8 * 4

    @cuda.jit(**jit_options(threads=nt, min_blocks=min_blocks if min_blocks > 1 else None))
    def flash_attention_tc(q, k, v, out, scale):
        tid = cuda.threadIdx.x
        lane = tid % 32
        warp = tid // 32
        g = lane >> 2  # groupID: accumulator rows g and g + 8
        t4 = lane % 4  # threadID_in_group: accumulator columns 2 * t4, 2 * t4 + 1
        sw = lane % 8  # the row mod 8 of every ldmatrix row address this lane gives: its chunks' XOR
        # ldmatrix columns: chunk 2 i + h of a row with this XOR is (2 i + h) ^ sw = (h ^ sw) ^ 2 i (2 i is even),
        # so each lane's column is one base XORed with a constant per step
        a_col = ((lane // 16) ^ sw) * CHUNK  # Q and V: lanes 16-31 name the odd chunk
        k_col = ((lane // 8 % 2) ^ sw) * CHUNK  # K: lanes 8-15 and 24-31 name the odd chunk
        a_row = warp * 16 + lane % 16  # Q: the warp's rows 0-15
        k_row = lane // 16 * 8 + sw  # K: keys 0-7 (lanes 0-15), 8-15 (lanes 16-31) of 16
        bh = cuda.blockIdx.y
        q0 = (cuda.gridDim.x - 1 - cuda.blockIdx.x) * bm  # heaviest query blocks first
        lq = q.shape[1]
        lk = k.shape[1]
        crow = tid // row_chunks  # this thread's chunks of a tile: rows crow + i * rstep, chunk cc
        cc = tid % row_chunks
        # scores and maxima in base-2 units: exp(scale x - m) = exp2(scale log2(e) x - m'), one ex2 a probability
        scale_log2 = scale * np.float32(LOG2E)

        q_s = cuda.shared.array((bm, d), dtype=elem, alignment=128)
        k_s = cuda.shared.array((bn, d), dtype=elem, alignment=128)
        v_s = cuda.shared.array((bn, d), dtype=elem, alignment=128)
        qf = cuda.local.array(q_regs, np.uint32)  # Q's A fragments, for the whole kernel
        kf = cuda.local.array(4, np.uint32)  # b0, b1 of two n8 key tiles
        vf = cuda.local.array(4, np.uint32)  # b0, b1 of two n8 output tiles
        pf = cuda.local.array(p_regs, np.uint32)  # P's A fragments
        s = cuda.local.array(s_regs, np.float32)
        o = cuda.local.array(o_regs, np.float32)
        m = cuda.local.array(2, np.float32)  # running maxima of rows g and g + 8
        l = cuda.local.array(2, np.float32)  # this lane's part of their sums
        for i in unroll(range(o_regs)):
            o[i] = np.float32(0.0)
        for h in unroll(range(2)):
            m[h] = np.float32(MASKED)
            l[h] = np.float32(0.0)

        nkb = (lk + bn - 1) // bn
        if causal:  # keys past the block's last row are masked for every row: skip their blocks
            nkb = min(nkb, (q0 + bm + bn - 1) // bn)

        # Q and K of the first key block; flat offsets of this thread's first chunks, the next ones `step` further
        q_first = (bh * lq + q0 + crow) * d + cc * CHUNK
        kv_first = (bh * lk + crow) * d + cc * CHUNK
        for i in unroll(range(q_copies)):
            r = crow + i * rstep
            copy_async16(q_s, (r, (cc ^ (r % 8)) * CHUNK), q, q_first + i * step, q0 + r < lq)
        for i in unroll(range(kv_copies)):
            r = crow + i * rstep
            copy_async16(k_s, (r, (cc ^ (r % 8)) * CHUNK), k, kv_first + i * step, r < lk)
        async_commit()
        async_wait(0)
        cuda.syncthreads()
        # lanes 0-15 name the warp's rows 0-15 at chunk 2 ks, lanes 16-31 the same rows at chunk 2 ks + 1: a0..a3
        if q_in_regs:
            for ks in unroll(range(ks_n)):
                ldmatrix_x4(qf, ks * 4, q_s, (a_row, a_col ^ (ks * 16)))

        for t in range(nkb):
            kb0 = t * bn
            async_wait(0)  # K of this block has landed ...
            cuda.syncthreads()  # ... for everyone; everyone is done with the last block's V
            kv_block = kv_first + kb0 * d
            for i in unroll(range(kv_copies)):  # V of this block lands while the scores are computed
                r = crow + i * rstep
                copy_async16(v_s, (r, (cc ^ (r % 8)) * CHUNK), v, kv_block + i * step, kb0 + r < lk)
            async_commit()

            # S = Q K^T. ldmatrix without .trans: lanes 0-7 name keys 16 sj + 0..7 at chunk 2 ks (b0 of the first
            # n8 tile), lanes 8-15 the same keys at chunk 2 ks + 1 (its b1), lanes 16-31 keys 16 sj + 8..15 (the
            # second tile's b0, b1)
            for i in unroll(range(s_regs)):
                s[i] = np.float32(0.0)
            for ks in unroll(range(ks_n)):
                qa = ks * 4 if q_in_regs else 0
                if not q_in_regs:
                    ldmatrix_x4(qf, 0, q_s, (a_row, a_col ^ (ks * 16)))
                for sj in unroll(range(sj_n)):
                    ldmatrix_x4(kf, 0, k_s, (k_row + sj * 16, k_col ^ (ks * 16)))
                    mma(s, sj * 8, qf, qa, kf, 0, s, sj * 8)
                    mma(s, sj * 8 + 4, qf, qa, kf, 2, s, sj * 8 + 4)

            # online softmax on rows g (h = 0: c0, c1 of each tile) and g + 8 (h = 1: c2, c3)
            masked = kb0 + bn > lk or (causal and kb0 + bn - 1 > q0 + warp * 16)
            for h in unroll(range(2)):
                # this lane's keys kb0 + 8 j + 2 t4 + e are visible while 8 j + e < end (one compare with a constant)
                end = lk - kb0 - t4 * 2
                if causal:
                    end = min(end, q0 + warp * 16 + g + 8 * h + 1 - kb0 - t4 * 2)
                mx = np.float32(MASKED)
                for j in unroll(range(bn // 8)):
                    for e in unroll(range(2)):
                        x = s[j * 4 + h * 2 + e] * scale_log2
                        if masked and j * 8 + e >= end:
                            x = np.float32(MASKED)
                        s[j * 4 + h * 2 + e] = x
                        mx = max(mx, x)
                mx = max(mx, cuda.shfl_xor_sync(FULL_MASK, mx, 1))  # the row's quad: lane bits 0, 1
                mx = max(mx, cuda.shfl_xor_sync(FULL_MASK, mx, 2))
                m_new = max(m[h], mx)
                alpha = math.exp2(m[h] - m_new)
                m[h] = m_new
                total = l[h] * alpha
                for j in unroll(range(bn // 8)):
                    for e in unroll(range(2)):
                        p = math.exp2(s[j * 4 + h * 2 + e] - m_new)
                        s[j * 4 + h * 2 + e] = p
                        total += p
                l[h] = total
                for j in unroll(range(d // 8)):
                    o[j * 4 + h * 2] *= alpha
                    o[j * 4 + h * 2 + 1] *= alpha
            # two n8 score tiles are one k16 A fragment: a0 = c0, c1 and a1 = c2, c3 of the first, a2, a3 the second's
            for sj in unroll(range(sj_n)):
                for r4 in unroll(range(4)):
                    pf[sj * 4 + r4] = pack(s[sj * 8 + r4 * 2], s[sj * 8 + r4 * 2 + 1])

            cuda.syncthreads()  # everyone is done with this block's K
            if t + 1 < nkb:  # K of the next block lands during P V (an empty group after the last: the count holds)
                for i in unroll(range(kv_copies)):
                    r = crow + i * rstep
                    copy_async16(k_s, (r, (cc ^ (r % 8)) * CHUNK), k, kv_block + next_block + i * step,
                                 kb0 + bn + r < lk)
            async_commit()
            async_wait(1)  # V of this block has landed ...
            cuda.syncthreads()  # ... for everyone

            # O += P V. ldmatrix .trans: lanes 0-7 name keys 16 sj + 0..7 at chunk 2 oj (b0 of output tile 2 oj),
            # lanes 8-15 keys + 8..15 (its b1), lanes 16-31 the same at chunk 2 oj + 1 (tile 2 oj + 1)
            for sj in unroll(range(sj_n)):
                for oj in unroll(range(oj_n)):
                    ldmatrix_x4_trans(vf, 0, v_s, (sj * 16 + lane % 16, a_col ^ (oj * 16)))
                    mma(o, oj * 8, pf, sj * 4, vf, 0, o, oj * 8)
                    mma(o, oj * 8 + 4, pf, sj * 4, vf, 2, o, oj * 8 + 4)

        for h in unroll(range(2)):
            total = l[h]
            total += cuda.shfl_xor_sync(FULL_MASK, total, 1)
            total += cuda.shfl_xor_sync(FULL_MASK, total, 2)
            row = q0 + warp * 16 + g + 8 * h
            if row < lq:
                inv = np.float32(1.0) / total
                for j in unroll(range(d // 8)):
                    out[bh, row, j * 8 + t4 * 2] = o[j * 4 + h * 2] * inv
                    out[bh, row, j * 8 + t4 * 2 + 1] = o[j * 4 + h * 2 + 1] * inv

    return flash_attention_tc


def attention_tc_launch(config: dict, batch_heads: int, lq: int) -> LaunchConfig:
    """One block per ``bm`` query rows of one (batch, head): grid (query blocks, batch*heads), 1-D blocks."""
    nt = _check_config(config.get("f16", False), config["d"], config.get("causal", False), config["bm"],
                       config["bn"], config.get("q_in_regs", True), config.get("min_blocks", 1))
    return LaunchConfig((max(1, cdiv(lq, config["bm"])), max(1, batch_heads), 1), (nt, 1, 1), 0)


#: tile configurations per head dim (48 KiB of static shared memory at most): d = 64: 128 rows (8 warps) x 64 keys
#: (32 KiB), Q's fragments kept in registers; d = 128: 64 rows (4 warps) x 64 keys (48 KiB), Q's fragments read
#: again per key block (kept, they take numba's PTX to 255 registers and spills, ptxas -v offline). Not yet tuned
#: on a GPU.
CONFIGS = {64: {"bm": 128, "bn": 64, "q_in_regs": True}, 128: {"bm": 64, "bn": 64, "q_in_regs": False}}
#: launch_bounds' minimum of resident blocks, by (head dim, causal), measured on an H200 (docs/tensor-cores.md):
#: d = 64, 2 blocks of 256 threads: 128 registers instead of 134, twice the warps for 32-44 bytes of spills, 19-20%
#: less time in Numba and 27% in C; d = 128 causal, 2 blocks (what its registers allow anyway): ptxas then schedules
#: the C for that occupancy (206 registers instead of 171, no spills), which takes 15% less time, as little as
#: Numba's; d = 128 without the mask is fastest as the compiler chooses (its C fits 3 blocks at 168 registers)
MIN_BLOCKS = {(64, False): 2, (64, True): 2, (128, True): 2}
#: the simulator's: two warps, 16 keys a block, which the test sequence lengths do not divide
SIM_CONFIGS = {64: {"bm": 32, "bn": 16, "q_in_regs": True}, 128: {"bm": 32, "bn": 16, "q_in_regs": False}}


def config_for(f16: bool, d: int, causal: bool) -> dict:
    """The configuration ``attention_bf16``/``attention_f16`` run for this head dim (the simulator's small one under
    the simulator)."""
    from .. import mode

    table = SIM_CONFIGS if mode.in_simulator() else CONFIGS
    if d not in table:
        raise ValueError(f"attention_tc: head dim {d} is not supported; supported: "
                         f"{', '.join(map(str, sorted(table)))}")
    blocks = MIN_BLOCKS.get((d, bool(causal)))
    return {"f16": bool(f16), "d": d, "causal": bool(causal), **table[d], **({"min_blocks": blocks} if blocks else {})}


# ---------------------------------------------------------------------------------------------------------------
# the entry points

def attention_bf16(q, k, v, *, causal: bool = False, scale: float | None = None, out=None):
    """``softmax(scale * q @ k^T) @ v`` per (batch, head) on the tensor cores, for bf16 ``q``, ``k``, ``v``; fp32
    accumulation and softmax, float32 result. ``causal`` masks key j for query i when j > i.

    ``q``: (batch, heads, lq, d) or (batch*heads, lq, d); ``k``, ``v``: the same with lk keys; torch bfloat16
    tensors, ``ml_dtypes.bfloat16`` arrays or uint16 arrays of bf16 bit patterns, C-contiguous, 16-byte aligned;
    d = 64 or 128. ``scale`` defaults to 1/sqrt(d). ``out``: float32, q's shape, made if not given. Returns ``out``."""
    return _attention(False, q, k, v, causal, scale, out)


def attention_f16(q, k, v, *, causal: bool = False, scale: float | None = None, out=None):
    """As ``attention_bf16``, for float16 ``q``, ``k``, ``v`` (torch float16 tensors or numpy float16 arrays)."""
    return _attention(True, q, k, v, causal, scale, out)


def _attention(f16, q, k, v, causal, scale, out):
    if not isinstance(causal, bool):
        raise TypeError(f"argument 'causal' must be True or False, got {causal!r}")
    dtype = np.dtype(np.float16) if f16 else BFLOAT16
    infos = {}
    for name, x in (("q", q), ("k", k), ("v", v)):
        infos[name] = check_array(name, x, dtype=dtype)
        if len(infos[name].shape) not in (3, 4):
            raise ValueError(f"argument '{name}' must have shape (batch, heads, seq, head_dim) or "
                             f"(batch*heads, seq, head_dim), got {infos[name].shape}")
    qs, ks, vs = infos["q"].shape, infos["k"].shape, infos["v"].shape
    if not len(qs) == len(ks) == len(vs):
        raise ValueError(f"arguments 'q', 'k', 'v' must have the same number of dimensions, got {qs}, {ks}, {vs}")
    if ks != vs:
        raise ValueError(f"arguments 'k' and 'v' must have the same shape, got {ks} and {vs}")
    if qs[:-2] != ks[:-2] or qs[-1] != ks[-1]:
        raise ValueError(f"argument 'q' {qs} and 'k' {ks} must agree in batch, heads and head_dim")
    if ks[-2] == 0:
        raise ValueError("arguments 'k' and 'v' must have at least one key (seq > 0)")
    d = int(qs[-1])
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    if not isinstance(scale, (int, float)) or isinstance(scale, bool) or not math.isfinite(scale):
        raise ValueError(f"argument 'scale' must be a finite number, got {scale!r}")
    config = config_for(f16, d, causal)
    if out is None:
        out = empty_like_on(q, tuple(qs), np.dtype(np.float32))
    infos["out"] = check_array("out", out, dtype=np.float32)
    if infos["out"].shape != qs:
        raise ValueError(f"argument 'out' must have shape {qs} (q's), got {infos['out'].shape}")
    check_same_device(**infos)
    for name, info in infos.items():
        if not info.c_contiguous or info.address % 16:
            raise ValueError(f"argument '{name}' must be C-contiguous and 16-byte aligned (rows are copied 16 bytes "
                             "at a time)")
    lq = int(qs[-2])
    bh = int(np.prod(qs[:-2]))
    if lq == 0 or bh == 0:
        return out
    args = [_as_3d(to_kernel_arg(x), bh) for x in (q, k, v, out)]
    cfg = attention_tc_launch(config, bh, lq)
    flash_attention_tc(**config)[cfg.grid, cfg.block](*args, np.float32(scale))
    return out


# ---------------------------------------------------------------------------------------------------------------
# the reference and the error bound (float64, from the 16-bit values themselves)

def values(x) -> np.ndarray:
    """The float64 values of bf16 bit patterns (uint16) or float16 values."""
    x = np.asarray(x)
    return (x if x.dtype == np.float16 else formats.bf16_bits_to_f32(x)).astype(np.float64)


def softmax_weights(q, k, scale, causal) -> np.ndarray:
    """float64 ``softmax(scale q k^T)`` per (batch, head) of the 16-bit inputs' values, the row maximum subtracted;
    causal: key j hidden from query i when j > i."""
    s = np.einsum("bid,bjd->bij", values(q), values(k)) * float(scale)
    if causal:
        lq, lk = s.shape[1:]
        s = np.where(np.arange(lk)[None, :] > np.arange(lq)[:, None], -np.inf, s)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return p / p.sum(axis=-1, keepdims=True)


def reference(q, k, v, scale, causal) -> np.ndarray:
    """float64 ``softmax(scale q k^T) v`` of the 16-bit inputs' values."""
    return np.einsum("bij,bjd->bid", softmax_weights(q, k, scale, causal), values(v))


def error_bound(q, k, v, scale, causal, f16) -> np.ndarray:
    """The largest error each output element may have, in float64.

    An output is ``sum_j p_ij v_j / sum_j p_ij``. The kernel rounds each probability to the 16-bit format before
    ``P @ V`` (relative error at most the unit roundoff u: 2^-8 for bf16, 2^-11 for f16) while the row sum adds the
    fp32 values, so the output moves by at most ``u * sum_j p_ij |v_jd|``. f16 probabilities below 2^-14 are
    subnormal, rounded to 2^-24 steps: at most 2^-25 absolute each, ``2^-25 * sum_j |v_jd|`` after the division by
    the row sum (at least 1: the row maximum's own term). Everything else is fp32 arithmetic: a score's tensor-core
    sum (d products, about d * 2^-24 relative to ``|scale| * |q_i| . |k_j|``; a GPU truncates inside it) changes
    ``exp(score)`` by about that much, and the rescaling, accumulation and division add a few units of 2^-24: the
    bound allows ``2^-16 * (1 + the row's largest score magnitude)`` relative to ``sum_j p_ij |v_jd|``.
    """
    p = softmax_weights(q, k, scale, causal)
    av = np.abs(values(v))
    weighted = np.einsum("bij,bjd->bid", p, av)
    score_mag = abs(float(scale)) * np.einsum("bid,bjd->bij", np.abs(values(q)), np.abs(values(k))).max(axis=-1)
    bound = (UNIT_ROUNDOFF[f16] + 2.0**-16 * (1.0 + score_mag[..., None])) * weighted
    if f16:
        visible = p > 0  # (masked keys carry no weight)
        bound = bound + 2.0**-25 * np.einsum("bij,bjd->bid", visible.astype(np.float64), av)
    return bound


# ---------------------------------------------------------------------------------------------------------------
# registry

SIGNATURES = {
    False: ("void(uint16[:, :, ::1], uint16[:, :, ::1], uint16[:, :, ::1], float32[:, :, ::1], float32)",),
    True: ("void(float16[:, :, ::1], float16[:, :, ::1], float16[:, :, ::1], float32[:, :, ::1], float32)",),
}


def _inputs(rng, shape, dist, f16, what) -> np.ndarray:
    """A random 16-bit array (bit patterns for bf16), never all zeros. ``large`` q and k are scaled back to keep q.k
    in a range softmax resolves (scores of 1e8 would make every row one-hot), and f16 values are kept finite."""
    x = random_array(rng, shape, np.float32, dist)
    if dist == "large" and what in "qk":
        x = x / np.float32(1e4)
    if f16:
        return np.clip(x, -60000.0, 60000.0).astype(np.float16)
    return formats.f32_to_bf16_bits(x)


def _case_maker(f16: bool, d: int, causal: bool):
    def make_case(size, rng, dist="uniform"):
        bh, lq, lk = size["bh"], size["lq"], size["lk"]
        q = _inputs(rng, (bh, lq, d), dist, f16, "q")
        k = _inputs(rng, (bh, lk, d), dist, f16, "k")
        v = _inputs(rng, (bh, lk, d), dist, f16, "v")
        out = np.full((bh, lq, d), np.nan, dtype=np.float32)
        scale = np.float32(1.0 / math.sqrt(d))
        cfg = attention_tc_launch(config_for(f16, d, causal), bh, lq)
        return Case((q, k, v, out, scale), cfg, dict(size))

    return make_case


def _expected(causal):
    def expected(q, k, v, out, scale):
        return {3: reference(q, k, v, scale, causal)}

    return expected


def _scale(f16, causal):
    def error_scale(q, k, v, out, scale):
        # the spec's rtol is 1: the scale is the whole bound (error_bound says where each term comes from)
        return {3: error_bound(q, k, v, scale, causal, f16)}

    return error_scale


def _work(d: int, causal: bool):
    def work(size):
        # 2 flops per multiply-add, two products (q k^T and p v) per visible (query, key) pair
        bh, lq, lk = size["bh"], size["lq"], size["lk"]
        if not causal:
            pairs = lq * lk
        else:  # query i sees keys 0..i
            n = min(lq, lk)
            pairs = n * (n + 1) // 2 + (lq - n) * lk
        return Work(flops=4.0 * bh * pairs * d, bytes=2.0 * bh * (lq + 2 * lk) * d + 4.0 * bh * lq * d)

    return work


def _sdpa_flash(causal: bool):
    """The benchmark's baseline: torch's flash-attention backend on the same 16-bit values (16-bit output, as torch
    gives)."""
    def baseline(q, k, v, out, scale):
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel

        # 4-D views (1, batch*heads, seq, dim); bf16 data travels as uint16 bit patterns
        as16 = (lambda x: x) if q.dtype == torch.float16 else (lambda x: x.view(torch.bfloat16))
        q4, k4, v4 = (as16(x)[None] for x in (q, k, v))

        def run():
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                return F.scaled_dot_product_attention(q4, k4, v4, is_causal=causal, scale=float(scale))

        return run, f"F.scaled_dot_product_attention, flash backend ({'f16' if q.dtype == torch.float16 else 'bf16'})"

    return baseline


#: the simulator's sizes: sequence lengths that no tile size divides, lq != lk, a single key and a single query
#: (tests/kernels/test_attention_tc.py runs more; the simulator's mma is slow: these two take a few seconds)
TEST_SIZES = ({"bh": 1, "lq": 1, "lk": 1}, {"bh": 2, "lq": 20, "lk": 29})
VERIFY_SIZES = ({"bh": 1, "lq": 1, "lk": 1}, {"bh": 2, "lq": 37, "lk": 37}, {"bh": 3, "lq": 129, "lk": 200},
                {"bh": 2, "lq": 255, "lk": 255}, {"bh": 1, "lq": 513, "lk": 513}, {"bh": 4, "lq": 64, "lk": 17})
#: batch 4 x 16 heads at 1k and 4k tokens, 1 x 16 at 8k (the fp32 attention's sizes)
BENCH_SIZES = ({"bh": 64, "lq": 1024, "lk": 1024}, {"bh": 64, "lq": 4096, "lk": 4096},
               {"bh": 16, "lq": 8192, "lk": 8192})
#: the registered variants: (name, f16, head dim, causal)
VARIANTS = tuple((f"attention_{fmt}_d{d}{'_causal' if causal else ''}", fmt == "f16", d, causal)
                 for fmt in ("bf16", "f16") for d in (64, 128) for causal in (False, True))

for _name, _f16, _d, _causal in VARIANTS:
    _config = config_for(_f16, _d, _causal)
    register(KernelSpec(
        name=_name,
        family="attention",
        kernel=flash_attention_tc(**_config),
        signatures=SIGNATURES[_f16],
        make_case=_case_maker(_f16, _d, _causal),
        reference=_expected(_causal),
        error_scale=_scale(_f16, _causal),
        outputs=(3,),
        test_sizes=TEST_SIZES,
        verify_sizes=VERIFY_SIZES,
        bench_sizes=BENCH_SIZES,
        constants=_config,
        work=_work(_d, _causal),
        baseline=_sdpa_flash(_causal),
        rtol=1.0,
        description=f"flash attention forward on the tensor cores, {'f16' if _f16 else 'bf16'} in, fp32 out, head dim "
                    f"{_d}{', causal' if _causal else ''}: Q fragments in registers, S = Q K^T and O += P V by "
                    "mma.sync m16n8k16, P reused from the accumulators as A fragments",
    ))
