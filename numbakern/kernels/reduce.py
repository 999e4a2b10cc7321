"""Reductions: a shared-memory tree inside each block, then one atomic add per block."""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..launch import launch_config
from ..registry import Case, KernelSpec, Work, random_array, register

#: threads per block; the tree halves it down to 1, so it must be a power of two
BLOCK = 256


@cuda.jit
def block_sum(x, out):
    """``out[0] += sum(x)``: each block sums ``BLOCK`` elements in shared memory, then adds its total atomically."""
    partial = cuda.shared.array(BLOCK, dtype=np.float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    partial[tid] = x[i] if i < x.shape[0] else np.float32(0.0)
    cuda.syncthreads()
    stride = BLOCK // 2
    while stride > 0:
        if tid < stride:
            partial[tid] += partial[tid + stride]
        cuda.syncthreads()
        stride //= 2
    if tid == 0:
        cuda.atomic.add(out, 0, partial[0])


def _case(size, rng, dist="uniform"):
    n = size["n"]
    x = random_array(rng, (n,), np.float32, dist)
    # the kernel adds to out[0]: start it at a random value, so the reference checks the accumulation too
    out = random_array(rng, (1,), np.float32, dist)
    return Case((x, out), launch_config(n, BLOCK), dict(size))


register(KernelSpec(
    name="block_sum",
    family="reduce",
    kernel=block_sum,
    signatures=("void(float32[::1], float32[::1])",),
    make_case=_case,
    reference=lambda x, out: {1: np.array([out[0].astype(np.float64) + x.astype(np.float64).sum()])},
    error_scale=lambda x, out: {1: np.array([abs(float(out[0])) + np.abs(x.astype(np.float64)).sum()])},
    outputs=(1,),
    accumulates=(1,),
    # float atomics add the block totals in a run-dependent order
    rtol=1e-5,
    test_sizes=({"n": 1}, {"n": 1000}, {"n": 256}),
    verify_sizes=({"n": 1}, {"n": 1000}, {"n": 65537}, {"n": 1 << 20}),
    bench_sizes=({"n": 1 << 26},),
    work=lambda size: Work(flops=size["n"], bytes=4.0 * size["n"]),
    description="shared-memory tree per block + one atomic add per block",
))
