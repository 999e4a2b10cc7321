"""The kernel library, unchanged, with numba-cuda-mlir as the front end: every kernel at each of its simulator
sizes against its float64 reference, all checkers on. Only in an environment without numba-cuda (the CI's mlir
job): there the library takes ``cuda`` from numba-cuda-mlir (``numbakern.frontend.rebind``)."""

import sys

import numpy as np
import pytest

import numbakern
from numbakern import sim
from numbakern.frontend.choice import numba_cuda_installed

pytestmark = pytest.mark.skipif(numba_cuda_installed(),
                                reason="numba-cuda is installed: the library uses its cuda here (the mlir CI job "
                                       "runs this without numba-cuda)")

SPECS = [] if numba_cuda_installed() else numbakern.all_specs()
CASES = [(spec, size) for spec in SPECS for size in spec.test_sizes]


def test_the_whole_library_loads_on_mlir():
    assert len(SPECS) >= 30
    for spec in SPECS:
        module = sys.modules[spec.kernel.fn.__module__ if hasattr(spec.kernel, "fn") else spec.module]
        assert module.cuda is sys.modules["numba_cuda_mlir.cuda"], spec.name
    assert "numba" not in sys.modules


@pytest.mark.parametrize("spec, size", CASES, ids=[f"{s.name}-{'x'.join(map(str, z.values()))}" for s, z in CASES])
def test_library_kernel_matches_reference_on_mlir(spec, size, seed):
    case = spec.make_case(size, np.random.default_rng(seed), "normal")
    with sim.checks("all"):
        outputs = numbakern.run_case(spec, case)
    for result in spec.check(case, outputs).values():
        assert result.ok, f"seed {seed}: {result}"
