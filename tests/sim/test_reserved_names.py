"""A kernel that uses one of the names numbakern's rewritten code keeps for its helpers (``__nk_...``) is refused
with its name, instead of reading the helper in its place (issue 38: 0.3 read as Python's ``float``, a crash)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from numbakern.frontend.request import ReservedName

__nk_float = 0.3  # a module constant a kernel reads


@cuda.jit
def reads_a_reserved_global(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * 3 + __nk_float


@cuda.jit(device=True)
def helper(v):
    __nk_int = v * 2
    return __nk_int


@cuda.jit
def calls_a_device_function_with_a_reserved_local(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = helper(x[i])


@pytest.mark.parametrize("kernel, name, where", [(reads_a_reserved_global, "__nk_float", "reads_a_reserved_global"),
                                                  (calls_a_device_function_with_a_reserved_local, "__nk_int",
                                                   "helper")])
def test_a_reserved_name_is_refused_with_its_name(kernel, name, where, rng):
    x = rng.random(40).astype(np.float32)
    out = np.full_like(x, np.nan)
    with pytest.raises(ReservedName, match=f"{where} uses the name '{name}': names beginning with __nk_ are "
                                           "numbakern's own"):
        kernel[2, 32](x, out)
