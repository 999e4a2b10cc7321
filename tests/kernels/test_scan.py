"""Inclusive scan (``numbakern.kernels.scan``): against float64 ``np.cumsum``, the look-back through aggregates and
over several windows (tile states prepared as if earlier blocks were still running), any block order, the
workspace left at zero, the scalar path, argument errors; on a GPU, against ``torch.cumsum``."""

import numpy as np
import pytest

from numbakern.compare import compare
from numbakern.kernels import scan

SMALL = {"nt": 32, "rounds": 1}  # 128-element tiles: many tiles from few elements


def _ok(got, x, what="scan"):
    x64 = np.asarray(x, np.float64)
    result = compare(np.asarray(got), np.cumsum(x64), scale=np.cumsum(np.abs(x64)), rtol=1e-5, name=what)
    assert result.ok, str(result)


def _run(config, x, workspace=None, grid=None):
    n = x.shape[0]
    cfg = scan.scan_launch(config, n)
    flags, values, counters = workspace if workspace is not None else scan.workspace(cfg.grid[0])
    out = np.full(n, np.nan, np.float32)
    scan.inclusive_scan_tiles(**config)[grid or cfg.grid, cfg.block](x, out, flags, values, counters)
    return out, (flags, values, counters)


@pytest.mark.parametrize("n", [1, 2, 5, 127, 128, 129, 4097, 8192, 8193, 20011])
def test_inclusive_scan(n, rng):
    x = rng.standard_normal(n).astype(np.float32)
    _ok(scan.inclusive_scan(x), x)


@pytest.mark.parametrize("config", [SMALL, {"nt": 64, "rounds": 2}, {"nt": 128, "rounds": 8},
                                    {"nt": 32, "rounds": 4, "vec": False}])
def test_configs_leave_the_workspace_zero(config, rng):
    x = rng.random(3001, dtype=np.float32)
    out, (flags, values, counters) = _run(config, x)
    _ok(out, x)
    assert not flags.any() and not values.any() and not counters.any()


@pytest.mark.sim
def test_any_block_order(rng):
    """Tiles are handed out in the order blocks start, so any scheduling order gives the right prefix."""
    import numbakern.sim

    x = rng.standard_normal(2000).astype(np.float32)
    for seed in (1, 2, 3):
        with numbakern.sim.shuffled(seed):
            out, _ = _run(SMALL, x)
        _ok(out, x)


@pytest.mark.sim
@pytest.mark.parametrize("prefix_at", [0, 5, 36])
def test_look_back_through_aggregates(prefix_at, rng):
    """The simulator runs blocks one after the other, so every predecessor has published its inclusive prefix by
    the time a block looks back. Here the tile states are prepared as if tiles prefix_at+1 .. 36 had published only
    their aggregates (their blocks still busy looking back): the block that gets tile 37 must add those up, over
    two windows of 32 tiles when prefix_at is small, until it meets the inclusive prefix of tile prefix_at."""
    tile = scan.tile_elements(SMALL)
    first, tiles = 37, 40
    x = rng.standard_normal(tiles * tile).astype(np.float32)
    sums = x.astype(np.float64).reshape(tiles, tile).sum(axis=1)
    flags, values, counters = scan.workspace(tiles)
    flags[:first] = scan.AGGREGATE
    values[0, :first] = sums[:first]
    flags[prefix_at] = scan.PREFIX
    values[1, prefix_at] = sums[:prefix_at + 1].sum()
    counters[0] = first  # the next block takes tile 37
    out, _ = _run(SMALL, x, (flags, values, counters), grid=(tiles - first, 1, 1))
    start = first * tile
    result = compare(out[start:], np.cumsum(x.astype(np.float64))[start:],
                     scale=np.cumsum(np.abs(x.astype(np.float64)))[start:], rtol=1e-5, name="tiles 37..39")
    assert result.ok, str(result)
    assert (flags[first:] == scan.PREFIX).all()


def test_unaligned_input_takes_the_scalar_path(rng):
    flat = rng.standard_normal(1001).astype(np.float32)
    x = flat[1:]
    assert x.ctypes.data % 16
    _ok(scan.inclusive_scan(x), x)


def test_out_and_errors(rng):
    x = rng.random(100, dtype=np.float32)
    out = np.empty_like(x)
    assert scan.inclusive_scan(x, out=out) is out
    _ok(out, x)
    assert scan.inclusive_scan(np.zeros(0, np.float32)).shape == (0,)
    with pytest.raises(ValueError, match="'x' must be 1-D"):
        scan.inclusive_scan(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="argument 'out' must have shape"):
        scan.inclusive_scan(x, out=np.empty(99, np.float32))
    with pytest.raises(ValueError, match="segments per tile"):
        scan.inclusive_scan_tiles(nt=96, rounds=12)


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 8191, (1 << 24) + 5, 1 << 26])
def test_against_torch_on_the_gpu(n, cuda_torch):
    torch = cuda_torch
    x = torch.randn(n, device="cuda")
    want = torch.cumsum(x.double(), 0)
    scale = torch.cumsum(x.double().abs(), 0)
    # rounding accumulates along the chain of tile prefixes (4096 tiles at 2**26): a random walk of float32 roundings
    rtol = 1e-5 if n <= 1 << 24 else 3e-5
    for _ in range(3):  # repeated launches reuse the workspace the last block zeroed
        got = scan.inclusive_scan(x)
        assert ((got.double() - want).abs() <= rtol * scale).all()
