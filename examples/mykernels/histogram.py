"""A byte histogram with per-block privatisation: each block counts into its own copy in shared memory, then adds
that copy to the global histogram once, instead of one global atomic per byte."""

import numpy as np
from numba import cuda

import numbakern

BINS = 256  # one bin per byte value
BLOCK = 256
#: enough blocks to fill a large GPU; the grid-stride loop covers any length with them
MAX_BLOCKS = 1024


@cuda.jit
def histogram(data, hist):
    """hist[v] += the number of bytes of data equal to v."""
    local = cuda.shared.array(BINS, dtype=np.int32)
    t = cuda.threadIdx.x
    for b in range(t, BINS, cuda.blockDim.x):
        local[b] = 0
    cuda.syncthreads()

    for i in range(cuda.grid(1), data.shape[0], cuda.gridsize(1)):
        cuda.atomic.add(local, data[i], 1)
    cuda.syncthreads()

    for b in range(t, BINS, cuda.blockDim.x):
        if local[b] > 0:
            cuda.atomic.add(hist, b, local[b])


def histogram_args(rand, n=1 << 24):
    # hist starts at random counts: the reference then checks that the kernel adds to them
    return rand(n, np.uint8), rand(BINS, np.int32)


def histogram_reference(data, hist):
    return hist.astype(np.int64) + np.bincount(data, minlength=BINS)


numbakern.declare(
    histogram,
    args=histogram_args,
    launch=lambda data, hist: numbakern.launch_config(min(data.shape[0], MAX_BLOCKS * BLOCK), BLOCK),
    reference=histogram_reference,
    rtol=0.0,  # counts: exact
    work=lambda n: numbakern.Work(bytes=float(n)),
)
