"""Small kernels for the tests of ``numbakern.declare`` (declared by the tests themselves, not at import)."""

import numpy as np
from numba import cuda


@cuda.jit
def scale_rows(x, factor, out):
    r, c = cuda.grid(2)
    if r < x.shape[0] and c < x.shape[1]:
        out[r, c] = x[r, c] * factor


@cuda.jit
def scale_rows_wrong(x, factor, out):
    r, c = cuda.grid(2)
    if r < x.shape[0] and c < x.shape[1]:
        out[r, c] = x[r, c] * factor + np.float32(1e-3)  # off by a little everywhere


@cuda.jit
def scale_rows_partial(x, factor, out):
    r, c = cuda.grid(2)
    if r < x.shape[0] and c < x.shape[1] - 1:  # forgets the last column
        out[r, c] = x[r, c] * factor


@cuda.jit
def count_positive(x, count, flags):
    i = cuda.grid(1)
    if i < x.shape[0]:
        flags[i] = 1 if x[i] > 0 else 0
        if x[i] > 0:
            cuda.atomic.add(count, 0, 1)


@cuda.jit
def add_into(x, acc):
    i = cuda.grid(1)
    if i < x.shape[0]:
        acc[i] += x[i]


@cuda.jit
def block_sum(x, out):
    """Named like the library's block_sum; a different kernel (one atomic per element)."""
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.add(out, 0, x[i])


@cuda.jit
def double_in_place(x):
    i = cuda.grid(1)
    if i < x.shape[0]:
        x[i] = 2 * x[i]


@cuda.jit
def outer(a, b, out):
    r, c = cuda.grid(2)
    if r < out.shape[0] and c < out.shape[1]:
        out[r, c] = a[r] * b[c]


@cuda.jit
def triple_1d(src, dst):
    i = cuda.grid(1)
    if i < src.shape[0]:
        dst[i] = 3 * src[i]
