import numba
import numpy as np
import pytest

from numbakern import LaunchConfig, cdiv, dynamic_shared_bytes, grid_for, launch_config


@pytest.mark.parametrize("a, b, expected", [(0, 4, 0), (1, 4, 1), (4, 4, 1), (5, 4, 2), (5120, 16, 320), (33, 16, 3)])
def test_cdiv(a, b, expected):
    assert cdiv(a, b) == expected
    assert cdiv(a, b) * b >= a > (cdiv(a, b) - 1) * b or a == 0


@pytest.mark.parametrize("a, b, error", [(5, 0, ValueError), (-1, 4, ValueError), (5.0, 2, TypeError), (5, True,
                                                                                                        TypeError)])
def test_cdiv_rejects(a, b, error):
    with pytest.raises(error):
        cdiv(a, b)


def test_grid_for_covers_every_dimension():
    assert grid_for(1000, 256) == (4,)
    assert grid_for((45, 33), (16, 16)) == (3, 3)
    assert grid_for((5, 6, 7), (2, 4, 8)) == (3, 2, 1)
    # an empty problem still launches one block, which guards itself
    assert grid_for((0, 10), (16, 16)) == (1, 1)


def test_grid_for_rejects_mismatched_and_bad_dims():
    with pytest.raises(ValueError, match="2 dimensions but block has 1"):
        grid_for((4, 4), 16)
    with pytest.raises(ValueError, match="1 to 3 dimensions"):
        grid_for((1, 2, 3, 4), (1, 1, 1, 1))
    with pytest.raises(ValueError, match="positive"):
        grid_for((4,), (0,))


def test_launch_config_unpacks_into_a_launch():
    cfg = launch_config((45, 33), (16, 16), shared_bytes=2048)
    assert (cfg.grid, cfg.block, cfg.shared_bytes, cfg.threads_per_block) == ((3, 3), (16, 16), 2048, 256)
    assert tuple(cfg) == ((3, 3), (16, 16), 0, 2048)
    with pytest.raises(ValueError, match="at most 1024"):
        launch_config((64, 64), (64, 32))


@pytest.mark.parametrize("dtype", [np.float32, np.dtype("float32"), numba.float32, "float32"])
def test_dynamic_shared_bytes_from_any_dtype_spelling(dtype):
    tw = 16
    assert dynamic_shared_bytes(dtype, tw * tw, tw * tw) == 2 * tw * tw * 4


def test_dynamic_shared_bytes_mixed_sizes_and_errors():
    assert dynamic_shared_bytes(np.float64, 3) == 24
    assert dynamic_shared_bytes(np.int16, 5, 7) == 24
    with pytest.raises(ValueError, match="at least one"):
        dynamic_shared_bytes(np.float32)
    with pytest.raises(ValueError, match="non-negative"):
        dynamic_shared_bytes(np.float32, -1)
    with pytest.raises(TypeError, match="unsupported dtype"):
        dynamic_shared_bytes(object(), 4)


def test_dynamic_shared_bytes_from_torch_dtype():
    torch = pytest.importorskip("torch")
    assert dynamic_shared_bytes(torch.float16, 10) == 20


def test_a_launch_config_takes_ints_for_one_dimension_as_kernel_grid_block_does():
    cfg = LaunchConfig(cdiv(1000, 128), 128, 64)
    assert (cfg.grid, cfg.block, cfg.shared_bytes, cfg.threads_per_block) == ((8,), (128,), 64, 128)
    assert LaunchConfig(np.int64(3), (8, np.int32(4))).block == (8, 4)


@pytest.mark.parametrize("grid, block, shared, kind, message", [
    (1, 2048, 0, ValueError, r"LaunchConfig\(grid=\(1,\), block=\(2048,\)\): a block of 2048 threads: a GPU allows "
                             "at most 1024 per block"),
    ((1, 1, 70_000), 32, 0, ValueError, "gridDim.z = 70000: a GPU allows at most 65535 in z"),
    (0, 32, 0, ValueError, "gridDim.x = 0: every launch dimension must be at least 1"),
    (4, (16, -16), 0, ValueError, "blockDim.y = -16"),
    (4, 32, -1, ValueError, "shared_bytes must be non-negative, got -1"),
    (4.0, 32, 0, TypeError, "LaunchConfig: grid must be an integer or a sequence of 1 to 3 integers, got float 4.0"),
    ((4, 2.0), 32, 0, TypeError, r"LaunchConfig: grid\[1\] must be an integer, got float 2.0"),
    (None, 32, 0, TypeError, "LaunchConfig: grid must be an integer or a sequence of 1 to 3 integers, got NoneType"),
    ((1, 1, 1, 1), 32, 0, ValueError, "grid must have 1 to 3 dimensions"),
])
def test_a_launch_config_a_gpu_would_refuse_is_refused_when_made(grid, block, shared, kind, message):
    with pytest.raises(kind, match=message):
        LaunchConfig(grid, block, shared)
