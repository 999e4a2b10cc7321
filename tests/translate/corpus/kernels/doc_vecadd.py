# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
#
# Copied as written from numba-cuda 0.30.4, numba_cuda/numba/cuda/tests/doc_examples/test_vecadd.py
# (the example's 'ex_vecadd.import', 'ex_vecadd.kernel' blocks).
# numba-cuda is BSD-2-Clause licensed (see its LICENSE).

import numpy as np
from numba import cuda

@cuda.jit
def f(a, b, c):
    # like threadIdx.x + (blockIdx.x * blockDim.x)
    tid = cuda.grid(1)
    size = len(c)

    if tid < size:
        c[tid] = a[tid] + b[tid]
