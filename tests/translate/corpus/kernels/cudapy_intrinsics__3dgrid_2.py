# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
#
# Copied as written from numba-cuda 0.30.4, numba_cuda/numba/cuda/tests/cudapy/test_intrinsics.py
# (the module's imports and the kernel of test_3dgrid_2).
# numba-cuda is BSD-2-Clause licensed (see its LICENSE).

import itertools
import numpy as np
import operator
import re
from numba import cuda
from numba.cuda import int64
from numba.cuda import HAS_NUMBA
from numba.cuda.types import f2


# from test_3dgrid_2
@cuda.jit
def foo(out):
    x, y, z = cuda.grid(3)
    a, b, c = cuda.gridsize(3)
    grid_is_right = (
        x == cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
        and y == cuda.threadIdx.y + cuda.blockIdx.y * cuda.blockDim.y
        and z == cuda.threadIdx.z + cuda.blockIdx.z * cuda.blockDim.z
    )
    gridsize_is_right = (
        a == cuda.blockDim.x * cuda.gridDim.x
        and b == cuda.blockDim.y * cuda.gridDim.y
        and c == cuda.blockDim.z * cuda.gridDim.z
    )
    out[x, y, z] = grid_is_right and gridsize_is_right
