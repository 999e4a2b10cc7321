"""Attention forward on Hopper's warpgroup MMA, FlashAttention-3 style: ``out = softmax(scale * q @ k^T [+ causal
mask]) @ v`` for bf16 or f16 ``q``, ``k``, ``v`` (batch*heads, seq, d), fp32 accumulation and softmax, fp32 output,
on compute capability 9.0 (``wgmma``, TMA and mbarriers from ``numbakern.mma.hopper``; the simulator runs it with
the pipeline's checkers). ``numbakern.kernels.attention_hopper`` registers it; its launches make the tensor maps.

One block computes ``64 * consumers`` query rows of one (batch, head), warp-specialised:

- **warpgroup 0, the producer**: one thread copies the block's Q tile once, then K and V of each key block into a
  ring of ``stages`` shared buffers with the bulk tensor copy engine (TMA, 128-byte swizzled, 3-D tensor maps so
  that rows past a sequence's end are zero-filled rather than read from the next head). K and V have barriers of
  their own, so the scores of a block can start before its V has landed. It gives its registers away
  (``setmaxnreg``).
- **warpgroups 1..consumers**: each owns 64 query rows. Per key block: ``S = Q K^T`` by ``d / 16`` wgmma
  m64n{bn}k16 with both operands in shared memory (Q and K k-major); the online softmax in fp32 registers (base 2,
  as FlashAttention computes it); then ``O += P V`` by ``bn / 16`` wgmma m64n{d}k16 with **P from registers** (the
  fp32 accumulator layout of two adjacent n8 chunks of S is the A-register layout of one k16 step, so P is packed to
  16 bits where it stands) and V n-major from shared memory.

Every stage goes back to the producer as soon as the wgmma that read it has completed (``wait_group``), one arrival
per consumer warp. Causal: key blocks past the query block's last row are skipped and the mask is applied only
where a block crosses the diagonal or the sequence's end; query blocks run heaviest first.

``tf32x3=True`` makes the same kernel fp32-accurate on the tf32 tensor cores (3xTF32, as ``matmul_wgmma``'s mode of
that name; ``attention_3xtf32`` runs it): ``q``, ``k`` are float32 ``(2 * bh, seq, d)``, the big parts of the
``bh`` heads then their small parts (``tf32x3.split_tf32_parts``), and ``v`` is ``(2 * bh, d, keys)``, V's parts
transposed (wgmma reads tf32 B only k-major) with the keys of every 8 in ``tf32x3.permuted_key``'s order
(``tf32x3.split_tf32_keys_t``). Every tile holds both parts, rows of 32 floats (128 bytes: the same swizzle and
descriptors). Per k8 step ``S`` takes ``q_small k_big``, ``q_big k_small``, ``q_big k_big`` (m64n{bn}k8 tf32, both
from shared memory) and accumulates in the wgmma over the head dim. P is split where it stands (``split_tf32``):
the tf32 A fragment wants keys ``t`` and ``t + 4`` of a k8 step where the accumulators hold ``2 t`` and ``2 t + 1``,
so V's keys come permuted to match (``attention_3xtf32``'s trick, done once by the split pass instead of per
fragment). ``P V`` of each key block goes into a fresh accumulator (``p_small v_big``, ``p_big v_small``,
``p_big v_big``, m64n{d}k8 tf32 with A from registers) that is added to O in registers: the tensor cores truncate
against a large running sum (docs/tensor-cores.md section 8).
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from ..fastpath import jit_options
from ..mma import hopper, pack_bf16x2, pack_f16x2, split_tf32
from ..specialize import specialize
from ..tensormap import TensorMapParam, tensor_map_params
from ..unroll import unroll
from .flash import LOG2E, start_rows, store_rows

MASKED = -1.0e30
FULL_MASK = 0xFFFFFFFF
PANEL = 64  # 16-bit columns of one 128-byte swizzled row: the tiles are stored as panels of this width
ALIGN = 1024  # the 128-byte swizzle repeats every 1024 bytes: each tile starts on such a boundary
#: by ``f16``; with ``tf32x3`` the split parts (``SIGNATURE_TF32X3``)
SIGNATURES = {
    False: "void(uint16[:, :, ::1], uint16[:, :, ::1], uint16[:, :, ::1], float32[:, :, ::1], float32, "
           "uint64[::1], uint64[::1], uint64[::1])",
    True: "void(float16[:, :, ::1], float16[:, :, ::1], float16[:, :, ::1], float32[:, :, ::1], float32, "
          "uint64[::1], uint64[::1], uint64[::1])",
}
SIGNATURE_TF32X3 = ("void(float32[:, :, ::1], float32[:, :, ::1], float32[:, :, ::1], float32[:, :, ::1], float32, "
                    "uint64[::1], uint64[::1], uint64[::1])")


def shared_bytes(d: int, bn: int, stages: int, consumers: int, tf32x3: bool = False) -> int:
    """Dynamic shared memory of one block: the Q tile, ``stages`` K and V tiles, and room to align; with ``tf32x3``
    each tile is two parts of 4-byte elements, four times the bytes."""
    return (8 if tf32x3 else 2) * d * (64 * consumers + 2 * stages * bn) + ALIGN


#: registers a thread of the producer gives up and a consumer takes (``setmaxnreg``), by consumer warpgroups: the
#: block's total must fit the multiprocessor's 64K registers, or ``setmaxnreg.inc`` waits for ever
REGISTERS = {1: (24, 240), 2: (24, 240), 3: (24, 160)}
REGISTER_FILE = 65536


def check_config(d, bn, stages, consumers, consumer_regs=None, producer_regs=None, tf32x3=False) -> None:
    if d not in (64, 128):
        raise ValueError(f"attention_wgmma: head dim d must be 64 or 128, got {d}")
    if bn not in hopper.WGMMA_N + ((32,) if tf32x3 else ()):
        raise ValueError(f"attention_wgmma: bn must be one of {hopper.WGMMA_N}{' or 32' if tf32x3 else ''}, "
                         f"got {bn}")
    if consumers not in (1, 2, 3):
        raise ValueError(f"attention_wgmma: consumers must be 1, 2 or 3 warpgroups, got {consumers}")
    if stages < 1 or shared_bytes(d, bn, stages, consumers, tf32x3) > 227 * 1024:
        raise ValueError(f"attention_wgmma: {stages} stages of {bn}-key tiles at d={d} do not fit in 227 KiB of "
                         f"shared memory{' (3xTF32: two fp32 parts a tile)' if tf32x3 else ''}")
    if consumer_regs is not None and 128 * (consumer_regs * consumers + producer_regs) > REGISTER_FILE:
        raise ValueError(f"attention_wgmma: {consumers} consumer warpgroups of {consumer_regs} registers and a "
                         f"producer of {producer_regs} need more than the {REGISTER_FILE} registers of a "
                         "multiprocessor (setmaxnreg would wait for ever)")


@specialize
def flash_attention_wgmma(f16: bool = False, d: int = 128, causal: bool = False, bn: int = 128, stages: int = 2,
                          consumers: int = 2, consumer_regs: int = 0, producer_regs: int = 0, pingpong: bool = True,
                          tf32x3: bool = False):
    """The kernel for one format and configuration: ``(q, k, v, out, scale, tmap_q, tmap_k, tmap_v)``, the maps
    those of q, k and v in boxes of 128-byte rows (64 16-bit head-dim columns; with ``tf32x3`` 32 floats: the
    module's docstring says what q, k and v are then) (``tensor_map_params``: ``launch_arguments`` makes them);
    ``attention_hopper.attention_wgmma_launch`` gives the launch. The registers (0: the default) are
    ``REGISTERS[consumers]``. ``pingpong``: the consumer warpgroups take turns to issue their wgmma (named
    barriers), so that one's softmax runs while another's matrix products do."""
    if tf32x3 and f16:
        raise ValueError("attention_wgmma: tf32x3 takes float32 parts, not f16")
    check_config(d, bn, stages, consumers, tf32x3=tf32x3)
    producer_regs = producer_regs or REGISTERS[consumers][0]
    consumer_regs = consumer_regs or REGISTERS[consumers][1]
    check_config(d, bn, stages, consumers, consumer_regs, producer_regs, tf32x3)
    pingpong = pingpong and consumers > 1
    pack = pack_f16x2 if f16 else pack_bf16x2
    if tf32x3:
        wgmma_s = getattr(hopper, f"wgmma_m64n{bn}k8_tf32")  # S = Q K^T: A and B in shared memory
        wgmma_o = getattr(hopper, f"wgmma_m64n{d}k8_tf32_rs")  # O += P V: A (P) in registers
    else:
        fmt = "f16" if f16 else "bf16"
        wgmma_s = getattr(hopper, f"wgmma_m64n{bn}k16_{fmt}")
        wgmma_o = getattr(hopper, f"wgmma_m64n{d}k16_{fmt}_rs")

    # shared memory is addressed in 16-bit units; a tile is its 128-byte rows, in panels of 128-byte columns
    units = 2 if tf32x3 else 1  # 16-bit units of one element
    parts = 2 if tf32x3 else 1  # a tile's parts (big, small), one after the other
    kstep = 8 if tf32x3 else 16  # k of one wgmma (32 bytes of a row)
    cols = PANEL // units  # elements of one 128-byte row: the boxes' width
    bm = 64 * consumers
    threads = 128 * (consumers + 1)
    panels = d // cols
    q_part = bm * d * units  # units of one part of the Q tile, one of a K or V tile
    kv_part = bn * d * units
    q_elems = parts * q_part
    kv_elems = parts * kv_part
    q_panel = bm * PANEL  # units of one panel of the Q tile, of a K tile, of a (transposed, 3xTF32) V tile
    kv_panel = bn * PANEL
    vt_panel = d * PANEL
    s_regs = bn // 2  # accumulators of one m64n{bn} wgmma per thread
    o_regs = d // 2
    p_regs = bn // kstep * 4  # A registers of P: 4 per k step
    arrivals = 4 * consumers  # one per consumer warp on an empty barrier
    # barriers: 0 = Q full; K full/empty, V full/empty of stage s
    k_full, k_empty, v_full, v_empty = 1, 1 + stages, 1 + 2 * stages, 1 + 3 * stages
    nbars = 1 + 4 * stages
    # matrix descriptors (PTX ISA "Matrix Descriptor Format"), 128-byte swizzle, 8-row groups 1024 bytes apart.
    # Q and K k-major (a k step is 32 bytes along the row, a panel further every 4 steps); 16-bit V n-major (panels
    # of 64 head-dim columns, bn * 128 bytes apart: the leading offset; a k16 step is 16 key rows); tf32 V^T
    # k-major like K (d rows of 32 keys a panel)
    desc_k_major = (1 << 16) | ((1024 >> 4) << 32) | (1 << 62)
    desc_v = ((bn * 128 >> 4) << 16) | ((1024 >> 4) << 32) | (1 << 62)

    @cuda.jit(**jit_options(threads=threads, min_blocks=1))
    def flash_attention_wgmma(q, k, v, out, scale, tmap_q, tmap_k, tmap_v):
        tid = cuda.threadIdx.x
        smem = cuda.shared.array(0, dtype=np.uint16)
        bars = cuda.shared.array(nbars, dtype=np.uint64)
        base = hopper.shared_address(smem, 0)
        pad = (ALIGN - base % ALIGN) % ALIGN // 2  # units up to the first 1024-byte boundary
        q_at = pad  # unit offsets: Q, then the K ring, then the V ring
        k_at = q_at + q_elems
        v_at = k_at + stages * kv_elems
        bh = cuda.blockIdx.y
        nbh = out.shape[0]  # (3xTF32: the small parts' heads are nbh further)
        q0 = (cuda.gridDim.x - 1 - cuda.blockIdx.x) * bm  # heaviest query blocks first
        lq = q.shape[1]
        lk = k.shape[1]
        nkb = (lk + bn - 1) // bn
        if causal:  # keys past the block's last row are masked for every row: skip their blocks
            nkb = min(nkb, (q0 + bm + bn - 1) // bn)
        if tid == 0:
            hopper.mbarrier_init(bars, 0, 1)
            for s in range(stages):
                hopper.mbarrier_init(bars, k_full + s, 1)
                hopper.mbarrier_init(bars, v_full + s, 1)
                hopper.mbarrier_init(bars, k_empty + s, arrivals)
                hopper.mbarrier_init(bars, v_empty + s, arrivals)
            hopper.fence_barrier_init()
        cuda.syncthreads()
        wg = tid // 128
        if wg == 0:
            hopper.setmaxnreg_dec(producer_regs)
            if tid == 0:
                hopper.mbarrier_arrive_expect_tx(bars, 0, q_elems * 2)
                for part in unroll(range(parts)):
                    for p in unroll(range(panels)):
                        hopper.tma_load_3d(smem, q_at + part * q_part + p * q_panel, tmap_q, p * cols, q0,
                                           bh + part * nbh, bars, 0)
                for j in range(nkb):
                    s = j % stages
                    phase = (j // stages + 1) % 2
                    while not hopper.mbarrier_try_wait(bars, k_empty + s, phase):
                        pass
                    hopper.mbarrier_arrive_expect_tx(bars, k_full + s, kv_elems * 2)
                    for part in unroll(range(parts)):
                        for p in unroll(range(panels)):
                            hopper.tma_load_3d(smem, k_at + s * kv_elems + part * kv_part + p * kv_panel, tmap_k,
                                               p * cols, j * bn, bh + part * nbh, bars, k_full + s)
                    while not hopper.mbarrier_try_wait(bars, v_empty + s, phase):
                        pass
                    hopper.mbarrier_arrive_expect_tx(bars, v_full + s, kv_elems * 2)
                    if tf32x3:  # V^T: boxes of d rows by 32 keys
                        for part in unroll(range(parts)):
                            for p in unroll(range(bn // cols)):
                                hopper.tma_load_3d(smem, v_at + s * kv_elems + part * kv_part + p * vt_panel, tmap_v,
                                                   j * bn + p * cols, 0, bh + part * nbh, bars, v_full + s)
                    else:
                        for p in unroll(range(panels)):
                            hopper.tma_load_3d(smem, v_at + s * kv_elems + p * kv_panel, tmap_v, p * PANEL, j * bn,
                                               bh, bars, v_full + s)
        else:
            hopper.setmaxnreg_inc(consumer_regs)
            c = wg - 1
            t = tid % 128
            lane = t % 32
            warp = t // 32
            # this thread's accumulators: rows lane / 4 and lane / 4 + 8 of the warp's 16 (from first_row), and
            col_in = (lane % 4) * 2  # and columns col_in, col_in + 1 of every n8 chunk
            first_row = q0 + c * 64 + warp * 16  # the warp's first query row
            scale_log2 = scale * np.float32(LOG2E)
            ring = base + pad * 2  # (shared addresses in bytes)
            q_addr = ring + c * 64 * 128  # this warpgroup's 64 rows of each Q panel
            s_acc = cuda.local.array(s_regs, np.float32)
            o_acc = cuda.local.array(o_regs, np.float32)
            if tf32x3:
                pf = cuda.local.array(p_regs, np.float32)  # P's big parts, tf32 A fragments
                pf_small = cuda.local.array(p_regs, np.float32)
                o_part = cuda.local.array(o_regs, np.float32)  # P V of one key block (16-bit: straight into O)
                for i in unroll(range(o_regs)):
                    o_part[i] = np.float32(0.0)
            else:
                pf = cuda.local.array(p_regs, np.uint32)
            m = cuda.local.array(2, np.float32)  # running maxima of this thread's two rows (base-2 units)
            l = cuda.local.array(2, np.float32)  # this lane's part of their sums
            alpha = cuda.local.array(2, np.float32)  # their rescaling in the current key block
            start_rows(o_acc, m, l, o_regs)
            if pingpong and c == consumers - 1:  # the first consumer issues first
                hopper.named_barrier_arrive(1, 256)
            while not hopper.mbarrier_try_wait(bars, 0, 0):
                pass
            # software-pipelined by one key block: the scores of block j and P V of block j - 1 are issued together,
            # and the softmax of block j runs while the tensor cores still compute P V of block j - 1
            for j in range(nkb + 1):
                s = j % stages
                phase = j // stages % 2
                prev = (j + stages - 1) % stages  # block j - 1's stage
                if pingpong:  # this warpgroup's turn to issue (barrier 1 + c: its own 128 threads and the previous'
                    hopper.named_barrier(1 + c, 256)
                if j < nkb:
                    k_addr = ring + (k_at - pad + s * kv_elems) * 2
                    while not hopper.mbarrier_try_wait(bars, k_full + s, phase):
                        pass
                    hopper.wgmma_fence()
                    for kk in unroll(range(d // kstep)):
                        at = kk // 4 * q_panel * 2 + kk % 4 * 32
                        kat = kk // 4 * kv_panel * 2 + kk % 4 * 32
                        if tf32x3:  # small * big, big * small, big * big
                            wgmma_s(s_acc, desc_k_major | ((q_addr + q_part * 2 + at) % 262144 >> 4),
                                    desc_k_major | ((k_addr + kat) % 262144 >> 4), 1 if kk > 0 else 0)
                            wgmma_s(s_acc, desc_k_major | ((q_addr + at) % 262144 >> 4),
                                    desc_k_major | ((k_addr + kv_part * 2 + kat) % 262144 >> 4), 1)
                            wgmma_s(s_acc, desc_k_major | ((q_addr + at) % 262144 >> 4),
                                    desc_k_major | ((k_addr + kat) % 262144 >> 4), 1)
                        else:
                            wgmma_s(s_acc, desc_k_major | ((q_addr + at) % 262144 >> 4),
                                    desc_k_major | ((k_addr + kat) % 262144 >> 4), 1 if kk > 0 else 0, 0)
                    hopper.wgmma_commit()
                if j > 0:
                    v_addr = ring + (v_at - pad + prev * kv_elems) * 2
                    while not hopper.mbarrier_try_wait(bars, v_full + prev, (j - 1) // stages % 2):
                        pass
                    hopper.wgmma_fence()
                    for kk in unroll(range(bn // kstep)):
                        if tf32x3:  # into a fresh partial sum: p_small v_big, p_big v_small, p_big v_big
                            vat = kk // 4 * vt_panel * 2 + kk % 4 * 32
                            wgmma_o(o_part, pf_small, kk * 4, desc_k_major | ((v_addr + vat) % 262144 >> 4),
                                    1 if kk > 0 else 0)
                            wgmma_o(o_part, pf, kk * 4, desc_k_major | ((v_addr + kv_part * 2 + vat) % 262144 >> 4),
                                    1)
                            wgmma_o(o_part, pf, kk * 4, desc_k_major | ((v_addr + vat) % 262144 >> 4), 1)
                        else:
                            wgmma_o(o_acc, pf, kk * 4, desc_v | ((v_addr + kk * 16 * 128) % 262144 >> 4), 1, 1)
                    hopper.wgmma_commit()
                if pingpong and (j < nkb or c < consumers - 1):  # the next warpgroup's turn (the first's initial
                    hopper.named_barrier_arrive(1 + (c + 1) % consumers, 256)  # turn stands for the last's final one)
                if j == nkb:
                    if tf32x3:
                        hopper.wgmma_wait(0, o_part, o_regs)
                        for i in unroll(range(o_regs)):
                            o_acc[i] += o_part[i]
                    else:
                        hopper.wgmma_wait(0, o_acc, o_regs)
                    if lane == 0:
                        hopper.mbarrier_arrive(bars, v_empty + prev)
                    break
                if j > 0:
                    hopper.wgmma_wait(1, s_acc, s_regs)  # the scores are done; P V of block j - 1 may still run
                else:
                    hopper.wgmma_wait(0, s_acc, s_regs)
                if lane == 0:
                    hopper.mbarrier_arrive(bars, k_empty + s)

                # online softmax of the thread's first row (h = 0: registers 4 i, 4 i + 1) and its second
                # (h = 1: 4 i + 2, 4 i + 3),
                # maxima in base-2 units: exp(scale x - m) = exp2(x * scale log2(e) - m'), one FFMA and one ex2 each
                kb0 = j * bn
                masked = kb0 + bn > lk or (causal and kb0 + bn - 1 > first_row)
                for h in unroll(range(2)):
                    end = lk - kb0 - col_in  # this lane's key 8 i + e is visible while 8 i + e < end
                    if causal:
                        end = min(end, first_row + lane // 4 + 8 * h + 1 - kb0 - col_in)
                    mx = np.float32(MASKED)
                    for i in unroll(range(bn // 8)):
                        for e in unroll(range(2)):
                            x = s_acc[i * 4 + h * 2 + e]
                            if masked and i * 8 + e >= end:
                                x = np.float32(MASKED)
                                s_acc[i * 4 + h * 2 + e] = x
                            mx = max(mx, x)
                    mx = max(mx, cuda.shfl_xor_sync(FULL_MASK, mx, 1))  # the row's quad: lane bits 0, 1
                    mx = max(mx, cuda.shfl_xor_sync(FULL_MASK, mx, 2))
                    m_new = max(m[h], mx * scale_log2)
                    alpha[h] = math.exp2(m[h] - m_new)
                    m[h] = m_new
                    total = np.float32(0.0)
                    for i in unroll(range(bn // 8)):
                        for e in unroll(range(2)):
                            p = math.exp2(s_acc[i * 4 + h * 2 + e] * scale_log2 - m_new)
                            s_acc[i * 4 + h * 2 + e] = p
                            total += p
                    l[h] = l[h] * alpha[h] + total
                if j > 0:  # P V of block j - 1 is done: its V goes back, P and O are free
                    if tf32x3:
                        hopper.wgmma_wait(0, o_part, o_regs)
                    else:
                        hopper.wgmma_wait(0, o_acc, o_regs)
                    if lane == 0:
                        hopper.mbarrier_arrive(bars, v_empty + prev)
                for h in unroll(range(2)):
                    for i in unroll(range(d // 8)):
                        if tf32x3:  # block j - 1's products (zeros at j = 0) join O, rescaled with it
                            for e in unroll(range(2)):
                                r = i * 4 + h * 2 + e
                                o_acc[r] = (o_acc[r] + o_part[r]) * alpha[h]
                        else:
                            o_acc[i * 4 + h * 2] *= alpha[h]
                            o_acc[i * 4 + h * 2 + 1] *= alpha[h]
                if tf32x3:  # an n8 chunk of S is one k8 A fragment: c0, c2, c1, c3 (V's keys permuted to match)
                    for kk in unroll(range(bn // 8)):
                        for r4 in unroll(range(4)):
                            pf[kk * 4 + r4], pf_small[kk * 4 + r4] = split_tf32(s_acc[kk * 4 + r4 % 2 * 2 + r4 // 2])
                else:
                    # two n8 chunks of S are one k16 A fragment: its 4 registers are their c0c1, c2c3 in turn
                    for kk in unroll(range(bn // 16)):
                        for r4 in unroll(range(4)):
                            pf[kk * 4 + r4] = pack(s_acc[kk * 8 + r4 * 2], s_acc[kk * 8 + r4 * 2 + 1])

            store_rows(out, o_acc, l, bh, first_row + lane // 4, lq, lane % 4, d // 8)

    if tf32x3:  # q, k (2 * bh, seq, d) and v (2 * bh, d, keys): boxes of one part's rows of 32 floats
        return tensor_map_params(flash_attention_wgmma, tmap_q=TensorMapParam("q", bm, cols),
                                 tmap_k=TensorMapParam("k", bn, cols), tmap_v=TensorMapParam("v", d, cols))
    return tensor_map_params(flash_attention_wgmma, tmap_q=TensorMapParam("q", bm, PANEL),
                             tmap_k=TensorMapParam("k", bn, PANEL), tmap_v=TensorMapParam("v", bn, PANEL))


#: the configuration by (head dim, causal), the fastest of those tried on an H200 (lab timings, not a benchmark
#: script; the benchmark's figures: docs/tensor-cores.md section 11, "Hopper"): three consumer warpgroups at d = 64
#: (192 query rows a block, 160 registers each) issuing without turns, a ring of 3 stages at d = 128 with turns, and
#: no turn-taking for causal d = 128
CONFIGS = {(64, False): {"bn": 128, "stages": 2, "consumers": 3, "pingpong": False},
           (64, True): {"bn": 128, "stages": 2, "consumers": 3, "pingpong": False},
           (128, False): {"bn": 128, "stages": 3, "consumers": 2},
           (128, True): {"bn": 128, "stages": 2, "consumers": 2, "pingpong": False}}
#: 3xTF32 (``tf32x3``) by head dim, causal or not: the fastest of the configurations timed on an H200 (lab sweep;
#: docs/tensor-cores.md section 12). A tile is four times its bf16 bytes (two fp32 parts), so shared memory decides,
#: and two consumer warpgroups (128 query rows: each K/V byte loaded serves 128 rows) issuing without turns beat one
#: consumer with a deeper ring. d = 64: 2 stages of 64 keys, 192 KiB; a consumer thread holds S (32), P big and small
#: (64), O and a key block's partial O (64): ptxas (sm_90a, the C) 168 registers, no spills. d = 128: the Q tile is
#: 64 KiB per consumer, so one stage of 32 keys, 192 KiB
TF32X3_CONFIGS = {64: {"bn": 64, "stages": 2, "consumers": 2, "pingpong": False},
                  128: {"bn": 32, "stages": 1, "consumers": 2, "pingpong": False}}
