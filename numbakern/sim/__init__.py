"""numbakern's layer over numba-cuda's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``).

For now it makes the simulator accept numpy scalar types as array dtypes
(``cuda.shared.array(0, dtype=np.float32)``), the spelling that works on every numba CUDA target.
"""

from __future__ import annotations

import sys

import numpy as np

_installed = False


def install() -> None:
    """Patch the simulator in this process (idempotent). Only call it in simulator mode."""
    global _installed
    if _installed:
        return
    from numba.cuda.simulator import kernelapi

    kernelapi.FakeCUDAShared.array = _shared_array
    kernelapi.FakeCUDALocal.array = _local_array
    _installed = True


def _as_dtype(dtype):
    # The stock simulator converts numba types but takes anything else as a numpy dtype instance and reads
    # dtype.itemsize, which np.float32 (a scalar type, not a dtype) lacks.
    from numba.cuda import types
    from numba.cuda.np import numpy_support

    if isinstance(dtype, types.Type):
        return numpy_support.as_dtype(dtype)
    return np.dtype(dtype)


def _shared_array(self, shape, dtype, alignment=None):
    # Same behaviour as the stock FakeCUDAShared.array, with _as_dtype. Static arrays are identified by the
    # caller's file and line, so this must be the frame directly below the kernel's (no wrapper in between).
    dtype = _as_dtype(dtype)
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
    return np.empty(shape, _as_dtype(dtype))
