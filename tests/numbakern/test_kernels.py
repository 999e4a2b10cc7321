"""Every registered kernel against its independent reference, on fresh random inputs.

Runs in the simulator on a CPU-only machine, with every checker on whatever ``NUMBAKERN_SIM_CHECKS`` says (the one
test that each registered kernel passes them at each of its test sizes; tests/sim/test_engine.py adds shuffled
thread orders), and on the real GPU with ``pytest --gpu``.
"""

import contextlib

import numpy as np
import pytest

from numbakern import all_specs, mode, run_case, sim
from numbakern.registry import DISTRIBUTIONS
from tests.kernel_variants import marks

# the quick tier runs one variant of each tensor-core kernel factory (tests/kernel_variants.py)
CASES = [pytest.param(spec.name, size, marks=marks(spec), id=f"{spec.name}-{'x'.join(map(str, size.values()))}")
         for spec in all_specs() for size in spec.test_sizes]


@pytest.mark.parametrize("name, size", CASES)
def test_kernel_matches_reference(name, size, rng):
    from numbakern import get

    spec = get(name)
    # each test draws its distribution with its inputs (``pytest --seed random``: a different one each run)
    dist = DISTRIBUTIONS[rng.integers(len(DISTRIBUTIONS))]
    case = spec.make_case(size, rng, dist)
    with sim.checks("all") if mode.in_simulator() else contextlib.nullcontext():
        results = spec.check(case, run_case(spec, case))
    for result in results.values():
        assert result.ok, f"{dist} inputs: {result}"


def test_a_wrong_kernel_is_caught(rng):
    """The harness itself must fail a kernel that computes something else."""
    from numbakern import get

    spec = get("matmul_naive")
    case = spec.make_case({"h": 5, "k": 7, "w": 3}, rng, "normal")
    outputs = run_case(spec, case)
    outputs[2][1, 2] += 1e-2 * (1 + abs(outputs[2][1, 2]))
    (result,) = spec.check(case, outputs).values()
    assert not result.ok and result.mismatches == 1 and result.first_mismatches[0][0] == (1, 2)


def test_unwritten_output_is_caught(rng):
    from numbakern import get

    spec = get("vector_add")
    case = spec.make_case({"n": 10}, rng, "uniform")
    outputs = {2: case.args[2].copy()}  # the NaN-poisoned buffer the kernel never touched
    (result,) = spec.check(case, outputs).values()
    assert not result.ok and result.mismatches == 10 and result.max_abs_error == np.inf
