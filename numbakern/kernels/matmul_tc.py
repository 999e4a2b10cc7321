"""bf16 matrix multiplication on the tensor cores: ``out (float32) = a (bf16) @ b (bf16)``, fp32 accumulation.

``matmul_bf16_tc(bm, bn, bk, warps_m, warps_n)`` is the kernel for one tile configuration. A block computes a
``bm``×``bn`` tile of the output with ``warps_m * warps_n`` warps, each a ``(bm / warps_m)``×``(bn / warps_n)`` warp
tile of m16n8 accumulators (``numbakern.mma``). Per ``bk``-wide slice of k:

1. the block stages the A slice (``bm``×``bk``) and the B slice (``bk``×``bn``) in shared memory as bf16 bit
   patterns (uint16), zero past the matrices' edges, so any M, N and K are correct;
2. per 16-wide k-step each warp loads its A fragments with ``ldmatrix_x4`` (one m16k16 fragment per call) and its
   B fragments with ``ldmatrix_x4_trans`` (two k16n8 fragments per call: B is row-major, the mma wants it
   column-major, and ``.trans`` is that transposition), then runs one ``mma_m16n8k16_bf16`` per accumulator tile.

Shared rows are padded by 8 elements (16 bytes: every ldmatrix row address stays 16-byte aligned) so that the
eight row addresses of one 8x8 matrix fall in different banks.

This is the first, plain version: one shared buffer and element-by-element staging, correct for
every shape; the pipelined version (cp.async of 16-byte groups, several stages, swizzled tiles) comes next, measured
on a GPU.

bf16 data is held as uint16 bit patterns (``numbakern.launch.BFLOAT16``): ``matmul_bf16`` takes torch bfloat16
tensors, ``ml_dtypes.bfloat16`` arrays or uint16 arrays of bit patterns.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..fastpath import jit_options
from ..launch import (
    BFLOAT16,
    LaunchConfig,
    cdiv,
    check_array,
    check_matmul_shapes,
    check_same_device,
    empty_like_on,
    to_kernel_arg,
)
from ..mma import formats, ldmatrix_x4, ldmatrix_x4_trans, mma_m16n8k16_bf16
from ..registry import Case, KernelSpec, Work, random_array, register
from ..specialize import specialize

#: the tile configuration of the registered kernel (GPU and simulator alike: it is small enough for both)
DEFAULT_CONFIG = {"bm": 64, "bn": 64, "bk": 32, "warps_m": 2, "warps_n": 2}
PAD = 8  # elements added to each shared row (16 bytes)


def _check_config(bm, bn, bk, warps_m, warps_n) -> tuple[int, int]:
    for name, v in (("bm", bm), ("bn", bn), ("bk", bk), ("warps_m", warps_m), ("warps_n", warps_n)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"matmul_bf16_tc: {name} must be a positive int, got {v!r}")
    wm, wn = bm // warps_m, bn // warps_n
    if bm % warps_m or wm % 16:
        raise ValueError(f"matmul_bf16_tc: bm / warps_m = {bm} / {warps_m} must be a multiple of 16 (the mma's m)")
    if bn % warps_n or wn % 16:
        raise ValueError(f"matmul_bf16_tc: bn / warps_n = {bn} / {warps_n} must be a multiple of 16 (two n8 tiles "
                         "per ldmatrix_x4_trans)")
    if bk % 16:
        raise ValueError(f"matmul_bf16_tc: bk = {bk} must be a multiple of 16 (the mma's k)")
    return wm, wn


@specialize
def matmul_bf16_tc(bm: int = 64, bn: int = 64, bk: int = 32, warps_m: int = 2, warps_n: int = 2):
    """The tensor-core kernel for one tile configuration; launch with ``bf16_launch`` (1-D blocks)."""
    wm, wn = _check_config(bm, bn, bk, warps_m, warps_n)
    threads = 32 * warps_m * warps_n
    mi_n = wm // 16  # m16 accumulator tiles per warp, down
    ni_n = wn // 8  # n8 accumulator tiles per warp, across
    nj_n = ni_n // 2  # ldmatrix_x4_trans calls per k-step (two n8 tiles each)
    a_regs = mi_n * 4
    b_regs = ni_n * 2
    acc_regs = mi_n * ni_n * 4
    a_cols = bk + PAD
    b_cols = bn + PAD
    a_elems = bm * bk
    b_elems = bk * bn

    @cuda.jit(**jit_options(threads=threads))
    def matmul_bf16_tc(a, b, out):
        tid = cuda.threadIdx.x
        lane = tid % 32
        warp = tid // 32
        m = a.shape[0]
        k = a.shape[1]
        n = b.shape[1]
        row0 = cuda.blockIdx.y * bm
        col0 = cuda.blockIdx.x * bn
        wrow = (warp // warps_n) * wm  # the warp tile's place in the block tile
        wcol = (warp % warps_n) * wn

        a_s = cuda.shared.array((bm, a_cols), dtype=np.uint16)
        b_s = cuda.shared.array((bk, b_cols), dtype=np.uint16)
        af = cuda.local.array(a_regs, np.uint32)
        bf = cuda.local.array(b_regs, np.uint32)
        acc = cuda.local.array(acc_regs, np.float32)
        for i in range(acc_regs):
            acc[i] = np.float32(0.0)

        for k0 in range(0, k, bk):
            for e in range(tid, a_elems, threads):
                r = e // bk
                c = e % bk
                gr = row0 + r
                gc = k0 + c
                a_s[r, c] = a[gr, gc] if gr < m and gc < k else np.uint16(0)
            for e in range(tid, b_elems, threads):
                r = e // bn
                c = e % bn
                gr = k0 + r
                gc = col0 + c
                b_s[r, c] = b[gr, gc] if gr < k and gc < n else np.uint16(0)
            cuda.syncthreads()
            for kk in range(0, bk, 16):
                # lanes 0-15 name rows 0-15 at column kk, lanes 16-31 the same rows at kk + 8: a0..a3
                for mi in range(mi_n):
                    ldmatrix_x4(af, mi * 4, a_s, (wrow + mi * 16 + lane % 16, kk + (lane // 16) * 8))
                # lanes 0-15 name k rows kk..kk+15 at the n8 tile's column, lanes 16-31 at the next tile's:
                # transposed, b0, b1 of two n8 tiles
                for nj in range(nj_n):
                    ldmatrix_x4_trans(bf, nj * 4, b_s, (kk + lane % 16, wcol + nj * 16 + (lane // 16) * 8))
                for mi in range(mi_n):
                    for ni in range(ni_n):
                        t = (mi * ni_n + ni) * 4
                        mma_m16n8k16_bf16(acc, t, af, mi * 4, bf, ni * 2, acc, t)
            cuda.syncthreads()

        g = lane >> 2  # groupID: c0, c1 in row g, c2, c3 in row g + 8
        t4 = lane % 4  # threadID_in_group: columns 2 * t4, 2 * t4 + 1
        for mi in range(mi_n):
            for ni in range(ni_n):
                for i in range(4):
                    r = row0 + wrow + mi * 16 + g + (i // 2) * 8
                    c = col0 + wcol + ni * 8 + t4 * 2 + i % 2
                    if r < m and c < n:
                        out[r, c] = acc[(mi * ni_n + ni) * 4 + i]

    return matmul_bf16_tc


def bf16_launch(config: dict, h: int, w: int) -> LaunchConfig:
    """Grid and block of the tensor-core kernel for an ``h``×``w`` output."""
    threads = 32 * config["warps_m"] * config["warps_n"]
    return LaunchConfig((max(1, cdiv(w, config["bn"])), max(1, cdiv(h, config["bm"]))), (threads,), 0)


def matmul_bf16(a, b, out=None, config: dict | None = None):
    """``a @ b`` for bf16 ``a`` (h×k) and ``b`` (k×w), accumulated and returned in float32.

    ``a`` and ``b``: torch bfloat16 tensors, ``ml_dtypes.bfloat16`` arrays or uint16 arrays of bf16 bit patterns
    (numpy or CPU tensors under the simulator, CUDA tensors on a GPU); ``out``: float32 h×w of the same kind, made
    if not given. Returns ``out``.
    """
    a_info = check_array("a", a, dtype=BFLOAT16, ndim=2)
    b_info = check_array("b", b, dtype=BFLOAT16, ndim=2)
    h, _, w = check_matmul_shapes("a", a_info, "b", b_info)
    if out is None:
        out = empty_like_on(a, (h, w), np.dtype(np.float32))
    out_info = check_array("out", out, dtype=np.float32, ndim=2)
    if out_info.shape != (h, w):
        raise ValueError(f"argument 'out' must have shape {(h, w)}, got {out_info.shape}")
    check_same_device(a=a_info, b=b_info, out=out_info)
    if h == 0 or w == 0:
        return out
    config = dict(DEFAULT_CONFIG if config is None else config)
    cfg = bf16_launch(config, h, w)
    matmul_bf16_tc(**config)[cfg.grid, cfg.block, 0, 0](to_kernel_arg(a), to_kernel_arg(b), to_kernel_arg(out))
    return out


# ---------------------------------------------------------------------------------------------------------------
# registry

#: sizes for the simulator: non-multiples of every tile size (64, 32, 16, 8), 1, and one k-step only
TEST_SIZES = ({"h": 37, "k": 70, "w": 45}, {"h": 1, "k": 1, "w": 1}, {"h": 70, "k": 17, "w": 9})
VERIFY_SIZES = (
    {"h": 1, "k": 1, "w": 1},
    {"h": 37, "k": 70, "w": 45},
    {"h": 127, "k": 131, "w": 257},
    {"h": 256, "k": 256, "w": 256},
    {"h": 7, "k": 1021, "w": 3},
    {"h": 509, "k": 263, "w": 383},
)
BENCH_SIZES = ({"h": 4096, "k": 4096, "w": 4096}, {"h": 5120, "k": 256, "w": 5120})
SIGNATURE = "void(uint16[:, ::1], uint16[:, ::1], float32[:, ::1])"


def _bf16_matrix(rng, shape, dist) -> np.ndarray:
    """A random matrix of bf16 bit patterns (float32 draws rounded to bf16), never all zeros."""
    return formats.f32_to_bf16_bits(random_array(rng, shape, np.float32, dist))


def _case(size, rng, dist="uniform"):
    h, k, w = size["h"], size["k"], size["w"]
    a = _bf16_matrix(rng, (h, k), dist)
    b = _bf16_matrix(rng, (k, w), dist)
    out = np.zeros((h, w), np.float32)
    return Case((a, b, out), bf16_launch(DEFAULT_CONFIG, h, w), dict(size))


def _values(bits) -> np.ndarray:
    return formats.bf16_bits_to_f32(bits).astype(np.float64)


def _reference(a, b, out):
    return {2: _values(a) @ _values(b)}


def _error_scale(a, b, out):
    return {2: np.abs(_values(a)) @ np.abs(_values(b))}


def _work(size):
    h, k, w = size["h"], size["k"], size["w"]
    return Work(flops=2.0 * h * k * w, bytes=2.0 * (h * k + k * w) + 4.0 * h * w)


def _cublas_bf16(a, b, out):
    """The benchmark's baseline: cuBLAS's bf16 GEMM through torch on the same bits (bf16 output, as torch gives)."""
    import torch

    a16, b16 = a.view(torch.bfloat16), b.view(torch.bfloat16)
    return (lambda: torch.matmul(a16, b16)), "torch.matmul on bf16 (cuBLAS, bf16 out)"


register(KernelSpec(
    name="matmul_bf16",
    family="matmul",
    kernel=matmul_bf16_tc(**DEFAULT_CONFIG),
    signatures=(SIGNATURE,),
    make_case=_case,
    reference=_reference,
    error_scale=_error_scale,
    outputs=(2,),
    test_sizes=TEST_SIZES,
    verify_sizes=VERIFY_SIZES,
    bench_sizes=BENCH_SIZES,
    # inputs are exact bf16 values, so the error is fp32 accumulation's alone: the simulator rounds each mma's
    # exact sum once (k/16 roundings), a GPU's tensor cores truncate inside the sum (a few units more)
    rtol=1e-5,
    constants=dict(DEFAULT_CONFIG),
    work=_work,
    baseline=_cublas_bf16,
    description="bf16 inputs, fp32 accumulation on the tensor cores: ldmatrix + mma.sync m16n8k16 from shared tiles",
))
