"""mbarrier phases and parities, named barriers and setmaxnreg in the simulator."""

from __future__ import annotations

import numpy as np
import pytest

from numbakern.sim.errors import BarrierDivergenceError, RaceError, SimulationError
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


def test_named_barrier_arrive_hands_turns_between_warps():
    """``bar.arrive`` and ``bar.sync`` in pairs order each round's writes before the other warp's reads (no race
    reported) without the arriving warp waiting; every read sees the round's value of the next lane."""
    rounds = 4
    out = np.zeros((rounds, 32), np.int32)
    kernels.turns[1, 64](out, rounds, 0)
    expected = np.array([[r * 100 + (lane + 1) % 32 for lane in range(32)] for r in range(rounds)])
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("bug, words", [(1, r"wrote it at .*box\[lane\] = -1"),
                                        (2, r"wrote it at .*box\[lane\] = r \* 100 \+ lane")])
def test_a_missing_turn_is_a_race(bug, words):
    """A write after the writer's arrival (1) may land before or after the reader's read; without the reader's wait
    (2) it reads what the writer may not have written: an arrival orders what came before it, for the waiters."""
    with pytest.raises(RaceError, match=words):
        kernels.turns[1, 64](np.zeros((4, 32), np.int32), 4, bug)


def test_named_barrier_arrive_counts_towards_the_same_barrier():
    """An arrival and a wait with other counts at one barrier are the divergence bar.sync's would be."""
    with pytest.raises(ValueError, match="multiple of 32"):
        kernels.turns[1, 48](np.zeros((2, 32), np.int32), 2, 0)


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
