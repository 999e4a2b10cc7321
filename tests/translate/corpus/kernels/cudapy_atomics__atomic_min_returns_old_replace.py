# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
#
# Copied as written from numba-cuda 0.30.4, numba_cuda/numba/cuda/tests/cudapy/test_atomics.py
# (the module's imports and the kernel of test_atomic_min_returns_old_replace).
# numba-cuda is BSD-2-Clause licensed (see its LICENSE).

import numpy as np
from textwrap import dedent
from numba import cuda
from numba.cuda import uint32, uint64, float32, float64, int32
from numba.cuda.core import config


# from test_atomic_min_returns_old_replace
@cuda.jit
def kernel(x):
    x[1] = cuda.atomic.min(x, 0, 10)
