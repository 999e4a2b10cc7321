"""Every registered kernel against its independent reference, on fresh random inputs.

Runs in the simulator on a CPU-only machine, with every checker on whatever ``NUMBAKERN_SIM_CHECKS`` says (the one
test that each registered kernel passes them at each of its test sizes), and on the real GPU with ``pytest --gpu``.
In the simulator the largest test size of each kernel runs its threads and blocks in a shuffled order (the seed from
the test's rng), the others in the GPU-like fixed order: a kernel that is right only in one order (an unordered
exchange between blocks, a race its checker could not see) fails.
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


def largest(spec) -> dict:
    return max(spec.test_sizes, key=lambda s: sum(s.values()))


@pytest.mark.parametrize("name, size", CASES)
def test_kernel_matches_reference(name, size, rng):
    from numbakern import get

    spec = get(name)
    # each test draws its distribution with its inputs (``pytest --seed random``: a different one each run)
    dist = DISTRIBUTIONS[rng.integers(len(DISTRIBUTIONS))]
    case = spec.make_case(size, rng, dist)
    order = int(rng.integers(2**31)) if mode.in_simulator() and size == largest(spec) else None
    with contextlib.ExitStack() as simulated:
        if mode.in_simulator():
            simulated.enter_context(sim.checks("all"))
            simulated.enter_context(sim.shuffled(order))
        results = spec.check(case, run_case(spec, case))
    shuffled = f", threads in shuffled order {order}" if order is not None else ""
    for result in results.values():
        assert result.ok, f"{dist} inputs{shuffled}: {result}"


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
