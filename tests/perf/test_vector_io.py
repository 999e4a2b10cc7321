"""``numbakern.vector_io``: 16-byte loads and stores, in the simulator (with its checkers) and on a GPU."""

import numpy as np
import pytest
from numba import cuda

from numbakern import mode
from numbakern.vector_io import vload4, vstore4


@cuda.jit
def shift_rows(src, out):
    # each thread moves one 4-float group of its row through registers, reversed within the group
    r = cuda.blockIdx.x
    c = cuda.threadIdx.x * 4
    regs = cuda.local.array(8, np.float32)
    vload4(src, (r, c), regs, 4)
    for q in range(4):
        regs[q] = regs[7 - q]
    vstore4(out, (r, c), regs, 0)


def _run(kernel, grid, block, *arrays):
    if mode.in_simulator():
        kernel[grid, block](*arrays)
        return arrays[-1]
    d = [cuda.to_device(a) for a in arrays]
    kernel[grid, block](*d)
    return d[-1].copy_to_host()


def test_vload4_vstore4_move_groups_of_four(rng):
    src = rng.standard_normal((5, 12)).astype(np.float32)
    out = np.full_like(src, np.nan)
    got = _run(shift_rows, 5, 3, src, out)
    expected = src.reshape(5, 3, 4)[:, :, ::-1].reshape(5, 12)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.sim
def test_misaligned_group_is_reported(rng):
    from numbakern.sim import MisalignedAccessError

    src = rng.standard_normal((2, 10)).astype(np.float32)  # a row of 10: row 1 starts at 10
    out = np.zeros((2, 10), np.float32)
    with pytest.raises(MisalignedAccessError, match=r"flat offset 10, not a multiple of 4"):
        _run(shift_rows, 2, 2, src, out)


@pytest.mark.sim
def test_group_past_the_end_is_out_of_bounds(rng):
    from numbakern.sim import OutOfBoundsError

    src = rng.standard_normal((1, 8)).astype(np.float32)
    out = np.zeros((1, 8), np.float32)
    with pytest.raises(OutOfBoundsError):
        _run(shift_rows, 1, 3, src, out)  # thread 2 reads columns 8..11 of a row of 8


@pytest.mark.sim
def test_wrong_index_arity_names_the_function():
    regs = np.zeros(4, np.float32)
    with pytest.raises(IndexError, match="vload4: an index of 1 dimension"):
        vload4(np.zeros((2, 4), np.float32), 0, regs, 0)
    with pytest.raises(IndexError, match="vstore4: an index of 2 dimension"):
        vstore4(np.zeros(8, np.float32), (0, 0), regs, 0)


@pytest.mark.gpu
def test_intrinsics_reject_non_float32_arrays():
    from numba.cuda import types

    def bad(src, out):
        regs = cuda.local.array(4, np.float32)
        vload4(src, (0, 0), regs, 0)
        out[0] = regs[0]

    argtypes = (types.Array(types.float64, 2, "C"), types.Array(types.float32, 1, "C"))
    # numba reports the intrinsic's TypeError inside its own TypingError, whose class depends on numba-cuda's version
    # (on the H200's: numba.core.errors.TypingError, not a TypeError): the message naming the argument is the guarantee
    with pytest.raises(Exception, match="vload4: the array must be a C-contiguous float32 array"):
        cuda.compile_ptx(bad, argtypes, cc=(9, 0))
