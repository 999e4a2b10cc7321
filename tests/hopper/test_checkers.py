"""The checkers of asynchronous pipelines, each on a planted defect of ``tests/hopper/stage.py``'s one stage: the
error type, and a message naming the lines involved (the defect's, and the operation it collides with)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from numbakern import sim
from numbakern.mma import formats
from numbakern.sim.errors import (
    BarrierDivergenceError,
    DeadlockError,
    MisalignedAccessError,
    OutOfBoundsError,
)
from numbakern.sim.hopper import AsyncHazardError, SwizzleMismatchError
from tests.hopper import stage

pytestmark = pytest.mark.sim

SOURCE = Path(stage.__file__).read_text().splitlines()


def line_of(text: str) -> str:
    """``stage.py:N``: the line of the stage kernel that holds ``text``."""
    found = [i + 1 for i, line in enumerate(SOURCE) if line.strip() == text] or \
        [i + 1 for i, line in enumerate(SOURCE) if text in line]
    assert len(found) == 1, (text, found)
    return f"stage.py:{found[0]}"


def run(bug: int, rng, checks: str = "all"):
    a = formats.f32_to_bf16_bits(rng.standard_normal((64, 64)).astype(np.float32))
    b = formats.f32_to_bf16_bits(rng.standard_normal((64, 64)).astype(np.float32))
    out = np.zeros((64, 64), np.float32)
    with sim.checks(checks):
        stage.one_stage[1, 256, 0, stage.SHARED](a, b, out, *stage.tensor_maps(a, b, out), bug)
    a64, b64 = (formats.bf16_bits_to_f32(x).astype(np.float64) for x in (a, b))
    return out, a64 @ b64, np.abs(a64) @ np.abs(b64)


TMA_A = "hopper.tma_load_2d(smem, a_at, tmap_a, 0, 0, bars, 0)"  # (the first load of A)
WGMMA = "hopper.wgmma_m64n64k16_bf16(acc"

DEFECTS = [
    # (bug, error, lines its message must name)
    (1, AsyncHazardError, [TMA_A, WGMMA]),
    (11, AsyncHazardError, [TMA_A, WGMMA]),
    (2, AsyncHazardError, [TMA_A, "smem[a_at] = 0"]),
    (4, AsyncHazardError, [WGMMA, "# ... so A may be refilled"]),
    (10, AsyncHazardError, ["tma_store_2d(tmap_out, 0, 0", "staging[out_at // 4 + t]"]),
    (5, AsyncHazardError, ["tma_store_2d(tmap_out, 0, 0", ("staging[at] =", "staging[at + 1] =")]),
    (3, DeadlockError, ["mbarrier_arrive_expect_tx(bars, 0, 2 * TILE", "mbarrier_try_wait(bars, 0, 1 if bug"]),
    (13, DeadlockError, ["mbarrier_init(bars, 1,", "mbarrier_try_wait(bars, 1, 0)"]),
    (6, BarrierDivergenceError, [WGMMA]),
    (12, BarrierDivergenceError, ["setmaxnreg_inc(224)", "setmaxnreg_inc(232)"]),
    (7, SwizzleMismatchError, [TMA_A, WGMMA]),
    (8, MisalignedAccessError, [WGMMA]),
    (9, OutOfBoundsError, [WGMMA]),
]


def test_the_stage_computes_its_tile(rng):
    out, expected, scale = run(0, rng)
    assert (np.abs(out - expected) <= 1e-6 * scale).all()


@pytest.mark.parametrize("bug, error, lines", DEFECTS, ids=[str(d[0]) for d in DEFECTS])
def test_each_planted_defect_is_reported_with_its_lines(bug, error, lines, rng):
    with pytest.raises(error) as caught:
        run(bug, rng)
    message = str(caught.value)
    for text in lines:  # (a tuple: one of these lines)
        places = [line_of(t) for t in (text if isinstance(text, tuple) else (text,))]
        assert any(re.search(re.escape(p) + r"\b", message) for p in places), (places, message)


def test_the_defects_values_are_wrong_without_the_checks(rng):
    """Unchecked, a wgmma that does not wait for its tiles reads shared memory before the copies land (the
    simulator lands a TMA load when its mbarrier is waited for): the numbers are wrong, as on a GPU."""
    out, expected, scale = run(1, rng, checks="none")
    assert not (np.abs(out - expected) <= 1e-6 * scale).all()
    out, expected, scale = run(0, rng, checks="none")
    assert (np.abs(out - expected) <= 1e-6 * scale).all()


def test_the_deadlock_report_says_which_bytes_are_missing(rng):
    with pytest.raises(DeadlockError) as caught:
        run(3, rng)
    message = str(caught.value)
    assert "mbarrier bars[0]" in message and "phase 0 in progress" in message
    assert f"{2 * stage.TILE} of {2 * stage.TILE + 1024} transaction bytes landed" in message
    assert "threads (128, 0, 0), (129, 0, 0), (130, 0, 0), (131, 0, 0) and 124 more wait" in message
