"""The flagship matmul and the numbakern-way tiled kernel against a float64 reference, in the simulator (and on a
GPU with ``pytest --gpu``), on shapes that no tile size divides."""

import numpy as np
import pytest

from numbakern import mode
from numbakern.compare import compare
from numbakern.kernels import matmul_fast as mf
from numbakern.registry import run_case

#: small configs (the simulator is slow): 2x2 and 2x4 register tiles, tiles that none of the shapes divide
SMALL_CONFIGS = [mf.SIM_CONFIG, {"bm": 8, "bn": 16, "bk": 2, "tm": 2, "tn": 4}]
SHAPES = [(33, 70, 45), (1, 1, 1), (9, 3, 17), (16, 16, 16)]


def _check(out, m, n):
    ref = m.astype(np.float64) @ n.astype(np.float64)
    scale = np.abs(m.astype(np.float64)) @ np.abs(n.astype(np.float64))
    result = compare(out, ref, scale=scale, rtol=1e-5, atol=0.0, name="flagship")
    assert result.ok, str(result)


def _inputs(rng, h, k, w):
    return rng.standard_normal((h, k)).astype(np.float32), rng.standard_normal((k, w)).astype(np.float32)


@pytest.mark.parametrize("config", SMALL_CONFIGS, ids=lambda c: "{bm}x{bn}x{bk}-{tm}x{tn}".format(**c))
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_flagship_matches_float64(config, shape, rng):
    if not mode.in_simulator() and config is not mf.SIM_CONFIG:
        pytest.skip("the small configs are for the simulator")
    m, n = _inputs(rng, *shape)
    out = np.full((shape[0], shape[2]), np.nan, dtype=np.float32)
    cfg = mf.flagship_launch(config, shape[0], shape[2])
    if mode.in_simulator():
        mf.matmul_flagship(**config)[cfg.grid, cfg.block](m, n, out)
    else:
        from numba import cuda

        d = [cuda.to_device(x) for x in (m, n, out)]
        mf.matmul_flagship(**config)[cfg.grid, cfg.block](*d)
        out = d[2].copy_to_host()
    _check(out, m, n)


#: small vec=True configs: 16-byte groups, with and without grouped block order
SMALL_VEC_CONFIGS = [mf.SIM_VEC_CONFIG, {**mf.SIM_VEC_CONFIG, "group": 2}, {**mf.SIM_CONFIG, "group": 3}]
#: k and w multiples of 4 (vec's precondition), h and the rest non-multiples of every tile size
VEC_SHAPES = [(33, 20, 44), (1, 4, 4), (70, 12, 36), (9, 44, 4)]


@pytest.mark.parametrize("config", SMALL_VEC_CONFIGS, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
@pytest.mark.parametrize("shape", VEC_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_flagship_vec_and_grouped_order_match_float64(config, shape, rng):
    if not mode.in_simulator() and config is not mf.SIM_VEC_CONFIG:
        pytest.skip("the small configs are for the simulator")
    m, n = _inputs(rng, *shape)
    out = np.full((shape[0], shape[2]), np.nan, dtype=np.float32)
    cfg = mf.flagship_launch(config, shape[0], shape[2])
    if mode.in_simulator():
        mf.matmul_flagship(**config)[cfg.grid, cfg.block](m, n, out)
    else:
        from numba import cuda

        d = [cuda.to_device(x) for x in (m, n, out)]
        mf.matmul_flagship(**config)[cfg.grid, cfg.block](*d)
        out = d[2].copy_to_host()
    _check(out, m, n)


@pytest.mark.sim
def test_flagship_vec_on_a_row_length_not_multiple_of_4_is_caught_by_the_simulator(rng):
    from numbakern.sim import MisalignedAccessError, OutOfBoundsError

    m, n = _inputs(rng, 8, 6, 8)
    out = np.zeros((8, 8), np.float32)
    cfg = mf.flagship_launch(mf.SIM_VEC_CONFIG, 8, 8)
    # k = 6: the group at column 4 runs past the row's end, the one starting row 1 is misaligned: whichever
    # thread gets there first, the launch fails instead of reading a neighbour's elements
    with pytest.raises((MisalignedAccessError, OutOfBoundsError)):
        mf.matmul_flagship(**mf.SIM_VEC_CONFIG)[cfg.grid, cfg.block](m, n, out)


def test_vec_ready():
    a = np.zeros((5, 8), np.float32)
    assert mf.vec_ready(a, np.zeros((8, 12), np.float32))
    assert not mf.vec_ready(a, np.zeros((8, 10), np.float32))  # a row of 10 floats
    buf = np.zeros(64, np.float32)
    assert not mf.vec_ready(buf[1:33].reshape(4, 8))  # data pointer 4 bytes past an aligned one
    assert not mf.vec_ready(np.zeros((8, 8), np.float32)[:, :4])  # not contiguous
    assert not mf.vec_ready(np.zeros((8, 8), np.float64))


@pytest.mark.sim
def test_matmul_fast_picks_vec_only_when_ready(rng):
    m, n = _inputs(rng, 21, 12, 20)
    assert mf.vec_autotuner.select(m, n, np.empty((21, 20), np.float32)) == mf.SIM_VEC_CONFIG
    _check(mf.matmul_fast(m, n), m, n)
    m2, n2 = _inputs(rng, 21, 13, 20)
    _check(mf.matmul_fast(m2, n2), m2, n2)  # k = 13: the scalar kernel
    with pytest.raises(ValueError, match="config has vec=True, but the matrices are not 16-byte ready"):
        mf.matmul_fast(m2, n2, config=mf.SIM_VEC_CONFIG)


@pytest.mark.sim
def test_matmul_fast_api_uses_default_config_in_simulator(rng):
    m, n = _inputs(rng, 21, 13, 19)
    out = mf.matmul_fast(m, n)
    assert out.shape == (21, 19) and out.dtype == np.float32
    _check(out, m, n)
    # an explicit config, and an explicit out
    out2 = np.full((21, 19), np.nan, dtype=np.float32)
    assert mf.matmul_fast(m, n, out2, config=SMALL_CONFIGS[1]) is out2
    _check(out2, m, n)


def test_matmul_fast_rejects_bad_arguments(rng):
    m, n = _inputs(rng, 4, 5, 6)
    with pytest.raises(ValueError, match="inner dimensions differ"):
        mf.matmul_fast(m, n.T.copy())
    with pytest.raises(TypeError, match="argument 'a' must have dtype float32"):
        mf.matmul_fast(m.astype(np.float64), n)
    with pytest.raises(ValueError, match="argument 'out' must have shape"):
        mf.matmul_fast(m, n, np.empty((4, 5), np.float32))


@pytest.mark.parametrize("bad, match", [
    ({"bm": 128, "bn": 128, "bk": 8, "tm": 3, "tn": 8}, "must divide"),
    ({"bm": 96, "bn": 96, "bk": 8, "tm": 6, "tn": 6}, "1, 2, 3 or a multiple of 4"),
    ({"bm": 256, "bn": 256, "bk": 8, "tm": 4, "tn": 4}, "threads per block"),
    ({"bm": 128, "bn": 128, "bk": 64, "tm": 8, "tn": 8}, "48 KiB"),
    ({"bm": 0, "bn": 128, "bk": 8, "tm": 8, "tn": 8}, "positive int"),
    ({"bm": 128, "bn": 128, "bk": 6, "tm": 8, "tn": 8, "vec": True}, "multiples of 4"),
    ({"bm": 16, "bn": 16, "bk": 4, "tm": 2, "tn": 2, "vec": True}, "multiples of 4"),
    ({"bm": 128, "bn": 128, "bk": 8, "tm": 8, "tn": 8, "vec": 1}, "vec must be True or False"),
])
def test_flagship_config_validation(bad, match):
    with pytest.raises(ValueError, match=match):
        mf.flagship_threads(bad)


def test_every_autotune_candidate_is_valid():
    for config in (*mf.CONFIGS, *mf.VEC_CONFIGS, mf.SIM_CONFIG, mf.SIM_VEC_CONFIG):
        nt = mf.flagship_threads(config)
        assert 64 <= nt <= 256
    cfg = mf.flagship_launch(mf.DEFAULT_CONFIG, 1000, 300)
    assert cfg.grid == (3, 8, 1) and cfg.block == (256, 1, 1)


@pytest.mark.parametrize("shape", [(33, 70, 45), (1, 1, 1)], ids=lambda s: "x".join(map(str, s)))
def test_tiled_fast_matches_float64(shape, rng):
    from numbakern import get

    spec = get("matmul_tiled_fast")
    h, k, w = shape
    case = spec.make_case({"h": h, "k": k, "w": w}, rng, "normal")
    (result,) = spec.check(case, run_case(spec, case)).values()
    assert result.ok, str(result)
