# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
#
# Copied as written from numba-cuda 0.30.4, numba_cuda/numba/cuda/tests/doc_examples/test_cpu_gpu_compat.py
# (the example's 'ex_cpu_gpu_compat.import', 'ex_cpu_gpu_compat.define', 'ex_cpu_gpu_compat.usegpu' blocks).
# numba-cuda is BSD-2-Clause licensed (see its LICENSE).

from math import pi

import numba
from numba import cuda

@numba.jit
def business_logic(x, y, z):
    return 4 * z * (2 * x - (4 * y) / 2 * pi)

@cuda.jit
def f(res, xarr, yarr, zarr):
    tid = cuda.grid(1)
    if tid < len(xarr):
        # The function decorated with numba.jit may be directly reused
        res[tid] = business_logic(xarr[tid], yarr[tid], zarr[tid])
