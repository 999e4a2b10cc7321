"""bf16 and fp16 data through the launch helpers: torch bfloat16/float16 tensors, numpy float16, and bf16 on the
host without torch (uint16 bit patterns, or ml_dtypes.bfloat16 where installed), validated with the argument
named, handed to kernels as numba-cuda can type them (float16 arrays; bf16 as uint16 bit patterns)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from numba import cuda

from numbakern import check_array, dynamic_shared_bytes, mode, to_kernel_arg
from numbakern.launch import BFLOAT16, as_numpy_dtype, empty_like_on
from numbakern.mma import bf16_to_f32, f16_to_f32, formats


def _where_launches_run(t: torch.Tensor) -> torch.Tensor:
    """``t`` where this session's launches take tensors: on the host in the simulator, on the GPU with one."""
    return t if mode.in_simulator() else t.cuda()


@pytest.mark.parametrize("spelling", [torch.bfloat16, "bfloat16", "bf16"])
def test_bf16_in_any_spelling_is_one_dtype(spelling):
    assert as_numpy_dtype(spelling) == BFLOAT16 and dynamic_shared_bytes(spelling, 8, 8) == 32


def test_torch_bf16_tensor_becomes_its_bit_patterns(rng):
    x = torch.from_numpy(rng.standard_normal((5, 7)).astype(np.float32)).to(torch.bfloat16)
    info = check_array("a", _where_launches_run(x), dtype=torch.bfloat16, ndim=2)
    assert info.dtype == BFLOAT16
    bits = to_kernel_arg(x)
    assert bits.dtype == np.uint16 and bits.shape == (5, 7)
    # the same bits torch holds: bf16 -> float32 through the bits equals torch's own conversion
    np.testing.assert_array_equal(formats.bf16_bits_to_f32(bits), x.float().numpy())
    bits[0, 0] = formats.f32_to_bf16_bits(np.float32(3.0))  # a view, not a copy: the kernel writes land in x
    assert x[0, 0].item() == 3.0


def test_uint16_bit_patterns_are_bf16_where_bf16_is_asked_for(rng):
    bits = formats.f32_to_bf16_bits(rng.standard_normal(9).astype(np.float32))
    assert check_array("b", bits, dtype="bfloat16").dtype == np.uint16
    assert to_kernel_arg(bits) is bits


def test_ml_dtypes_bfloat16_array_if_installed(rng):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = rng.standard_normal(6).astype(ml_dtypes.bfloat16)
    assert check_array("x", x, dtype=BFLOAT16).dtype == BFLOAT16
    np.testing.assert_array_equal(formats.bf16_bits_to_f32(to_kernel_arg(x)), x.astype(np.float32))


def test_wrong_dtype_names_the_argument_and_says_how_to_pass_bf16(rng):
    with pytest.raises(TypeError, match=r"argument 'a' must have dtype bfloat16, got float32 \(bf16 data: a "
                                        r"torch.bfloat16 tensor, an ml_dtypes.bfloat16 array or a uint16 array"):
        check_array("a", np.ones(3, np.float32), dtype=torch.bfloat16)
    with pytest.raises(TypeError, match=r"argument 'w' must have dtype float16, got bfloat16$"):
        check_array("w", torch.ones(3, dtype=torch.bfloat16), dtype=np.float16)


def test_float16_tensors_and_arrays_pass_as_float16(rng):
    x = torch.from_numpy(rng.standard_normal(8).astype(np.float16))
    assert check_array("x", _where_launches_run(x), dtype=np.float16).dtype == np.float16
    assert to_kernel_arg(x).dtype == np.float16


def test_empty_outputs_of_bf16(rng):
    like = torch.ones(2, dtype=torch.bfloat16)
    assert empty_like_on(like, (3, 4), BFLOAT16).dtype == torch.bfloat16
    assert empty_like_on(np.ones(2, np.uint16), (3,), BFLOAT16).dtype == np.uint16


@cuda.jit
def widen_through_shared(h, bf, out):
    """float16 and bf16 (bits) data staged in shared arrays of their own types, then converted to float32."""
    i = cuda.threadIdx.x
    hs = cuda.shared.array(32, dtype=np.float16)
    bs = cuda.shared.array(32, dtype=np.uint16)
    if i < h.shape[0]:
        hs[i] = h[i]
        bs[i] = bf[i]
    cuda.syncthreads()
    if i < h.shape[0]:
        out[i, 0] = np.float32(hs[i])
        out[i, 1] = bf16_to_f32(bs[i])
        out[i, 2] = f16_to_f32(np.uint16(7))


@pytest.mark.sim
def test_half_precision_data_in_shared_memory(rng):
    h = torch.from_numpy(rng.standard_normal(29).astype(np.float16))
    bf = torch.from_numpy(rng.standard_normal(29).astype(np.float32)).to(torch.bfloat16)
    out = np.zeros((29, 3), np.float32)
    widen_through_shared[1, 32](to_kernel_arg(h), to_kernel_arg(bf), out)
    np.testing.assert_array_equal(out[:, 0], h.numpy().astype(np.float32))
    np.testing.assert_array_equal(out[:, 1], bf.float().numpy())
    assert out[0, 2] == np.float32(np.uint16(7).view(np.float16))  # a subnormal half, exactly
