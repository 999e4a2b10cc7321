"""Every registered kernel with a workspace leaves it as it found it (zeros), so the next launch needs no memset:
the verification harness checks that arguments other than outputs are unchanged, and the user-facing functions
reuse one cached workspace."""

import numpy as np
import pytest

from numbakern import all_specs, mode

CASES = [(spec.name, size) for spec in all_specs() if spec.workspace for size in spec.test_sizes]


@pytest.mark.sim
@pytest.mark.parametrize("name, size", CASES, ids=[f"{n}-{'x'.join(map(str, s.values()))}" for n, s in CASES])
def test_workspace_is_zero_after_the_launch(name, size, rng):
    from numbakern import get

    assert mode.in_simulator()
    spec = get(name)
    case = spec.make_case(size, rng, "normal")
    args = case.fresh_args()
    cfg = case.launch
    spec.kernel[cfg.grid, cfg.block, 0, cfg.shared_bytes](*args)
    names = spec.arg_names()
    for i in spec.workspace:
        assert not np.asarray(args[i]).any(), f"{name}: workspace '{names[i]}' is not zero after the launch"


@pytest.mark.gpu
def test_a_buffer_is_reused_for_the_same_shape_and_made_again_for_another(cuda_torch):
    from numbakern.kernels import scratch

    torch = cuda_torch
    like = torch.zeros(4, device="cuda")
    first = scratch.buffer("test_buffer", (3, 5), np.float32, like)
    assert tuple(first.shape) == (3, 5) and first.dtype == torch.float32 and first.device == like.device
    assert scratch.buffer("test_buffer", (3, 5), np.float32, like) is first
    other = scratch.buffer("test_buffer", (5, 3), np.float32, like)
    assert tuple(other.shape) == (5, 3) and other is not first


@pytest.mark.sim
def test_a_buffer_in_the_simulator_is_a_host_array():
    from numbakern.kernels import scratch

    b = scratch.buffer("test_buffer", (2, 7), np.float32, None)
    assert isinstance(b, np.ndarray) and b.shape == (2, 7) and b.dtype == np.float32
