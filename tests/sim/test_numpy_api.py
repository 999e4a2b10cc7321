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


@cuda.jit
def reinterpret(byte_arr, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = byte_arr[4 * i:4 * i + 4].view(np.int32)[0]  # numba-cuda's test_reinterpret_array_type


@cuda.jit
def array_methods(m, out):
    if cuda.grid(1) == 0:
        out[0] = m.reshape((m.shape[0] * m.shape[1],))[m.size - 1]
        out[1] = m.sum()
        out[2] = m[1].prod()
        out[3] = m[2:4].sum()
        out[4] = m.T[1, 0]
        out[5] = m.reshape(m.size)[1]
        out[6] = m[3].var()
        out[7] = m[1:3].std()


@pytest.mark.parametrize("checks", ["none", "all"])
def test_array_methods_a_kernel_calls(checks, rng):
    byte_arr = rng.integers(0, 256, 4 * 37, dtype=np.uint8)
    out = np.zeros(37, np.int32)
    m = rng.standard_normal((5, 7))
    got = np.zeros(8)
    with sim.checks(checks):
        reinterpret[2, 32](byte_arr, out)
        array_methods[1, 1](m, got)
    np.testing.assert_array_equal(out, byte_arr.view(np.int32), err_msg=f"seed {SEED}")
    np.testing.assert_allclose(got, [m[-1, -1], m.sum(), m[1].prod(), m[2:4].sum(), m[0, 1], m[0, 1], m[3].var(),
                                     m[1:3].std()], rtol=1e-12)


def copies(x, out):
    if cuda.grid(1) == 0:
        q = x.copy()  # a new array: numba-cuda compiles it only with the NRT on
        for i in range(x.shape[0]):
            x[i] = 0.0
        for i in range(out.shape[0]):
            out[i] = q[i]


def test_an_array_copy_in_a_kernel_with_the_nrt_on(rng):
    # numba-cuda's own test turns the NRT on in its process: the helper that types the kernel compiles with it too
    from numba.cuda.core import config

    x = rng.standard_normal(11)
    expected = x.copy()
    out = np.zeros(11)
    saved = config.CUDA_ENABLE_NRT
    config.CUDA_ENABLE_NRT = True
    try:
        cuda.jit(copies)[1, 1](x, out)
    finally:
        config.CUDA_ENABLE_NRT = saved
    np.testing.assert_array_equal(out, expected, err_msg=f"seed {SEED}")
    with pytest.raises(sim.TypingError, match="NRT"):  # without it numba-cuda refuses the kernel
        cuda.jit(copies)[1, 1](x, out)
