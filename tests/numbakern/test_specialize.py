import numpy as np
import pytest
from numba import cuda

from numbakern import constants_of, launch_config, specialize
from numbakern.kernels.matmul import matmul_tiled_static

builds = []


@specialize
def scale_by(factor: int, offset: int = 0):
    builds.append((factor, offset))

    @cuda.jit
    def scale_by(x, out):
        i = cuda.grid(1)
        if i < x.shape[0]:
            out[i] = x[i] * factor + offset

    return scale_by


def test_one_kernel_per_constant_set_cached():
    builds.clear()
    k3 = scale_by(3)
    assert scale_by(3) is k3
    assert scale_by(factor=3) is k3  # positional and keyword spellings are one variant
    assert scale_by(3, 0) is k3  # so is the default spelled out
    k5 = scale_by(5, offset=2)
    assert k5 is not k3
    assert builds == [(3, 0), (5, 2)]
    assert set(scale_by.variants) == {(("factor", 3), ("offset", 0)), (("factor", 5), ("offset", 2))}


def test_constants_are_recorded_on_the_kernel():
    assert constants_of(scale_by(7)) == {"factor": 7, "offset": 0}
    assert constants_of(matmul_tiled_static(8)) == {"tw": 8}


def test_constant_values_baked_in_compute_correctly(rng):
    x = rng.integers(-50, 50, size=37).astype(np.int64)
    for factor, offset in [(3, 0), (-2, 11)]:
        out = np.full_like(x, -999)
        cfg = launch_config(x.size, 16)
        scale_by(factor, offset)[cfg.grid, cfg.block](x, out)
        np.testing.assert_array_equal(out, x * factor + offset)


def test_specialized_tile_widths_each_compute_the_product(rng):
    m = rng.standard_normal((11, 13)).astype(np.float32)
    n = rng.standard_normal((13, 9)).astype(np.float32)
    ref = m.astype(np.float64) @ n.astype(np.float64)
    for tw in (4, 8):
        out = np.full((11, 9), np.nan, np.float32)
        cfg = launch_config((9, 11), (tw, tw))
        matmul_tiled_static(tw)[cfg.grid, cfg.block](m, n, out)
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bad", ["16", 16.0j, None, [16]])
def test_constants_must_be_scalars(bad):
    with pytest.raises(TypeError, match="constant 'factor' must be an int, float or bool"):
        scale_by(bad)


def test_wrong_constant_names_are_reported():
    with pytest.raises(TypeError, match="scale_by: .*unexpected keyword argument 'tile'"):
        scale_by(3, tile=3)


def test_factories_must_name_their_constants():
    with pytest.raises(TypeError, match="must name its constants"):
        specialize(lambda *consts: None)
