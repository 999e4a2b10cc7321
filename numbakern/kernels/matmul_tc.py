"""Matrix multiplication on the tensor cores: ``out (float32) = a @ b`` for bf16 or f16 ``a`` (h×k) and ``b`` (k×w),
fp32 accumulation. ``matmul_bf16(a, b)`` and ``matmul_f16(a, b)`` pick the fastest kernel that the device and the
shapes allow:

- ``"wgmma"`` (``numbakern.kernels.matmul_wgmma``): Hopper's warpgroup MMA fed by the bulk tensor copy engine, on a
  GPU of compute capability 9.0, k and w multiples of 8, 16-byte aligned data. GPU only.
- ``"pipelined"`` (``numbakern.kernels.matmul_tc_pipe``, the registered kernels ``matmul_bf16``/``matmul_f16``):
  ``mma.sync`` with a multi-stage ``cp.async`` pipeline and swizzled shared tiles; k and w multiples of 8.
  Simulated, translated to C and verified like every library kernel.
- ``"plain"`` (here): the first version, one shared buffer and element-by-element staging, correct for every shape.

The plain kernel, ``matmul_bf16_plain(bm, bn, bk, warps_m, warps_n)`` (``matmul_f16_plain`` alike): a block computes
a ``bm``×``bn`` tile with ``warps_m * warps_n`` warps, each a ``(bm / warps_m)``×``(bn / warps_n)`` warp tile of m16n8
accumulators. Per ``bk``-wide slice of k the block stages the A and B slices in shared memory (zero past the
matrices' edges), then per 16-wide k-step each warp loads its A fragments with ``ldmatrix_x4`` and its B fragments
with ``ldmatrix_x4_trans`` (B is row-major, the mma wants it column-major) and runs one mma per accumulator tile.
Shared rows are padded by 8 elements so that the eight row addresses of one 8x8 matrix fall in different banks.

bf16 data is held as uint16 bit patterns (``numbakern.launch.BFLOAT16``): ``matmul_bf16`` takes torch bfloat16
tensors, ``ml_dtypes.bfloat16`` arrays or uint16 arrays of bit patterns; ``matmul_f16`` float16 tensors or arrays.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..fastpath import jit_options
from ..launch import BFLOAT16, to_kernel_arg
from ..mma import ldmatrix_x4, ldmatrix_x4_trans, mma_m16n8k16_bf16, mma_m16n8k16_f16
from ..specialize import specialize
from .config import on_hopper, positive_ints, sizes
from .matmul import checked_matmul_args, matmul_case, matmul_work, register_matmul
from .matmul_tc_pipe import check_warp_tiles, matmul_bf16_pipelined, matmul_f16_pipelined, mma_launch, tc_ready
from .tiles import block_tile, stage_tile, store_accumulators

#: the plain kernel's default tile configuration
PLAIN_CONFIG = {"bm": 64, "bn": 64, "bk": 32, "warps_m": 2, "warps_n": 2}
#: the registered (pipelined) kernels' configuration: 128x128x32 tiles, 4 warps of 64x64, 3 stages (48 KiB of
#: static shared memory); measured on an H200 against 8-warp and 128x64 variants (docs/tensor-cores.md). Two
#: resident blocks (launch_bounds (128, 2)), which the registers allow anyway, let ptxas schedule for that occupancy:
#: 4096^3 5% faster in Numba and in C, 5120x256x5120 6-11% slower (H200; docs/tensor-cores.md)
PIPE_CONFIG = {"bm": 128, "bn": 128, "bk": 32, "warps_m": 2, "warps_n": 2, "stages": 3, "group": 8,
               "min_blocks": 2}
PAD = 8  # elements added to each shared row of the plain kernel (16 bytes)
KERNELS = ("auto", "wgmma", "pipelined", "plain")


def _check_config(bm, bn, bk, warps_m, warps_n) -> tuple[int, int]:
    positive_ints("matmul_tc_plain", bm=bm, bn=bn, bk=bk, warps_m=warps_m, warps_n=warps_n)
    check_warp_tiles("matmul_tc_plain", bm, bn, warps_m, warps_n, 16)
    if bk % 16:
        raise ValueError(f"matmul_tc_plain: bk = {bk} must be a multiple of 16 (the mma's k)")
    return bm // warps_m, bn // warps_n


@specialize
def matmul_bf16_plain(bm: int = 64, bn: int = 64, bk: int = 32, warps_m: int = 2, warps_n: int = 2):
    """The plain kernel for bf16 inputs (uint16 bit patterns); launch with ``mma_launch`` (1-D blocks)."""
    return _plain(False, bm, bn, bk, warps_m, warps_n)


@specialize
def matmul_f16_plain(bm: int = 64, bn: int = 64, bk: int = 32, warps_m: int = 2, warps_n: int = 2):
    """The plain kernel for float16 inputs; launch with ``mma_launch``."""
    return _plain(True, bm, bn, bk, warps_m, warps_n)


def _plain(f16, bm, bn, bk, warps_m, warps_n):
    wm, wn = _check_config(bm, bn, bk, warps_m, warps_n)
    elem = np.float16 if f16 else np.uint16
    mma = mma_m16n8k16_f16 if f16 else mma_m16n8k16_bf16
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
    def matmul_tc_plain(a, b, out):
        tid = cuda.threadIdx.x
        lane = tid % 32
        warp = tid // 32
        m, k = a.shape
        n = b.shape[1]
        row0, col0 = block_tile(1, bm, bn)
        wrow = (warp // warps_n % warps_m) * wm  # the warp tile's place in the block tile
        wcol = (warp % warps_n) * wn

        # 16-byte aligned: ldmatrix reads their rows (numba-cuda aligns a 16-bit array to 2 bytes otherwise)
        a_s = cuda.shared.array((bm, a_cols), dtype=elem, alignment=16)
        b_s = cuda.shared.array((bk, b_cols), dtype=elem, alignment=16)
        af = cuda.local.array(a_regs, np.uint32)
        bf = cuda.local.array(b_regs, np.uint32)
        acc = cuda.local.array(acc_regs, np.float32)
        for i in range(acc_regs):
            acc[i] = np.float32(0.0)

        for k0 in range(0, k, bk):
            stage_tile(a_s, a, row0, k0, m, k, a_elems, bk, threads, elem(0))
            stage_tile(b_s, b, k0, col0, k, n, b_elems, bn, threads, elem(0))
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
                        mma(acc, t, af, mi * 4, bf, ni * 2, acc, t)
            cuda.syncthreads()

        store_accumulators(out, acc, row0 + wrow, col0 + wcol, m, n, lane, mi_n, ni_n, True)

    return matmul_tc_plain


# ---------------------------------------------------------------------------------------------------------------
# the entry points

def matmul_bf16(a, b, out=None, kernel: str = "auto", config: dict | None = None):
    """``a @ b`` for bf16 ``a`` (h×k) and ``b`` (k×w), accumulated and returned in float32.

    ``a`` and ``b``: torch bfloat16 tensors, ``ml_dtypes.bfloat16`` arrays or uint16 arrays of bf16 bit patterns
    (numpy or CPU tensors under the simulator, CUDA tensors on a GPU); ``out``: float32 h×w of the same kind, made
    if not given. ``kernel``: one of ``KERNELS`` (``"auto"``: the fastest the device and shapes allow), with its
    ``config``. Returns ``out``.
    """
    return _matmul(False, a, b, out, kernel, config)


def matmul_f16(a, b, out=None, kernel: str = "auto", config: dict | None = None):
    """``a @ b`` for float16 ``a`` (h×k) and ``b`` (k×w), accumulated and returned in float32; as ``matmul_bf16``."""
    return _matmul(True, a, b, out, kernel, config)


def _matmul(f16, a, b, out, kernel, config):
    what = "matmul_f16" if f16 else "matmul_bf16"
    h, w, out = checked_matmul_args(a, b, out, np.dtype(np.float16) if f16 else BFLOAT16)
    if kernel not in KERNELS:
        raise ValueError(f"{what}: argument 'kernel' must be one of {KERNELS}, got {kernel!r}")
    if h == 0 or w == 0:
        return out
    if kernel == "auto":
        kernel = "wgmma" if wgmma_ready(a, b, out) else "pipelined" if tc_ready(a, b, out) else "plain"
    args = [to_kernel_arg(x) for x in (a, b, out)]
    if kernel == "wgmma":
        from .matmul_wgmma import matmul_wgmma_launcher

        matmul_wgmma_launcher(f16, config)(*(cuda.as_cuda_array(x) for x in args))
        return out
    if kernel == "pipelined" and not tc_ready(a, b, out):
        raise ValueError(f"{what}: the pipelined kernel needs k and w multiples of 8 and 16-byte aligned data")
    plain = kernel == "plain"
    config = dict((PLAIN_CONFIG if plain else PIPE_CONFIG) if config is None else config)
    factory = {(True, False): matmul_bf16_plain, (True, True): matmul_f16_plain,
               (False, False): matmul_bf16_pipelined, (False, True): matmul_f16_pipelined}[(plain, f16)]
    cfg = mma_launch(config, h, w)
    factory(**config)[cfg.grid, cfg.block, 0, 0](*args)
    return out


def wgmma_ready(a, b, out) -> bool:
    """True when ``a @ b`` may run as the Hopper kernel: a GPU of compute capability 9.0 holding the data
    (``config.on_hopper``), and the pipelined kernel's preconditions (whole 16-byte rows for the tensor maps)."""
    return on_hopper(a) and tc_ready(a, b, out)


# ---------------------------------------------------------------------------------------------------------------
# registry: the pipelined kernels

SIGNATURES = {False: "void(uint16[:, ::1], uint16[:, ::1], float32[:, ::1])",
              True: "void(float16[:, ::1], float16[:, ::1], float32[:, ::1])"}
SIGNATURE = SIGNATURES[False]


def _cublas(a, b, out, *tensor_maps):
    """The benchmark's baseline: torch's bf16 (f16) GEMM on the same values as it dispatches by default (16-bit output,
    as torch gives). The wgmma kernels' tensor maps are launch arguments it has no use for."""
    import torch

    if a.dtype == torch.float16:
        return (lambda: torch.matmul(a, b)), "torch.matmul on f16 (f16 out)"
    a16, b16 = a.view(torch.bfloat16), b.view(torch.bfloat16)
    return (lambda: torch.matmul(a16, b16)), "torch.matmul on bf16 (bf16 out)"


#: what the specs of the 16-bit matmuls (these and the Hopper ones) share: k and w multiples of 8 (the kernels'
#: precondition), none a multiple of the tiles, 16-bit inputs, torch's GEMM as the peer
TC_SPEC = dict(verify_sizes=sizes("h k w", (1, 8, 8), (37, 72, 40), (127, 136, 264), (256, 256, 256), (7, 1024, 8),
                                  (509, 264, 384)),
               bench_sizes=sizes("h k w", (4096, 4096, 4096), (5120, 256, 5120)), size_multiples={"k": 8, "w": 8},
               work=matmul_work(2), baseline=_cublas)

for _f16 in (False, True):
    _fmt = "f16" if _f16 else "bf16"
    register_matmul(
        f"matmul_{_fmt}", (matmul_f16_pipelined if _f16 else matmul_bf16_pipelined)(**PIPE_CONFIG),
        matmul_case(lambda h, w: mma_launch(PIPE_CONFIG, h, w), f16=_f16),
        f"{_fmt} inputs, fp32 accumulation on the tensor cores: cp.async pipeline (3 stages), swizzled shared tiles, "
        "ldmatrix.x4 + mma.sync m16n8k16",
        signatures=(SIGNATURES[_f16],),
        # k and w multiples of 8 (the kernel's precondition), none a multiple of the tiles
        test_sizes=sizes("h k w", (37, 72, 40), (1, 8, 8), (70, 24, 136)),
        # inputs are exact 16-bit values, so the error is fp32 accumulation's alone: the simulator rounds each mma's
        # exact sum once (k/16 roundings), a GPU's tensor cores truncate inside the sum (a few units more)
        rtol=1e-5,
        constants=dict(PIPE_CONFIG),
        **TC_SPEC,
    )
