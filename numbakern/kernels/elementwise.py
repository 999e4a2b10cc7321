"""Element-wise kernels: the simplest shape of kernel, one grid-stride loop over the elements."""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..launch import launch_config
from ..registry import Case, KernelSpec, Work, random_array, register

BLOCK = 256


@cuda.jit
def vector_add(a, b, out):
    """``out = a + b``; a grid-stride loop, so any grid covers any length."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, out.shape[0], stride):
        out[i] = a[i] + b[i]


def _case(size, rng, dist="uniform"):
    n = size["n"]
    a = random_array(rng, (n,), np.float32, dist)
    b = random_array(rng, (n,), np.float32, dist)
    out = np.full(n, np.nan, dtype=np.float32)
    # at most 1024 blocks: longer vectors exercise the grid-stride loop
    return Case((a, b, out), launch_config(min(n, 1024 * BLOCK), BLOCK), dict(size))


def _reference(a, b, out):
    with np.errstate(invalid="ignore"):  # inf + -inf is NaN, as on the GPU: special inputs are verified too
        return {2: a.astype(np.float64) + b.astype(np.float64)}


register(KernelSpec(
    name="vector_add",
    family="elementwise",
    kernel=vector_add,
    signatures=("void(float32[::1], float32[::1], float32[::1])",),
    make_case=_case,
    reference=_reference,
    error_scale=lambda a, b, out: {2: np.abs(a.astype(np.float64)) + np.abs(b.astype(np.float64))},
    outputs=(2,),
    rtol=1e-6,
    test_sizes=({"n": 1}, {"n": 1000}, {"n": 257}),
    verify_sizes=({"n": 1}, {"n": 1000}, {"n": 65537}, {"n": 1024 * BLOCK * 3 + 17}),
    bench_sizes=({"n": 1 << 26},),
    work=lambda size: Work(flops=size["n"], bytes=12.0 * size["n"]),
    description="out = a + b, grid-stride loop",
    special_values=True,  # a + b in float64 defines every special case (inf - inf is NaN, -0.0 + -0.0 is -0.0)
))
