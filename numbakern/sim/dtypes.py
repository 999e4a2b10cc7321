"""Array dtypes as kernels spell them: numba types (``float32``) or numpy scalar types (``np.float32``)."""

from __future__ import annotations

import numpy as np


def as_dtype(dtype) -> np.dtype:
    # The stock simulator converts numba types but takes anything else as a numpy dtype instance and reads
    # dtype.itemsize, which np.float32 (a scalar type, not a dtype) lacks.
    from numba.cuda import types
    from numba.cuda.np import numpy_support

    if isinstance(dtype, types.Type):
        return numpy_support.as_dtype(dtype)
    return np.dtype(dtype)
