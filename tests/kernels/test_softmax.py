"""Row softmax (``numbakern.kernels.softmax``): the user-facing function against float64 numpy over row lengths that
take every configuration (a warp or a block per row, the row in registers or partly online), the scalar path,
large magnitudes, argument errors; on a GPU, against ``torch.softmax``."""

import numpy as np
import pytest

from numbakern.compare import compare
from numbakern.kernels import softmax as sm
from numbakern.kernels.rows import row_launch


def reference(x):
    x64 = np.asarray(x, np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _ok(got, x, what="softmax"):
    result = compare(np.asarray(got), reference(x), rtol=1e-5, atol=1e-7, name=what)
    assert result.ok, str(result)


@pytest.mark.parametrize("rows, cols", [(1, 1), (3, 2), (4, 5), (33, 36), (9, 128), (5, 131), (3, 516), (2, 1000),
                                        (2, 2052), (1, 4100)])
def test_softmax(rows, cols, rng):
    x = (rng.standard_normal((rows, cols)) * 3).astype(np.float32)
    _ok(sm.softmax(x), x)


def test_large_magnitudes_do_not_overflow(rng):
    """exp(x - max): rows of values near +-80 (exp would overflow float32 without the shift)."""
    x = (rng.standard_normal((6, 300)) * 40 + 60).astype(np.float32)
    x[1] -= 130
    _ok(sm.softmax(x), x)


@pytest.mark.parametrize("config, cols", [
    ({"nt": 64, "group": 32, "cache": 1}, 300),   # a warp per row: 128 in registers, the rest online
    ({"nt": 64, "group": 8, "cache": 2}, 100),    # 8 lanes per row: 64 in registers, the rest online
    ({"nt": 64, "group": 64, "cache": 1}, 1000),  # a block per row: 256 in registers, the rest online
    ({"nt": 128, "group": 128, "cache": 2}, 1024),  # exactly the register span
])
@pytest.mark.parametrize("vec", [True, False])
def test_online_part_of_long_rows(config, cols, vec, rng):
    rows = 3
    x = (rng.standard_normal((rows, cols)) * 5).astype(np.float32)
    x[0, -7] = 30  # the row's maximum far past the register cache: the running sum must be rescaled
    out = np.full((rows, cols), np.nan, np.float32)
    cfg = row_launch(config, rows)
    sm.softmax_rows(vec=vec, **config)[cfg.grid, cfg.block](x, out)
    _ok(out, x)


def test_unaligned_rows_take_the_scalar_path(rng):
    base = rng.standard_normal((4, 41)).astype(np.float32)
    x = np.ascontiguousarray(base[:, 1:])  # 40 columns, aligned
    _ok(sm.softmax(x), x)
    flat = rng.standard_normal(4 * 40 + 1).astype(np.float32)
    shifted = flat[1:].reshape(4, 40)  # contiguous, but 4 bytes past a 16-byte boundary
    assert shifted.ctypes.data % 16
    _ok(sm.softmax(shifted), shifted)


def test_out_and_errors(rng):
    x = rng.random((3, 10), dtype=np.float32)
    out = np.empty_like(x)
    assert sm.softmax(x, out=out) is out
    _ok(out, x)
    with pytest.raises(ValueError, match="'x' must be 2-D"):
        sm.softmax(np.ones(5, np.float32))
    with pytest.raises(TypeError, match="argument 'x' must have dtype float32"):
        sm.softmax(np.ones((2, 2)))
    with pytest.raises(ValueError, match="argument 'out' must have shape"):
        sm.softmax(x, out=np.empty((3, 9), np.float32))
    with pytest.raises(ValueError, match="cache must be an int from 1 to 16"):
        sm.softmax_rows(cache=0)


@pytest.mark.gpu
@pytest.mark.parametrize("rows, cols", [(65536, 128), (4096, 1000), (1024, 4096), (256, 32768), (8, 65540)])
def test_against_torch_on_the_gpu(rows, cols, cuda_torch):
    torch = cuda_torch
    x = torch.randn(rows, cols, device="cuda") * 4
    got = sm.softmax(x)
    want = torch.softmax(x.double(), -1)
    assert ((got.double() - want).abs() <= 1e-5 * want + 1e-7).all()
