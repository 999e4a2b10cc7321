"""Histogram with ``torch.histc`` semantics (``numbakern.kernels.histogram``): the reference rule checked against
torch itself on edge values, the kernel against it (edge bins, NaN, out-of-range elements, one bin, many bins,
the scalar path), argument errors; on a GPU, against ``torch.histc`` on the device."""

import numpy as np
import pytest

from numbakern.kernels import histogram as hg


def _edge_data(rng, n, bins, lo, hi):
    """Random values around [lo, hi], with the bin edges, their float32 neighbours, lo, hi and NaN planted."""
    lo, hi = np.float32(lo), np.float32(hi)
    x = (lo + (rng.random(n) * 1.2 - 0.1) * (hi - lo)).astype(np.float32)
    edges = (lo + np.arange(bins + 1, dtype=np.float32) * ((hi - lo) / np.float32(bins))).astype(np.float32)
    special = np.concatenate([edges, np.nextafter(edges, np.float32(-np.inf)), np.nextafter(edges, np.float32(np.inf)),
                              [np.nan, np.inf, -np.inf]]).astype(np.float32)
    k = min(n // 3, special.size)
    x[rng.choice(n, size=k, replace=False)] = special[:k]
    return x


@pytest.mark.parametrize("bins, lo, hi", [(1, 0.0, 1.0), (7, -1.5, 2.25), (100, 0.1, 0.7), (256, -3.0, 3.0),
                                          (1000, 1e-3, 1e3)])
def test_reference_rule_is_torch_histc(bins, lo, hi, rng):
    """``torch_bins`` (the registry's reference) gives torch.histc's counts, edge values included."""
    torch = pytest.importorskip("torch")
    x = _edge_data(rng, 20000, bins, lo, hi)
    want = torch.histc(torch.from_numpy(x), bins, lo, hi).numpy().astype(np.int64)
    assert np.array_equal(hg.torch_bins(x, bins, np.float32(lo), np.float32(hi)), want)


@pytest.mark.parametrize("n, bins, lo, hi", [(1, 1, 0.0, 1.0), (5, 3, -1.0, 1.0), (1001, 7, -1.5, 2.25),
                                             (5003, 256, -3.0, 3.0), (3001, 3000, 0.0, 1.0)])
def test_histc(n, bins, lo, hi, rng):
    x = _edge_data(rng, n, bins, lo, hi)
    got = hg.histc(x, bins, lo, hi)
    assert got.dtype == np.int32
    assert np.array_equal(got, hg.torch_bins(x, bins, np.float32(lo), np.float32(hi)))


def test_any_shape_and_nothing_in_range(rng):
    x = rng.random((7, 9), dtype=np.float32)
    assert np.array_equal(hg.histc(x, 10, 0.0, 1.0), hg.torch_bins(x.ravel(), 10, np.float32(0), np.float32(1)))
    assert not hg.histc(x, 10, 5.0, 6.0).any()


@pytest.mark.parametrize("config", [{"nt": 64, "copies": 1, "unroll": 1}, {"nt": 128, "copies": 4, "unroll": 3},
                                    {"nt": 64, "copies": 2, "unroll": 2, "vec": False}])
def test_configs_add_to_the_counts(config, rng):
    n, bins = 3001, 37
    x = _edge_data(rng, n, bins, -2.0, 2.0)
    counts = rng.integers(0, 50, bins).astype(np.int32)
    before = counts.copy()
    cfg = hg.histogram_launch(config, n, bins)
    hg.histogram_counts(**config)[cfg.grid, cfg.block, 0, cfg.shared_bytes](x, counts, np.float32(-2),
                                                                            np.float32(2))
    assert np.array_equal(counts, before + hg.torch_bins(x, bins, np.float32(-2), np.float32(2)))


def test_unaligned_input_takes_the_scalar_path(rng):
    flat = _edge_data(rng, 2002, 16, 0.0, 1.0)
    x = flat[1:]
    assert x.ctypes.data % 16
    assert np.array_equal(hg.histc(x, 16, 0.0, 1.0), hg.torch_bins(x, 16, np.float32(0), np.float32(1)))


def test_out_is_overwritten(rng):
    x = rng.random(500, dtype=np.float32)
    out = np.full(8, 77, np.int32)
    assert hg.histc(x, 8, 0.0, 1.0, out=out) is out
    assert np.array_equal(out, hg.torch_bins(x, 8, np.float32(0), np.float32(1)))


def test_bad_arguments(rng):
    x = rng.random(10, dtype=np.float32)
    with pytest.raises(ValueError, match="'lo' and 'hi' must be finite float32 values with lo < hi"):
        hg.histc(x, 10, 1.0, 1.0)
    with pytest.raises(ValueError, match="'bins' must be an int from 1"):
        hg.histc(x, 0, 0.0, 1.0)
    with pytest.raises(ValueError, match="'bins' must be an int from 1"):
        hg.histc(x, hg.max_bins(1) + 1, 0.0, 1.0)
    with pytest.raises(TypeError, match="argument 'x' must have dtype float32"):
        hg.histc(x.astype(np.float64), 10, 0.0, 1.0)
    with pytest.raises(ValueError, match="'out' must have shape \\(10,\\)"):
        hg.histc(x, 10, 0.0, 1.0, out=np.zeros(9, np.int32))
    with pytest.raises(ValueError, match="copies must divide"):
        hg.histogram_counts(nt=64, copies=3)


@pytest.mark.gpu
@pytest.mark.parametrize("n, bins", [(1, 1), (1 << 24, 256), ((1 << 22) + 3, 4096), (1 << 20, 12000)])
def test_against_torch_on_the_gpu(n, bins, cuda_torch, rng):
    torch = cuda_torch
    x = torch.from_numpy(_edge_data(rng, n, bins, -2.0, 3.0)).cuda()
    got = hg.histc(x, bins, -2.0, 3.0)
    want = torch.histc(x, bins, -2.0, 3.0)
    assert torch.equal(got.long(), want.long())
