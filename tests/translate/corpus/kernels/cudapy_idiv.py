# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
#
# Copied as written from numba-cuda 0.30.4, numba_cuda/numba/cuda/tests/cudapy/test_idiv.py
# (its imports, constants and kernel functions; the unittest classes are left out).
# numba-cuda is BSD-2-Clause licensed (see its LICENSE).

import numpy as np
from numba import cuda
from numba.cuda import float32, float64, int32, void


# from test_inplace_div
@cuda.jit(void(float32[:, :], int32, int32))
def div(grid, l_x, l_y):
    for x in range(l_x):
        for y in range(l_y):
            grid[x, y] /= 2.0


# from test_inplace_div_double
@cuda.jit(void(float64[:, :], int32, int32))
def div_double(grid, l_x, l_y):
    for x in range(l_x):
        for y in range(l_y):
            grid[x, y] /= 2.0
