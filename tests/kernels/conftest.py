"""Fixtures for the library kernels' tests: a fresh random generator whose seed is printed (pytest shows it with
a failure's captured output), and torch's CUDA device for the GPU-only comparisons."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def rng():
    seed = int(np.random.SeedSequence().entropy % 2**32)
    print(f"random seed: {seed} (np.random.default_rng({seed}))")
    return np.random.default_rng(seed)


@pytest.fixture
def cuda_torch():
    """torch, for tests marked gpu (they run only with ``pytest --gpu``)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    return torch
