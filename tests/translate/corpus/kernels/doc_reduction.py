# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES. All rights reserved.
# SPDX-License-Identifier: BSD-2-Clause
#
# Copied as written from numba-cuda 0.30.4, numba_cuda/numba/cuda/tests/doc_examples/test_reduction.py
# (the example's 'ex_reduction.import', 'ex_reduction.kernel' blocks).
# numba-cuda is BSD-2-Clause licensed (see its LICENSE).

# (the example's allocate block sets nelem = len(a) for a = cuda.to_device(np.arange(1024)),
#  which needs a GPU at import: its value is given here)
nelem = 1024

import numpy as np
from numba import cuda
from numba.cuda.types import int32

@cuda.jit
def array_sum(data):
    tid = cuda.threadIdx.x
    size = len(data)
    if tid < size:
        i = cuda.grid(1)

        # Declare an array in shared memory
        shr = cuda.shared.array(nelem, int32)
        shr[tid] = data[i]

        # Ensure writes to shared memory are visible
        # to all threads before reducing
        cuda.syncthreads()

        s = 1
        while s < cuda.blockDim.x:
            if tid % (2 * s) == 0:
                # Stride by `s` and add
                shr[tid] += shr[tid + s]
            s *= 2
            cuda.syncthreads()

        # After the loop, the zeroth  element contains the sum
        if tid == 0:
            data[tid] = shr[tid]
