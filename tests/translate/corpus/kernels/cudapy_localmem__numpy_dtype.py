# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
#
# Copied as written from numba-cuda 0.30.4, numba_cuda/numba/cuda/tests/cudapy/test_localmem.py
# (the module's imports and the kernel of test_numpy_dtype).
# numba-cuda is BSD-2-Clause licensed (see its LICENSE).

import numpy as np
from numba import cuda
from numba.cuda import int32, complex128, void
from numba.cuda import types
from numba.cuda import HAS_NUMBA


# from test_numpy_dtype
@cuda.jit(void(int32[::1]))
def f(x):
    l = cuda.local.array(10, dtype=np.int32)
    l[0] = x[0]
    x[0] = l[0]
