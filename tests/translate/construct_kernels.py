"""Kernels that exercise each construct the translator supports (golden tests: test_golden.py)."""

import math

import numpy as np
from numba import cuda

from numbakern.async_copy import async_commit, async_wait_all, copy_async4
from numbakern.vector_io import vload4, vstore4

SCALE = 2.5
N_ITEMS = 4


@cuda.jit(device=True)
def clamp(x, lo, hi):
    if x < lo:
        return lo
    elif x > hi:
        return hi
    return x


@cuda.jit
def indices(out):
    i, j = cuda.grid(2)
    n = cuda.gridsize(1)
    out[0] = cuda.threadIdx.x + cuda.blockIdx.y * cuda.blockDim.z + cuda.gridDim.x + i + j + n


@cuda.jit
def arith(a, out, n):
    i = cuda.grid(1)
    q = n // 3
    r = n % 4
    s = i // 2
    f = a[i] / 2
    g = n / 2
    out[i] = q + r + s + f + g + -n + (n ** 2) + abs(n) + min(i, n) + max(f, 1.0)


@cuda.jit
def math_casts(a, out):
    i = cuda.grid(1)
    x = math.sqrt(a[i]) + math.exp(np.float64(a[i])) + math.ceil(a[i])
    y = int(x) + float(i) + np.float32(SCALE)
    out[i] = y if 0 <= i < out.shape[0] and not (x > 3 or x < -3) else 0.0


@cuda.jit
def loops(out, n):
    acc = 0
    for i in range(n):
        if i == 3:
            continue
        acc += i
    for j in range(10, 0, -2):
        acc -= j
    k = 0
    while True:
        k += 1
        if k > n:
            break
    out[0] = acc + k
    if n < 0:
        return
    out[1] = clamp(acc, 0, 5)


@cuda.jit
def shared_local(out):
    tile = cuda.shared.array((N_ITEMS, N_ITEMS), dtype=np.float32)
    buf = cuda.local.array(N_ITEMS, dtype=np.int32)
    dyn = cuda.shared.array(0, dtype=np.float32)
    lo, hi = dyn[:N_ITEMS], dyn[N_ITEMS:]
    tx = cuda.threadIdx.x
    buf[tx % N_ITEMS] = tx
    tile[tx % N_ITEMS, 0] = buf[0]
    lo[tx] = tile[0, 0]
    hi[tx] = lo[tx]
    c = cuda.syncthreads_count(tx)
    a = cuda.syncthreads_and(tx)
    o = cuda.syncthreads_or(tx)
    out[tx] = hi[tx] + c + a + o


@cuda.jit
def atomics_warp(fo, io, uo):
    tx = cuda.threadIdx.x
    cuda.atomic.add(fo, 0, 1.0)
    cuda.atomic.sub(io, 0, 1)
    cuda.atomic.max(io, 1, tx)
    cuda.atomic.min(fo, 1, 2.0)
    cuda.atomic.exch(io, 2, 7)
    cuda.atomic.cas(io, 3, 0, 1)
    v = cuda.shfl_down_sync(0xFFFFFFFF, fo[tx], 1)
    w = cuda.shfl_xor_sync(0xFFFFFFFF, v, 2) + cuda.shfl_up_sync(0xFFFFFFFF, v, 1) + cuda.shfl_sync(0xFFFFFFFF, v, 0)
    b = cuda.ballot_sync(0xFFFFFFFF, w > 0)
    cuda.syncwarp(0xFFFFFFFF)
    uo[tx] = b


@cuda.jit
def negative_index(x, out):
    i = cuda.threadIdx.x
    out[i] = x[i - 1] + x[-1]


@cuda.jit
def swap_unpack(out):
    a, b = 1, 2
    a, b = b, a
    out[0] = a - b


# -- unsupported constructs (each must raise a located TranslationError) --------------------------------------

@cuda.jit
def bad_strings(out):
    s = "hello"
    out[0] = len(s)


@cuda.jit
def bad_loop_var(out):
    for i in range(3):
        out[i] = 1
    out[0] = i


@cuda.jit
def bad_unpacked_loop_var(x, out):
    for k, (a, b) in enumerate(zip(x, out)):
        out[k] = a + b
    out[0] = a


@cuda.jit
def bad_held_range(x, out):
    i = cuda.grid(1)
    r = range(1, 5)
    if i > 2:
        r = range(2, 7)  # a range held in a variable, made again on one path (numba compiles it)
    if x[i] in r:
        out[i] = 1


@cuda.jit
def bad_inner_default(x, out):
    def scaled(v, k=2):  # an inner function with a default (numba compiles it)
        return v * k

    i = cuda.grid(1)
    out[i] = scaled(x[i])


@cuda.jit
def bad_sum_complex(z, out):
    out[0] = z.sum().real


@cuda.jit
def retyped(out, n):
    x = 1
    if n > 0:
        x = 2.5
    out[0] = x


WIDE = True


@cuda.jit
def vector_io(src, out):
    # 16-byte accesses (numbakern.vector_io), an aligned shared tile, a constant branch numba prunes, a mask
    t = cuda.threadIdx.x
    regs = cuda.local.array(8, np.float32)
    tile = cuda.shared.array((2, 16), np.float32, alignment=16)
    r = cuda.blockIdx.x - 1  # may be negative
    par = r & 1  # ... but a non-negative mask clears the sign bit: no wraparound below
    if WIDE:
        vload4(src, (t, 4), regs, 0)
        vload4(src, (t, 0), regs, 4)
    else:
        lost = src[t, 0]
        regs[0] = lost
    vstore4(tile, (par, t * 4), regs, 4)
    cuda.syncthreads()
    vstore4(out, (t, 0), regs, 0)
    out[t, 4] = tile[par, 0]


@cuda.jit
def async_tile(src, out):
    # cp.async into a shared tile, then a constant-trip loop (unrolled in the C) and a run-time one (not)
    t = cuda.threadIdx.x
    tile = cuda.shared.array((8, 4), np.float32, alignment=16)
    copy_async4(tile, (t, 0), src, (t, 0), t < src.shape[0])
    async_commit()
    async_wait_all()
    cuda.syncthreads()
    acc = np.float32(0.0)
    for q in range(N_ITEMS):
        acc += tile[t, q]
    for r in range(src.shape[0]):
        acc += src[r, 0]
    out[t] = acc


@cuda.jit
def printing(x, flags):
    i = cuda.grid(1)
    if i < x.shape[0]:
        print("x[", i, "] =", x[i], flags[i] > 0, (i, cuda.threadIdx.x), "100% é")


@cuda.jit(device=True)
def row_sum(m, r):
    s = 0.0
    for c in range(m.shape[1]):
        s += m[r, c]
    return s


@cuda.jit
def const_through_call(m, out):
    r = cuda.grid(1)
    if r < m.shape[0]:
        out[r] = row_sum(m, r) + (r + 128 >> 8) + (r & 3 | 8)


@cuda.jit(device=True)
def _non_negative(v):
    if v < 0:
        raise ValueError("negative")  # a raise inside a device function (numba compiles it)
    return v


@cuda.jit
def bad_raise_in_device(x, out):
    i = cuda.grid(1)
    out[i] = _non_negative(x[i])


@cuda.jit(debug=True, opt=False)
def bad_debug_raise(x, out):
    i = cuda.grid(1)
    if x[i] < 0:
        raise ValueError("negative")  # numba reports it to the host, with debug=True
    out[i] = x[i]


@cuda.jit
def bad_np_sqrt(x, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[i] * 2 + np.sqrt(x[i])
