"""TMA in the simulator: 2-D loads and stores through tensor maps, every swizzle, boxes past the tensor's edges,
their bytes counted on the mbarrier; against boxes cut from the arrays by numpy and laid out by
``tests/hopper/canonical.py``."""

from __future__ import annotations

import numpy as np
import pytest

from numbakern.tensormap import SimulatedTensorMap, device_address, tensor_map, tensor_map_2d, tensor_map_of
from tests.hopper import canonical, kernels

pytestmark = pytest.mark.sim


def _box(x: np.ndarray, c0: int, c1: int, rows: int, cols: int) -> np.ndarray:
    """The box at (c0 innermost, c1) of ``x``, zeros outside it."""
    out = np.zeros((rows, cols), x.dtype)
    for r in range(rows):
        for c in range(cols):
            if 0 <= c1 + r < x.shape[0] and 0 <= c0 + c < x.shape[1]:
                out[r, c] = x[c1 + r, c0 + c]
    return out


CASES = [  # (dtype, swizzle, box rows, c0, c1): inside, past the right and bottom edges, before the top-left
    (np.uint16, 128, 16, 0, 0),
    (np.uint16, 64, 24, 8, 40),
    (np.float32, 32, 8, -4, -5),
    (np.float32, 128, 16, 20, 3),
    (np.uint16, 0, 8, 72, 1),
]


@pytest.mark.parametrize("dtype, swizzle, rows, c0, c1", CASES)
def test_tma_load_lands_the_box_swizzled_with_zeros_outside(dtype, swizzle, rows, c0, c1, rng):
    eb = np.dtype(dtype).itemsize
    cols = (swizzle or 32) // eb
    x = rng.integers(1, 2**15, (45, 40)).astype(dtype) if dtype == np.uint16 else \
        rng.standard_normal((45, 40)).astype(dtype)
    nbytes = rows * cols * eb
    out = np.zeros(nbytes, np.uint8)
    tmap = tensor_map_of(x, rows, cols, swizzle)
    kernels.tma_box[1, 64, 0, nbytes + 2048](x, out, tmap, c0, c1, 0, nbytes)
    box = _box(x, c0, c1, rows, cols)
    expected = canonical.box_image(box.view(np.uint16 if eb == 2 else np.uint32), eb, swizzle)
    np.testing.assert_array_equal(out, expected)


#: measured on an H200 (2026-11-29, .lab's probe of tests/hopper/gpu_cases.py's 2-D box): these starts stopped the
#: kernel with CUDA_ERROR_ILLEGAL_INSTRUCTION, while -4/-8 and 4 float32, -8 uint16 (16-byte multiples) loaded
#: bit-identically to the simulator
MISALIGNED_STARTS = [  # (dtype, swizzle, box rows, c0, c1)
    (np.float32, 32, 8, -3, -5), (np.float32, 32, 8, 1, 2), (np.float32, 0, 8, 1, 2),
    (np.float32, 128, 16, 2, 1), (np.uint16, 32, 8, -3, 0), (np.uint16, 64, 8, 4, 1),
]


@pytest.mark.parametrize("dtype, swizzle, rows, c0, c1", MISALIGNED_STARTS)
def test_a_box_whose_innermost_start_is_not_16_bytes_from_the_tensors_start_is_refused(dtype, swizzle, rows, c0, c1,
                                                                                      rng):
    from numbakern.sim.errors import MisalignedAccessError

    eb = np.dtype(dtype).itemsize
    cols = (swizzle or 32) // eb
    x = rng.integers(1, 2**15, (45, 40)).astype(dtype)
    nbytes = rows * cols * eb
    with pytest.raises(MisalignedAccessError, match=rf"innermost coordinate {c0}, {c0 * eb} bytes .* multiple of 16"):
        kernels.tma_box[1, 64, 0, nbytes + 2048](x, np.zeros(nbytes, np.uint8), tensor_map_of(x, rows, cols, swizzle),
                                                 c0, c1, 0, nbytes)


CASES_3D = [  # (dtype, swizzle, box (cols, rows, batch), c0, c1, c2): rows past a batch entry's end zero-filled
    (np.uint16, 128, (64, 16, 1), 0, 20, 2),
    (np.uint16, 64, (32, 8, 2), 16, -3, 4),
    (np.float32, 32, (8, 8, 3), 4, 30, -1),
]


@pytest.mark.parametrize("dtype, swizzle, box, c0, c1, c2", CASES_3D)
def test_tma_load_3d_never_reads_into_the_next_batch_entry(dtype, swizzle, box, c0, c1, c2, rng):
    """A (batch, rows, cols) tensor: each box row inside the tensor is the entry's row, each outside zeros (rows past
    an entry's last, entries past the last), where a 2-D map of the same memory would read the next entry's rows."""
    eb = np.dtype(dtype).itemsize
    x = rng.integers(1, 2**15, (5, 27, 72)).astype(dtype) if dtype == np.uint16 else \
        rng.standard_normal((5, 27, 72)).astype(dtype)
    cols, rows, batch = box
    nbytes = cols * rows * batch * eb
    out = np.zeros(nbytes, np.uint8)
    tmap = tensor_map(device_address(x), x.shape[::-1], x.strides[::-1][1:], box, eb, swizzle)
    kernels.tma_box[1, 64, 0, nbytes + 2048](x, out, tmap, c0, c1, c2, nbytes)
    expected = np.zeros((batch, rows, cols), dtype)
    for j in range(batch):
        if 0 <= c2 + j < x.shape[0]:
            expected[j] = _box(x[c2 + j], c0, c1, rows, cols)
    image = canonical.box_image(expected.reshape(batch * rows, cols).view(np.uint16 if eb == 2 else np.uint32), eb,
                                swizzle)
    np.testing.assert_array_equal(out, image)


def test_a_2d_copy_through_a_3d_map_is_an_error(rng):
    x = rng.integers(1, 2**15, (32, 64)).astype(np.uint16)
    tmap = tensor_map(device_address(x), (64, 16, 2), (128, 2048), (64, 8, 1))
    with pytest.raises(TypeError, match="3-D"):
        kernels.tma_box[1, 64, 0, 4096](x, np.zeros(1024, np.uint8), tmap, 0, 0, 0, 1024)


@pytest.mark.parametrize("swizzle, c0, c1", [(128, 8, 30), (64, -4, 2), (0, 0, 0)])
def test_tma_store_writes_the_part_of_the_box_inside_the_tensor(swizzle, c0, c1, rng):
    rows, eb = 16, 2
    cols = (swizzle or 32) // eb
    y = rng.integers(1, 2**15, (40, 56)).astype(np.uint16)
    before = y.copy()
    box = rng.integers(1, 2**15, (rows, cols)).astype(np.uint16)
    image = canonical.box_image(box, eb, swizzle)
    kernels.tma_store_box[1, 64, 0, image.size + 2048](image, y, tensor_map_of(y, rows, cols, swizzle), c0, c1)
    expected = before.copy()
    for r in range(rows):
        for c in range(cols):
            if 0 <= c1 + r < y.shape[0] and 0 <= c0 + c < y.shape[1]:
                expected[c1 + r, c0 + c] = box[r, c]
    np.testing.assert_array_equal(y, expected)


def test_the_tensor_map_records_the_encode_arguments():
    tmap = tensor_map_2d(4096, 100, 72, 160, 64, 64, 2, 128)
    assert SimulatedTensorMap.decode(tmap) == SimulatedTensorMap(4096, (72, 100), (160,), (64, 64), 2, 128)
    three = tensor_map(8192, (64, 27, 5), (128, 3456), (64, 16, 1), 2, 128)
    assert SimulatedTensorMap.decode(three) == SimulatedTensorMap(8192, (64, 27, 5), (128, 3456), (64, 16, 1), 2, 128)
    with pytest.raises(ValueError, match="takes 2 strides"):
        tensor_map(8192, (64, 27, 5), (128,), (64, 16, 1))
    with pytest.raises(ValueError, match="strides"):
        tensor_map_2d(4096, 100, 72, 100, 64, 64)
    with pytest.raises(ValueError, match="box row"):
        tensor_map_2d(4096, 100, 72, 160, 64, 32, 2, 128)
    with pytest.raises(ValueError, match="swizzle"):
        tensor_map_2d(4096, 100, 72, 160, 64, 64, 2, 16)
