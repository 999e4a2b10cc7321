"""2-D convolutions (``numbakern.kernels.conv``): the image filter and the NCHW 3x3 against float64 numpy and,
independently, against torch's CPU ``F.conv2d``; sizes smaller than a tile and not multiples of it, every filter
size, channel counts that take the scalar weight path, argument errors; on a GPU, against cuDNN (TF32 off)."""

import numpy as np
import pytest

from numbakern.compare import compare
from numbakern.kernels import conv


def _image_ok(got, x, w):
    result = compare(np.asarray(got), conv.image_reference(x, w), scale=conv.image_reference(np.abs(x), np.abs(w)),
                     rtol=1e-5, name="conv2d image")
    assert result.ok, str(result)


def _nchw_ok(got, x, w, b):
    result = compare(np.asarray(got), conv.nchw_reference(x, w, b),
                     scale=conv.nchw_reference(np.abs(x), np.abs(w), np.abs(b)), rtol=1e-5, name="conv2d nchw")
    assert result.ok, str(result)


@pytest.mark.parametrize("size", [1, 3, 5, 7])
@pytest.mark.parametrize("h, w", [(1, 1), (5, 3), (70, 45), (9, 100)])
def test_image_filter(size, h, w, rng):
    x = rng.standard_normal((h, w)).astype(np.float32)
    f = rng.standard_normal((size, size)).astype(np.float32)
    _image_ok(conv.conv2d(x, f), x, f)


@pytest.mark.parametrize("c, k, rows", [(1, 1, 4), (3, 5, 2), (4, 8, 4), (2, 4, 3)])
def test_nchw(c, k, rows, rng):
    n, h, w = 2, 11, 30
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    f = (rng.standard_normal((k, c, 3, 3)) / 3).astype(np.float32)
    b = rng.standard_normal(k).astype(np.float32)
    out = np.full((n, k, h, w), np.nan, np.float32)
    cfg = conv.nchw_launch({"rows": rows}, n, h, w)
    conv.conv2d_nchw(c, k, rows)[cfg.grid, cfg.block](x, f, b, out)
    _nchw_ok(out, x, f, b)


def test_nchw_without_bias_and_tiny(rng):
    x = rng.standard_normal((1, 2, 1, 2)).astype(np.float32)
    f = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    _nchw_ok(conv.conv2d(x, f), x, f, np.zeros(3, np.float32))


def test_matches_torch_cpu(rng):
    """torch's CPU convolution as a second, independent reference."""
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    x = rng.standard_normal((40, 50)).astype(np.float32)
    f = rng.standard_normal((5, 5)).astype(np.float32)
    want = F.conv2d(torch.from_numpy(x)[None, None], torch.from_numpy(f)[None, None], padding=2)[0, 0].numpy()
    assert np.allclose(conv.conv2d(x, f), want, rtol=1e-5, atol=1e-5)
    xb = rng.standard_normal((1, 3, 20, 33)).astype(np.float32)
    fb = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    bb = rng.standard_normal(4).astype(np.float32)
    want = F.conv2d(torch.from_numpy(xb), torch.from_numpy(fb), torch.from_numpy(bb), padding=1).numpy()
    assert np.allclose(conv.conv2d(xb, fb, bb), want, rtol=1e-5, atol=1e-5)


def test_bad_arguments(rng):
    x = rng.random((8, 8), dtype=np.float32)
    with pytest.raises(ValueError, match="s x s filter with s odd"):
        conv.conv2d(x, np.ones((2, 2), np.float32))
    with pytest.raises(ValueError, match="takes no bias"):
        conv.conv2d(x, np.ones((3, 3), np.float32), np.ones(1, np.float32))
    xb = rng.random((1, 3, 8, 8), dtype=np.float32)
    with pytest.raises(ValueError, match="'w' must have shape \\(k, 3, 3, 3\\)"):
        conv.conv2d(xb, np.ones((2, 4, 3, 3), np.float32))
    with pytest.raises(ValueError, match="argument 'b' must have shape \\(2,\\)"):
        conv.conv2d(xb, np.ones((2, 3, 3, 3), np.float32), np.ones(3, np.float32))
    with pytest.raises(ValueError, match="must be 2-D \\(h, w\\) or 4-D"):
        conv.conv2d(np.ones(5, np.float32), np.ones((3, 3), np.float32))
    with pytest.raises(ValueError, match="radius must be an int from 0 to 7"):
        conv.conv2d_image(8)


@pytest.mark.gpu
def test_against_cudnn_on_the_gpu(cuda_torch):
    torch = cuda_torch
    import torch.nn.functional as F

    x = torch.randn(4097, 3001, device="cuda")
    for size in (3, 5):
        f = torch.randn(size, size, device="cuda")
        want = F.conv2d(x.double()[None, None], f.double()[None, None], padding=size // 2)[0, 0]
        scale = F.conv2d(x.double().abs()[None, None], f.double().abs()[None, None], padding=size // 2)[0, 0]
        assert ((conv.conv2d(x, f).double() - want).abs() <= 1e-5 * scale).all()
    xb = torch.randn(5, 4, 255, 257, device="cuda")
    fb = torch.randn(8, 4, 3, 3, device="cuda")
    bb = torch.randn(8, device="cuda")
    want = F.conv2d(xb.double(), fb.double(), bb.double(), padding=1)
    scale = F.conv2d(xb.double().abs(), fb.double().abs(), bb.double().abs(), padding=1)
    assert ((conv.conv2d(xb, fb, bb).double() - want).abs() <= 1e-5 * scale).all()
