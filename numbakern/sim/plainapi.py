"""The part of the device ``cuda`` API that needs no scheduler, for environments without numba-cuda's simulator.

``SimCUDAModule`` (``fakecuda``) adds barriers, warp intrinsics, shared and local memory and atomics on top.
Results follow the GPU's: ``popc``/``brev``/``clz``/``ffs`` read their argument as 32 bits unless it is a 64-bit
numpy integer.
"""

from __future__ import annotations

import numpy as np

WARP_SIZE = 32


class Dim3:
    """``threadIdx``, ``blockIdx``, ``blockDim``, ``gridDim``: three named coordinates."""

    __slots__ = ("x", "y", "z")

    def __init__(self, x, y, z):
        self.x, self.y, self.z = x, y, z

    def __iter__(self):
        yield self.x
        yield self.y
        yield self.z

    def __repr__(self):
        return f"Dim3({self.x}, {self.y}, {self.z})"


class FakeCUDAConst:
    def array_like(self, ary):
        return ary


class FakeCUDAAtomic:
    """Every operation is defined by ``fakecuda.CheckedAtomics``."""


class FakeCUDAFp16:
    def hadd(self, a, b):
        return np.float16(a) + np.float16(b)

    def hsub(self, a, b):
        return np.float16(a) - np.float16(b)

    def hmul(self, a, b):
        return np.float16(a) * np.float16(b)

    def hdiv(self, a, b):
        return np.float16(a) / np.float16(b)

    def hfma(self, a, b, c):
        return np.float16(np.float32(a) * np.float32(b) + np.float32(c))

    def hneg(self, a):
        return -np.float16(a)

    def habs(self, a):
        return abs(np.float16(a))

    def hmax(self, a, b):
        return max(np.float16(a), np.float16(b))

    def hmin(self, a, b):
        return min(np.float16(a), np.float16(b))


def _bits(val) -> int:
    return 64 if isinstance(val, (np.int64, np.uint64)) else 32


class FakeCUDAModule:
    gridDim = blockDim = threadIdx = blockIdx = None
    warpsize = WARP_SIZE

    @property
    def cg(self):
        return self._cg

    @property
    def local(self):
        return self._local

    @property
    def shared(self):
        return self._shared

    @property
    def const(self):
        return self._const

    @property
    def atomic(self):
        return self._atomic

    @property
    def fp16(self):
        return self._fp16

    def threadfence(self):
        pass  # the engine's threads see every store at once

    threadfence_block = threadfence_system = threadfence

    def popc(self, val):
        return bin(int(val) & ((1 << _bits(val)) - 1)).count("1")

    def brev(self, val):
        n = _bits(val)
        return int(format(int(val) & ((1 << n) - 1), f"0{n}b")[::-1], 2)

    def clz(self, val):
        n = _bits(val)
        return n - (int(val) & ((1 << n) - 1)).bit_length()

    def ffs(self, val):
        v = int(val) & ((1 << _bits(val)) - 1)
        return (v & -v).bit_length()

    def selp(self, a, b, c):
        return b if a else c

    def grid(self, n):
        b, d, t = self.blockIdx, self.blockDim, self.threadIdx
        x = b.x * d.x + t.x
        if n == 1:
            return x
        if n == 2:
            return x, b.y * d.y + t.y
        if n == 3:
            return x, b.y * d.y + t.y, b.z * d.z + t.z
        raise ValueError(f"cuda.grid(ndim): ndim must be 1, 2 or 3, got {n!r}")

    def gridsize(self, n):
        d, g = self.blockDim, self.gridDim
        if n == 1:
            return d.x * g.x
        if n == 2:
            return d.x * g.x, d.y * g.y
        if n == 3:
            return d.x * g.x, d.y * g.y, d.z * g.z
        raise ValueError(f"cuda.gridsize(ndim): ndim must be 1, 2 or 3, got {n!r}")


def vector_type_names() -> dict:
    """Vector types (``cuda.float32x4``) are numba-cuda simulator objects; without it kernels get none."""
    return {}
