"""One kernel per numbakern intrinsic, written as for numba-cuda (``from numba import cuda``); tests/mlir compiles
them with numba-cuda-mlir (``NUMBAKERN_MLIR_MODULES`` rebinds this module's ``cuda``): one source, both front ends."""

import numpy as np
from numba import cuda

from numbakern import mma
from numbakern.async_copy import async_commit, async_wait, async_wait_all, copy_async, copy_async4
from numbakern.unroll import unroll
from numbakern.vector_io import vload4, vstore4

WAIT_N = 1  # a module constant: async_wait's n is an immediate


@cuda.jit
def vector_io(out, m, tile_out):
    r, c = cuda.grid(2)
    regs = cuda.local.array(8, np.float32)
    tile = cuda.shared.array((16, 16), np.float32)
    vload4(m, (r, c * 4), regs, 0)
    vstore4(tile, (r % 16, (c % 4) * 4), regs, 0)
    cuda.syncthreads()
    vload4(tile, (r % 16, (c % 4) * 4), regs, 4)
    vstore4(out, (r, c * 4), regs, 4)
    vstore4(tile_out, (r, c * 4), regs, 0)


@cuda.jit
def async_copies(out, m, n):
    r, c = cuda.grid(2)
    s = cuda.shared.array((2, 16, 16), np.float32)
    t = cuda.shared.array((16, 16), np.float32)
    copy_async4(s, (0, r % 16, (c % 4) * 4), m, (r, c * 4), r < n)
    copy_async4(s, (1, r % 16, (c % 4) * 4), m, r * 64 + c * 4, r < n)  # a flat source offset
    async_commit()
    copy_async(t, (c % 16, r % 16), m, (r, c), r < n)
    async_commit()
    async_wait(WAIT_N)
    async_wait_all()
    cuda.syncthreads()
    out[r, c] = s[0, r % 16, c % 16] + s[1, r % 16, c % 16] + t[r % 16, c % 16]


def _mma_kernel(fn, operand):
    @cuda.jit
    def kernel(a_in, b_in, c_in, d_out):
        lane = cuda.laneid
        a = cuda.local.array(4, operand)
        b = cuda.local.array(2, operand)
        acc = cuda.local.array(4, np.float32)
        for i in unroll(range(4)):
            a[i] = a_in[lane, i]
            acc[i] = c_in[lane, i]
        for i in unroll(range(2)):
            b[i] = b_in[lane, i]
        fn(acc, 0, a, 0, b, 0, acc, 0)
        for i in unroll(range(4)):
            d_out[lane, i] = acc[i]

    return kernel


mma_bf16 = _mma_kernel(mma.mma_m16n8k16_bf16, np.uint32)
mma_f16 = _mma_kernel(mma.mma_m16n8k16_f16, np.uint32)
mma_tf32 = _mma_kernel(mma.mma_m16n8k8_tf32, np.float32)


def _ldmatrix_kernel(fn, count):
    @cuda.jit
    def kernel(src, out):
        lane = cuda.laneid
        tile = cuda.shared.array((16, 16), dtype=np.uint16)
        for e in range(lane, 256, 32):
            tile[e // 16, e % 16] = src[e // 16, e % 16]
        cuda.syncthreads()
        regs = cuda.local.array(4, np.uint32)
        fn(regs, 0, tile, (lane % 16, (lane // 16) * 8))
        for j in range(count):
            out[lane, j] = regs[j]

    return kernel


LDMATRIX_NAMES = [f"ldmatrix_x{count}{'_trans' if trans else ''}" for count in (1, 2, 4) for trans in (False, True)]
LDMATRIX = {name: _ldmatrix_kernel(getattr(mma, name), int(name[len("ldmatrix_x")])) for name in LDMATRIX_NAMES}


@cuda.jit
def helpers(x, bits, out, out_bits):
    i = cuda.grid(1)
    v = x[i]
    out_bits[i, 0] = mma.pack_bf16x2(v, x[i + 1])
    out_bits[i, 1] = mma.pack_f16x2(v, x[i + 1])
    out_bits[i, 2] = mma.pack_b16x2(bits[i], bits[i + 1])
    lo, hi = mma.unpack_bf16x2(out_bits[i, 0])
    lo2, hi2 = mma.unpack_f16x2(out_bits[i, 1])
    b_lo, b_hi = mma.unpack_b16x2(out_bits[i, 2])
    out[i, 0] = lo + hi + lo2 + hi2 + np.float32(b_lo) + np.float32(b_hi)
    out[i, 1] = mma.bf16_to_f32(mma.f32_to_bf16(v)) + mma.f16_to_f32(mma.f32_to_f16(v))
    big, small = mma.split_tf32(v)
    out[i, 2] = mma.f32_to_tf32(v) + big + small


@cuda.jit
def rolled_unroll(out, x, n):
    """``unroll`` in a kernel nobody expanded: the loop stays rolled (and correct)."""
    i = cuda.grid(1)
    acc = np.float32(0)
    for j in unroll(range(n)):
        acc += x[j]
    out[i] = acc


@cuda.jit
def fences(out):
    out[0] = 1
    cuda.threadfence_block()
    out[1] = 2
    cuda.threadfence()
    out[2] = 3
    cuda.threadfence_system()


REGS = "void(uint32[:, ::1], uint32[:, ::1], float32[:, ::1], float32[:, ::1])"
FLOATS = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1], float32[:, ::1])"
TILE = "void(uint16[:, ::1], uint32[:, ::1])"

#: name -> (kernel, signature) for every kernel above
KERNELS = {
    "vector_io": (vector_io, "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])"),
    "async_copies": (async_copies, "void(float32[:, ::1], float32[:, ::1], int32)"),
    "mma_bf16": (mma_bf16, REGS),
    "mma_f16": (mma_f16, REGS),
    "mma_tf32": (mma_tf32, FLOATS),
    **{name: (kernel, TILE) for name, kernel in LDMATRIX.items()},
    "helpers": (helpers, "void(float32[::1], uint16[::1], float32[:, ::1], uint32[:, ::1])"),
    "rolled_unroll": (rolled_unroll, "void(float32[::1], float32[::1], int32)"),
    "fences": (fences, "void(int32[::1])"),
}


# -- calls numba-cuda-mlir must refuse (numbakern's typing checks): kernel, signature


@cuda.jit
def vload4_of_float64(out, m):
    regs = cuda.local.array(4, np.float32)
    vload4(m, (0, 0), regs, 0)
    out[0] = regs[0]


@cuda.jit
def async_wait_of_a_variable(out, n):
    async_commit()
    async_wait(n)
    out[0] = 1


@cuda.jit
def mma_with_float_registers(d_out):
    a = cuda.local.array(4, np.float32)
    b = cuda.local.array(2, np.float32)
    acc = cuda.local.array(4, np.float32)
    mma.mma_m16n8k16_bf16(acc, 0, a, 0, b, 0, acc, 0)
    d_out[0] = acc[0]


@cuda.jit
def copy_async_without_a_bool(dst_out, m):
    s = cuda.shared.array(16, np.float32)
    copy_async4(s, 0, m, 0, 1)
    async_wait_all()
    dst_out[0] = s[0]


REFUSED = {
    "vload4_of_float64": (vload4_of_float64, "void(float32[::1], float64[:, ::1])"),
    "async_wait_of_a_variable": (async_wait_of_a_variable, "void(int32[::1], int32)"),
    "mma_with_float_registers": (mma_with_float_registers, "void(float32[::1])"),
    "copy_async_without_a_bool": (copy_async_without_a_bool, "void(float32[::1], float32[::1])"),
}
