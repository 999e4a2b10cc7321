"""fp32 matrix multiplication on the tensor cores, as accurate as fp32: ``out = a @ b`` with the 3xTF32 split.

Each float32 ``x`` is split into two tf32 parts, ``big = tf32(x)`` and ``small = tf32(x - big)`` (``split_tf32``;
``big + small`` holds 21 of float32's 24 significant bits), and each product ``a * b`` is computed as
``a_small * b_big + a_big * b_small + a_big * b_big`` on the tf32 tensor cores (``mma_m16n8k8_tf32``, fp32
accumulation), the small terms first; ``a_small * b_small`` (about 2**-22 of the product) is dropped. CUTLASS ships
this as ``OpMultiplyAddFastF32``.

The tensor cores add in fp32 but truncate, relative to the largest addend (the running sum): accumulated over all of
k in the mma's own accumulator the error grows with k, biased (4096^3 on an H200: 2.9e-5 relative, cuBLAS SGEMM
1.1e-6). So each k-tile's products go into a fresh partial sum on the tensor cores, and the partial sums add up in
registers with ordinary float32 adds (round to nearest): the error against a float64 reference is then below a
float32 GEMM's (H200, 4096^3: 2.3e-7 against cuBLAS SGEMM's 8.4e-7 on the same inputs, ``docs/tensor-cores.md``).

The kernel is the pipelined tensor-core matmul's (``matmul_tc_pipe``) with 32-bit data:

- 16-byte ``cp.async`` copies (4 floats) of both tiles, ``stages`` shared buffers, one barrier per k-tile;
- the A tile row-major, XOR-swizzled like the 16-bit kernel's (rows of 16 floats, two per 128-byte line), its
  fragments by ``ldmatrix_x4`` into float32 registers (a row of 4 floats per matrix row: lane ``l`` gets row
  ``l // 4``, float ``l % 4``, the tf32 A fragment's layout);
- the B tile k-major as B is, rows padded by 8 floats so that the B fragment reads (``b[k0 + t, n0 + g]``, four k
  rows of eight floats per warp) fall in 32 different banks; ldmatrix cannot transpose 32-bit elements;
- each fragment register split once per k-step, three mma per accumulator tile into the k-tile's partial sum,
  added to the accumulators once per k-tile.

Preconditions (``tf32_ready``): k and w multiples of 4 (whole 16-byte chunks), 16-byte aligned C-contiguous data.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..async_copy import async_commit, async_wait, copy_async16
from ..fastpath import jit_options, u32
from ..launch import (
    LaunchConfig,
    cdiv,
    check_array,
    check_matmul_shapes,
    check_same_device,
    empty_like_on,
    to_kernel_arg,
)
from ..mma import ldmatrix_x4, mma_m16n8k8_tf32, split_tf32
from ..registry import Case, KernelSpec, Work, random_array, register
from ..specialize import specialize
from ..unroll import unroll
from .matmul import _error_scale, _reference

CHUNK = 4  # floats in one 16-byte copy and one ldmatrix row
LINE = 32  # floats in one 128-byte line (the swizzle's unit)
B_PAD = 8  # floats added to each B row: the fragment reads' four k rows land 8 banks apart
STATIC_SHARED_LIMIT = 48 * 1024


def check_config(bm, bn, bk, warps_m, warps_n, stages, group) -> int:
    """Threads per block of a configuration, or a ValueError naming the constraint it breaks."""
    what = "matmul_3xtf32"
    for name, v in (("bm", bm), ("bn", bn), ("bk", bk), ("warps_m", warps_m), ("warps_n", warps_n),
                    ("stages", stages), ("group", group)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{what}: {name} must be a positive int, got {v!r}")
    threads = 32 * warps_m * warps_n
    if bm % warps_m or (bm // warps_m) % 16:
        raise ValueError(f"{what}: bm / warps_m = {bm} / {warps_m} must be a multiple of 16 (the mma's m)")
    if bn % warps_n or (bn // warps_n) % 8:
        raise ValueError(f"{what}: bn / warps_n = {bn} / {warps_n} must be a multiple of 8 (the mma's n)")
    if bk not in (16, 32):
        raise ValueError(f"{what}: bk must be 16 or 32 (A rows of 4 or 8 16-byte chunks: the swizzle), got {bk}")
    if stages < 2:
        raise ValueError(f"{what}: stages = {stages}: a pipeline needs at least 2 shared buffers")
    a_chunks, b_chunks = bm * bk // CHUNK, bk * bn // CHUNK
    if a_chunks % threads or b_chunks % threads or threads % (bk // CHUNK) or threads % (bn // CHUNK):
        raise ValueError(f"{what}: the {bm}x{bk} A and {bk}x{bn} B tiles must split evenly over {threads} threads "
                         "in 16-byte chunks, each thread keeping its column of chunks")
    if stages * (bm * bk + bk * (bn + B_PAD)) * 4 > STATIC_SHARED_LIMIT:
        raise ValueError(f"{what}: {stages} stages of the {bm}x{bk} A and {bk}x{bn} B tiles need "
                         f"{stages * (bm * bk + bk * (bn + B_PAD)) * 4} bytes, more than 48 KiB of static shared "
                         "memory")
    return threads


@specialize
def matmul_3xtf32_pipelined(bm: int = 128, bn: int = 128, bk: int = 16, warps_m: int = 2, warps_n: int = 4,
                            stages: int = 2, group: int = 8):
    """The kernel for one tile configuration; launch with ``tf32_launch`` (1-D blocks)."""
    threads = check_config(bm, bn, bk, warps_m, warps_n, stages, group)
    wm = bm // warps_m
    wn = bn // warps_n
    mi_n = wm // 16
    ni_n = wn // 8
    ks_n = bk // 8
    acc_n = mi_n * ni_n * 4
    a_regs = mi_n * 4
    b_regs = ni_n * 2
    a_tile = bm * bk
    b_cols = bn + B_PAD
    a_rc = bk // CHUNK
    b_rc = bn // CHUNK
    a_per = a_tile // CHUNK // threads
    b_per = bk * bn // CHUNK // threads
    a_rstep = threads // a_rc
    b_rstep = threads // b_rc
    a_rows_per_line = LINE // bk
    ahead = stages - 1
    wait_n = stages - 2

    @cuda.jit(**jit_options(threads=threads))
    def matmul_3xtf32_pipelined(a, b, out):
        tid = cuda.threadIdx.x
        lane = tid % 32
        warp = tid // 32
        h = a.shape[0]
        k = a.shape[1]
        w = b.shape[1]
        lin = cuda.blockIdx.y * cuda.gridDim.x + cuda.blockIdx.x
        band = group * cuda.gridDim.x
        first = lin // band * group
        rows = min(cuda.gridDim.y - first, group)
        row0 = (first + lin % band % rows) * bm
        col0 = lin % band // rows * bn
        wrow = warp // warps_n % warps_m * wm
        wcol = warp % warps_n * wn
        g = lane >> 2  # groupID
        t4 = lane % 4  # threadID_in_group

        a_s = cuda.shared.array((stages, a_tile), dtype=np.float32, alignment=128)
        b_s = cuda.shared.array((stages, bk, b_cols), dtype=np.float32, alignment=16)
        af = cuda.local.array(a_regs, np.float32)
        a_big = cuda.local.array(a_regs, np.float32)
        a_small = cuda.local.array(a_regs, np.float32)
        b_big = cuda.local.array(b_regs, np.float32)
        b_small = cuda.local.array(b_regs, np.float32)
        acc = cuda.local.array(acc_n, np.float32)
        part = cuda.local.array(acc_n, np.float32)  # this k-tile's products, on the tensor cores
        zero = cuda.local.array(4, np.float32)
        for i in unroll(range(acc_n)):
            acc[i] = np.float32(0.0)
        for i in unroll(range(4)):
            zero[i] = np.float32(0.0)

        # this thread's copies: A chunk column ac of rows ar + i * a_rstep (swizzled as matmul_tc_pipe's), B chunk
        # column bc of k rows br + i * b_rstep
        ac = tid % a_rc
        ar = tid // a_rc
        a_line = ar // a_rows_per_line
        a_dst = u32(a_line * LINE + ((ar % a_rows_per_line * a_rc + ac) ^ (a_line % 8)) * CHUNK)
        a_src = (row0 + ar) * k + ac * CHUNK
        a_left = h - row0 - ar
        bc = tid % b_rc
        br = tid // b_rc
        b_src = br * w + col0 + bc * CHUNK
        b_in = col0 + bc * CHUNK < w
        # ldmatrix rows: lanes 0-15 rows 0-15 of a 16-row fragment at k-chunk 0, lanes 16-31 at chunk 1 (k + 4)
        ld_row = wrow + lane % 16
        ld_line = ld_row // a_rows_per_line
        a_ld = u32(ld_line * LINE + ((ld_row % a_rows_per_line * a_rc + lane // 16) ^ (ld_line % 8)) * CHUNK)

        ntiles = (k + bk - 1) // bk
        for s in unroll(range(ahead)):
            if s < ntiles:
                for i in unroll(range(a_per)):
                    copy_async16(a_s, (u32(s), a_dst + i * a_rstep * bk), a, a_src + s * bk + i * a_rstep * k,
                                 i * a_rstep < a_left and s * bk + ac * CHUNK < k)
                for i in unroll(range(b_per)):
                    copy_async16(b_s, (u32(s), br + i * b_rstep, bc * CHUNK), b, b_src + (s * bk + i * b_rstep) * w,
                                 b_in and s * bk + br + i * b_rstep < k)
            async_commit()
        for t in range(ntiles):
            async_wait(wait_n)
            cuda.syncthreads()
            nxt = t + ahead
            if nxt < ntiles:
                ns = u32(nxt % stages)
                k0 = nxt * bk
                for i in unroll(range(a_per)):
                    copy_async16(a_s, (ns, a_dst + i * a_rstep * bk), a, a_src + k0 + i * a_rstep * k,
                                 i * a_rstep < a_left and k0 + ac * CHUNK < k)
                for i in unroll(range(b_per)):
                    copy_async16(b_s, (ns, br + i * b_rstep, bc * CHUNK), b, b_src + (k0 + i * b_rstep) * w,
                                 b_in and k0 + br + i * b_rstep < k)
            async_commit()
            st = u32(t % stages)
            for ks in unroll(range(ks_n)):
                for mi in unroll(range(mi_n)):
                    # 16 rows down: whole lines (line mod 8 kept); k-step ks: chunk 2 * ks more (a bit the XOR skips)
                    ldmatrix_x4(af, mi * 4, a_s, (st, (a_ld + mi * 16 * bk) ^ (ks * 2 * CHUNK)))
                for i in unroll(range(a_regs)):
                    a_big[i], a_small[i] = split_tf32(af[i])
                for ni in unroll(range(ni_n)):
                    n = u32(wcol + ni * 8 + g)
                    b_big[ni * 2], b_small[ni * 2] = split_tf32(b_s[st, u32(ks * 8 + t4), n])
                    b_big[ni * 2 + 1], b_small[ni * 2 + 1] = split_tf32(b_s[st, u32(ks * 8 + t4 + 4), n])
                for mi in unroll(range(mi_n)):
                    for ni in unroll(range(ni_n)):
                        c = (mi * ni_n + ni) * 4
                        if ks == 0:  # a fresh partial sum per k-tile
                            mma_m16n8k8_tf32(part, c, a_small, mi * 4, b_big, ni * 2, zero, 0)
                        else:
                            mma_m16n8k8_tf32(part, c, a_small, mi * 4, b_big, ni * 2, part, c)
                        mma_m16n8k8_tf32(part, c, a_big, mi * 4, b_small, ni * 2, part, c)
                        mma_m16n8k8_tf32(part, c, a_big, mi * 4, b_big, ni * 2, part, c)
            # the tensor cores' fp32 sums truncate relative to the running sum's size: kept to one k-tile, they stay
            # small, and the k-tiles add up here with round-to-nearest, as an fp32 GEMM's
            for i in unroll(range(acc_n)):
                acc[i] += part[i]

        for mi in unroll(range(mi_n)):
            for half in unroll(range(2)):
                r = row0 + wrow + mi * 16 + half * 8 + g
                if r < h:
                    for ni in unroll(range(ni_n)):
                        c = col0 + wcol + ni * 8 + t4 * 2
                        if c < w:  # (w even: the pair is inside)
                            out[u32(r), u32(c)] = acc[(mi * ni_n + ni) * 4 + half * 2]
                            out[u32(r), u32(c + 1)] = acc[(mi * ni_n + ni) * 4 + half * 2 + 1]

    return matmul_3xtf32_pipelined


def tf32_launch(config: dict, h: int, w: int) -> LaunchConfig:
    threads = 32 * config["warps_m"] * config["warps_n"]
    return LaunchConfig((max(1, cdiv(w, config["bn"])), max(1, cdiv(h, config["bm"]))), (threads,), 0)


def tf32_ready(a, b, out) -> bool:
    """True when ``a @ b`` may run as ``matmul_3xtf32``: k and w multiples of 4, 16-byte aligned C-contiguous
    data, inputs under 2**31 elements."""
    from ..launch import array_info

    infos = [array_info(name, x) for name, x in (("a", a), ("b", b), ("out", out))]
    k, w = infos[0].shape[1], infos[1].shape[1]
    return (k % CHUNK == 0 and w % CHUNK == 0 and all(i.c_contiguous and i.address % 16 == 0 for i in infos)
            and all(int(np.prod(i.shape)) < 2**31 for i in infos[:2]))


#: the registered configuration: 128x128x16 tiles, 8 warps of 64x32, 2 stages (34 KiB of static shared memory)
DEFAULT_CONFIG = {"bm": 128, "bn": 128, "bk": 16, "warps_m": 2, "warps_n": 4, "stages": 2, "group": 8}


def matmul_3xtf32(a, b, out=None, config: dict | None = None):
    """``a @ b`` for float32 ``a`` (h×k) and ``b`` (k×w), k and w multiples of 4, fp32-accurate on the tensor
    cores. Returns ``out`` (float32 h×w, made if not given)."""
    a_info = check_array("a", a, dtype=np.float32, ndim=2)
    b_info = check_array("b", b, dtype=np.float32, ndim=2)
    h, _, w = check_matmul_shapes("a", a_info, "b", b_info)
    if out is None:
        out = empty_like_on(a, (h, w), np.dtype(np.float32))
    out_info = check_array("out", out, dtype=np.float32, ndim=2)
    if out_info.shape != (h, w):
        raise ValueError(f"argument 'out' must have shape {(h, w)}, got {out_info.shape}")
    check_same_device(a=a_info, b=b_info, out=out_info)
    if not tf32_ready(a, b, out):
        raise ValueError("matmul_3xtf32: k and w must be multiples of 4 and the data 16-byte aligned and contiguous")
    if h == 0 or w == 0:
        return out
    config = dict(DEFAULT_CONFIG if config is None else config)
    cfg = tf32_launch(config, h, w)
    matmul_3xtf32_pipelined(**config)[cfg.grid, cfg.block, 0, 0](*(to_kernel_arg(x) for x in (a, b, out)))
    return out


# ---------------------------------------------------------------------------------------------------------------
# registry

TEST_SIZES = ({"h": 37, "k": 36, "w": 44}, {"h": 1, "k": 4, "w": 4}, {"h": 130, "k": 20, "w": 132})
VERIFY_SIZES = (
    {"h": 1, "k": 4, "w": 4},
    {"h": 37, "k": 36, "w": 44},
    {"h": 127, "k": 132, "w": 260},
    {"h": 256, "k": 256, "w": 256},
    {"h": 7, "k": 1020, "w": 4},
    {"h": 509, "k": 264, "w": 388},
)
BENCH_SIZES = ({"h": 4096, "k": 4096, "w": 4096}, {"h": 5120, "k": 256, "w": 5120})


def _case(size, rng, dist="uniform"):
    h, k, w = size["h"], size["k"], size["w"]
    a = random_array(rng, (h, k), np.float32, dist)
    b = random_array(rng, (k, w), np.float32, dist)
    return Case((a, b, np.zeros((h, w), np.float32)), tf32_launch(DEFAULT_CONFIG, h, w), dict(size))


def _work(size):
    h, k, w = size["h"], size["k"], size["w"]
    return Work(flops=2.0 * h * k * w, bytes=4.0 * (h * k + k * w + h * w))


def _sgemm(a, b, out):
    """The benchmark's baseline: cuBLAS SGEMM with TF32 off (CUDA cores), the fp32 GEMM of the same accuracy."""
    import torch

    def run():
        torch.backends.cuda.matmul.allow_tf32 = False
        return torch.matmul(a, b, out=out)

    return run, "torch.matmul fp32, TF32 off (cuBLAS SGEMM)"


register(KernelSpec(
    name="matmul_3xtf32",
    family="matmul",
    kernel=matmul_3xtf32_pipelined(**DEFAULT_CONFIG),
    signatures=("void(float32[:, ::1], float32[:, ::1], float32[:, ::1])",),
    make_case=_case,
    reference=_reference,
    error_scale=_error_scale,
    outputs=(2,),
    test_sizes=TEST_SIZES,
    verify_sizes=VERIFY_SIZES,
    bench_sizes=BENCH_SIZES,
    # fp32-accurate: the dropped small*small terms are ~2**-22 of each product, the rest is fp32 accumulation
    # (cuBLAS SGEMM's worst element is ~3.6e-7 of this scale at 4096^3; one tensor-core accumulator over all of k
    # gave 4.4e-6, which this bar catches)
    rtol=1e-6,
    constants=dict(DEFAULT_CONFIG),
    size_multiples={"k": 4, "w": 4},
    work=_work,
    baseline=_sgemm,
    description="fp32 inputs and output, fp32-accurate on the tf32 tensor cores: the 3xTF32 split "
                "(small*big + big*small + big*big), cp.async pipeline, swizzled A tile, ldmatrix.x4",
))
