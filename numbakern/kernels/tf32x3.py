"""The 3xTF32 product on the tf32 tensor cores (CUTLASS's ``OpMultiplyAddFastF32``), as a device function the
fp32-accurate kernels (``matmul_3xtf32``, ``attention_3xtf32``) share.

Each float32 ``x`` is split into ``big = tf32(x)`` and ``small = tf32(x - big)`` (``numbakern.mma.split_tf32``;
``big + small`` holds 21 of float32's 24 significant bits), and a product ``a * b`` is ``a_small * b_big +
a_big * b_small + a_big * b_big``, the small terms first; ``a_small * b_small`` (about 2**-22 of the product) is
dropped.

``split_tf32_parts`` splits a whole matrix ahead of a product, into ``parts[0]`` (big) and ``parts[1]`` (small):
the Hopper kernel (``matmul_wgmma(tf32x3=True)``) reads both parts of its operands from shared memory, as the tensor
cores' wgmma takes them.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..fastpath import u32
from ..launch import LaunchConfig, cdiv
from ..mma import formats, mma_m16n8k8_tf32, split_tf32
from ..registry import Case, KernelSpec, Work, random_array, register


@cuda.jit(device=True, forceinline=True, fastmath=True)
def mma_3xtf32(d, d_at, a_big, a_small, a_at, b_big, b_small, b_at, c, c_at):
    """``d = a @ b + c`` for one m16n8k8 tile from the split A and B fragments (registers ``a_at``, ``b_at`` on):
    three tf32 ``mma.sync``, the first adding to ``c``, the others to ``d``."""
    mma_m16n8k8_tf32(d, d_at, a_small, a_at, b_big, b_at, c, c_at)
    mma_m16n8k8_tf32(d, d_at, a_big, a_at, b_small, b_at, d, d_at)
    mma_m16n8k8_tf32(d, d_at, a_big, a_at, b_big, b_at, d, d_at)


@cuda.jit(fastmath=True)
def split_tf32_parts(src, parts):
    """``parts[0] = tf32(src)``, ``parts[1] = tf32(src - parts[0])``, element by element: a block of threads along
    a row's columns, the blocks of ``gridDim.y`` walking the rows."""
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if col < src.shape[1]:
        for row in range(cuda.blockIdx.y, src.shape[0], cuda.gridDim.y):
            big, small = split_tf32(src[u32(row), u32(col)])
            parts[0, u32(row), u32(col)] = big
            parts[1, u32(row), u32(col)] = small


SPLIT_BLOCK = 256
SPLIT_ROWS = 1024  # blocks down the rows at most (each walks the rest of its rows)


def split_launch(rows: int, cols: int) -> LaunchConfig:
    """``split_tf32_parts``' launch for a ``rows``×``cols`` ``src``."""
    return LaunchConfig((max(1, cdiv(cols, SPLIT_BLOCK)), max(1, min(rows, SPLIT_ROWS))), (SPLIT_BLOCK,))


def _split_case(size, rng, dist="uniform"):
    h, w = size["h"], size["w"]
    src = random_array(rng, (h, w), np.float32, dist)
    return Case((src, np.full((2, h, w), np.nan, np.float32)), split_launch(h, w), dict(size))


register(KernelSpec(
    name="split_tf32_parts",
    family="elementwise",
    kernel=split_tf32_parts,
    signatures=("void(float32[:, ::1], float32[:, :, ::1])",),
    make_case=_split_case,
    reference=lambda src, parts: {1: np.stack(formats.split_tf32(src))},
    outputs=(1,),
    rtol=0.0,  # rounding to tf32 and an exact subtraction: bit for bit
    test_sizes=({"h": 1, "w": 1}, {"h": 5, "w": 300}, {"h": 40, "w": 9}),
    verify_sizes=({"h": 1, "w": 1}, {"h": 33, "w": 70}, {"h": 1500, "w": 257}, {"h": 4096, "w": 4096}),
    bench_sizes=({"h": 4096, "w": 4096},),
    work=lambda size: Work(bytes=12.0 * size["h"] * size["w"]),
    description="the 3xTF32 split of a matrix into its big and small tf32 parts (the Hopper 3xTF32 matmul's "
                "operands), one element a thread",
))
