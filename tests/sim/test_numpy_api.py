"""With the checkers on, kernels get checked arrays instead of numpy arrays: they must behave as numpy arrays
everywhere a kernel or device function can use one (ufuncs with outputs, len, shape, size, iteration, slicing)."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from numbakern import sim

SEED = 20261130


@pytest.fixture
def rng():
    print(f"numpy seed {SEED}")
    return np.random.default_rng(SEED)


@cuda.jit
def ufuncs_with_outputs(x, r, s):
    np.sin(x, r)  # a ufunc writing its result into an output array (numba-cuda's doc example)
    np.cos(x[2:6], s[:4])  # into and from slices


@pytest.mark.parametrize("checks", ["none", "all"])
def test_ufuncs_with_output_arrays(checks, rng):
    x = rng.random(16)
    r, s = np.zeros(16), np.zeros(16)
    with sim.checks(checks):
        ufuncs_with_outputs[1, 1](x, r, s)
    np.testing.assert_array_equal(r, np.sin(x))
    np.testing.assert_array_equal(s[:4], np.cos(x[2:6]))
    assert (s[4:] == 0).all()


@cuda.jit(device=True)
def total(a):
    s = 0.0
    for v in a:  # iteration
        s += v
    return s


@cuda.jit
def array_interface(x, out):
    if cuda.grid(1) == 0:
        out[0] = len(x)
        out[1] = x.shape[0] * x.shape[1]
        out[2] = x.size
        out[3] = x.ndim
        out[4] = total(x[1])  # a row, passed to a device function
        out[5] = total(x[1:3, 2])  # a column slice
        row = x[2]
        out[6] = row[1:4].size


@pytest.mark.parametrize("checks", ["none", "all"])
def test_len_shape_size_iteration_and_slicing(checks, rng):
    x = rng.random((4, 5))
    out = np.zeros(7)
    with sim.checks(checks):
        array_interface[1, 1](x, out)
    np.testing.assert_allclose(out, [4, 20, 20, 2, x[1].sum(), x[1:3, 2].sum(), 3], rtol=1e-15)


@cuda.jit
def slice_past_the_end(x, out):
    row = x[0]
    out[0] = row[7]  # DEFECT: the row has 5 elements


def test_checks_still_apply_through_slices(rng):
    with sim.checks("all"), pytest.raises(sim.OutOfBoundsError, match=r"index \[7\]"):
        slice_past_the_end[1, 1](rng.random((4, 5)), np.zeros(1))
