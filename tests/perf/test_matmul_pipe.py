"""``matmul_pipelined`` (cp.async pipeline, unrolled k-steps; A transposed by 4-byte copies, or given transposed
with ``a_t``) against a float64 product, in the simulator with every checker on (pipelines of 2 and 3 stages,
grouped block order, tiles that no shape divides) and on a GPU with ``pytest --gpu``."""

import numpy as np
import pytest
from numba import cuda

from numbakern import mode
from numbakern.compare import compare
from numbakern.kernels import matmul_pipe as mp

SMALL_CONFIGS = [
    mp.SIM_PIPE_CONFIG,
    {**mp.SIM_PIPE_CONFIG, "stages": 3, "group": 2},
    {"bm": 32, "bn": 32, "bk": 16, "tm": 4, "tn": 4, "stages": 2, "group": 3},
    mp.SIM_AT_CONFIG,
    {"bm": 32, "bn": 32, "bk": 16, "tm": 4, "tn": 8, "stages": 3, "group": 2, "a_t": True},
]
#: w a multiple of 4 (the precondition); h and k anything, none a multiple of the tiles (h rounded up to a multiple
#: of 4 for the kernel on A^T)
SHAPES = [(33, 21, 44), (1, 1, 4), (70, 45, 12), (5, 100, 36)]


def _run(config, m, n):
    out = np.full((m.shape[0], n.shape[1]), np.nan, np.float32)
    cfg = mp.pipe_launch(config, m.shape[0], n.shape[1])
    kernel = mp.matmul_pipelined(**config)
    if config.get("a_t"):
        m = np.ascontiguousarray(m.T)
    if mode.in_simulator():
        kernel[cfg.grid, cfg.block](m, n, out)
        return out
    d = [cuda.to_device(x) for x in (m, n, out)]
    kernel[cfg.grid, cfg.block](*d)
    return d[2].copy_to_host()


@pytest.mark.parametrize("config", SMALL_CONFIGS, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_pipelined_matches_float64(config, shape):
    if not mode.in_simulator() and config is not mp.SIM_PIPE_CONFIG:
        pytest.skip("the small configs are for the simulator")
    seed = int(np.random.SeedSequence().entropy % 2**32)
    rng = np.random.default_rng(seed)
    h, k, w = shape
    if config.get("a_t"):
        h += -h % 4
    m = rng.standard_normal((h, k)).astype(np.float32)
    n = rng.standard_normal((k, w)).astype(np.float32)
    out = _run(config, m, n)
    ref = m.astype(np.float64) @ n.astype(np.float64)
    scale = np.abs(m.astype(np.float64)) @ np.abs(n.astype(np.float64))
    result = compare(out, ref, scale=scale, rtol=1e-5, atol=0.0, name=f"matmul_pipelined seed {seed}")
    assert result.ok, str(result)


@pytest.mark.gpu
@pytest.mark.parametrize("config", mp.PIPE_CONFIGS + mp.AT_CONFIGS,
                         ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
def test_every_candidate_on_the_gpu(config):
    seed = int(np.random.SeedSequence().entropy % 2**32)
    rng = np.random.default_rng(seed)
    for h, k, w in [(508 if config.get("a_t") else 509, 263, 384), (256, 256, 256), (4 if config.get("a_t") else 7,
                                                                                       1021, 4)]:
        m = rng.standard_normal((h, k)).astype(np.float32)
        n = rng.standard_normal((k, w)).astype(np.float32)
        out = _run(config, m, n)
        ref = m.astype(np.float64) @ n.astype(np.float64)
        scale = np.abs(m.astype(np.float64)) @ np.abs(n.astype(np.float64))
        result = compare(out, ref, scale=scale, rtol=1e-5, atol=0.0, name=f"seed {seed} {h}x{k}x{w}")
        assert result.ok, str(result)


def test_pipe_ready():
    a = np.zeros((5, 7), np.float32)  # A: any shape (copied 4 bytes at a time)
    assert mp.pipe_ready(a, np.zeros((7, 12), np.float32), np.zeros((5, 12), np.float32))
    assert not mp.pipe_ready(a, np.zeros((7, 10), np.float32), np.zeros((5, 10), np.float32))
    # the transposed-A kernel: h a multiple of 4 as well
    assert not mp.at_ready(a, np.zeros((7, 12), np.float32), np.zeros((5, 12), np.float32))
    a4 = np.zeros((8, 7), np.float32)
    assert mp.at_ready(a4, np.zeros((7, 12), np.float32), np.zeros((8, 12), np.float32))


@pytest.mark.parametrize("bad, match", [
    ({"bm": 128, "bn": 128, "bk": 16, "tm": 8, "tn": 8, "stages": 1}, "at least 2"),
    ({"bm": 128, "bn": 128, "bk": 16, "tm": 8, "tn": 8, "stages": 3}, "48 KiB"),
    ({"bm": 128, "bn": 128, "bk": 16, "tm": 8, "tn": 8, "stages": True}, "positive int"),
    ({"bm": 128, "bn": 128, "bk": 16, "tm": 8, "tn": 8, "group": 0}, "positive int"),
    ({"bm": 128, "bn": 128, "bk": 16, "tm": 8, "tn": 8, "a_t": 1}, "True or False"),
    ({"bm": 128, "bn": 128, "bk": 16, "tm": 8, "tn": 8, "stages": 4, "a_t": True}, "48 KiB"),
])
def test_config_validation(bad, match):
    with pytest.raises(ValueError, match=match):
        mp.pipe_threads(bad)


def test_every_candidate_is_valid():
    for config in (*mp.PIPE_CONFIGS, *mp.AT_CONFIGS, mp.SIM_PIPE_CONFIG, *SMALL_CONFIGS):
        assert mp.pipe_threads(config) % 32 == 0


@pytest.mark.sim
def test_matmul_fast_runs_the_pipelined_kernel_where_it_may(rng):
    from numbakern.kernels import matmul_fast as mf

    m, n = rng.standard_normal((21, 13)).astype(np.float32), rng.standard_normal((13, 20)).astype(np.float32)
    out = np.empty((21, 20), np.float32)
    assert mf.ready_autotuner.select(m, n, out)["kernel"] == "pipelined"
    assert mp.pipe_ready(m, n, out) and not mf.vec_ready(m, n, out)  # k = 13: only the pipelined kernel
    for config in (None, {"kernel": "pipelined", **mp.SIM_PIPE_CONFIG}):
        got = mf.matmul_fast(m, n, config=config)
        np.testing.assert_allclose(got, m.astype(np.float64) @ n.astype(np.float64), rtol=1e-4, atol=1e-4)
    n2 = rng.standard_normal((13, 18)).astype(np.float32)  # w = 18: neither 16-byte kernel
    with pytest.raises(ValueError, match="names the pipelined kernel"):
        mf.matmul_fast(m, n2, config={"kernel": "pipelined", **mp.SIM_PIPE_CONFIG})
    with pytest.raises(ValueError, match="'kernel' must be one of 'pipelined', 'transposed', 'flagship'"):
        mf.matmul_fast(m, n, config={"kernel": "cublas", **mp.SIM_PIPE_CONFIG})
    with pytest.raises(ValueError, match="names the transposed kernel"):  # h = 21: not a multiple of 4
        mf.matmul_fast(m, n, config={"kernel": "transposed", **mp.SIM_AT_CONFIG})


@pytest.mark.sim
def test_matmul_fast_runs_the_transposed_kernel(rng):
    """``kernel="transposed"``: numbakern's transpose of A into a scratch A^T, then the kernel on A^T."""
    from numbakern.kernels import matmul_fast as mf

    m = rng.standard_normal((36, 13)).astype(np.float32)  # h % 4 == 0, k = 13 free
    n = rng.standard_normal((13, 20)).astype(np.float32)
    out = np.empty((36, 20), np.float32)
    assert mf.fast_autotuner(m, n, out) is mf.pipe_at_autotuner
    got = mf.matmul_fast(m, n, config={"kernel": "transposed", **mp.SIM_AT_CONFIG})
    np.testing.assert_allclose(got, m.astype(np.float64) @ n.astype(np.float64), rtol=1e-4, atol=1e-4)
