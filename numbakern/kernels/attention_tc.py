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
torch's SDPA returns the input's dtype; ``scripts/bench.py`` times its default dispatch as it is.

bf16 data is held as uint16 bit patterns (``numbakern.launch.BFLOAT16``, docs/tensor-cores.md §2):
``attention_bf16`` takes torch bfloat16 tensors, ``ml_dtypes.bfloat16`` arrays or uint16 arrays of bit patterns;
``attention_f16`` float16 tensors or arrays.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..async_copy import async_commit, async_wait
from ..fastpath import jit_options
from ..launch import BFLOAT16
from ..mma import (
    ldmatrix_x4,
    ldmatrix_x4_trans,
    mma_m16n8k16_bf16,
    mma_m16n8k16_f16,
    pack_bf16x2,
    pack_f16x2,
    split_tf32,
)
from ..specialize import specialize
from ..unroll import unroll
from .attention import (
    TEST_SIZES,
    check_tiles,
    head_dim_config,
    register_attention,
    run_attention,
    score_magnitude,
    softmax_weights,
)
from .config import flags, positive_ints
from .flash import LOG2E, copy_rows, online_softmax, start_rows, store_rows
from .half import values
from .tf32x3 import mma_3xtf32

CHUNK = 8  # 16-bit elements in one 16-byte copy and one ldmatrix row
#: element dtype, mma and packing of each input format, by ``f16`` (bf16 is held as uint16 bit patterns)
FORMATS = {False: (np.uint16, mma_m16n8k16_bf16, pack_bf16x2), True: (np.float16, mma_m16n8k16_f16, pack_f16x2)}
#: the unit roundoff of the 16-bit probabilities (round to nearest: half a unit in the last of 8 or 11 bits)
UNIT_ROUNDOFF = {False: 2.0**-8, True: 2.0**-11}


def shared_bytes(d: int, bm: int, bn: int, elem_bytes: int = 2) -> int:
    """Shared memory of one block: a Q tile, a K tile and a V tile of ``elem_bytes`` values."""
    return elem_bytes * d * (bm + 2 * bn)


def _check_config(f16, d, causal, bm, bn, q_in_regs=True, min_blocks=1, tf32=False) -> int:
    """Threads per block, or a ValueError saying which constraint fails (``tf32``: the 3xTF32 kernel's)."""
    what = "flash_attention_3xtf32" if tf32 else "flash_attention_tc"
    positive_ints(what, min_blocks=min_blocks)
    flags(what, f16=f16, causal=causal, q_in_regs=q_in_regs)
    positive_ints(what, d=d, bm=bm, bn=bn)
    chunk = 4 if tf32 else CHUNK
    if d % (8 * chunk):
        raise ValueError(f"{what}: head dim d={d} must be a multiple of {8 * chunk} (rows of whole 8-chunk swizzle "
                         "groups)")
    return check_tiles(what, d, bm, bn, 8 if tf32 else 16, chunk, shared_bytes(d, bm, bn, 4 if tf32 else 2))


@specialize
def flash_attention_tc(f16: bool = False, d: int = 64, causal: bool = False, bm: int = 64, bn: int = 64,
                       q_in_regs: bool = True, min_blocks: int = 1):
    """The kernel for one format (bf16 bit patterns, or with ``f16`` float16), head dim and tile configuration:
    ``(q, k, v, out, scale)``, ``q``/``k``/``v`` (batch*heads, seq, d) 16-bit, ``out`` (batch*heads, lq, d) float32;
    launch with ``attention.attention_launch``. ``q_in_regs``: Q's A fragments stay in registers for the whole kernel
    (``d / 4`` registers a thread); without it they are read from the shared Q tile again in every key block (one
    ``ldmatrix_x4`` per 16 head-dim columns, a quarter more shared-memory reads at ``bn = 64``), which keeps
    d = 128 from spilling. ``min_blocks``: the ``launch_bounds`` minimum of resident blocks per multiprocessor
    (1: the compiler's choice)."""
    return flash_kernel(f16, d, causal, bm, bn, q_in_regs, min_blocks, False)


def flash_kernel(f16, d, causal, bm, bn, q_in_regs, min_blocks, tf32):
    """The tensor-core flash attention for 16-bit inputs, or with ``tf32`` for float32 ones on 3xTF32
    (``attention_3xtf32`` says what differs): one schedule of copies, online softmax and stores, the products of
    each format in its own branch (compile-time constants: each kernel holds only its own)."""
    nt = _check_config(f16, d, causal, bm, bn, q_in_regs, min_blocks, tf32)
    elem, mma, pack = (np.float32, None, None) if tf32 else FORMATS[f16]
    chunk = 4 if tf32 else CHUNK  # elements in one 16-byte copy
    row_chunks = d // chunk  # 16-byte chunks in a row of Q, K or V
    rstep = nt // row_chunks  # rows between one thread's chunks of a tile
    q_copies = bm // rstep
    kv_copies = bn // rstep
    step = rstep * d  # elements between one thread's chunks of a tile
    next_block = bn * d  # elements between two key blocks
    ks_n = d // 16  # (16-bit) k16 steps of Q K^T: Q's A fragments
    sj_n = bn // 16  # (16-bit) pairs of n8 score tiles: ldmatrix_x4 calls of K per k-step, and k16 steps of P V
    oj_n = d // 16  # (16-bit) pairs of n8 output tiles: ldmatrix_x4_trans calls of V per k-step
    q_regs = ks_n * 4 if q_in_regs else 4
    p_regs = sj_n * 4
    kk_n = bn // 8  # score tiles of a key block ((3xTF32) and k8 steps of P V)
    s_regs = kk_n * 4
    o_regs = d // 8 * 4

    @cuda.jit(**jit_options(threads=nt, min_blocks=min_blocks if min_blocks > 1 else None))
    def flash_attention_mma(q, k, v, out, scale):
        tid = cuda.threadIdx.x
        lane = tid % 32
        warp = tid // 32
        g = lane >> 2  # groupID: accumulator rows g and g + 8 ((3xTF32) B fragment column g)
        t4 = lane % 4  # threadID_in_group: accumulator columns 2 t4, 2 t4 + 1 ((3xTF32) fragment k-index t4, t4 + 4)
        bh = cuda.blockIdx.y
        q0 = (cuda.gridDim.x - 1 - cuda.blockIdx.x) * bm  # heaviest query blocks first
        lq = q.shape[1]
        lk = k.shape[1]
        crow = tid // row_chunks  # this thread's chunks of a tile: rows crow + i * rstep, chunk cc
        cc = tid % row_chunks
        scale_log2 = scale * np.float32(LOG2E)

        q_s = cuda.shared.array((bm, d), dtype=elem, alignment=128)
        k_s = cuda.shared.array((bn, d), dtype=elem, alignment=128)
        v_s = cuda.shared.array((bn, d), dtype=elem, alignment=128)
        if tf32:
            # this lane's rows of Q: the warp's g and g + 8; a row r's chunk c lies at chunk c ^ (r % 8), and both
            # rows are g mod 8 (warp * 16 is a multiple of 8), as K's row j * 8 + g is
            qr = warp * 16 + g
            a_big = cuda.local.array(4, np.float32)  # Q's A fragment, split
            a_small = cuda.local.array(4, np.float32)
            b_big = cuda.local.array(2, np.float32)  # K's (or V's) B fragment, split
            b_small = cuda.local.array(2, np.float32)
            p_big = cuda.local.array(s_regs, np.float32)  # P's A fragments, split
            p_small = cuda.local.array(s_regs, np.float32)
            part = cuda.local.array(4, np.float32)  # one output tile's P V of this key block
        else:
            sw = lane % 8  # the row mod 8 of every ldmatrix row address this lane gives: its chunks' XOR
            # ldmatrix columns: chunk 2 i + h of a row with this XOR is (2 i + h) ^ sw = (h ^ sw) ^ 2 i (2 i is
            # even), so each lane's column is one base XORed with a constant per step
            a_col = ((lane // 16) ^ sw) * CHUNK  # Q and V: lanes 16-31 name the odd chunk
            k_col = ((lane // 8 % 2) ^ sw) * CHUNK  # K: lanes 8-15 and 24-31 name the odd chunk
            a_row = warp * 16 + lane % 16  # Q: the warp's rows 0-15
            k_row = lane // 16 * 8 + sw  # K: keys 0-7 (lanes 0-15), 8-15 (lanes 16-31) of 16
            qf = cuda.local.array(q_regs, np.uint32)  # Q's A fragments, for the whole kernel
            kf = cuda.local.array(4, np.uint32)  # b0, b1 of two n8 key tiles
            vf = cuda.local.array(4, np.uint32)  # b0, b1 of two n8 output tiles
            pf = cuda.local.array(p_regs, np.uint32)  # P's A fragments
        s = cuda.local.array(s_regs, np.float32)
        o = cuda.local.array(o_regs, np.float32)
        m = cuda.local.array(2, np.float32)  # running maxima of rows g and g + 8
        l = cuda.local.array(2, np.float32)  # this lane's part of their sums
        start_rows(o, m, l, o_regs)

        nkb = (lk + bn - 1) // bn
        if causal:  # keys past the block's last row are masked for every row: skip their blocks
            nkb = min(nkb, (q0 + bm + bn - 1) // bn)

        # Q and K of the first key block; flat offsets of this thread's first chunks, the next ones `step` further
        q_first = (bh * lq + q0 + crow) * d + cc * chunk
        kv_first = (bh * lk + crow) * d + cc * chunk
        copy_rows(q_s, q, q_first, q0, lq, crow, cc, q_copies, rstep, step, chunk)
        copy_rows(k_s, k, kv_first, 0, lk, crow, cc, kv_copies, rstep, step, chunk)
        async_commit()
        if not tf32:  # (3xTF32: Q's fragments are read and split in each key block)
            async_wait(0)
            cuda.syncthreads()
            # lanes 0-15 name the warp's rows 0-15 at chunk 2 ks, lanes 16-31 the same rows at chunk 2 ks + 1: a0..a3
            if q_in_regs:
                for ks in unroll(range(ks_n)):
                    ldmatrix_x4(qf, ks * 4, q_s, (a_row, a_col ^ (ks * 16)))

        for t in range(nkb):
            kb0 = t * bn
            async_wait(0)  # K of this block (and Q, the first time) has landed ...
            cuda.syncthreads()  # ... for everyone; everyone is done with the last block's V
            kv_block = kv_first + kb0 * d
            copy_rows(v_s, v, kv_block, kb0, lk, crow, cc, kv_copies, rstep, step, chunk)  # lands during S
            async_commit()

            for i in unroll(range(s_regs)):
                s[i] = np.float32(0.0)
            if tf32:  # S = Q K^T: k-step ks reads chunks 2 ks (a0, a1 / b0) and 2 ks + 1 (a2, a3 / b1) of the rows
                for ks in unroll(range(d // 8)):
                    lo = ((2 * ks) ^ g) * chunk + t4
                    hi = ((2 * ks + 1) ^ g) * chunk + t4
                    a_big[0], a_small[0] = split_tf32(q_s[qr, lo])
                    a_big[1], a_small[1] = split_tf32(q_s[qr + 8, lo])
                    a_big[2], a_small[2] = split_tf32(q_s[qr, hi])
                    a_big[3], a_small[3] = split_tf32(q_s[qr + 8, hi])
                    for j in unroll(range(kk_n)):
                        key = j * 8 + g  # key % 8 == g
                        b_big[0], b_small[0] = split_tf32(k_s[key, lo])
                        b_big[1], b_small[1] = split_tf32(k_s[key, hi])
                        mma_3xtf32(s, j * 4, a_big, a_small, 0, b_big, b_small, 0, s, j * 4)
            else:  # S = Q K^T. ldmatrix without .trans: lanes 0-7 name keys 16 sj + 0..7 at chunk 2 ks (b0 of the
                # first n8 tile), lanes 8-15 the same keys at chunk 2 ks + 1 (its b1), lanes 16-31 keys
                # 16 sj + 8..15 (the second tile's b0, b1)
                for ks in unroll(range(ks_n)):
                    qa = ks * 4 if q_in_regs else 0
                    if not q_in_regs:
                        ldmatrix_x4(qf, 0, q_s, (a_row, a_col ^ (ks * 16)))
                    for sj in unroll(range(sj_n)):
                        ldmatrix_x4(kf, 0, k_s, (k_row + sj * 16, k_col ^ (ks * 16)))
                        mma(s, sj * 8, qf, qa, kf, 0, s, sj * 8)
                        mma(s, sj * 8 + 4, qf, qa, kf, 2, s, sj * 8 + 4)

            masked = kb0 + bn > lk or (causal and kb0 + bn - 1 > q0 + warp * 16)
            online_softmax(s, o, m, l, scale_log2, masked, causal, lk - kb0 - t4 * 2,
                           q0 + warp * 16 + g + 1 - kb0 - t4 * 2, kk_n, d // 8)
            if tf32:  # k-step kk: index t4 stands for key 8 kk + 2 t4 and t4 + 4 for key 8 kk + 2 t4 + 1, so P's A
                # fragment is the score tile's c0, c2, c1, c3 as they are; split once, in A order
                for kk in unroll(range(kk_n)):
                    for r4 in unroll(range(4)):
                        p_big[kk * 4 + r4], p_small[kk * 4 + r4] = split_tf32(s[kk * 4 + (r4 % 2) * 2 + r4 // 2])
            else:  # two n8 score tiles are one k16 A fragment: a0 = c0, c1 and a1 = c2, c3 of the first, a2, a3 the
                # second's
                for sj in unroll(range(sj_n)):
                    for r4 in unroll(range(4)):
                        pf[sj * 4 + r4] = pack(s[sj * 8 + r4 * 2], s[sj * 8 + r4 * 2 + 1])

            cuda.syncthreads()  # everyone is done with this block's K
            if t + 1 < nkb:  # K of the next block lands during P V (an empty group after the last: the count holds)
                copy_rows(k_s, k, kv_block + next_block, kb0 + bn, lk, crow, cc, kv_copies, rstep, step, chunk)
            async_commit()
            async_wait(1)  # V of this block has landed ...
            cuda.syncthreads()  # ... for everyone

            if tf32:  # O += P V, one output tile at a time, its keys into a fresh partial sum added to O in float32
                for oj in unroll(range(d // 8)):
                    vc = 2 * oj + g // 4  # column oj * 8 + g: chunk vc, float g % 4
                    for i in unroll(range(4)):
                        part[i] = np.float32(0.0)
                    for kk in unroll(range(kk_n)):
                        key = kk * 8 + t4 * 2  # even: key % 8 == 2 t4, and (key + 1) % 8 == 2 t4 + 1
                        b_big[0], b_small[0] = split_tf32(v_s[key, (vc ^ (t4 * 2)) * chunk + g % 4])
                        b_big[1], b_small[1] = split_tf32(v_s[key + 1, (vc ^ (t4 * 2 + 1)) * chunk + g % 4])
                        mma_3xtf32(part, 0, p_big, p_small, kk * 4, b_big, b_small, 0, part, 0)
                    for i in unroll(range(4)):
                        o[oj * 4 + i] += part[i]
            else:  # O += P V. ldmatrix .trans: lanes 0-7 name keys 16 sj + 0..7 at chunk 2 oj (b0 of output tile
                # 2 oj), lanes 8-15 keys + 8..15 (its b1), lanes 16-31 the same at chunk 2 oj + 1 (tile 2 oj + 1)
                for sj in unroll(range(sj_n)):
                    for oj in unroll(range(oj_n)):
                        ldmatrix_x4_trans(vf, 0, v_s, (sj * 16 + lane % 16, a_col ^ (oj * 16)))
                        mma(o, oj * 8, pf, sj * 4, vf, 0, o, oj * 8)
                        mma(o, oj * 8 + 4, pf, sj * 4, vf, 2, o, oj * 8 + 4)

        store_rows(out, o, l, bh, q0 + warp * 16 + g, lq, t4, d // 8)

    return flash_attention_mma


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
    blocks = MIN_BLOCKS.get((d, bool(causal)))
    table = head_dim_config("attention_tc", CONFIGS, SIM_CONFIGS, d)
    return {"f16": bool(f16), "d": d, "causal": bool(causal), **table, **({"min_blocks": blocks} if blocks else {})}


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
    return run_attention(q, k, v, causal, scale, out, np.dtype(np.float16) if f16 else BFLOAT16,
                         lambda d, causal: config_for(f16, d, causal), flash_attention_tc)


# ---------------------------------------------------------------------------------------------------------------
# the error bound (float64, from the 16-bit values themselves) and the registry

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
    bound = (UNIT_ROUNDOFF[f16] + 2.0**-16 * (1.0 + score_magnitude(q, k, scale)[..., None])) * weighted
    if f16:
        visible = p > 0  # (masked keys carry no weight)
        bound = bound + 2.0**-25 * np.einsum("bij,bjd->bid", visible.astype(np.float64), av)
    return bound


def _bound(f16, causal):
    def error_scale(q, k, v, out, scale):
        # the spec's rtol is 1: the scale is the whole bound (error_bound says where each term comes from)
        return {3: error_bound(q, k, v, scale, causal, f16)}

    return error_scale


SIGNATURES = {f16: f"void({e}[:, :, ::1], {e}[:, :, ::1], {e}[:, :, ::1], float32[:, :, ::1], float32)"
              for f16, e in ((False, "uint16"), (True, "float16"))}

#: the registered variants: (name, f16, head dim, causal)
VARIANTS = tuple((f"attention_{fmt}_d{d}{'_causal' if causal else ''}", fmt == "f16", d, causal)
                 for fmt in ("bf16", "f16") for d in (64, 128) for causal in (False, True))

for _name, _f16, _d, _causal in VARIANTS:
    _config = config_for(_f16, _d, _causal)
    register_attention(
        _name, flash_attention_tc(**_config), _config, lambda d, causal, f16=_f16: config_for(f16, d, causal),
        f"flash attention forward on the tensor cores, {'f16' if _f16 else 'bf16'} in, fp32 out, head dim {_d}"
        f"{', causal' if _causal else ''}: Q fragments in registers, S = Q K^T and O += P V by mma.sync m16n8k16, "
        "P reused from the accumulators as A fragments", f16=_f16, signatures=(SIGNATURES[_f16],),
        # the simulator's mma is slow: these two take a few seconds (tests/kernels/test_attention_tc.py runs more)
        test_sizes=TEST_SIZES[1:], error_scale=_bound(_f16, _causal), rtol=1.0)
