"""16-byte accesses are checked at the alignment the compiled kernel guarantees (issue 41): numba-cuda aligns a
shared array to its ``alignment=`` or else only to its element type, and so does translate's C. The simulator
places shared arrays exactly as aligned as declared, so a tile that would be aligned on a GPU only by the luck of its
placement is reported, naming the fix."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from numbakern import sim
from numbakern.async_copy import async_commit, async_wait_all, copy_async16
from numbakern.sim.memory_ops import placed

pytestmark = pytest.mark.sim


def _copy_kernel(alignment):
    @cuda.jit
    def kernel(src, out):
        """Each of 8 threads copies one 16-byte chunk (8 uint16) of a row into a shared tile, then back out."""
        t = cuda.threadIdx.x
        tile = cuda.shared.array((4, 16), dtype=np.uint16, alignment=alignment)
        r, c = t // 2, (t % 2) * 8
        copy_async16(tile, (r, c), src, (r, c), True)
        async_commit()
        async_wait_all()
        cuda.syncthreads()
        for q in range(8):
            out[r, c + q] = tile[r, c + q]

    return kernel


copy_aligned = _copy_kernel(16)
copy_aligned_to_8 = _copy_kernel(8)


def test_a_copy_into_a_tile_declared_16_byte_aligned_lands(rng):
    src = rng.integers(1, 2**16, (4, 16), dtype=np.uint16)
    out = np.zeros_like(src)
    with sim.checks("all"):
        copy_aligned[1, 8](src, out)
    np.testing.assert_array_equal(out, src)


def test_a_copy_into_a_tile_declared_8_byte_aligned_is_reported(rng):
    src = rng.integers(1, 2**16, (4, 16), dtype=np.uint16)
    with pytest.raises(sim.MisalignedAccessError, match=r"copy_async16: element \(\d, [08]\) .* only 8-byte aligned "
                       r".*alignment=16"):
        copy_aligned_to_8[1, 8](src, np.zeros_like(src))


@pytest.mark.parametrize("dtype, alignment, want", [(np.uint16, None, 2), (np.float32, None, 4),
                                                    (np.float64, None, 8), (np.uint16, 16, 16), (np.uint8, 128, 128)])
def test_placed_arrays_are_aligned_as_declared_and_no_more(dtype, alignment, want):
    for _ in range(5):  # whatever the allocator returns
        a = placed((3, 5), dtype, alignment)
        start = a.__array_interface__["data"][0]
        assert a.shape == (3, 5) and a.dtype == dtype
        assert start % want == 0 and start % (2 * want) == want


def test_the_stock_engine_runs_the_copy_too(rng):
    """The stock simulator's arrays answer any attribute they lack with an IndexError: the copy's alignment check
    must not ask them for one (it crashed there; the benchmark runs the stock engine as its baseline)."""
    src = rng.integers(1, 2**16, (4, 16), dtype=np.uint16)
    out = np.zeros_like(src)
    with sim.use_engine("stock"):
        copy_aligned[1, 8](src, out)
    np.testing.assert_array_equal(out, src)
