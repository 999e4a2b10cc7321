"""Kernels with ``unroll`` loops, for tests/translate/test_unroll.py."""

import numpy as np
from numba import cuda

from numbakern import specialize
from numbakern.unroll import unroll

STEPS = 3


@specialize
def dot_steps(n: int):
    @cuda.jit
    def dot_steps(x, out):
        i = cuda.grid(1)
        if i < out.shape[0]:
            acc = np.float32(0.0)
            for s in unroll(range(n)):
                for q in unroll(range(STEPS)):
                    acc += x[i * n + s] * np.float32(q + 1)
            out[i] = acc

    return dot_steps


@specialize
def two_at_a_time(n: int):
    @cuda.jit
    def two_at_a_time(x, out):
        i = cuda.grid(1)
        if i < out.shape[0]:
            acc = np.float32(0.0)
            for s in unroll(range(n), 2):
                acc += x[i * n + s]
            for s in unroll(range(n), 1):
                acc -= x[i * n + s] * np.float32(0.5)
            out[i] = acc

    return two_at_a_time
