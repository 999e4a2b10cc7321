"""Kernels with codegen options (``fastmath``, ``launch_bounds``, ``max_registers``): test_codegen_options.py.
Translated by path, in the translator's helper process (the real CUDA target), never imported by the tests."""

import math

import numpy as np
from numba import cuda

from numbakern.specialize import specialize


@cuda.jit(fastmath=True, launch_bounds=(128, 2))
def fast_math(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        out[i] = v / np.float32(3.0) + math.sin(v) + math.exp(v) + math.tanh(v) + math.sqrt(v)


@cuda.jit
def plain_math(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        v = x[i]
        out[i] = v / np.float32(3.0) + math.sin(v)


@cuda.jit(max_registers=40)
def capped(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * np.float32(2.0)


@cuda.jit(launch_bounds=64, max_registers=40)
def bounded_and_capped(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i]


@specialize
def tiles(tw: int):
    @cuda.jit(fastmath=True, launch_bounds=(tw * tw,))
    def tiles(x, out):
        t = cuda.shared.array((tw, tw), dtype=np.float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        t[ty, tx] = x[ty * tw + tx]
        cuda.syncthreads()
        out[ty * tw + tx] = t[tx, ty]

    return tiles


@cuda.jit
def mixed_index(x, out, k):
    tid = cuda.threadIdx.x
    r = np.uint32(tid)
    for i in range(4):
        j = r + i * 2  # numba: (uint64, int64) -> int64
        if j < k:
            out[j] = x[j]
    nxt = (tid & 1) ^ 1  # >= 0: no wraparound
    out[nxt] = x[0]
