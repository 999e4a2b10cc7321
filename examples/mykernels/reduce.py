"""Your own ``block_sum``: named like numbakern's library kernel, but a different kernel with a different spec
(float64 total, warp shuffles). Projects keep their kernels apart from the library's by module."""

import numpy as np
from numba import cuda

import numbakern

BLOCK = 128
ALL_LANES = 0xFFFFFFFF


@cuda.jit
def block_sum(x, total):
    """total[0] += sum(x), in float64: each warp reduces with shuffles, lane 0 adds the warp's sum atomically."""
    i = cuda.grid(1)
    v = np.float64(x[i]) if i < x.shape[0] else np.float64(0.0)
    offset = 16
    while offset > 0:
        v += cuda.shfl_down_sync(ALL_LANES, v, offset)
        offset //= 2
    if cuda.threadIdx.x % 32 == 0:
        cuda.atomic.add(total, 0, v)


def block_sum_args(rand, n=1 << 24):
    return rand(n, np.float32), rand(1, np.float64)


numbakern.declare(
    block_sum,
    args=block_sum_args,
    launch=lambda x, total: numbakern.launch_config(x.shape[0], BLOCK),
    reference=lambda x, total: total + x.astype(np.float64).sum(),
    # float64 atomics add the warps' sums in a run-dependent order
    error_scale=lambda x, total: np.abs(total) + np.abs(x.astype(np.float64)).sum(),
    rtol=1e-12,
    work=lambda n: numbakern.Work(flops=float(n), bytes=4.0 * n),
)
