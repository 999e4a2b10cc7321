"""fp32 attention forward on the tensor cores, as accurate as fp32: ``out = softmax(scale * q @ k^T [+ mask]) @ v``
for float32 ``q``, ``k``, ``v``, with both products on 3xTF32 (``matmul_3xtf32``'s split) and the softmax in fp32.

The kernel is the 16-bit tensor-core attention's (``attention_tc``: FlashAttention-2, one warp per 16 query rows,
online softmax in base 2 in registers, ``cp.async`` tiles, V landing during the scores and the next K during
``P @ V``) with 32-bit data and the m16n8k8 tf32 ``mma.sync``. What changes:

- **Fragments by plain shared loads, no ldmatrix.** Every tile is row-major with its 16-byte chunks XORed with the
  row mod 8 (``d`` a multiple of 32: rows of whole 8-chunk groups). A warp's A fragment of Q (``a0 = Q[g][t]``,
  ``a1 = Q[g + 8][t]``, ``a2 = Q[g][t + 4]``, ``a3 = Q[g + 8][t + 4]``, ``g = lane >> 2``, ``t = lane % 4``) and
  B fragment of K (``b0 = K[key g][t]``, ``b1 = K[key g][t + 4]``: a row-major K tile is K^T column-major) read
  eight rows at one chunk each, which the XOR spreads over eight chunks: 32 different banks, no conflict.
- **P stays in registers, with the keys of a k-step permuted.** A score tile's accumulators give lane (g, t) keys
  ``2t`` and ``2t + 1`` of rows g and g + 8; the tf32 A fragment wants keys ``t`` and ``t + 4``. Since ``P @ V``
  sums over keys, any order of them works if P and V agree: k-index ``t`` of a step stands for key ``2t`` and
  ``t + 4`` for key ``2t + 1``, so ``a0, a1, a2, a3 = c0, c2, c1, c3`` of the tile, and V's B fragment is
  ``b0 = V[key 2t][col g]``, ``b1 = V[key 2t + 1][col g]`` (ldmatrix could not transpose 32-bit data anyway). Those
  reads are four even rows at two chunks each: again eight chunks after the XOR, no conflict.
- **3xTF32.** Each operand ``x`` is split into ``big = tf32(x)`` and ``small = tf32(x - big)`` as it is loaded, and
  each product is ``small * big + big * small + big * big`` (the small terms first; ``small * small``, about
  2**-22 of the product, dropped). ``P @ V`` of each output tile and key block goes into a fresh partial sum (four
  registers) that is added to O with an ordinary float32 add: the tensor cores truncate when they add to a large
  running sum, and O runs over every key (``matmul_3xtf32`` explains the bias that accumulating there would add).
  ``Q K^T`` runs over the head dim only (at most 16 k-steps) and accumulates in the mma.

Q's fragments are read and split again in every key block (kept, the split Q of d = 128 would take 128 registers);
P is split once per key block, into its A-fragment order.
Shared memory holds a Q, a K and a V tile of float32 (``4 * d * (bm + 2 bn)`` bytes, 48 KiB of static shared memory
at most). Rows and keys past the sequences' ends are zero-filled by the copies and masked; query blocks run heaviest
first; causal key blocks past the query block's last row are skipped, and the mask is applied only in blocks that
need it. Masked scores are a large negative number (fastmath: no infinities); the first key block holds a visible
key of every row.

``attention_3xtf32`` takes what the fp32 attention's ``attention`` takes (``numbakern.kernels.attention``: the same
shapes, checks and result); the registered kernels share its reference and tolerance, and the benchmark's peer is
torch's fp32 ``scaled_dot_product_attention``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from ..async_copy import async_commit, async_wait, copy_async4
from ..fastpath import jit_options
from ..launch import LaunchConfig, cdiv
from ..mma import mma_m16n8k8_tf32, split_tf32
from ..registry import KernelSpec, register
from ..specialize import specialize
from ..unroll import unroll
from .attention import (
    BENCH_SIZES,
    SIGNATURE,
    TEST_SIZES,
    VERIFY_SIZES,
    _case_maker,
    _expected,
    _scale,
    _sdpa_baseline,
    _work,
    run_fp32_attention,
)

#: a masked score: exp2(MASKED - m) is 0 for any finite row maximum m
MASKED = -1.0e30
LOG2E = 1.4426950408889634
FULL_MASK = 0xFFFFFFFF
#: static shared memory a kernel may declare without opting in to more
STATIC_SHARED_LIMIT = 48 * 1024
CHUNK = 4  # floats in one 16-byte copy


def shared_bytes(d: int, bm: int, bn: int) -> int:
    """Shared memory of one block: a Q tile, a K tile and a V tile of float32."""
    return 4 * d * (bm + 2 * bn)


def _check_config(d, causal, bm, bn) -> int:
    """Threads per block, or a ValueError saying which constraint fails."""
    what = "flash_attention_3xtf32"
    if not isinstance(causal, bool):
        raise ValueError(f"{what}: causal must be True or False, got {causal!r}")
    for name, v in (("d", d), ("bm", bm), ("bn", bn)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{what}: {name} must be a positive int, got {v!r}")
    if d % 32:
        raise ValueError(f"{what}: head dim d={d} must be a multiple of 32 (rows of whole 8-chunk swizzle groups)")
    if bm % 16:
        raise ValueError(f"{what}: bm={bm} must be a multiple of 16 (a warp owns 16 query rows)")
    if bn % 8:
        raise ValueError(f"{what}: bn={bn} must be a multiple of 8 (the k of P @ V)")
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
def flash_attention_3xtf32(d: int = 64, causal: bool = False, bm: int = 64, bn: int = 64):
    """The kernel for one head dim and tile configuration: ``(q, k, v, out, scale)``, all float32, ``q``/``k``/``v``
    (batch*heads, seq, d), ``out`` (batch*heads, lq, d); launch with ``attention_3xtf32_launch``."""
    nt = _check_config(d, causal, bm, bn)
    row_chunks = d // CHUNK  # 16-byte chunks in a row of Q, K or V
    rstep = nt // row_chunks  # rows between one thread's chunks of a tile
    q_copies = bm // rstep
    kv_copies = bn // rstep
    step = rstep * d  # elements between one thread's chunks of a tile
    next_block = bn * d  # elements between two key blocks
    ks_n = d // 8  # k8 steps of Q K^T
    kk_n = bn // 8  # score tiles of a key block, and k8 steps of P V
    s_regs = kk_n * 4
    o_regs = d // 8 * 4

    @cuda.jit(**jit_options(threads=nt))
    def flash_attention_3xtf32(q, k, v, out, scale):
        tid = cuda.threadIdx.x
        lane = tid % 32
        warp = tid // 32
        g = lane >> 2  # groupID: accumulator rows g and g + 8, B fragment column g
        t4 = lane % 4  # threadID_in_group: A/B fragment k-index t4 (and t4 + 4), accumulator columns 2 t4, 2 t4 + 1
        bh = cuda.blockIdx.y
        q0 = (cuda.gridDim.x - 1 - cuda.blockIdx.x) * bm  # heaviest query blocks first
        lq = q.shape[1]
        lk = k.shape[1]
        crow = tid // row_chunks  # this thread's chunks of a tile: rows crow + i * rstep, chunk cc
        cc = tid % row_chunks
        # scores and maxima in base-2 units: exp(scale x - m) = exp2(scale log2(e) x - m'), one ex2 a probability
        scale_log2 = scale * np.float32(LOG2E)
        # this lane's rows of Q: the warp's g and g + 8; a row r's chunk c lies at chunk c ^ (r % 8), and both rows
        # are g mod 8 (warp * 16 is a multiple of 8), as K's row j * 8 + g is
        qr = warp * 16 + g

        q_s = cuda.shared.array((bm, d), dtype=np.float32, alignment=128)
        k_s = cuda.shared.array((bn, d), dtype=np.float32, alignment=128)
        v_s = cuda.shared.array((bn, d), dtype=np.float32, alignment=128)
        a_big = cuda.local.array(4, np.float32)  # Q's A fragment, split
        a_small = cuda.local.array(4, np.float32)
        b_big = cuda.local.array(2, np.float32)  # K's (or V's) B fragment, split
        b_small = cuda.local.array(2, np.float32)
        s = cuda.local.array(s_regs, np.float32)
        p_big = cuda.local.array(s_regs, np.float32)  # P's A fragments, split
        p_small = cuda.local.array(s_regs, np.float32)
        part = cuda.local.array(4, np.float32)  # one output tile's P V of this key block
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
            copy_async4(q_s, (r, (cc ^ (r % 8)) * CHUNK), q, q_first + i * step, q0 + r < lq)
        for i in unroll(range(kv_copies)):
            r = crow + i * rstep
            copy_async4(k_s, (r, (cc ^ (r % 8)) * CHUNK), k, kv_first + i * step, r < lk)
        async_commit()

        for t in range(nkb):
            kb0 = t * bn
            async_wait(0)  # K of this block (and Q, the first time) has landed ...
            cuda.syncthreads()  # ... for everyone; everyone is done with the last block's V
            kv_block = kv_first + kb0 * d
            for i in unroll(range(kv_copies)):  # V of this block lands while the scores are computed
                r = crow + i * rstep
                copy_async4(v_s, (r, (cc ^ (r % 8)) * CHUNK), v, kv_block + i * step, kb0 + r < lk)
            async_commit()

            # S = Q K^T: k-step ks reads chunks 2 ks (a0, a1 / b0) and 2 ks + 1 (a2, a3 / b1) of the rows
            for i in unroll(range(s_regs)):
                s[i] = np.float32(0.0)
            for ks in unroll(range(ks_n)):
                lo = ((2 * ks) ^ g) * CHUNK + t4
                hi = ((2 * ks + 1) ^ g) * CHUNK + t4
                a_big[0], a_small[0] = split_tf32(q_s[qr, lo])
                a_big[1], a_small[1] = split_tf32(q_s[qr + 8, lo])
                a_big[2], a_small[2] = split_tf32(q_s[qr, hi])
                a_big[3], a_small[3] = split_tf32(q_s[qr + 8, hi])
                for j in unroll(range(kk_n)):
                    key = j * 8 + g  # key % 8 == g
                    b_big[0], b_small[0] = split_tf32(k_s[key, ((2 * ks) ^ g) * CHUNK + t4])
                    b_big[1], b_small[1] = split_tf32(k_s[key, ((2 * ks + 1) ^ g) * CHUNK + t4])
                    mma_m16n8k8_tf32(s, j * 4, a_small, 0, b_big, 0, s, j * 4)
                    mma_m16n8k8_tf32(s, j * 4, a_big, 0, b_small, 0, s, j * 4)
                    mma_m16n8k8_tf32(s, j * 4, a_big, 0, b_big, 0, s, j * 4)

            # online softmax on rows g (h = 0: c0, c1 of each tile) and g + 8 (h = 1: c2, c3)
            masked = kb0 + bn > lk or (causal and kb0 + bn - 1 > q0 + warp * 16)
            for h in unroll(range(2)):
                # this lane's keys kb0 + 8 j + 2 t4 + e are visible while 8 j + e < end (one compare with a constant)
                end = lk - kb0 - t4 * 2
                if causal:
                    end = min(end, q0 + warp * 16 + g + 8 * h + 1 - kb0 - t4 * 2)
                mx = np.float32(MASKED)
                for j in unroll(range(kk_n)):
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
                for j in unroll(range(kk_n)):
                    for e in unroll(range(2)):
                        p = math.exp2(s[j * 4 + h * 2 + e] - m_new)
                        s[j * 4 + h * 2 + e] = p
                        total += p
                l[h] = total
                for j in unroll(range(d // 8)):
                    o[j * 4 + h * 2] *= alpha
                    o[j * 4 + h * 2 + 1] *= alpha

            cuda.syncthreads()  # everyone is done with this block's K
            if t + 1 < nkb:  # K of the next block lands during P V (an empty group after the last: the count holds)
                for i in unroll(range(kv_copies)):
                    r = crow + i * rstep
                    copy_async4(k_s, (r, (cc ^ (r % 8)) * CHUNK), k, kv_block + next_block + i * step,
                                kb0 + bn + r < lk)
            async_commit()
            async_wait(1)  # V of this block has landed ...
            cuda.syncthreads()  # ... for everyone

            # O += P V. k-step kk: index t4 stands for key 8 kk + 2 t4 and t4 + 4 for key 8 kk + 2 t4 + 1, so P's A
            # fragment is the score tile's c0, c2, c1, c3 as they are; split once, in A order
            for kk in unroll(range(kk_n)):
                for r4 in unroll(range(4)):
                    p_big[kk * 4 + r4], p_small[kk * 4 + r4] = split_tf32(s[kk * 4 + (r4 % 2) * 2 + r4 // 2])
            # one output tile at a time, its keys into a fresh partial sum added to O in float32
            for oj in unroll(range(d // 8)):
                vc = 2 * oj + g // 4  # column oj * 8 + g: chunk vc, float g % 4
                for i in unroll(range(4)):
                    part[i] = np.float32(0.0)
                for kk in unroll(range(kk_n)):
                    key = kk * 8 + t4 * 2  # even: key % 8 == 2 t4, and (key + 1) % 8 == 2 t4 + 1
                    b_big[0], b_small[0] = split_tf32(v_s[key, (vc ^ (t4 * 2)) * CHUNK + g % 4])
                    b_big[1], b_small[1] = split_tf32(v_s[key + 1, (vc ^ (t4 * 2 + 1)) * CHUNK + g % 4])
                    mma_m16n8k8_tf32(part, 0, p_small, kk * 4, b_big, 0, part, 0)
                    mma_m16n8k8_tf32(part, 0, p_big, kk * 4, b_small, 0, part, 0)
                    mma_m16n8k8_tf32(part, 0, p_big, kk * 4, b_big, 0, part, 0)
                for i in unroll(range(4)):
                    o[oj * 4 + i] += part[i]

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

    return flash_attention_3xtf32


def attention_3xtf32_launch(config: dict, batch_heads: int, lq: int) -> LaunchConfig:
    """One block per ``bm`` query rows of one (batch, head): grid (query blocks, batch*heads), 1-D blocks."""
    nt = _check_config(config["d"], config.get("causal", False), config["bm"], config["bn"])
    return LaunchConfig((max(1, cdiv(lq, config["bm"])), max(1, batch_heads), 1), (nt, 1, 1), 0)


#: tile configurations per head dim (32 KiB of shared memory each): d = 64: 64 rows (4 warps) x 32 keys; d = 128:
#: 32 rows (2 warps) x 16 keys. Chosen offline by ptxas -v (sm_90) on numba's PTX: 64 keys at d = 64 spill (372 bytes),
#: 32 do not (254 registers). At d = 128 (non-causal, numba-cuda 0.30.4) this tile spills 268 bytes, 64 x 16 spills
#: 132, 64 x 8 80 and 32 x 8 none. Not yet tuned on a GPU.
CONFIGS = {64: {"bm": 64, "bn": 32}, 128: {"bm": 32, "bn": 16}}
#: the simulator's: two warps, 8 or 16 keys a block, which the test sequence lengths do not divide
SIM_CONFIGS = {64: {"bm": 32, "bn": 16}, 128: {"bm": 32, "bn": 8}}


def config_for(d: int, causal: bool) -> dict:
    """The configuration the registered kernels run for this head dim (the simulator's small one under the
    simulator)."""
    from .. import mode

    table = SIM_CONFIGS if mode.in_simulator() else CONFIGS
    if d not in table:
        raise ValueError(f"attention_3xtf32: head dim {d} is not supported; supported: "
                         f"{', '.join(map(str, sorted(table)))}")
    return {"d": d, "causal": bool(causal), **table[d]}


def attention_3xtf32(q, k, v, *, causal: bool = False, scale: float | None = None, out=None):
    """``softmax(scale * q @ k^T) @ v`` per (batch, head) in fp32, both products on the tensor cores (3xTF32);
    ``causal`` masks key j for query i when j > i. Arguments and result as ``numbakern.kernels.attention.attention``
    (float32, (batch, heads, seq, d) or (batch*heads, seq, d), d = 64 or 128, ``scale`` 1/sqrt(d) by default)."""
    return run_fp32_attention(q, k, v, causal, scale, out, config_for, attention_3xtf32_launch, flash_attention_3xtf32)


# ---------------------------------------------------------------------------------------------------------------
# registry: the fp32 attention's cases, reference, tolerance, sizes and peer

#: the registered variants: (name, head dim, causal)
VARIANTS = tuple((f"attention_3xtf32_d{d}{'_causal' if causal else ''}", d, causal)
                 for d in (64, 128) for causal in (False, True))

for _name, _d, _causal in VARIANTS:
    _config = config_for(_d, _causal)
    register(KernelSpec(
        name=_name,
        family="attention",
        kernel=flash_attention_3xtf32(**_config),
        signatures=SIGNATURE,
        make_case=_case_maker(_causal, _d, config_for, attention_3xtf32_launch),
        reference=_expected(_causal),
        error_scale=_scale(_causal),
        outputs=(3,),
        test_sizes=TEST_SIZES,
        verify_sizes=VERIFY_SIZES,
        bench_sizes=BENCH_SIZES,
        constants=_config,
        work=_work(_d, _causal),
        baseline=_sdpa_baseline(_causal),
        rtol=2e-5,
        description=f"flash attention forward, fp32 on the tensor cores (3xTF32), head dim {_d}"
                    f"{', causal' if _causal else ''}: S = Q K^T and O += P V by mma.sync m16n8k8 tf32, three "
                    "products per split operand, P reused from the accumulators with its keys permuted",
    ))
