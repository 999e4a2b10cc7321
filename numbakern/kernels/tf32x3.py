"""The 3xTF32 product on the tf32 tensor cores (CUTLASS's ``OpMultiplyAddFastF32``), as a device function the
fp32-accurate kernels (``matmul_3xtf32``, ``attention_3xtf32``) share.

Each float32 ``x`` is split into ``big = tf32(x)`` and ``small = tf32(x - big)`` (``numbakern.mma.split_tf32``;
``big + small`` holds 21 of float32's 24 significant bits), and a product ``a * b`` is ``a_small * b_big +
a_big * b_small + a_big * b_big``, the small terms first; ``a_small * b_small`` (about 2**-22 of the product) is
dropped.

``split_tf32_parts`` splits a whole matrix ahead of a product, into ``parts[0]`` (big) and ``parts[1]`` (small):
the Hopper kernel (``matmul_wgmma(tf32x3=True)``) reads both parts of its operands from shared memory, as the tensor
cores' wgmma takes them. The Hopper attention (``attention_wgmma(tf32x3=True)``) takes Q and K split by it (a
(bh, seq, d) array viewed as (bh * seq, d): the parts are (2 * bh, seq, d), big heads first) and V split, transposed
and its keys permuted by ``split_tf32_keys_t``; ``split_heads`` and ``split_keys_t`` make the same on the host.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..fastpath import u32
from ..launch import LaunchConfig, cdiv
from ..mma import formats, mma_m16n8k8_tf32, split_tf32
from ..registry import Case, KernelSpec, Work, random_array, register
from .transpose import ROWS, TILE, TILE_PADDED


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


@cuda.jit(device=True, forceinline=True)
def permuted_key(p):
    """The key that position ``p`` of a permuted row of keys holds: in every 8, the even keys, then the odd ones
    (0, 2, 4, 6, 1, 3, 5, 7). A tf32 A fragment's k-indices ``t`` and ``t + 4`` are then the keys ``2 t`` and
    ``2 t + 1`` that a thread's accumulators hold (``attention_wgmma``: P from its scores' registers)."""
    return p - p % 8 + p % 4 * 2 + p % 8 // 4


@cuda.jit(fastmath=True)
def split_tf32_keys_t(src, parts):
    """``src`` (bh, keys, d) float32 into ``parts`` (2 * bh, d, keys rounded up to 8): ``parts[b]`` the big tf32 parts
    of ``src[b]`` transposed, ``parts[bh + b]`` the small ones, each row's keys permuted in 8s (``permuted_key``)
    and zero past the last key (the product reads them against zero probabilities: no NaN may stand there). One
    TILE×TILE tile through shared memory per block, as ``transpose``: the reads along d, the writes along the keys."""
    tile = cuda.shared.array((TILE, TILE_PADDED), dtype=np.float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    b = cuda.blockIdx.z
    bh, keys, d = src.shape
    k0 = cuda.blockIdx.x * TILE
    c0 = cuda.blockIdx.y * TILE
    for j in range(0, TILE, ROWS):
        key = k0 + ty + j
        x = np.float32(0.0)
        if key < keys and c0 + tx < d:
            x = src[u32(b), u32(key), u32(c0 + tx)]
        tile[u32(ty + j), u32(tx)] = x
    cuda.syncthreads()
    p = k0 + tx
    if p < parts.shape[2]:
        for j in range(0, TILE, ROWS):
            col = c0 + ty + j
            if col < d:  # (a tile's keys are whole 8s: the permutation stays inside it)
                big, small = split_tf32(tile[u32(permuted_key(tx)), u32(ty + j)])
                parts[u32(b), u32(col), u32(p)] = big
                parts[u32(bh + b), u32(col), u32(p)] = small


def keys_t_launch(bh: int, keys: int, d: int) -> LaunchConfig:
    """``split_tf32_keys_t``'s launch for a (bh, keys, d) ``src``."""
    return LaunchConfig((max(1, cdiv(padded_keys(keys), TILE)), max(1, cdiv(d, TILE)), max(1, bh)), (TILE, ROWS))


def padded_keys(keys: int) -> int:
    """The length of ``split_tf32_keys_t``'s rows: the keys rounded up to whole 8s (the permutation's groups)."""
    return -(-keys // 8) * 8


def split_heads(x: np.ndarray) -> np.ndarray:
    """On the host, what ``split_tf32_parts`` makes of a (bh, seq, d) float32 array: (2 * bh, seq, d), the big parts
    of every head, then the small ones."""
    return np.concatenate(formats.split_tf32(np.asarray(x, np.float32)))


def split_keys_t(x: np.ndarray) -> np.ndarray:
    """On the host, what ``split_tf32_keys_t`` makes of a (bh, keys, d) float32 array."""
    bh, keys, d = x.shape
    padded = np.zeros((bh, padded_keys(keys), d), np.float32)
    padded[:, :keys] = x
    permuted = padded[:, permuted_key.py_func(np.arange(padded.shape[1])), :]
    return np.ascontiguousarray(np.concatenate(formats.split_tf32(permuted)).transpose(0, 2, 1))


def key_positions(keys: int) -> np.ndarray:
    """Where each of ``keys`` keys stands in a row that ``split_tf32_keys_t`` permuted (``row[key_positions(n)]``
    undoes it)."""
    return np.argsort(permuted_key.py_func(np.arange(padded_keys(keys))))[:keys]


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
