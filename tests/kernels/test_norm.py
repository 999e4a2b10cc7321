"""LayerNorm and RMSNorm forward (``numbakern.kernels.norm``) against float64 numpy and, independently, against
torch's CPU implementation; every configuration (a warp or a block per row, rows longer than the register cache),
the scalar path, argument errors; on a GPU, against ``F.layer_norm`` / ``F.rms_norm``."""

import numpy as np
import pytest

from numbakern.compare import compare
from numbakern.kernels import norm
from numbakern.kernels.rows import row_launch


def reference(x, w, b, eps, rms):
    x64 = np.asarray(x, np.float64)
    if rms:
        y = x64 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + eps) * np.asarray(w, np.float64)
    else:
        mean = x64.mean(axis=1, keepdims=True)
        y = (x64 - mean) / np.sqrt(x64.var(axis=1, keepdims=True) + eps) * np.asarray(w, np.float64)
    return y if b is None else y + np.asarray(b, np.float64)


def _ok(got, x, w, b, eps, rms):
    x64 = np.abs(np.asarray(x, np.float64))
    ms = (x64 * x64).mean(axis=1, keepdims=True) if rms else np.asarray(x, np.float64).var(axis=1, keepdims=True)
    scale = (x64 + x64.mean(axis=1, keepdims=True)) / np.sqrt(ms + eps) * np.abs(np.asarray(w, np.float64))
    if b is not None:
        scale = scale + np.abs(np.asarray(b, np.float64))
    result = compare(np.asarray(got), reference(x, w, b, eps, rms), scale=scale, rtol=1e-5, name="norm")
    assert result.ok, str(result)


def _params(rng, cols):
    return (rng.standard_normal(cols).astype(np.float32), rng.standard_normal(cols).astype(np.float32))


@pytest.mark.parametrize("rows, cols", [(1, 1), (3, 2), (4, 7), (9, 128), (5, 131), (2, 1000), (2, 2052), (1, 4100)])
def test_layer_norm_and_rms_norm(rows, cols, rng):
    x = (rng.standard_normal((rows, cols)) * 3 + 1).astype(np.float32)
    w, b = _params(rng, cols)
    _ok(norm.layer_norm(x, w, b), x, w, b, 1e-5, False)
    _ok(norm.rms_norm(x, w), x, w, None, 1e-6, True)
    _ok(norm.rms_norm(x, w, eps=1e-3, bias=b), x, w, b, 1e-3, True)


def test_matches_torch_cpu(rng):
    """torch's own CPU kernels as a second, independent reference (float32 against float32)."""
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    x = (rng.standard_normal((7, 300)) * 2 + 5).astype(np.float32)
    w, b = _params(rng, 300)
    tx, tw, tb = (torch.from_numpy(a) for a in (x, w, b))
    assert np.allclose(norm.layer_norm(x, w, b), F.layer_norm(tx, (300,), tw, tb, 1e-5).numpy(), rtol=2e-5,
                       atol=2e-5)
    assert np.allclose(norm.rms_norm(x, w, eps=1e-6), F.rms_norm(tx, (300,), tw, 1e-6).numpy(), rtol=2e-5,
                       atol=2e-5)


def test_mean_far_from_zero(rng):
    """The variance is taken around the mean (no E[x^2] - E[x]^2 cancellation): rows at 1e4 +- 1."""
    x = (rng.standard_normal((4, 512)) + 1e4).astype(np.float32)
    w, b = _params(rng, 512)
    _ok(norm.layer_norm(x, w, b), x, w, b, 1e-5, False)


@pytest.mark.parametrize("config, cols", [
    ({"nt": 64, "group": 32, "cache": 1}, 300),   # a warp per row: 128 in registers, the rest read again
    ({"nt": 64, "group": 4, "cache": 2}, 52),     # 4 lanes per row: 32 in registers
    ({"nt": 64, "group": 64, "cache": 1}, 1000),  # a block per row
])
@pytest.mark.parametrize("vec", [True, False])
@pytest.mark.parametrize("rms, bias", [(False, True), (True, False), (True, True)])
def test_rows_longer_than_the_register_cache(config, cols, vec, rms, bias, rng):
    rows = 3
    x = (rng.standard_normal((rows, cols)) * 2 - 1).astype(np.float32)
    w, b = _params(rng, cols)
    out = np.full((rows, cols), np.nan, np.float32)
    cfg = row_launch(config, rows)
    eps = np.float32(1e-5)
    norm.norm_rows(rms, bias, vec=vec, **config)[cfg.grid, cfg.block](x, w, b, out, eps)
    _ok(out, x, w, b if bias else None, float(eps), rms)


def test_unaligned_start_takes_the_scalar_path(rng):
    flat = rng.standard_normal(3 * 64 + 1).astype(np.float32)
    x = flat[1:].reshape(3, 64)
    assert x.ctypes.data % 16
    w, b = _params(rng, 64)
    _ok(norm.layer_norm(x, w, b), x, w, b, 1e-5, False)


def test_bad_arguments(rng):
    x = rng.random((3, 8), dtype=np.float32)
    w, b = _params(rng, 8)
    with pytest.raises(ValueError, match="argument 'weight' must have shape \\(8,\\)"):
        norm.layer_norm(x, w[:7], b)
    with pytest.raises(ValueError, match="argument 'bias' must have shape \\(8,\\)"):
        norm.layer_norm(x, w, np.ones(9, np.float32))
    with pytest.raises(TypeError, match="argument 'weight' must have dtype float32"):
        norm.rms_norm(x, w.astype(np.float64))
    with pytest.raises(ValueError, match="'eps' must be a non-negative number"):
        norm.rms_norm(x, w, eps=-1.0)
    with pytest.raises(ValueError, match="'bias' is required"):
        norm.layer_norm(x, w, None)


@pytest.mark.gpu
@pytest.mark.parametrize("rows, cols", [(65536, 1024), (20000, 256), (4096, 4096), (1024, 8192), (8, 65540)])
def test_against_torch_on_the_gpu(rows, cols, cuda_torch):
    torch = cuda_torch
    import torch.nn.functional as F

    x = torch.randn(rows, cols, device="cuda") * 2 + 1
    w, b = torch.randn(cols, device="cuda"), torch.randn(cols, device="cuda")
    for got, want in ((norm.layer_norm(x, w, b), F.layer_norm(x.double(), (cols,), w.double(), b.double(), 1e-5)),
                      (norm.rms_norm(x, w, eps=1e-6), F.rms_norm(x.double(), (cols,), w.double(), 1e-6))):
        scale = (x.double().abs() + 1) * w.double().abs() * 4 + b.double().abs()
        assert ((got.double() - want).abs() <= 1e-5 * scale).all()
