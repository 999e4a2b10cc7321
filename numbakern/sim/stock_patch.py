"""Make the stock simulator accept numpy scalar types as dtypes (``cuda.shared.array(0, dtype=np.float32)``), the
GPU's ``cuda.jit`` options, and compute ``numba.cuda.libdevice``.

Applied by ``install()`` and kept when numbakern's engine is switched off, so kernels written for numbakern also
run on the stock engine (the benchmark's baseline).
"""

from __future__ import annotations

import sys

import numpy as np

from .dtypes import as_dtype


def apply() -> None:
    from . import libdevice
    from .cudasim import patch_jit, patch_stock_arrays

    patch_stock_arrays(_shared_array, _local_array)
    patch_jit()  # the GPU's jit options (max_registers, launch_bounds, ...) accepted
    libdevice.install()  # numba.cuda.libdevice computes


def _shared_array(self, shape, dtype, alignment=None):
    # Same behaviour as the stock FakeCUDAShared.array, with as_dtype. Static arrays are identified by the
    # caller's file and line, so this must be the frame directly below the kernel's (no wrapper in between).
    dtype = as_dtype(dtype)
    if shape == 0:
        count = self._dynshared_size // dtype.itemsize
        return np.frombuffer(self._dynshared.data, dtype=dtype, count=count)
    caller = sys._getframe(1)
    key = (caller.f_code.co_filename, caller.f_lineno)
    res = self._allocations.get(key)
    if res is None:
        res = np.empty(shape, dtype)
        self._allocations[key] = res
    return res


def _local_array(self, shape, dtype, alignment=None):
    return np.empty(shape, as_dtype(dtype))
