"""Row softmax: one warp per row; the row's maximum and sum are reduced with warp shuffles."""

import math

import numpy as np
from numba import cuda

import numbakern

WARP = 32
ALL_LANES = 0xFFFFFFFF


@cuda.jit
def row_softmax(x, out):
    """out[r, :] = softmax(x[r, :]), one warp per row (launch: one block of 32 threads per row)."""
    row = cuda.blockIdx.x
    lane = cuda.threadIdx.x
    n = x.shape[1]

    # the maximum starts at -inf, not 0 or x[row, 0]: a lane may own no element at all (n < 32)
    m = np.float32(-np.inf)
    for j in range(lane, n, WARP):
        m = max(m, x[row, j])
    offset = WARP // 2
    while offset > 0:
        m = max(m, cuda.shfl_xor_sync(ALL_LANES, m, offset))
        offset //= 2

    s = np.float32(0.0)
    for j in range(lane, n, WARP):
        s += math.exp(x[row, j] - m)
    offset = WARP // 2
    while offset > 0:
        s += cuda.shfl_xor_sync(ALL_LANES, s, offset)
        offset //= 2

    for j in range(lane, n, WARP):
        out[row, j] = math.exp(x[row, j] - m) / s


def softmax_args(rand, rows=4096, cols=1000):
    x = rand((rows, cols), np.float32)
    return x, np.empty_like(x)


def softmax_reference(x, out):
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


numbakern.declare(
    row_softmax,
    args=softmax_args,
    launch=lambda x, out: ((x.shape[0],), (WARP,)),
    reference=softmax_reference,
    # float32 exp of arguments down to about -100: a few units in the last place, relative to each probability;
    # atol covers probabilities below float32's range (they underflow to 0)
    rtol=1e-5,
    atol=1e-30,
    work=lambda rows, cols: numbakern.Work(flops=4.0 * rows * cols, bytes=8.0 * rows * cols),
)
