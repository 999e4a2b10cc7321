"""Sum and max reductions (``numbakern.kernels.reduce``): the user-facing functions against float64 numpy, the
scalar (unaligned) path, the last-block combine (deterministic whatever the block order, workspace left at zero),
NaN propagation, argument errors; on a GPU, against torch."""

import numpy as np
import pytest

from numbakern import mode
from numbakern.compare import compare
from numbakern.kernels import reduce as rd


def _sum_ok(got, x, axis):
    x64 = np.asarray(x, np.float64)
    want = x64.sum() if axis is None else x64.sum(axis=1)
    scale = np.abs(x64).sum() if axis is None else np.abs(x64).sum(axis=1)
    result = compare(np.asarray(got).reshape(np.shape(want)), want, scale=scale, rtol=1e-5, name="sum")
    assert result.ok, str(result)


def _max_ok(got, x, axis):
    want = np.max(x) if axis is None else np.max(x, axis=1)
    assert np.array_equal(np.asarray(got).reshape(np.shape(want)), want)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 1023, 1029, 4101, 9001])
def test_whole_array(n, rng):
    x = rng.standard_normal(n).astype(np.float32)
    _sum_ok(rd.reduce_sum(x), x, None)
    _max_ok(rd.reduce_max(x), x, None)


@pytest.mark.parametrize("shape", [(3, 5), (2, 7, 9)])
def test_whole_array_of_any_shape(shape, rng):
    x = rng.random(shape, dtype=np.float32) - 0.5
    _sum_ok(rd.reduce_sum(x), x.ravel(), None)
    _max_ok(rd.reduce_max(x), x.ravel(), None)


@pytest.mark.parametrize("rows, cols", [(1, 1), (7, 3), (5, 4), (9, 33), (3, 1030), (2, 2051), (33, 129)])
def test_rows(rows, cols, rng):
    """Lanes of a warp per row up to 1024 columns, a block (several when rows are few) above; odd widths take
    scalar loads."""
    x = (rng.standard_normal((rows, cols)) * 10).astype(np.float32)
    _sum_ok(rd.reduce_sum(x, axis=-1), x, -1)
    _max_ok(rd.reduce_max(x, axis=1), x, -1)


def test_unaligned_start_takes_the_scalar_path(rng):
    base = rng.random(4001, dtype=np.float32)
    x = base[1:]  # 4 bytes past a 16-byte boundary: 16-byte loads would be misaligned
    assert x.ctypes.data % 16 != 0
    _sum_ok(rd.reduce_sum(x), x, None)
    _max_ok(rd.reduce_max(x), x, None)


@pytest.mark.parametrize("config", [{"nt": 64, "group": 64, "unroll": 1}, {"nt": 96, "group": 32, "unroll": 3},
                                    {"nt": 64, "group": 64, "unroll": 2}, {"nt": 64, "group": 8, "unroll": 2},
                                    {"nt": 32, "group": 1, "unroll": 1}])
@pytest.mark.parametrize("vec", [True, False])
def test_configs(config, vec, rng):
    rows, cols = (2, 1500) if config["group"] == config["nt"] else (7, 300)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    for is_max in (False, True):
        cfg = rd.reduce_launch({**config, "vec": vec}, rows, cols)
        out = np.full(rows, np.nan, np.float32)
        rd.reduce_rows(is_max, vec=vec, **config)[cfg.grid, cfg.block](x, out, *rd.workspace(rows, cfg.grid[1]))
        (_max_ok if is_max else _sum_ok)(out, x, -1)


@pytest.mark.sim
@pytest.mark.parametrize("is_max", [False, True])
def test_shared_rows_are_deterministic_and_leave_the_workspace_zero(is_max, rng):
    """The last block combines the partials in a fixed order: the same bits whichever block finishes last (the
    simulator's shuffled block order stands in for the GPU's timing), and the workspace ends as it started."""
    import numbakern.sim

    rows, cols = 2, 6000
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    config = {"nt": 64, "group": 64, "unroll": 2}
    cfg = rd.reduce_launch(config, rows, cols)
    assert cfg.grid[1] > 1  # rows really are shared
    results = []
    for seed in (None, 1, 2):
        out = np.full(rows, np.nan, np.float32)
        partials, counters = rd.workspace(rows, cfg.grid[1])
        kernel = rd.reduce_rows(is_max, **config)
        if seed is None:
            kernel[cfg.grid, cfg.block](x, out, partials, counters)
        else:
            with numbakern.sim.shuffled(seed):
                kernel[cfg.grid, cfg.block](x, out, partials, counters)
        assert not partials.any() and not counters.any(), "the last block must leave the workspace at zero"
        results.append(out)
    (_max_ok if is_max else _sum_ok)(results[0], x, -1)
    assert all(r.tobytes() == results[0].tobytes() for r in results[1:])


def test_max_propagates_nan(rng):
    x = rng.random(3000, dtype=np.float32)
    x[1234] = np.nan
    assert np.isnan(rd.reduce_max(x)[0])
    rows = rng.random((4, 40), dtype=np.float32)
    rows[2, 7] = np.nan
    got = rd.reduce_max(rows, axis=-1)
    assert np.isnan(got[2]) and not np.isnan(got[[0, 1, 3]]).any()


def test_empty():
    assert rd.reduce_sum(np.zeros(0, np.float32))[0] == 0
    assert rd.reduce_sum(np.zeros((3, 0), np.float32), axis=-1).tolist() == [0, 0, 0]
    with pytest.raises(ValueError, match="'x' has no elements"):
        rd.reduce_max(np.zeros(0, np.float32))


def test_out_is_written_and_returned(rng):
    x = rng.random((6, 20), dtype=np.float32)
    out = np.full(6, np.nan, np.float32)
    assert rd.reduce_sum(x, axis=-1, out=out) is out
    _sum_ok(out, x, -1)


def test_torch_cpu_tensors_in_torch_out():
    torch = pytest.importorskip("torch")
    if not mode.in_simulator():
        pytest.skip("CPU tensors are for the simulator")
    x = torch.randn(5, 300)
    got = rd.reduce_sum(x, axis=-1)
    assert isinstance(got, torch.Tensor) and got.shape == (5,)
    _sum_ok(got.numpy(), x.numpy(), -1)


def test_bad_arguments():
    x = np.ones((4, 8), np.float32)
    with pytest.raises(TypeError, match="argument 'x' must have dtype float32, got float64"):
        rd.reduce_sum(x.astype(np.float64))
    with pytest.raises(ValueError, match="axis must be None"):
        rd.reduce_sum(x, axis=0)
    with pytest.raises(ValueError, match="argument 'out' must have shape \\(4,\\)"):
        rd.reduce_sum(x, axis=-1, out=np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="C-contiguous"):
        rd.reduce_sum(x.T)
    with pytest.raises(ValueError, match="group must be a power of two up to 32"):
        rd.reduce_rows(False, nt=128, group=64)
    with pytest.raises(ValueError, match="nt must be a multiple of 32"):
        rd.reduce_rows(False, nt=100, group=100)


@pytest.mark.gpu
@pytest.mark.parametrize("shape, axis", [((1 << 24) + 3, None), ((4096, 4100), -1), ((100000, 132), -1),
                                         ((3, 3_000_001), -1)])
def test_against_torch_on_the_gpu(shape, axis, cuda_torch):
    torch = cuda_torch
    x = torch.randn(shape, device="cuda")
    dims = {} if axis is None else {"dim": axis}
    s = rd.reduce_sum(x, axis=axis)
    want = torch.sum(x.double(), **dims)
    scale = torch.sum(x.double().abs(), **dims)
    assert ((s.double().reshape(want.shape) - want).abs() <= 1e-5 * scale).all()
    m = rd.reduce_max(x, axis=axis)
    assert torch.equal(m.reshape(torch.amax(x, **dims).shape), torch.amax(x, **dims))
    # deterministic: the same bits again (the last block combines the partials in a fixed order)
    assert torch.equal(rd.reduce_sum(x, axis=axis), s)
