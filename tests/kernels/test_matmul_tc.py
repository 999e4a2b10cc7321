"""matmul_bf16 and matmul_f16 (tensor cores) against a float64 reference of the same 16-bit values, in the
simulator with every check on (and on a GPU with ``pytest --gpu``): the registered pipelined kernels through their
specs, the plain kernel for any shape, and the user-facing entry points."""

from __future__ import annotations

import numpy as np
import pytest

import numbakern
from numbakern import all_specs, get, run_case
from numbakern.kernels.matmul_tc import (
    PIPE_CONFIG,
    PLAIN_CONFIG,
    matmul_bf16,
    matmul_bf16_plain,
    matmul_f16,
)
from numbakern.kernels.matmul_tc_pipe import check_pipe_config, matmul_tc_pipelined, mma_launch, tc_ready
from numbakern.mma import formats
from numbakern.registry import DISTRIBUTIONS

SPECS = {fmt: get(f"matmul_{fmt}") for fmt in ("bf16", "f16")}
#: a small pipelined configuration for the simulator: 4 warps of 32x32, bk = 64 (rows of 8 chunks: the other
#: swizzle), 2 stages, grouped order with bands of 2 block rows
SMALL = {"bm": 64, "bn": 64, "bk": 64, "warps_m": 2, "warps_n": 2, "stages": 2, "group": 2}


# the registered kernels against their references at their test sizes: tests/numbakern/test_kernels.py


def test_a_wrong_product_fails_the_check(rng):
    """The tolerance is fp32 accumulation's: a bf16-sized error in one element is caught. The error is sized by
    the element's magnitude sum (sum of |a||b|), not its value, which cancellation can make as small as it likes."""
    spec = SPECS["bf16"]
    case = spec.make_case({"h": 37, "k": 72, "w": 40}, rng, "normal")
    outputs = run_case(spec, case)
    magnitude = spec.error_scale(*case.args[:2], outputs[2])[2][3, 4]
    outputs[2][3, 4] += np.float32(2.0**-9 * magnitude)
    (result,) = spec.check(case, outputs).values()
    assert not result.ok and result.first_mismatches[0][0] == (3, 4)


def _values(x):
    return (x if x.dtype == np.float16 else formats.bf16_bits_to_f32(x)).astype(np.float64)


def _inputs(rng, h, k, w, f16):
    a32 = rng.standard_normal((h, k)).astype(np.float32)
    b32 = rng.standard_normal((k, w)).astype(np.float32)
    if f16:
        return a32.astype(np.float16), b32.astype(np.float16)
    return formats.f32_to_bf16_bits(a32), formats.f32_to_bf16_bits(b32)


def _assert_product(out, a, b):
    av, bv = _values(a), _values(b)
    assert (np.abs(out - av @ bv) <= 1e-5 * (np.abs(av) @ np.abs(bv))).all()


@pytest.mark.sim
@pytest.mark.parametrize("f16", [False, True])
def test_pipelined_kernel_in_another_configuration(f16, rng):
    """bk = 64 swizzles rows of 8 chunks (the default's bk = 32 packs two rows per 128-byte line), 2 stages, bands
    of 2 block rows: 3x2 blocks over a 150x136 output, k = 200 (3 whole tiles and a partial one)."""
    a, b = _inputs(rng, 150, 200, 136, f16)
    out = np.full((150, 136), np.nan, np.float32)
    cfg = mma_launch(SMALL, 150, 136)
    matmul_tc_pipelined(f16=f16, **SMALL)[cfg.grid, cfg.block, 0, 0](a, b, out)
    _assert_product(out, a, b)


@pytest.mark.parametrize("kernel", ["auto", "plain"])
def test_entry_point_takes_torch_bf16_and_gives_float32(kernel, rng):
    torch = pytest.importorskip("torch")
    a32 = rng.standard_normal((45, 33)).astype(np.float32)
    b32 = rng.standard_normal((33, 70)).astype(np.float32)
    a, b = torch.from_numpy(a32).to(torch.bfloat16), torch.from_numpy(b32).to(torch.bfloat16)
    if torch.cuda.is_available() and not numbakern.mode.in_simulator():
        a, b = a.cuda(), b.cuda()
    out = matmul_bf16(a, b, kernel=kernel)  # k = 33, w = 70: the plain kernel either way
    assert out.dtype == torch.float32 and tuple(out.shape) == (45, 70)
    ref = a.double().cpu().numpy() @ b.double().cpu().numpy()
    scale = np.abs(a.double().cpu().numpy()) @ np.abs(b.double().cpu().numpy())
    assert (np.abs(out.cpu().numpy() - ref) <= 1e-5 * scale).all()
    # against the float32 originals the error is bf16 rounding's, about 2**-8 relative: the inputs were rounded
    assert np.abs(out.cpu().numpy() - a32.astype(np.float64) @ b32).max() > 1e-4


def test_entry_point_picks_the_pipelined_kernel_for_whole_16_byte_rows(rng):
    a, b = _inputs(rng, 20, 24, 16, True)
    assert tc_ready(a, b, np.zeros((20, 16), np.float32))
    assert not tc_ready(a[:, :20], b[:20], np.zeros((20, 16), np.float32))  # a's rows: 20 of 24 (strided)
    out = matmul_f16(a, b)
    _assert_product(out, a, b)


def test_entry_point_names_the_bad_argument():
    with pytest.raises(TypeError, match=r"argument 'b' must have dtype bfloat16, got float32"):
        matmul_bf16(np.zeros((2, 3), np.uint16), np.zeros((3, 4), np.float32))
    with pytest.raises(TypeError, match=r"argument 'a' must have dtype float16, got uint16"):
        matmul_f16(np.zeros((2, 3), np.uint16), np.zeros((3, 4), np.float16))
    with pytest.raises(ValueError, match=r"inner dimensions differ: 'a' is 2x3 and 'b' is 4x4"):
        matmul_bf16(np.zeros((2, 3), np.uint16), np.zeros((4, 4), np.uint16))
    with pytest.raises(ValueError, match=r"argument 'kernel' must be one of"):
        matmul_bf16(np.zeros((2, 8), np.uint16), np.zeros((8, 8), np.uint16), kernel="fast")
    with pytest.raises(ValueError, match=r"pipelined kernel needs k and w multiples of 8"):
        matmul_bf16(np.zeros((2, 3), np.uint16), np.zeros((3, 4), np.uint16), kernel="pipelined")


@pytest.mark.sim
def test_plain_kernel_in_another_tile_configuration(rng):
    """Warps of 16x32 and four n8 tiles per ldmatrix_x4_trans pair: the fragment indexing is not tied to one shape."""
    config = {"bm": 32, "bn": 64, "bk": 16, "warps_m": 2, "warps_n": 1}
    a, b = _inputs(rng, 40, 19, 70, False)
    out = matmul_bf16(a, b, kernel="plain", config=config)
    _assert_product(out, a, b)


def test_bad_configurations_are_refused():
    with pytest.raises(ValueError, match=r"bk = 24 must be a multiple of 16"):
        matmul_bf16_plain(**{**PLAIN_CONFIG, "bk": 24})
    with pytest.raises(ValueError, match=r"bk must be 32 or 64"):
        check_pipe_config(False, **{**PIPE_CONFIG, "bk": 16})
    with pytest.raises(ValueError, match=r"need 65536 bytes, more than 48 KiB"):
        check_pipe_config(False, **{**PIPE_CONFIG, "stages": 4})


def test_specs_are_in_the_library_and_translated_set():
    names = {s.name for s in all_specs()}
    assert {"matmul_bf16", "matmul_f16"} <= names
    assert SPECS["bf16"].signatures == ("void(uint16[:, ::1], uint16[:, ::1], float32[:, ::1])",)
    assert SPECS["f16"].signatures == ("void(float16[:, ::1], float16[:, ::1], float32[:, ::1])",)
    for spec in SPECS.values():
        assert all(spec.accepts(s) for s in (*spec.test_sizes, *spec.verify_sizes, *spec.bench_sizes))
        assert not spec.accepts({"h": 8, "k": 12, "w": 8})
    for dist in DISTRIBUTIONS:
        a, b, _ = SPECS["bf16"].make_case(SPECS["bf16"].test_sizes[0], np.random.default_rng(1), dist).args
        assert a.dtype == np.uint16 and np.count_nonzero(a) and np.count_nonzero(b)
        a, _, _ = SPECS["f16"].make_case(SPECS["f16"].test_sizes[0], np.random.default_rng(1), dist).args
        assert a.dtype == np.float16 and np.count_nonzero(a)


@pytest.mark.gpu
@pytest.mark.parametrize("f16", [False, True])
@pytest.mark.parametrize("out16", [False, True])
def test_hopper_kernel_matches_reference(f16, out16, cuda_torch, rng):
    """The wgmma + TMA kernel (GPU of compute capability 9.0 only), on a shape that no tile divides, against float64:
    fp32 output to fp32 accumulation's error, 16-bit output to one rounding of it."""
    torch = cuda_torch
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the Hopper kernel needs compute capability 9.0")
    from numba import cuda

    from numbakern.kernels.matmul_wgmma import DEFAULT_CONFIG, WgmmaMatmul

    dt = torch.float16 if f16 else torch.bfloat16
    g = torch.Generator(device="cuda").manual_seed(int(rng.integers(2**31)))
    a = torch.randn(1000, 1032, device="cuda", generator=g).to(dt)
    b = torch.randn(1032, 776, device="cuda", generator=g).to(dt)
    out = torch.full((1000, 776), float("nan"), device="cuda", dtype=dt if out16 else torch.float32)
    mm = WgmmaMatmul(**DEFAULT_CONFIG, f16=f16, out16=out16)
    bits = (lambda t: t.view(torch.uint16)) if not f16 else (lambda t: t)
    mm(cuda.as_cuda_array(bits(a)), cuda.as_cuda_array(bits(b)),
       cuda.as_cuda_array(out.view(torch.int32) if out16 else out))
    torch.cuda.synchronize()
    ref = a.double() @ b.double()
    scale = a.double().abs() @ b.double().abs()
    err = ((out.double() - ref).abs() / scale).max().item()
    assert err <= (2.0**-8 if out16 else 1e-5), err
    if not out16:  # the entry point picks this kernel for CUDA tensors on this device
        assert torch.equal(matmul_f16(a, b) if f16 else matmul_bf16(a, b), out)
