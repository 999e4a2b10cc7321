# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
#
# Copied as written from numba-cuda 0.30.4, numba_cuda/numba/cuda/tests/cudapy/test_intrinsics.py
# (the module's imports and the kernel of test_3dgrid).
# numba-cuda is BSD-2-Clause licensed (see its LICENSE).

import itertools
import numpy as np
import operator
import re
from numba import cuda
from numba.cuda import int64
from numba.cuda import HAS_NUMBA
from numba.cuda.types import f2


# from test_3dgrid
@cuda.jit
def foo(out):
    x, y, z = cuda.grid(3)
    a, b, c = cuda.gridsize(3)
    out[x, y, z] = a * b * c
