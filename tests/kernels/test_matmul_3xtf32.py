"""matmul_3xtf32: fp32 inputs and output on the tf32 tensor cores, split 3 ways, against a float64 reference in the
simulator (every check on) and, on a GPU, no less accurate than cuBLAS SGEMM on the same inputs."""

from __future__ import annotations

import numpy as np
import pytest

from numbakern import get
from numbakern.kernels.matmul_3xtf32 import DEFAULT_CONFIG, check_config, matmul_3xtf32

SPEC = get("matmul_3xtf32")


# the registered kernel against its reference at its test sizes: tests/numbakern/test_kernels.py


def test_tf32_alone_would_fail_the_check(rng):
    """The bar is fp32's: the product of the tf32-rounded inputs (what one tf32 mma computes) fails it."""
    from numbakern.mma import formats

    case = SPEC.make_case({"h": 37, "k": 36, "w": 44}, rng, "normal")
    a, b, _ = case.args
    one_tf32 = (formats.f32_to_tf32(a).astype(np.float64) @ formats.f32_to_tf32(b).astype(np.float64))
    (result,) = SPEC.check(case, {2: one_tf32.astype(np.float32)}).values()
    assert not result.ok


@pytest.mark.sim
def test_another_configuration(rng):
    """bk = 32 (A rows of 8 chunks), 3 stages, 2 warps of 32x32, k = 100 (3 tiles and a partial one)."""
    from numbakern.kernels.matmul_3xtf32 import matmul_3xtf32_pipelined, mma_launch

    config = {"bm": 32, "bn": 64, "bk": 32, "warps_m": 1, "warps_n": 2, "stages": 3, "group": 1}
    a = rng.standard_normal((33, 100)).astype(np.float32)
    b = rng.standard_normal((100, 68)).astype(np.float32)
    out = np.full((33, 68), np.nan, np.float32)
    cfg = mma_launch(config, 33, 68)
    matmul_3xtf32_pipelined(**config)[cfg.grid, cfg.block, 0, 0](a, b, out)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert (np.abs(out - ref) <= 1e-6 * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))).all()


def test_entry_point_and_bad_arguments(rng):
    a = rng.standard_normal((5, 8)).astype(np.float32)
    b = rng.standard_normal((8, 12)).astype(np.float32)
    out = matmul_3xtf32(a, b)
    assert np.abs(out - a.astype(np.float64) @ b).max() < 1e-5
    with pytest.raises(ValueError, match=r"k and w must be multiples of 4"):
        matmul_3xtf32(a[:, :6].copy(), b[:6].copy())
    with pytest.raises(TypeError, match=r"argument 'b' must have dtype float32"):
        matmul_3xtf32(a, b.astype(np.float64))
    with pytest.raises(ValueError, match=r"bk must be 16 or 32"):
        check_config(**{**DEFAULT_CONFIG, "bk": 8})


@pytest.mark.gpu
def test_as_accurate_as_sgemm(cuda_torch):
    """On the tensor cores (which truncate inside their fp32 sums) the error against float64 stays at SGEMM's."""
    torch = cuda_torch
    from numba import cuda

    from numbakern.kernels.matmul_3xtf32 import matmul_3xtf32_pipelined, mma_launch

    g = torch.Generator(device="cuda").manual_seed(5)
    a = torch.randn(1024, 2048, device="cuda", generator=g)
    b = torch.randn(2048, 1024, device="cuda", generator=g)
    out = torch.empty(1024, 1024, device="cuda")
    cfg = mma_launch(DEFAULT_CONFIG, 1024, 1024)
    matmul_3xtf32_pipelined(**DEFAULT_CONFIG)[cfg.grid, cfg.block](*(cuda.as_cuda_array(x) for x in (a, b, out)))
    torch.cuda.synchronize()
    ref = a.double() @ b.double()
    ours = ((out.double() - ref).norm() / ref.norm()).item()
    sgemm = ((torch.matmul(a, b).double() - ref).norm() / ref.norm()).item()
    assert ours <= 1.5 * sgemm, (ours, sgemm)
