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
from .config import sizes
from .half import random16, values

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


def checked_matmul_args(a, b, out, dtype=np.float32):
    """Check the arguments of ``a @ b`` (``a`` and ``b`` of ``dtype``: float32, float16 or bf16, ``out`` float32;
    rank, inner dimensions, ``out``'s shape, one device) and allocate ``out`` like ``a`` when it is None; returns
    ``(h, w, out)``."""
    a_info = check_array("a", a, dtype=dtype, ndim=2)
    b_info = check_array("b", b, dtype=dtype, ndim=2)
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
# the family's registry: cases, references, work

MATRIX = "float32[:, ::1]"
SIGNATURE = f"void({MATRIX}, {MATRIX}, {MATRIX})"
TEST_SIZES = sizes("h k w", (33, 70, 45), (1, 1, 1), (16, 16, 16), (5, 17, 3))
VERIFY_SIZES = sizes("h k w", (1, 1, 1), (33, 70, 45), (127, 131, 257), (256, 256, 256), (7, 1021, 3))
BENCH_SIZES = sizes("h k w", (5120, 256, 5120), (4096, 4096, 4096))


def matmul_case(launch, transposed: bool = False, f16: bool | None = None, extra: tuple = ()):
    """A spec's ``make_case``: random ``a`` (h×k, or with ``transposed`` A^T, k×h) and ``b`` (k×w), float32 or, with
    ``f16`` given, 16-bit (``half.random16``), ``out`` poisoned with NaN, then ``extra`` arguments; the launch is
    ``launch(h, w)``."""
    def make_case(size, rng, dist="uniform"):
        h, k, w = size["h"], size["k"], size["w"]
        if f16 is None:
            a = random_array(rng, (k, h) if transposed else (h, k), np.float32, dist)
            b = random_array(rng, (k, w), np.float32, dist)
        else:
            a = random16(rng, (h, k), dist, f16)
            b = random16(rng, (k, w), dist, f16)
        return Case((a, b, np.full((h, w), np.nan, np.float32), *extra), launch(h, w), dict(size))

    return make_case


def matmul_reference(transposed: bool = False, parts: bool = False):
    """The float64 product (``a.T @ b`` with ``transposed``; with ``parts``, of the matrices whose split parts ``a``
    (2, h, k) and ``b`` (2, w, k) are: A and B^T) and its error scale: each element's rounding error is bounded
    relative to ``sum(|a_ri * b_ic|)``, whatever cancellation does to the sum."""
    def operands(a, b, scale):
        if parts:
            a64, b64 = values(a).sum(0), values(b).sum(0).T
        else:
            a64, b64 = values(a.T if transposed else a), values(b)
        return (np.abs(a64), np.abs(b64)) if scale else (a64, b64)

    def reference(a, b, out, *_):
        x, y = operands(a, b, False)
        return {2: x @ y}

    def error_scale(a, b, out, *_):
        x, y = operands(a, b, True)
        return {2: x @ y}

    return reference, error_scale


def matmul_work(in_bytes: int = 4):
    """Flops (2 per multiply-add) and bytes (the inputs of ``in_bytes`` a value, the float32 output once)."""
    def work(size):
        h, k, w = size["h"], size["k"], size["w"]
        return Work(flops=2.0 * h * k * w, bytes=in_bytes * (h * k + k * w) + 4.0 * h * w)

    return work


def register_matmul(name: str, kernel, make_case, description: str, transposed: bool = False, **spec) -> None:
    """A matmul kernel into the registry: ``out = a @ b`` (``a.T @ b`` with ``transposed``) against the float64
    product, the default sizes, signature, work and reference unless ``spec`` says otherwise."""
    reference, error_scale = matmul_reference(transposed)
    defaults = dict(signatures=(SIGNATURE,), test_sizes=TEST_SIZES, verify_sizes=VERIFY_SIZES,
                    bench_sizes=BENCH_SIZES, work=matmul_work(), reference=reference, error_scale=error_scale)
    register(KernelSpec(name=name, family="matmul", kernel=kernel, make_case=make_case, outputs=(2,),
                        description=description, **{**defaults, **spec}))


def _grid(tw):
    return lambda h, w: launch_config((w, h), (tw, tw))


register_matmul("matmul_naive", matmul_naive, matmul_case(_grid(16)),
                "one thread per output element, operands from global memory")
register_matmul("matmul_tiled", matmul_tiled, matmul_case(
    lambda h, w: launch_config((w, h), (TILE_WIDTH,) * 2, dynamic_shared_bytes(np.float32, TILE_WIDTH ** 2,
                                                                                 TILE_WIDTH ** 2)),
    extra=(TILE_WIDTH,)), "the lecture's kernel: dynamic shared memory, run-time tile width",
    signatures=(f"void({MATRIX}, {MATRIX}, {MATRIX}, int64)",))
register_matmul("matmul_tiled_static", matmul_tiled_static(TILE_WIDTH), matmul_case(_grid(TILE_WIDTH)),
                "tiled, with the tile width a compile-time constant (static shared tiles)",
                constants={"tw": TILE_WIDTH})
