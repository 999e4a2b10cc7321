"""Attention forward in fp32, flash-attention style: ``out = softmax(scale * q @ k^T [+ causal mask]) @ v``.

One block computes ``bm`` query rows of one (batch, head) and walks over the keys ``bn`` at a time, never
materialising the score matrix: the scores of a key block stay in registers, an online softmax keeps a running
row maximum ``m`` and row sum ``l`` (earlier partial results are rescaled by ``exp(m_old - m_new)`` when the
maximum grows), and the output accumulates in registers until it is divided by ``l`` at the end.

Layout of the work (``bm`` rows, ``bm / 16`` warps, ``bn`` keys per block):

- A warp owns 16 query rows and is a 4x8 grid of lanes: lane (ly, lx) owns rows ``ly + 4 * rr`` (rr < 4) of the
  warp's 16, the keys ``lx + 8 * qq`` (qq < bn / 8) of the key block, and the output columns ``4 * lx + 32 * g``
  .. ``+ 3``. The 8 lanes of one ``ly`` hold a whole row of scores between them: the row maximum is three
  ``shfl_xor`` steps, and the row sum is kept per lane and reduced once at the end.
- Q, K and V tiles go global -> shared by 16-byte ``cp.async`` copies. Q and K rows are read 4 floats at a time
  along the head dimension by lanes that own different rows, so their 16-byte chunks are stored XOR-swizzled
  (chunk ``c`` of row ``r`` at ``c ^ (r % 8)``): conflict-free reads without padding.
- ``scores -> probabilities`` go through shared memory once (``p_s``, key-major, the 4 rows of a lane adjacent):
  the ``p @ v`` step reads the 4 probabilities of a key for its rows as one 16-byte load.
- With ``kv_split`` (two K/V buffers) the copy of V for block t runs during the scores of block t, and the copy of
  K for block t + 1 during ``p @ v`` of block t. Without it (head dim 128: the buffers would not fit 48 KiB of
  static shared memory) one buffer takes K, then V; other resident blocks hide the copies.
- The head-dimension and key loops run ``S_UNROLL`` / ``PV_UNROLL`` steps of straight-line code per iteration
  (``unroll(range(n), k)``; fully unrolled they take numba minutes to compile and nvcc's C spills); causal blocks
  above the diagonal are skipped, and the mask is applied only in blocks that need it (the diagonal, the last partial
  key block).
  Query blocks run heaviest first (causal: the last rows see the most keys).

Masked scores are a large negative number, not -inf: the kernel is compiled with fastmath, under which infinities
are not guaranteed. Every processed key block holds at least one visible key of every row, so no row's maximum is
ever the mask value.

``attention(q, k, v, causal=False, scale=None, out=None)`` is the user-facing function: torch tensors, CuPy or
numpy arrays of shape (batch, heads, seq, head_dim) or (batch*heads, seq, head_dim), float32, contiguous.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from ..async_copy import async_commit, async_wait, copy_async4
from ..fastpath import jit_options, u32
from ..launch import LaunchConfig, cdiv, check_array, check_same_device, empty_like_on, to_kernel_arg
from ..registry import Case, KernelSpec, Work, random_array, register
from ..specialize import specialize
from ..unroll import unroll
from ..vector_io import vload4, vstore4
from .config import fits_static_shared, flags, for_mode, positive_ints, sizes
from .half import to16, values

#: a masked score: exp(MASKED - m) is 0 for any finite row maximum m
MASKED = -1.0e30
FULL_MASK = 0xFFFFFFFF
#: head-dimension chunks (of 4) and keys per iteration of the two inner loops, as straight-line code (numba takes
#: minutes over fully unrolled loops this size, and nvcc's fully unrolled C spills)
S_UNROLL = 2
PV_UNROLL = 4


def shared_bytes(d: int, bm: int, bn: int, kv_split: bool) -> int:
    """Shared memory of one block: the Q tile, one or two K/V tiles, the probabilities (key-major, padded)."""
    return 4 * (bm * d + (2 if kv_split else 1) * bn * d + bn * (bm + 4))


def _check_config(d: int, causal: bool, bm: int, bn: int, kv_split: bool) -> int:
    """Threads per block, or a ValueError saying which constraint fails."""
    positive_ints("flash_attention", d=d, bm=bm, bn=bn)
    flags("flash_attention", causal=causal, kv_split=kv_split)
    if d % 32:
        raise ValueError(f"flash_attention: head dim d={d} must be a multiple of 32 (8 lanes x 4 columns)")
    if bm % 16:
        raise ValueError(f"flash_attention: bm={bm} must be a multiple of 16 (a warp owns 16 query rows)")
    if bn % 8:
        raise ValueError(f"flash_attention: bn={bn} must be a multiple of 8 (8 lanes share a row's keys)")
    nt = bm // 16 * 32
    if nt > 1024 or (bn * d // 4) % nt or (bm * d // 4) % nt or nt % (d // 4):
        raise ValueError(f"flash_attention: the {bm}x{d} Q and {bn}x{d} K/V tiles must split evenly over {nt} threads "
                         "in 16-byte chunks, whole rows at a time")
    fits_static_shared("flash_attention", shared_bytes(d, bm, bn, kv_split),
                       f"d={d}, bm={bm}, bn={bn}, kv_split={kv_split}")
    return nt


@specialize
def flash_attention(d: int = 64, causal: bool = False, bm: int = 64, bn: int = 32, kv_split: bool = True,
                    min_blocks: int = 1):
    """The kernel for one head dim and tile configuration: ``(q, k, v, out, scale)``, arrays (batch*heads, seq, d);
    launch with ``attention_launch``. ``min_blocks`` is the ``launch_bounds`` minimum of resident blocks per
    multiprocessor (it caps the registers: without it nvcc's fully unrolled C takes 230-255)."""
    nt = _check_config(d, causal, bm, bn, kv_split)
    positive_ints("flash_attention", min_blocks=min_blocks)
    kq = bn // 8  # keys per lane in a key block
    dc_n = d // 4  # 16-byte chunks in a row of Q, K or V
    cols = d // 8  # output columns per lane
    col_groups = d // 32
    rstep = nt // dc_n  # rows between one thread's chunks of a tile
    q_copies = bm // rstep
    kv_copies = bn // rstep
    step = rstep * d  # elements between one thread's chunks of a tile
    next_block = bn * d  # elements between two key blocks
    kv_bufs = 2 if kv_split else 1
    vb = kv_bufs - 1  # the V buffer (the K buffer when there is one)
    v_wait = 1 if kv_split else 0  # groups left in flight when V must have landed (K of the next block)
    s_n = 4 * kq  # scores per lane, key-major: s[qq * 4 + rr]
    o_n = 4 * cols  # outputs per lane: o[rr * cols + c]
    pb = bm + 4  # padded row of the key-major probabilities
    opts = jit_options(threads=nt, min_blocks=min_blocks if min_blocks > 1 else None)

    @cuda.jit(**opts)
    def flash_attention(q, k, v, out, scale):
        tid = cuda.threadIdx.x
        warp = u32(tid // 32)
        ly = u32(tid % 32 // 8)
        lx = u32(tid % 8)
        bh = cuda.blockIdx.y
        qb = cuda.gridDim.x - 1 - cuda.blockIdx.x  # heaviest query blocks first
        q0 = qb * bm
        lq = q.shape[1]
        lk = k.shape[1]
        slot = warp * u32(16) + ly * u32(4)  # this lane's 4 rows, adjacent in p_s
        crow = u32(tid // dc_n)  # this thread's chunks of a tile: rows crow + i * rstep, chunk cc
        cc = u32(tid % dc_n)

        q_s = cuda.shared.array((bm, d), dtype=np.float32, alignment=16)
        kv_s = cuda.shared.array((kv_bufs, bn, d), dtype=np.float32, alignment=16)
        p_s = cuda.shared.array((bn, pb), dtype=np.float32, alignment=16)
        s = cuda.local.array(s_n, dtype=np.float32)
        o = cuda.local.array(o_n, dtype=np.float32)
        m = cuda.local.array(4, dtype=np.float32)
        l = cuda.local.array(4, dtype=np.float32)
        qf = cuda.local.array(16, dtype=np.float32)
        kf = cuda.local.array(s_n, dtype=np.float32)
        pf = cuda.local.array(4, dtype=np.float32)
        vf = cuda.local.array(cols, dtype=np.float32)
        for i in range(o_n):
            o[i] = np.float32(0.0)
        for rr in range(4):
            m[rr] = np.float32(MASKED)
            l[rr] = np.float32(0.0)

        nkb = (lk + bn - 1) // bn
        if causal:  # keys past the block's last row are masked for every row: skip their blocks
            nkb = min(nkb, (q0 + bm + bn - 1) // bn)

        # Q once, and K of the first key block
        # flat offsets of this thread's first chunks; its next chunks are `step` further, the next key block
        # `next_block` further: compile-time distances, which fold into the copies' address immediates
        q_first = (bh * lq + q0 + crow) * d + cc * 4
        kv_first = (bh * lk + crow) * d + cc * 4
        for i in unroll(range(q_copies)):
            r = crow + i * rstep
            copy_async4(q_s, (r, (cc ^ (r % 8)) * 4), q, q_first + i * step, q0 + r < lq)
        for i in unroll(range(kv_copies)):
            r = crow + i * rstep
            copy_async4(kv_s, (0, r, (cc ^ (r % 8)) * 4), k, kv_first + i * step, r < lk)
        async_commit()

        for t in range(nkb):
            kb0 = t * bn
            async_wait(0)  # K of this block (and Q) have landed ...
            cuda.syncthreads()  # ... for everyone; everyone is done with the last block's V and probabilities
            kv_block = kv_first + kb0 * d
            if kv_split:  # V of this block lands while the scores are computed
                for i in unroll(range(kv_copies)):
                    r = crow + i * rstep
                    copy_async4(kv_s, (vb, r, cc * 4), v, kv_block + i * step, kb0 + r < lk)
                async_commit()

            # scores: s[qq, rr] = q[row rr] . k[key qq], 4 head-dim columns at a time
            for i in range(s_n):
                s[i] = np.float32(0.0)
            for dc in unroll(range(u32(dc_n)), S_UNROLL):  # S_UNROLL chunks of straight-line code per iteration
                for rr in range(4):
                    tr = warp * u32(16) + ly + u32(4 * rr)  # the row in the Q tile
                    vload4(q_s, (tr, (dc ^ (tr % u32(8))) * u32(4)), qf, rr * 4)
                for qq in range(kq):
                    vload4(kv_s, (0, lx + u32(8 * qq), (dc ^ lx) * u32(4)), kf, qq * 4)
                for qq in range(kq):
                    for rr in range(4):
                        for e in range(4):
                            s[qq * 4 + rr] += qf[rr * 4 + e] * kf[qq * 4 + e]

            # online softmax: the new row maxima, the old partial results rescaled, probabilities into p_s
            masked = kb0 + bn > lk or (causal and kb0 + bn - 1 > q0 + warp * 16)
            for rr in range(4):
                row = q0 + warp * 16 + ly + 4 * rr
                mx = np.float32(MASKED)
                for qq in range(kq):
                    x = s[qq * 4 + rr] * scale
                    if masked:
                        key = kb0 + lx + 8 * qq
                        if key >= lk or (causal and key > row):
                            x = np.float32(MASKED)
                    s[qq * 4 + rr] = x
                    mx = max(mx, x)
                mx = max(mx, cuda.shfl_xor_sync(FULL_MASK, mx, 1))  # the row's 8 lanes: lane bits 0..2
                mx = max(mx, cuda.shfl_xor_sync(FULL_MASK, mx, 2))
                mx = max(mx, cuda.shfl_xor_sync(FULL_MASK, mx, 4))
                m_new = max(m[rr], mx)
                alpha = math.exp(m[rr] - m_new)
                m[rr] = m_new
                total = l[rr] * alpha
                for qq in range(kq):
                    p = math.exp(s[qq * 4 + rr] - m_new)
                    s[qq * 4 + rr] = p
                    total += p
                l[rr] = total
                for c in range(cols):
                    o[rr * cols + c] *= alpha
            for qq in range(kq):
                vstore4(p_s, (lx + u32(8 * qq), slot), s, qq * 4)

            cuda.syncthreads()  # the probabilities are written, and everyone is done with this block's K
            if not kv_split:  # V into the one buffer now that K is read
                for i in unroll(range(kv_copies)):
                    r = crow + i * rstep
                    copy_async4(kv_s, (0, r, cc * 4), v, kv_block + i * step, kb0 + r < lk)
                async_commit()
            else:  # K of the next block lands during p @ v (an empty group after the last block: the count holds)
                if t + 1 < nkb:
                    for i in unroll(range(kv_copies)):
                        r = crow + i * rstep
                        copy_async4(kv_s, (0, r, (cc ^ (r % 8)) * 4), k, kv_block + next_block + i * step,
                                    kb0 + bn + r < lk)
                async_commit()
            async_wait(v_wait)  # V of this block has landed ...
            cuda.syncthreads()  # ... for everyone

            # o[rr, :] += p[rr, j] * v[j, :]
            for j in unroll(range(u32(bn)), PV_UNROLL):
                vload4(p_s, (j, slot), pf, 0)
                for g in range(col_groups):
                    vload4(kv_s, (vb, j, lx * u32(4) + u32(32 * g)), vf, g * 4)
                for rr in range(4):
                    for c in range(cols):
                        o[rr * cols + c] += pf[rr] * vf[c]

            if not kv_split and t + 1 < nkb:  # K of the next block, once everyone is done with V
                cuda.syncthreads()
                for i in unroll(range(kv_copies)):
                    r = crow + i * rstep
                    copy_async4(kv_s, (0, r, (cc ^ (r % 8)) * 4), k, kv_block + next_block + i * step,
                                kb0 + bn + r < lk)
                async_commit()

        for rr in range(4):
            total = l[rr]
            total += cuda.shfl_xor_sync(FULL_MASK, total, 1)
            total += cuda.shfl_xor_sync(FULL_MASK, total, 2)
            total += cuda.shfl_xor_sync(FULL_MASK, total, 4)
            row = q0 + warp * 16 + ly + 4 * rr
            if row < lq:
                inv = np.float32(1.0) / total
                for c in range(cols):
                    o[rr * cols + c] *= inv
                for g in range(col_groups):
                    vstore4(out, (bh, u32(row), lx * u32(4) + u32(32 * g)), o, rr * cols + g * 4)

    return flash_attention


def attention_threads(config: dict) -> int:
    return _check_config(config["d"], config.get("causal", False), config["bm"], config["bn"],
                         config.get("kv_split", True))


#: tile configurations per head dim (all within 48 KiB of static shared memory). d = 64: 64 rows x 32 keys, 128
#: threads, V and next K copied during the math (40.5 KiB: 5 blocks fit a multiprocessor's shared memory, 4 its
#: registers at <= 128 each); d = 128: 32 rows x 32 keys, 64 threads, one K/V buffer (36.5 KiB: 6 blocks by shared
#: memory, 5 by registers at <= 200 each).
CONFIGS = {64: {"bm": 64, "bn": 32, "kv_split": True, "min_blocks": 4},
           128: {"bm": 32, "bn": 32, "kv_split": False, "min_blocks": 5}}
#: the simulator's: small tiles that the test sequence lengths do not divide
SIM_CONFIGS = {64: {"bm": 16, "bn": 16, "kv_split": True}, 128: {"bm": 16, "bn": 8, "kv_split": False},
               32: {"bm": 16, "bn": 8, "kv_split": True}}


def config_for(d: int, causal: bool) -> dict:
    """The configuration ``attention`` runs for this head dim (the simulator's small one under the simulator)."""
    return {"d": d, "causal": bool(causal), **head_dim_config("attention", CONFIGS, SIM_CONFIGS, d)}


def attention(q, k, v, *, causal: bool = False, scale: float | None = None, out=None):
    """``softmax(scale * q @ k^T) @ v`` per (batch, head), in fp32; ``causal`` masks key j for query i when j > i.

    ``q``: (batch, heads, lq, d) or (batch*heads, lq, d); ``k``, ``v``: the same with lk keys; float32, C-contiguous,
    16-byte aligned; d = 64 or 128. ``scale`` defaults to 1/sqrt(d) (as ``torch.nn.functional.
    scaled_dot_product_attention``). Torch tensors, CuPy arrays or numpy arrays (numpy under the simulator); the
    result is of the same kind on the same device (``out`` if given)."""
    return run_attention(q, k, v, causal, scale, out, np.float32, config_for, flash_attention)


# ---------------------------------------------------------------------------------------------------------------
# what the attention kernels share: configuration, launch, argument checks, the entry points' work, the registry

def head_dim_config(what: str, gpu: dict, sim: dict, d: int) -> dict:
    """A kernel's tile configuration for head dim ``d`` from its GPU or (under the simulator) its small table."""
    table = for_mode(sim, gpu)
    if d not in table:
        raise ValueError(f"{what}: head dim {d} is not supported; supported: {', '.join(map(str, sorted(table)))}")
    return table[d]


def check_tiles(what: str, d: int, bm: int, bn: int, bn_step: int, chunk: int, nbytes: int) -> int:
    """Threads per block of an ``mma.sync`` attention kernel (a warp per 16 query rows, ``bn_step`` keys the k of
    P @ V), or a ValueError: the Q and K/V tiles split evenly over the threads in 16-byte chunks of ``chunk`` elements,
    each thread keeping its chunk column, and fit static shared memory (``nbytes``)."""
    if bm % 16:
        raise ValueError(f"{what}: bm={bm} must be a multiple of 16 (a warp owns 16 query rows)")
    if bn % bn_step:
        raise ValueError(f"{what}: bn={bn} must be a multiple of {bn_step} (the k of P @ V)")
    nt = bm // 16 * 32
    row_chunks = d // chunk
    if nt > 1024 or nt % row_chunks or bm % (nt // row_chunks) or bn % (nt // row_chunks):
        raise ValueError(f"{what}: the {bm}x{d} Q and {bn}x{d} K/V tiles must split evenly over {nt} threads in "
                         "16-byte chunks, each thread keeping its chunk column")
    fits_static_shared(what, nbytes, f"d={d}, bm={bm}, bn={bn}")
    return nt


def attention_launch(config: dict, batch_heads: int, lq: int) -> LaunchConfig:
    """One block of ``bm / 16`` warps per ``bm`` query rows of one (batch, head): grid (query blocks, batch*heads)."""
    return LaunchConfig((max(1, cdiv(lq, config["bm"])), max(1, batch_heads), 1), (config["bm"] // 16 * 32, 1, 1), 0)


def _checked(q, k, v, out, dtype):
    infos = {}
    for name, x in (("q", q), ("k", k), ("v", v)):
        infos[name] = check_array(name, x, dtype=dtype)
        if len(infos[name].shape) not in (3, 4):
            raise ValueError(f"argument '{name}' must have shape (batch, heads, seq, head_dim) or "
                             f"(batch*heads, seq, head_dim), got {infos[name].shape}")
    qs, ks, vs = infos["q"].shape, infos["k"].shape, infos["v"].shape
    if not (len(qs) == len(ks) == len(vs)):
        raise ValueError(f"arguments 'q', 'k', 'v' must have the same number of dimensions, got {qs}, {ks}, {vs}")
    if ks != vs:
        raise ValueError(f"arguments 'k' and 'v' must have the same shape, got {ks} and {vs}")
    if qs[:-2] != ks[:-2] or qs[-1] != ks[-1]:
        raise ValueError(f"argument 'q' {qs} and 'k' {ks} must agree in batch, heads and head_dim")
    if ks[-2] == 0:
        raise ValueError("arguments 'k' and 'v' must have at least one key (seq > 0)")
    if out is not None:
        infos["out"] = check_array("out", out, dtype=np.float32)
        if infos["out"].shape != qs:
            raise ValueError(f"argument 'out' must have shape {qs} (q's), got {infos['out'].shape}")
    check_same_device(**infos)
    for name, info in infos.items():
        if info.address % 16:
            raise ValueError(f"argument '{name}' must be 16-byte aligned (its rows are copied 16 bytes at a time)")
    return qs


def run_attention(q, k, v, causal, scale, out, dtype, configure, factory, launch=None):
    """An attention entry point's work: the arguments checked (``q``, ``k``, ``v`` of ``dtype``, ``out`` float32),
    and the kernel ``factory(**configure(d, causal))`` launched over (batch*heads, seq, d) views; or, where
    ``launch(q, k, v, out, scale)`` on those views returns True, the other kernel that it launched."""
    if not isinstance(causal, bool):
        raise TypeError(f"argument 'causal' must be True or False, got {causal!r}")
    qs = _checked(q, k, v, out, dtype)
    d = int(qs[-1])
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    if not isinstance(scale, (int, float)) or isinstance(scale, bool) or not math.isfinite(scale):
        raise ValueError(f"argument 'scale' must be a finite number, got {scale!r}")
    config = configure(d, causal)
    if out is None:
        out = empty_like_on(q, tuple(qs), np.dtype(np.float32))
    lq = int(qs[-2])
    bh = int(np.prod(qs[:-2]))
    if lq == 0 or bh == 0:
        return out
    args = [_as_3d(to_kernel_arg(x), bh) for x in (q, k, v, out)]
    if launch is not None and launch(*args, np.float32(scale)):
        return out
    cfg = attention_launch(config, bh, lq)
    factory(**config)[cfg.grid, cfg.block](*args, np.float32(scale))
    return out


def _as_3d(x, bh: int):
    """(batch, heads, seq, d) -> (batch*heads, seq, d), a view of the same memory."""
    if len(x.shape) == 3:
        return x
    return x.reshape(bh, x.shape[-2], x.shape[-1])


def softmax_weights(q, k, scale, causal) -> np.ndarray:
    """float64 ``softmax(scale q k^T)`` per (batch, head) of the inputs' values (16-bit ones as ``half.values``
    reads them), the row maximum subtracted; causal: key j hidden from query i when j > i."""
    s = np.einsum("bid,bjd->bij", values(q), values(k)) * float(scale)
    if causal:
        lq, lk = s.shape[1:]
        s = np.where(np.arange(lk)[None, :] > np.arange(lq)[:, None], -np.inf, s)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return p / p.sum(axis=-1, keepdims=True)


def reference(q, k, v, scale, causal) -> np.ndarray:
    """float64 ``softmax(scale q k^T) v`` of the inputs' values."""
    return np.einsum("bij,bjd->bid", softmax_weights(q, k, scale, causal), values(v))


def score_magnitude(q, k, scale) -> np.ndarray:
    """Per query row, the largest ``|scale| * |q_i| . |k_j|``: what an error in a score is relative to."""
    return abs(float(scale)) * np.einsum("bid,bjd->bij", np.abs(values(q)), np.abs(values(k))).max(axis=-1)


def _fp32_scale(causal):
    def error_scale(q, k, v, out, scale, *extra):
        # An output is a convex combination of v's rows: its rounding error is relative to sum_j p_ij |v_jd|, and an
        # error e in a score changes exp(score) by about e, where e is relative to the score's dot product: the
        # row's largest such magnitude, plus one for the products and sums of p @ v.
        weighted = np.einsum("bij,bjd->bid", softmax_weights(q, k, scale, causal), np.abs(values(v)))
        return {3: weighted * (1.0 + score_magnitude(q, k, scale)[..., None])}

    return error_scale


def attention_case(d: int, causal: bool, configure, f16: bool | None = None, launch=None, extra_args=()):
    """A spec's ``make_case`` for ``configure(d, causal)``'s kernel: random ``q``, ``k``, ``v`` (float32, or with
    ``f16`` given 16-bit, ``half.to16``), ``out`` poisoned with NaN, scale 1/sqrt(d), then copies of
    ``extra_args`` (a Hopper kernel's tensor-map placeholders); launched by ``launch(config, bh, lq)`` (default
    ``attention_launch``). ``large`` q and k are scaled back: scores of 1e8 would make every row one-hot."""
    launch = launch or attention_launch

    def make_case(size, rng, dist="uniform"):
        bh, lq, lk = size["bh"], size["lq"], size["lk"]
        qkv = [random_array(rng, (bh, n, d), np.float32, dist) for n in (lq, lk, lk)]
        if dist == "large":
            qkv[0], qkv[1] = qkv[0] / np.float32(1e4), qkv[1] / np.float32(1e4)
        if f16 is not None:
            qkv = [to16(x, f16) for x in qkv]
        out = np.full((bh, lq, d), np.nan, dtype=np.float32)
        cfg = launch(configure(d, causal), bh, lq)
        extra = [np.copy(a) for a in extra_args]
        return Case((*qkv, out, np.float32(1.0 / math.sqrt(d)), *extra), cfg, dict(size))

    return make_case


def _work(d: int, causal: bool, in_bytes: int = 4):
    def work(size):
        # 2 flops per multiply-add, two products (q k^T and p v) per visible (query, key) pair
        bh, lq, lk = size["bh"], size["lq"], size["lk"]
        if not causal:
            pairs = lq * lk
        else:  # query i sees keys 0..i
            n = min(lq, lk)
            pairs = n * (n + 1) // 2 + (lq - n) * lk
        return Work(flops=4.0 * bh * pairs * d, bytes=in_bytes * bh * (lq + 2 * lk) * d + 4.0 * bh * lq * d)

    return work


def sdpa_baseline(causal: bool):
    """The benchmark's baseline: torch's ``F.scaled_dot_product_attention`` as it dispatches by default, on the same
    values (bf16 data travels as uint16 bit patterns; 16-bit output for 16-bit inputs, as torch gives)."""
    def baseline(q, k, v, out, scale, *extra):
        import torch
        import torch.nn.functional as F

        # 4-D views (1, batch*heads, seq, dim): torch's fused kernels refuse 3-D inputs and would leave the MATH
        # backend as the only one to run
        q4, k4, v4 = (x.view(torch.bfloat16)[None] if x.dtype == torch.uint16 else x[None] for x in (q, k, v))
        return (lambda: F.scaled_dot_product_attention(q4, k4, v4, is_causal=causal, scale=float(scale)),
                "F.scaled_dot_product_attention, torch's default dispatch")

    return baseline


SIGNATURE = ("void(float32[:, :, ::1], float32[:, :, ::1], float32[:, :, ::1], float32[:, :, ::1], float32)",)
#: the simulator's sizes: sequence lengths that no tile size divides, lq != lk, a single key and a single query
TEST_SIZES = sizes("bh lq lk", (1, 37, 37), (1, 1, 1), (2, 20, 29))
VERIFY_SIZES = sizes("bh lq lk", (1, 1, 1), (2, 37, 37), (3, 129, 200), (2, 255, 255), (1, 513, 513), (4, 64, 17))
#: batch 4 x 16 heads at 1k and 4k tokens, 1 x 16 at 8k
BENCH_SIZES = sizes("bh lq lk", (64, 1024, 1024), (64, 4096, 4096), (16, 8192, 8192))


def register_attention(name: str, kernel, config: dict, configure, description: str, f16: bool | None = None,
                       launch=None, extra_args=(), **spec) -> None:
    """An attention kernel into the registry, for ``config``'s head dim and mask: its cases, reference, work and
    baseline; fp32 inputs (or 16-bit with ``f16`` given) with the fp32 error scale unless ``spec`` says otherwise.
    ``launch`` and ``extra_args``: as ``attention_case`` takes them (arguments after ``scale``, such as tensor maps,
    are the kernel's own: the reference and the baseline do not read them). ``spec`` may replace any of the
    defaults (a kernel that takes its inputs in another form: its own ``make_case``, ``reference``, ...)."""
    d, causal = config["d"], config["causal"]

    def expected(q, k, v, out, scale, *extra):
        return {3: reference(q, k, v, scale, causal)}

    defaults = dict(signatures=SIGNATURE, test_sizes=TEST_SIZES, error_scale=_fp32_scale(causal), rtol=2e-5,
                    make_case=attention_case(d, causal, configure, f16, launch, extra_args), reference=expected,
                    baseline=sdpa_baseline(causal))
    register(KernelSpec(
        name=name, family="attention", kernel=kernel, outputs=(3,), verify_sizes=VERIFY_SIZES,
        bench_sizes=BENCH_SIZES, constants=config, work=_work(d, causal, 4 if f16 is None else 2),
        description=description, **{**defaults, **spec}))


#: the registered variants: (name, head dim, causal)
VARIANTS = (("attention_d64", 64, False), ("attention_d64_causal", 64, True), ("attention_d128", 128, False),
            ("attention_d128_causal", 128, True))

for _name, _d, _causal in VARIANTS:
    _config = config_for(_d, _causal)
    register_attention(_name, flash_attention(**_config), _config, config_for,
                       f"flash attention forward, fp32, head dim {_d}{', causal' if _causal else ''}: online softmax, "
                       "Q/K/V tiles by cp.async, scores in registers")
