"""Every kernel of the project against its float64 reference: each declared size, each input distribution.

Run with ``python -m pytest`` in this folder: without a GPU the kernels run in numbakern's simulator with all its
checkers on. ``rng`` is numbakern's pytest plugin's: seeded per test, the seed printed on failure with the command
that replays it (``pytest --seed N``; ``--seed random`` draws fresh inputs each run).
"""

import numpy as np
import pytest

import numbakern
import numbakern.project
from numbakern.registry import DISTRIBUTIONS

PROJECT = numbakern.project.find(__file__)
SPECS = PROJECT.specs()
CASES = [(spec, size, dist) for spec in SPECS for size in spec.test_sizes for dist in DISTRIBUTIONS]


def case_id(spec, size, dist):
    return f"{spec.name}-{'x'.join(map(str, size.values()))}-{dist}"


@pytest.mark.parametrize("spec, size, dist", CASES, ids=[case_id(*c) for c in CASES])
def test_kernel_matches_reference(spec, size, dist, rng):
    case = spec.make_case(size, rng, dist)
    for result in spec.check(case, numbakern.run_case(spec, case)).values():
        assert result.ok, str(result)


def test_the_project_declares_its_four_kernels():
    assert [s.name for s in SPECS] == ["block_sum", "histogram", "row_softmax", "stencil5"]
    assert all(s.module.startswith("mykernels.") for s in SPECS)


def test_softmax_rows_are_distributions():
    spec = PROJECT.spec("row_softmax")
    case = spec.make_case({"rows": 5, "cols": 77}, np.random.default_rng(1), "normal")
    out = numbakern.run_case(spec, case)[1]
    assert np.allclose(out.sum(axis=1), 1.0, rtol=1e-5) and (out > 0).all()


def test_softmax_of_a_row_shorter_than_the_warp():
    # lanes 3..31 own no element: their running maximum stays -inf and the shuffles must ignore it
    spec = PROJECT.spec("row_softmax")
    x = np.array([[-5.0, -7.0, -6.0]], dtype=np.float32)
    out = np.full_like(x, np.nan)
    spec.kernel[1, 32](x, out)
    e = np.exp(x.astype(np.float64) - x.max())
    assert np.allclose(out, e / e.sum(), rtol=1e-6)


def test_histogram_counts_every_byte_once():
    spec = PROJECT.spec("histogram")
    case = spec.make_case({"n": 1000}, np.random.default_rng(2), "large")
    data, start = case.args
    counts = numbakern.run_case(spec, case)[1]
    assert counts.sum() - start.sum() == data.size


def test_stencil_repeats_the_edge():
    spec = PROJECT.spec("stencil5")
    src = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    dst = np.full_like(src, np.nan)
    cfg = spec.make_case({"h": 3, "w": 4}, np.random.default_rng(0), "uniform").launch
    spec.kernel[cfg.grid, cfg.block](src, dst)
    # the corner: itself twice (the repeated edge above and to the left), its right and lower neighbours
    assert dst[0, 0] == pytest.approx((1 + 1 + 1 + 2 + 5) / 5)


def test_the_accumulators_were_detected_not_listed():
    assert PROJECT.spec("histogram").accumulates == (1,)  # cuda.atomic.add(hist, ...)
    assert PROJECT.spec("block_sum").accumulates == (1,)
    assert PROJECT.spec("row_softmax").accumulates == ()


def test_signatures_come_from_the_example_arguments():
    assert PROJECT.spec("histogram").signatures == ("void(uint8[::1], int32[::1])",)
    assert PROJECT.spec("stencil5").signatures == ("void(float32[:, ::1], float32[:, ::1])",)
