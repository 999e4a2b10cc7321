"""Array dtypes as kernels spell them: numba types (``float32``, numba-cuda's or numba-cuda-mlir's own copy of
them) or numpy scalar types (``np.float32``)."""

from __future__ import annotations

import sys

import numpy as np

#: the packages whose numba ``Type`` classes may name a dtype, and where their ``as_dtype`` lives
_NUMBA_TYPE_PACKAGES = (
    ("numba.", "numba.cuda.np.numpy_support"),
    ("numba_cuda_mlir.", "numba_cuda_mlir.numba_cuda.np.numpy_support"),
)


def as_dtype(dtype) -> np.dtype:
    # The stock simulator converts numba types but takes anything else as a numpy dtype instance and reads
    # dtype.itemsize, which np.float32 (a scalar type, not a dtype) lacks.
    if not isinstance(dtype, (type, np.dtype, str)):
        owner = type(dtype).__module__
        for prefix, support in _NUMBA_TYPE_PACKAGES:
            if owner.startswith(prefix):
                __import__(support)
                return sys.modules[support].as_dtype(dtype)
    return np.dtype(dtype)
