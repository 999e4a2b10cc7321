"""``numbakern.async_copy`` (cp.async) and the matmul built on it, in the simulator and on a GPU."""

import numpy as np
import pytest
from numba import cuda

from numbakern import mode
from numbakern.async_copy import async_commit, async_wait_all, copy_async4, copy_async16
from numbakern.compare import compare
from numbakern.kernels import matmul_async as ma

GROUPS = 4  # threads per block, each copying one 4-float group


@cuda.jit
def stage_rows(src, out, before):
    # each thread copies a group of row `blockIdx.x` of src into shared memory (zeros past the row's end), reads its
    # group before waiting (recorded in `before`), then every group after the wait and a barrier
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    tile = cuda.shared.array((GROUPS, 4), dtype=np.float32, alignment=16)
    for q in range(4):
        tile[t, q] = np.float32(-1.0)
    cuda.syncthreads()
    copy_async4(tile, (t, 0), src, (r, t * 4), t * 4 < src.shape[1])
    async_commit()
    before[r, t] = tile[t, 0]
    async_wait_all()
    cuda.syncthreads()
    for q in range(4):
        out[r, t * 4 + q] = tile[t, q]


def _run(*arrays):
    grid = arrays[0].shape[0]
    if mode.in_simulator():
        stage_rows[grid, GROUPS](*arrays)
        return arrays[1:]
    d = [cuda.to_device(a) for a in arrays]
    stage_rows[grid, GROUPS](*d)
    return [x.copy_to_host() for x in d[1:]]


def test_copies_land_after_the_wait_and_invalid_groups_are_zero(rng):
    src = rng.standard_normal((3, 8)).astype(np.float32)  # 2 of the 4 groups per row exist
    out = np.full((3, 16), np.nan, np.float32)
    before = np.zeros((3, GROUPS), np.float32)
    out, before = _run(src, out, before)
    expected = np.zeros((3, 16), np.float32)
    expected[:, :8] = src
    np.testing.assert_array_equal(out, expected)


@pytest.mark.sim
def test_a_read_before_the_wait_sees_the_old_contents_in_the_simulator(rng):
    src = rng.standard_normal((2, 16)).astype(np.float32)
    _, before = _run(src, np.zeros((2, 16), np.float32), np.zeros((2, GROUPS), np.float32))
    np.testing.assert_array_equal(before, -1.0)  # on a GPU this read races with the copy


@cuda.jit
def copy_from_column_2(src, out):
    tile = cuda.shared.array((1, 4), dtype=np.float32, alignment=16)
    copy_async4(tile, (0, 0), src, (0, 2), True)  # a group starting at column 2: 8 bytes past a 16-byte boundary
    async_commit()
    async_wait_all()
    out[0] = tile[0, 0]


@pytest.mark.sim
def test_misaligned_copy_is_reported(rng):
    from numbakern.sim import MisalignedAccessError

    src = rng.standard_normal((1, 8)).astype(np.float32)
    with pytest.raises(MisalignedAccessError, match=r"copy_async4: element \(0, 2\)"):
        copy_from_column_2[1, 1](src, np.zeros(1, np.float32))


@cuda.jit
def stage_rows16(src, out):
    # 16-byte copies of a 16-bit array (8 elements each): thread t copies elements 8t..8t+7 of row blockIdx.x, zeros
    # past the row's end
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x
    tile = cuda.shared.array((GROUPS, 8), dtype=src.dtype, alignment=16)
    copy_async16(tile, (t, 0), src, (r, t * 8), t * 8 < src.shape[1])
    async_commit()
    async_wait_all()
    cuda.syncthreads()
    for q in range(8):
        out[r, t * 8 + q] = tile[t, q]


@pytest.mark.parametrize("dtype", [np.uint16, np.float16])
def test_sixteen_byte_copies_of_16_bit_data(dtype, rng):
    src = rng.integers(1, 60000, size=(3, 24)).astype(np.uint16).view(np.uint16)
    src = src if dtype == np.uint16 else rng.standard_normal((3, 24)).astype(np.float16)
    out = np.full((3, 8 * GROUPS), 7, dtype)
    if mode.in_simulator():
        stage_rows16[3, GROUPS](src, out)
    else:
        d = [cuda.to_device(x) for x in (src, out)]
        stage_rows16[3, GROUPS](*d)
        out = d[1].copy_to_host()
    expected = np.zeros((3, 8 * GROUPS), dtype)
    expected[:, :24] = src
    np.testing.assert_array_equal(out.view(np.uint16), expected.view(np.uint16))


@cuda.jit
def copy16_from_column_4(src, out):
    tile = cuda.shared.array(8, dtype=np.uint16, alignment=16)
    copy_async16(tile, 0, src, (0, 4), True)  # 8 bytes past a 16-byte boundary of 16-bit data
    async_commit()
    async_wait_all()
    out[0] = tile[0]


@pytest.mark.sim
def test_misaligned_16_bit_copy_is_reported():
    from numbakern.sim import MisalignedAccessError

    with pytest.raises(MisalignedAccessError, match=r"copy_async16: element \(0, 4\).*multiple of 8"):
        copy16_from_column_4[1, 1](np.ones((1, 16), np.uint16), np.zeros(1, np.uint16))


@pytest.mark.parametrize("shape", [(36, 21, 44), (4, 1, 4), (12, 9, 36)], ids=lambda s: "x".join(map(str, s)))
def test_matmul_via_async_transposes_and_multiplies(shape, rng):
    h, k, w = shape
    a = rng.standard_normal((h, k)).astype(np.float32)
    b = rng.standard_normal((k, w)).astype(np.float32)
    out = np.full((h, w), np.nan, np.float32)
    config = ma.SIM_ASYNC_CONFIG if mode.in_simulator() else ma.ASYNC_CONFIG
    if mode.in_simulator():
        ma.matmul_via_async(a, b, out, config)
    else:
        d = [cuda.to_device(x) for x in (a, b, out)]
        ma.matmul_via_async(*d, config)
        out = d[2].copy_to_host()
    ref = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    result = compare(out, ref, scale=scale, rtol=1e-5, atol=0.0, name="matmul_via_async")
    assert result.ok, str(result)


def test_async_ready():
    a, b, out = np.zeros((8, 3), np.float32), np.zeros((3, 12), np.float32), np.zeros((8, 12), np.float32)
    assert ma.async_ready(a, b, out)  # k = 3 is fine: A is transposed first
    assert not ma.async_ready(np.zeros((6, 3), np.float32), b, np.zeros((6, 12), np.float32))  # h = 6
