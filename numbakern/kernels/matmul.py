"""Matrix multiplication, as in CUDA MODE lecture 5: naive, tiled with dynamic shared memory and a run-time tile
width (the lecture's ``matmul_k_numba``), and tiled with the tile width fixed at compile time.

``matmul(a, b)`` is the user-facing entry point: torch tensors, CuPy arrays or numpy arrays in, the product out,
of the same kind and on the same device.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda

from ..launch import (
    check_array,
    check_matmul_shapes,
    check_same_device,
    dynamic_shared_bytes,
    empty_like_on,
    launch_config,
    to_kernel_arg,
)
from ..registry import Case, KernelSpec, Work, random_array, register
from ..specialize import specialize

#: the tile width the registered tiled kernels use
TILE_WIDTH = 16


@cuda.jit
def matmul_naive(m, n, out):
    """One thread per output element, reading its row of ``m`` and column of ``n`` straight from global memory."""
    c, r = cuda.grid(2)
    h, k = m.shape
    w = n.shape[1]
    if r < h and c < w:
        acc = np.float32(0.0)
        for i in range(k):
            acc += m[r, i] * n[i, c]
        out[r, c] = acc


@cuda.jit
def matmul_tiled(m, n, out, tw):
    """The lecture's kernel: ``tw``×``tw`` tiles of ``m`` and ``n`` staged through dynamic shared memory.

    Launch with ``tw*tw*2*4`` bytes of dynamic shared memory and ``tw``×``tw`` threads per block.
    """
    cbi, cbd, tid = cuda.blockIdx, cuda.blockDim, cuda.threadIdx
    tc, tr = tid.x, tid.y
    r, c = cbi.y * cbd.y + tr, cbi.x * cbd.x + tc
    h, k = m.shape
    k2, w = n.shape

    shar = cuda.shared.array(0, dtype=np.float32)
    ms, ns = shar[: tw * tw], shar[tw * tw : 2 * tw * tw]

    p = np.float32(0.0)
    for ph in range(math.ceil(k / tw)):
        idx = ph * tw
        ms[tr * tw + tc] = m[r, tc + idx] if r < h and idx + tc < k else 0.0
        ns[tr * tw + tc] = n[tr + idx, c] if c < w and idx + tr < k else 0.0
        cuda.syncthreads()
        for i in range(tw):
            p += ms[tr * tw + i] * ns[tw * i + tc]
        cuda.syncthreads()
    if r < h and c < w:
        out[r, c] = p


@specialize
def matmul_tiled_static(tw: int):
    """The tiled kernel with ``tw`` baked in: static ``tw``×``tw`` shared tiles and a fixed-trip inner loop."""

    @cuda.jit
    def matmul_tiled_static(m, n, out):
        tc, tr = cuda.threadIdx.x, cuda.threadIdx.y
        r = cuda.blockIdx.y * tw + tr
        c = cuda.blockIdx.x * tw + tc
        h, k = m.shape
        w = n.shape[1]

        ms = cuda.shared.array((tw, tw), dtype=np.float32)
        ns = cuda.shared.array((tw, tw), dtype=np.float32)

        p = np.float32(0.0)
        for idx in range(0, k, tw):
            ms[tr, tc] = m[r, idx + tc] if r < h and idx + tc < k else np.float32(0.0)
            ns[tr, tc] = n[idx + tr, c] if c < w and idx + tr < k else np.float32(0.0)
            cuda.syncthreads()
            for i in range(tw):
                p += ms[tr, i] * ns[i, tc]
            cuda.syncthreads()
        if r < h and c < w:
            out[r, c] = p

    return matmul_tiled_static


# ---------------------------------------------------------------------------------------------------------------
# user-facing entry point


def matmul(a, b, out=None, *, tile_width: int = TILE_WIDTH):
    """``a @ b`` for float32 matrices, computed by the compile-time-specialized tiled kernel.

    ``a`` and ``b`` may be torch tensors, CuPy arrays or numpy arrays (numpy and CPU tensors under the simulator);
    the result is of the same kind and on the same device. ``out``, if given, must be a float32 ``(h, w)`` array
    on that device; it is written and returned.
    """
    h, w, out = checked_matmul_args(a, b, out)
    if not isinstance(tile_width, int) or not 1 <= tile_width <= 32:
        raise ValueError("argument 'tile_width' must be an int from 1 to 32 (tw*tw threads per block), "
                         f"got {tile_width!r}")

    cfg = launch_config((w, h), (tile_width, tile_width))
    kernel = matmul_tiled_static(tile_width)
    kernel[cfg.grid, cfg.block](to_kernel_arg(a), to_kernel_arg(b), to_kernel_arg(out))
    return out


def checked_matmul_args(a, b, out):
    """Check the arguments of a float32 ``a @ b`` (dtype, rank, inner dimensions, ``out``'s shape, one device) and
    allocate ``out`` like ``a`` when it is None; returns ``(h, w, out)``."""
    a_info = check_array("a", a, dtype=np.float32, ndim=2)
    b_info = check_array("b", b, dtype=np.float32, ndim=2)
    infos = {"a": a_info, "b": b_info}
    h, _, w = check_matmul_shapes("a", a_info, "b", b_info)
    if out is None:
        out = empty_like_on(a, (h, w), np.dtype(np.float32))
    else:
        out_info = check_array("out", out, dtype=np.float32, ndim=2)
        if out_info.shape != (h, w):
            raise ValueError(f"argument 'out' must have shape {(h, w)} for a {a_info.shape} @ {b_info.shape} "
                             f"product, got {out_info.shape}")
        infos["out"] = out_info
    check_same_device(**infos)
    return h, w, out


# ---------------------------------------------------------------------------------------------------------------
# registry

MATRIX = "float32[:, ::1]"
TEST_SIZES = ({"h": 33, "k": 70, "w": 45}, {"h": 1, "k": 1, "w": 1}, {"h": 16, "k": 16, "w": 16}, {"h": 5, "k": 17,
                                                                                                   "w": 3})
VERIFY_SIZES = (
    {"h": 1, "k": 1, "w": 1},
    {"h": 33, "k": 70, "w": 45},
    {"h": 127, "k": 131, "w": 257},
    {"h": 256, "k": 256, "w": 256},
    {"h": 7, "k": 1021, "w": 3},
)
BENCH_SIZES = ({"h": 5120, "k": 256, "w": 5120}, {"h": 4096, "k": 4096, "w": 4096})


def _matmul_inputs(size, rng, dist):
    h, k, w = size["h"], size["k"], size["w"]
    m = random_array(rng, (h, k), np.float32, dist)
    n = random_array(rng, (k, w), np.float32, dist)
    out = np.full((h, w), np.nan, dtype=np.float32)
    return m, n, out


def _reference(m, n, out, *_):
    return {2: m.astype(np.float64) @ n.astype(np.float64)}


def _error_scale(m, n, out, *_):
    # each element's rounding error is bounded relative to sum(|m_ri * n_ic|), whatever cancellation does to the sum
    return {2: np.abs(m.astype(np.float64)) @ np.abs(n.astype(np.float64))}


def _work(size):
    h, k, w = size["h"], size["k"], size["w"]
    return Work(flops=2.0 * h * k * w, bytes=4.0 * (h * k + k * w + h * w))


def _naive_case(size, rng, dist="uniform"):
    m, n, out = _matmul_inputs(size, rng, dist)
    return Case((m, n, out), launch_config((size["w"], size["h"]), (16, 16)), dict(size))


def _tiled_case(size, rng, dist="uniform", tw=TILE_WIDTH):
    m, n, out = _matmul_inputs(size, rng, dist)
    cfg = launch_config((size["w"], size["h"]), (tw, tw), dynamic_shared_bytes(np.float32, tw * tw, tw * tw))
    return Case((m, n, out, tw), cfg, dict(size))


def _tiled_static_case(size, rng, dist="uniform", tw=TILE_WIDTH):
    m, n, out = _matmul_inputs(size, rng, dist)
    return Case((m, n, out), launch_config((size["w"], size["h"]), (tw, tw)), dict(size))


_common = dict(
    family="matmul",
    reference=_reference,
    error_scale=_error_scale,
    outputs=(2,),
    test_sizes=TEST_SIZES,
    verify_sizes=VERIFY_SIZES,
    bench_sizes=BENCH_SIZES,
    work=_work,
)

register(KernelSpec(
    name="matmul_naive",
    kernel=matmul_naive,
    signatures=(f"void({MATRIX}, {MATRIX}, {MATRIX})",),
    make_case=_naive_case,
    description="one thread per output element, operands from global memory",
    **_common,
))
register(KernelSpec(
    name="matmul_tiled",
    kernel=matmul_tiled,
    signatures=(f"void({MATRIX}, {MATRIX}, {MATRIX}, int64)",),
    make_case=_tiled_case,
    description="the lecture's kernel: dynamic shared memory, run-time tile width",
    **_common,
))
register(KernelSpec(
    name="matmul_tiled_static",
    kernel=matmul_tiled_static(TILE_WIDTH),
    signatures=(f"void({MATRIX}, {MATRIX}, {MATRIX})",),
    make_case=_tiled_static_case,
    constants={"tw": TILE_WIDTH},
    description="tiled, with the tile width a compile-time constant (static shared tiles)",
    **_common,
))


# The fast kernels live in their own module (they need the autotuner and the fast-path helpers); they are part of
# this family's public API. Imported last: matmul_fast builds on the inputs and references defined above.
