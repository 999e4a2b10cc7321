"""mbarrier phases and parities, named barriers and setmaxnreg in the simulator."""

from __future__ import annotations

import numpy as np
import pytest

from numbakern.sim.errors import BarrierDivergenceError, SimulationError
from tests.hopper import kernels

pytestmark = pytest.mark.sim


def test_mbarrier_phases_alternate_parity_and_order_the_warps():
    """Two warps pass values through shared memory round after round, each waiting for the other's arrivals with
    the parity of the round's phase: every read sees the other warp's write of that round (and the race checker
    takes the mbarrier's order: no race is reported)."""
    rounds = 5
    out = np.zeros((64, rounds), np.int32)
    kernels.phases[1, 64](out, rounds)
    expected = np.array([[r * 100 + (t + 32) % 64 for r in range(rounds)] for t in range(64)])
    np.testing.assert_array_equal(out, expected)


def test_named_barriers_synchronise_their_warps():
    out = np.zeros((128, 2), np.int32)
    kernels.named_barriers[1, 128](out)
    t = np.arange(128)
    np.testing.assert_array_equal(out[:, 0], ((t + 32) % 64 + (t // 64) * 64) * 3)
    np.testing.assert_array_equal(out[:, 1], (127 - t) * 3)


def test_setmaxnreg_moves_registers_between_warpgroups():
    out = np.zeros(256, np.int32)
    kernels.register_budgets[1, 256](out)
    np.testing.assert_array_equal(out, np.arange(256))


def test_warpgroup_instructions_need_whole_warpgroups():
    with pytest.raises(BarrierDivergenceError, match="multiple of 128"):
        kernels.register_budgets[1, 192](np.zeros(192, np.int32))


def test_setmaxnreg_beyond_the_register_file_is_an_error():
    """One warpgroup at 40 registers and three at 232 would need 94208 of the multiprocessor's 65536 (one fewer,
    matmul_wgmma's, fits)."""
    kernels.register_budgets[1, 384](np.zeros(384, np.int32))
    with pytest.raises(SimulationError, match="more than the 65536"):
        kernels.register_budgets[1, 512](np.zeros(512, np.int32))
