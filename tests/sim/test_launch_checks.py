"""What a launch is given: launches a GPU refuses are refused, torch tensors run as numpy views of their memory, and
tensors numpy has no dtype for are refused naming the argument and what to pass instead."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from numbakern import sim

torch = pytest.importorskip("torch")


@cuda.jit
def count(out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        cuda.atomic.add(out, i, 1)


@cuda.jit
def grid_3d(out):
    x, y, z = cuda.grid(3)
    if x == 0 and y == 0:
        cuda.atomic.add(out, 0, 1)


@pytest.mark.parametrize("grid, block, named", [
    (1, 2048, "a block of 2048 threads: a GPU allows at most 1024 per block"),
    (1, (32, 32, 2), "a block of 32 x 32 x 2 = 2048 threads"),
    (1, (1, 1, 65), "blockDim.z = 65: a GPU allows at most 64 in z"),
    ((1, 1, 70_000), 1, "gridDim.z = 70000: a GPU allows at most 65535 in z"),
    ((1, 65_536), 1, "gridDim.y = 65536: a GPU allows at most 65535 in y"),
    (0, 32, "gridDim.x = 0: every launch dimension must be at least 1"),
    (-3, 32, "gridDim.x = -3"),
    (1, 0, "blockDim.x = 0"),
    ((2, -1), 32, "gridDim.y = -1"),
])
def test_a_launch_a_gpu_refuses_is_refused_naming_the_dimension_and_the_limit(grid, block, named):
    out = np.zeros(4, np.int32)
    with pytest.raises(sim.LaunchError) as caught:
        count[grid, block](out)
    message = str(caught.value)
    assert "kernel 'count' launched with grid" in message and named in message
    assert "CUDA_ERROR_INVALID_VALUE" in message
    assert not out.any()  # nothing ran


def test_the_largest_launches_a_gpu_accepts_run():
    out = np.zeros(1, np.int32)
    grid_3d[(1, 1, 65_535), (1, 1, 1)](out)
    assert out[0] == 65_535  # every block of the deepest grid ran once
    out = np.zeros(1024, np.int32)
    count[1, 1024](out)
    assert (out == 1).all()


def test_a_block_larger_than_the_kernels_launch_bounds_is_refused():
    @cuda.jit(launch_bounds=(128, 2))
    def bounded(out):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = i

    out = np.zeros(256, np.int32)
    bounded[2, 128](out)
    np.testing.assert_array_equal(out, np.arange(256))
    with pytest.raises(sim.LaunchError, match="256 threads is more than the 128 of the kernel's launch_bounds"):
        bounded[1, 256](out)


@cuda.jit
def scale_rows(x, out, factor):
    i, j = cuda.grid(2)
    if i < x.shape[0] and j < x.shape[1]:
        out[i, j] = x[i, j] * factor


@cuda.jit
def copy_to_out(x, out):
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = x[i, j]  # DEFECT where out is larger than x


def test_cpu_tensors_run_as_views_of_their_memory_with_the_checks(rng):
    x = torch.from_numpy(rng.standard_normal((5, 7)).astype(np.float32))
    out = torch.full((5, 7), float("nan"))
    with sim.checks("all"):
        scale_rows[(1, 1), (8, 8)](x, out, np.float32(3))
    np.testing.assert_array_equal(out.numpy(), x.numpy() * np.float32(3))
    # the tensor's memory is checked like any array's: a read past its end is found
    with sim.checks("bounds"), pytest.raises(sim.OutOfBoundsError, match="global array 'x' of shape \\(5, 7\\)"):
        copy_to_out[(1, 1), (8, 8)](x, torch.zeros(8, 8))


def test_a_tensor_that_requires_grad_runs_too(rng):
    x = torch.tensor(rng.standard_normal((2, 3)), dtype=torch.float32, requires_grad=True)
    out = torch.zeros(2, 3)
    scale_rows[(1, 1), (4, 4)](x, out, np.float32(2))
    np.testing.assert_array_equal(out.numpy(), x.detach().numpy() * 2)


@pytest.mark.parametrize("dtype, fix", [
    ("bfloat16", "numbakern.launch.to_kernel_arg(x) for its bit patterns as uint16"),
    ("float8_e4m3fn", "x.view(torch.uint8) for its bit patterns"),
])
def test_a_tensor_numpy_has_no_dtype_for_is_refused_at_launch_naming_it(rng, dtype, fix):
    if not hasattr(torch, dtype):
        pytest.skip(f"this torch has no {dtype}")
    x = torch.from_numpy(rng.standard_normal((5, 7)).astype(np.float32)).to(getattr(torch, dtype))
    out = torch.zeros(5, 7)
    with pytest.raises(TypeError) as caught:
        scale_rows[(1, 1), (8, 8)](x, out, np.float32(3))
    message = str(caught.value)
    assert f"argument 'x' is a torch.{dtype} tensor" in message and fix in message and "x.float()" in message
    assert "tid=" not in message  # refused at the launch, not from inside a thread
    assert not out.any()
