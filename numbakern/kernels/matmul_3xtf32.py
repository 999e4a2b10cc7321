"""fp32 matrix multiplication on the tensor cores, as accurate as fp32: ``out = a @ b`` with the 3xTF32 split of
each operand into a big and a small tf32 part (``tf32x3``: three tf32 products, ``small * small`` dropped).

The tensor cores add in fp32 but truncate, relative to the largest addend (the running sum): accumulated over all of
k in the mma's own accumulator the error grows with k, biased (4096^3 on an H200: 2.9e-5 relative, cuBLAS SGEMM
1.1e-6). So each k-tile's products go into a fresh partial sum on the tensor cores, and the partial sums add up in
registers with ordinary float32 adds (round to nearest): the error against a float64 reference is then below a
float32 GEMM's (H200, 4096^3: 2.3e-7 against cuBLAS SGEMM's 8.4e-7 on the same inputs, ``docs/tensor-cores.md``).

The kernel is ``matmul_tc_pipe.pipelined_kernel`` with 32-bit data: 4 floats a 16-byte copy, the A tile swizzled
and read by ``ldmatrix_x4`` into float32 registers (a row of 4 floats per matrix row is the tf32 A fragment's
layout), the B tile k-major with rows padded by 8 floats (``ldmatrix`` cannot transpose 32-bit elements; the padding
puts the fragment reads' four k rows 8 banks apart). Preconditions (``config.chunks_ready(a, b, out, 4)``): k and w
multiples of 4, 16-byte aligned C-contiguous data.

On a Hopper GPU (compute capability 9.0) ``matmul_3xtf32(a, b)`` takes the warpgroup path instead for products
large enough to pay for its launches (``wgmma_pays``; ``kernel="wgmma"`` asks for it, as ``matmul_bf16`` does):
``transpose`` of B, ``tf32x3.split_tf32_parts`` of A and of B^T into kept buffers (big and small parts, k-major,
as wgmma reads tf32), then ``matmul_wgmma(tf32x3=True)``. The same path runs in the simulator when asked for by
name.
"""

from __future__ import annotations

import numpy as np

from .. import mode
from ..launch import to_kernel_arg
from ..specialize import specialize
from .config import chunks_ready, on_hopper, sizes
from .matmul import checked_matmul_args, matmul_case, register_matmul
from .matmul_tc_pipe import check_tf32_config, mma_launch, pipelined_kernel

CHUNK = 4  # floats in one 16-byte copy and one ldmatrix row
KERNELS = ("auto", "wgmma", "pipelined")
#: ``"auto"`` takes the Hopper path when it pays: its three preparatory launches and the product's launch cost about
#: 0.65 ms of host time a call (an H200's host, 2026-11-29), which the mma.sync kernel outruns on small products.
#: Measured there (``python scripts/tf32x3_crossover.py``): the wgmma path wins from h·k·w = 2^34 multiply-adds
#: (4096×1024×4096: 0.51 against 0.74 ms) and at k = 8192 (512×8192×512: 0.52 against 0.70 ms), and loses below
#: (4096×512×4096: 0.51 against 0.40 ms; 5120×256×5120: 0.52 against 0.36 ms)
WGMMA_MIN_WORK = 2**34
WGMMA_MIN_K = 8192
check_config = check_tf32_config


@specialize
def matmul_3xtf32_pipelined(bm: int = 128, bn: int = 128, bk: int = 16, warps_m: int = 2, warps_n: int = 4,
                            stages: int = 2, group: int = 8):
    """The kernel for one tile configuration; launch with ``mma_launch`` (1-D blocks)."""
    return pipelined_kernel(False, bm, bn, bk, warps_m, warps_n, stages, group, 1, tf32=True)


#: the registered configuration: 128x128x16 tiles, 8 warps of 64x32, 2 stages (34 KiB of static shared memory)
DEFAULT_CONFIG = {"bm": 128, "bn": 128, "bk": 16, "warps_m": 2, "warps_n": 4, "stages": 2, "group": 8}


def matmul_3xtf32(a, b, out=None, config: dict | None = None, kernel: str = "auto"):
    """``a @ b`` for float32 ``a`` (h×k) and ``b`` (k×w), k and w multiples of 4, fp32-accurate on the tensor
    cores. Returns ``out`` (float32 h×w, made if not given). ``kernel``: one of ``KERNELS`` (``"auto"``: ``"wgmma"``
    on a Hopper GPU for products large enough to pay for it, ``wgmma_pays``, else ``"pipelined"``), with its
    ``config`` (``matmul_wgmma.TF32X3_CONFIG`` for wgmma)."""
    h, w, out = checked_matmul_args(a, b, out)
    if kernel not in KERNELS:
        raise ValueError(f"matmul_3xtf32: argument 'kernel' must be one of {KERNELS}, got {kernel!r}")
    if not chunks_ready(a, b, out, CHUNK):
        raise ValueError("matmul_3xtf32: k and w must be multiples of 4 and the data 16-byte aligned and contiguous")
    if h == 0 or w == 0:
        return out
    k = a.shape[1]
    if (kernel == "wgmma" or (kernel == "auto" and wgmma_pays(h, k, w) and on_hopper(a))) and k > 0:  # (k = 0: no map)
        _wgmma(*(to_kernel_arg(x) for x in (a, b, out)), config)
        return out
    config = dict(DEFAULT_CONFIG if config is None else config)
    cfg = mma_launch(config, h, w)
    matmul_3xtf32_pipelined(**config)[cfg.grid, cfg.block, 0, 0](*(to_kernel_arg(x) for x in (a, b, out)))
    return out


def wgmma_pays(h: int, k: int, w: int) -> bool:
    """Whether ``"auto"`` takes the Hopper path for an h×k by k×w product (``WGMMA_MIN_WORK``)."""
    return h * k * w >= WGMMA_MIN_WORK or k >= WGMMA_MIN_K


def _wgmma(a, b, out, config):
    """The Hopper path on kernel arguments: B^T, the split parts of A and B^T into kept buffers, the product."""
    from . import scratch
    from .matmul_wgmma import TF32X3_CONFIG, matmul_wgmma_launcher
    from .tf32x3 import split_launch, split_tf32_parts
    from .transpose import transpose, transpose_launch

    (h, k), w = a.shape, b.shape[1]
    bt = scratch.buffer("matmul_3xtf32_bt", (w, k), np.float32, a)
    parts_a = scratch.buffer("matmul_3xtf32_a", (2, h, k), np.float32, a)
    parts_b = scratch.buffer("matmul_3xtf32_b", (2, w, k), np.float32, a)
    cfg = transpose_launch(k, w)
    transpose[cfg.grid, cfg.block](b, bt)
    for src, parts in ((a, parts_a), (bt, parts_b)):
        cfg = split_launch(*src.shape)
        split_tf32_parts[cfg.grid, cfg.block](src, parts)
    args = (parts_a, parts_b, out)
    if not mode.in_simulator():  # (numba's device arrays: the launcher compiles for their types)
        from numba import cuda

        args = tuple(cuda.as_cuda_array(x) for x in args)
    matmul_wgmma_launcher(False, TF32X3_CONFIG if config is None else config)(*args)


def _sgemm(a, b, out):
    """The benchmark's baseline: cuBLAS SGEMM with TF32 off (CUDA cores), the fp32 GEMM of the same accuracy."""
    import torch

    def run():
        torch.backends.cuda.matmul.allow_tf32 = False
        return torch.matmul(a, b, out=out)

    return run, "torch.matmul fp32, TF32 off (cuBLAS SGEMM)"


#: GPU verification (k and w multiples of 4) and the benchmark's sizes, of this kernel and the Hopper one's
VERIFY_SIZES = sizes("h k w", (1, 4, 4), (37, 36, 44), (127, 132, 260), (256, 256, 256), (7, 1020, 4),
                     (509, 264, 388))
BENCH_SIZES = sizes("h k w", (4096, 4096, 4096), (5120, 256, 5120))
#: what the specs of the 3xTF32 matmuls (this one and the Hopper one) share: the sizes, k and w multiples of 4, and
#: fp32 accuracy: the dropped small*small terms are ~2**-22 of each product, the rest is fp32 accumulation (cuBLAS
#: SGEMM's worst element is ~3.6e-7 of this scale at 4096^3; one tensor-core accumulator over all of k gave 4.4e-6,
#: which this bar catches)
TF32X3_SPEC = dict(verify_sizes=VERIFY_SIZES, bench_sizes=BENCH_SIZES, rtol=1e-6, size_multiples={"k": 4, "w": 4})

register_matmul(
    "matmul_3xtf32", matmul_3xtf32_pipelined(**DEFAULT_CONFIG),
    matmul_case(lambda h, w: mma_launch(DEFAULT_CONFIG, h, w)),
    "fp32 inputs and output, fp32-accurate on the tf32 tensor cores: the 3xTF32 split (small*big + big*small + "
    "big*big), cp.async pipeline, swizzled A tile, ldmatrix.x4",
    test_sizes=sizes("h k w", (37, 36, 44), (1, 4, 4), (130, 20, 132)),
    constants=dict(DEFAULT_CONFIG),
    baseline=_sgemm,
    **TF32X3_SPEC,
)
