"""The base of the ``cuda`` module kernels see in the simulator (``fakecuda.SimCUDAModule``).

With numba-cuda installed it is numba-cuda's simulator classes (``cudasim``: math helpers, vector types, fp16), so
kernels see exactly what they saw before numbakern. Without it (an environment with numba-cuda-mlir only) it is
the small set below: the per-launch dimensions, ``grid``/``gridsize``, the bit intrinsics and ``selp``; everything
the scheduler routes (barriers, warp intrinsics, shared memory, atomics) is numbakern's own either way.
"""

from __future__ import annotations

from ..frontend.choice import numba_cuda_installed

if numba_cuda_installed():
    from .cudasim import Dim3, FakeCUDAAtomic, FakeCUDAConst, FakeCUDAFp16, FakeCUDAModule, vector_type_names
else:
    from .plainapi import Dim3, FakeCUDAAtomic, FakeCUDAConst, FakeCUDAFp16, FakeCUDAModule, vector_type_names

__all__ = ["Dim3", "FakeCUDAAtomic", "FakeCUDAConst", "FakeCUDAFp16", "FakeCUDAModule", "vector_type_names"]
