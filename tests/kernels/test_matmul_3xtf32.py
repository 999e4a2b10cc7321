"""matmul_3xtf32: fp32 inputs and output on the tf32 tensor cores, split 3 ways, against a float64 reference in the
simulator (every check on) and, on a GPU, no less accurate than cuBLAS SGEMM on the same inputs."""

from __future__ import annotations

import numpy as np
import pytest

from numbakern import get
from numbakern.kernels.matmul_3xtf32 import DEFAULT_CONFIG, check_config, matmul_3xtf32, wgmma_pays

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


# -- the Hopper path: matmul_wgmma(tf32x3=True) on the split parts (registered as matmul_3xtf32_wgmma) ----------


def _relative_to_scale(out, a, b):
    """Each element's error against the float64 product, relative to sum |a||b| (the registered specs' scale)."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return np.abs(out - a64 @ b64) / (np.abs(a64) @ np.abs(b64))


@pytest.mark.sim
def test_wgmma_path_is_fp32_accurate_where_one_tf32_product_is_not(rng):
    """The whole Hopper path in the simulator with every check on (B^T, the split of A and B^T, the persistent
    kernel: 2 blocks walking 6 tiles of 128x128, 7 k-tiles, the last partial; none of h, k, w a multiple of the
    tile): within fp32's bar (1e-6 of sum |a||b|), where the product of the tf32-rounded inputs (what one tf32 wgmma
    computes) and either product with one cross term left out miss it tenfold and more."""
    from numbakern import sim
    from numbakern.mma import formats

    a = rng.standard_normal((130, 200)).astype(np.float32)
    b = rng.standard_normal((200, 264)).astype(np.float32)
    with sim.checks("all"):
        out = matmul_3xtf32(a, b, kernel="wgmma")
    assert _relative_to_scale(out, a, b).max() <= 1e-6
    (a_big, a_small), (b_big, b_small) = (formats.split_tf32(x) for x in (a, b))
    one_tf32 = a_big.astype(np.float64) @ b_big
    no_a_small = one_tf32 + a_big.astype(np.float64) @ b_small
    no_b_small = one_tf32 + a_small.astype(np.float64) @ b_big
    for product in (one_tf32, no_a_small, no_b_small):
        assert _relative_to_scale(product, a, b).max() > 10e-6


@pytest.mark.sim
@pytest.mark.parametrize("kpartial", [2, 3])
def test_wgmma_partial_sums_over_several_k_tiles(rng, kpartial):
    """A partial sum over ``kpartial`` k-tiles, its wgmma groups overlapping (each stage released when its group is
    done, the last one's at the partial sum's end): 9 k-tiles, so the last partial sum is short for both; every
    check on (a stage released while its group still reads it is an AsyncHazardError)."""
    from numbakern import sim
    from numbakern.kernels.matmul_wgmma import TF32X3_CONFIG

    a = rng.standard_normal((70, 276)).astype(np.float32)
    b = rng.standard_normal((276, 132)).astype(np.float32)
    with sim.checks("all"):
        out = matmul_3xtf32(a, b, kernel="wgmma", config={**TF32X3_CONFIG, "kpartial": kpartial})
    assert _relative_to_scale(out, a, b).max() <= 1e-6


def test_auto_takes_the_hopper_path_where_it_measured_faster():
    # the shapes of scripts/tf32x3_crossover.py's run on an H200 (2026-11-29), each on the side it measured faster
    faster_on_wgmma = [(4096, 1024, 4096), (4096, 2048, 4096), (512, 8192, 512), (8192, 1024, 8192), (4096, 4096, 4096)]
    faster_on_mma_sync = [(5120, 256, 5120), (4096, 256, 4096), (4096, 512, 4096), (1024, 1024, 1024),
                          (2048, 2048, 2048), (1024, 4096, 1024)]
    assert all(wgmma_pays(*shape) for shape in faster_on_wgmma)
    assert not any(wgmma_pays(*shape) for shape in faster_on_mma_sync)


def test_wgmma_configurations_and_arguments_refused():
    from numbakern.kernels.matmul_wgmma import TF32X3_CONFIG, matmul_wgmma

    a = np.ones((4, 8), np.float32)
    with pytest.raises(ValueError, match=r"argument 'kernel' must be one of"):
        matmul_3xtf32(a, a.T.copy(), kernel="mma")
    with pytest.raises(ValueError, match=r"and inflight=0"):
        matmul_wgmma(**{**TF32X3_CONFIG, "inflight": 1})
    with pytest.raises(ValueError, match=r"kpartial must be a positive int"):
        matmul_wgmma(**{**TF32X3_CONFIG, "kpartial": 0})
    with pytest.raises(ValueError, match=r"not f16 or out16"):
        matmul_wgmma(**{**TF32X3_CONFIG, "f16": True})
    with pytest.raises(ValueError, match=r"do not fit in 227 KiB"):
        matmul_wgmma(**{**TF32X3_CONFIG, "stages": 4})


@pytest.mark.gpu
def test_wgmma_path_as_accurate_as_sgemm(cuda_torch):
    """On a Hopper GPU: ``matmul_3xtf32`` takes the wgmma path by itself where it pays (the same bits as asking for
    it) and the mma.sync kernel elsewhere, and the wgmma path's error against float64 is no larger than cuBLAS
    SGEMM's on the same inputs."""
    torch = cuda_torch
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the wgmma path needs a GPU of compute capability 9.0")
    g = torch.Generator(device="cuda").manual_seed(7)
    for h, k, w in ((4096, 4096, 4096), (5120, 256, 5120), (509, 1020, 388)):
        a = torch.randn(h, k, device="cuda", generator=g)
        b = torch.randn(k, w, device="cuda", generator=g)
        auto = matmul_3xtf32(a, b)
        named = matmul_3xtf32(a, b, kernel="wgmma")
        chosen = named if wgmma_pays(h, k, w) else matmul_3xtf32(a, b, kernel="pipelined")
        torch.cuda.synchronize()
        assert torch.equal(auto, chosen)
        ref = a.double() @ b.double()
        ours = ((named.double() - ref).norm() / ref.norm()).item()
        sgemm = ((torch.matmul(a, b).double() - ref).norm() / ref.norm()).item()
        print(f"{h}x{k}x{w}: relative error 3xTF32 wgmma {ours:.2e}, cuBLAS SGEMM {sgemm:.2e}")
        assert ours <= sgemm, (h, k, w, ours, sgemm)
