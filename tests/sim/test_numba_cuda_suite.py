"""numba-cuda's own tests, run as numba-cuda's CI runs them (its pytest.ini with ``filterwarnings = error``, its
conftest), on the stock simulator and on numbakern's engine with every check on: every test that passes on the
stock simulator passes on numbakern's, but for defects a checker finds in the test's own kernel
(``numbakern.sim.numba_cuda_suite.KERNEL_DEFECTS``).

A selection of cudapy modules (a couple of minutes on both engines); ``scripts/numba_cuda_suite.py --all`` runs the
whole of cudapy and doc_examples the same way (docs/simulator.md has its table).
"""

from __future__ import annotations

import pytest

from numbakern.sim import numba_cuda_suite as suite

#: modules that exercise what numbakern's engine adds to the stock one's work (typing through the helper,
#: dispatchers, overloads, recursion, signatures, casts, checked arrays, debug kernels, records) and are quick on
#: the stock simulator too
CI_MODULES = (
    "cudapy.test_array", "cudapy.test_array_alignment", "cudapy.test_array_args", "cudapy.test_array_methods",
    "cudapy.test_casting", "cudapy.test_complex", "cudapy.test_dispatcher", "cudapy.test_exception",
    "cudapy.test_freevar", "cudapy.test_idiv", "cudapy.test_intrinsics", "cudapy.test_make_function_to_jit_function",
    "cudapy.test_operator", "cudapy.test_powi", "cudapy.test_record_dtype", "cudapy.test_recursion",
    "cudapy.test_sm", "cudapy.test_ssa", "cudapy.test_sync", "cudapy.test_vector_type",
)


#: the classes of numbakern-only failure that are not numbakern's to fix (numba_cuda_suite.classify)
ALLOWED = ("defect", "not-the-engine", "stock-limitation")


#: the modules in parts of about the same time, each a test of its own (pytest-xdist runs them side by side)
PARTS = tuple(CI_MODULES[k::4] for k in range(4))
#: the fewest tests numbakern's engine passes over all the parts (both engines skipping everything would pass the
#: comparison)
AT_LEAST_PASSED = 250


def _compare(modules):
    for needed in ("filecheck", "pytest_benchmark", "pytest_timeout"):
        pytest.importorskip(needed, reason="numba-cuda's test suite needs its test dependencies "
                                           "(pip install -e '.[test]')")
    comparison = suite.compare(list(modules), per_test_timeout=120, chunk=len(modules))
    report = suite.report(comparison, "tests/sim/test_numba_cuda_suite.py")
    for engine, run in comparison.runs.items():
        assert not run.crashed, f"{engine}: no results from {run.crashed}\n{report}"
    assert not comparison.different_sets(), f"the engines ran different tests\n{report}"
    failing = {tid: (cls, cause) for tid, cls, cause in comparison.numbakern_only()}
    unexplained = {tid: why for tid, why in failing.items() if why[0] not in ALLOWED}
    assert not unexplained, f"numbakern-only failures: {unexplained}\n{report}"
    # the listed defects are still found (else the list, and docs/simulator.md, are out of date)
    selected = {tid for tid in suite.KERNEL_DEFECTS if suite.module_of(tid) in modules}
    assert selected <= set(failing), f"no longer failing: {sorted(selected - set(failing))}\n{report}"
    return sum(c.outcome == "passed" for c in comparison.runs["numbakern"].cases.values())


@pytest.mark.slow
@pytest.mark.parametrize("modules", PARTS, ids=[f"part{k + 1}" for k in range(len(PARTS))])
def test_numba_cudas_tests_that_pass_on_the_stock_simulator_pass_on_numbakerns_engine(modules, run_store):
    run_store.record("numba-cuda-suite", ",".join(modules), _compare(modules))


@pytest.mark.slow
def test_numbakerns_engine_passes_enough_of_numba_cudas_tests(run_records):
    """The parts' passed tests together (a part whose test did not run in this run is compared here)."""
    done = run_records.records("numba-cuda-suite")
    passed = sum(done[",".join(m)] if ",".join(m) in done else _compare(m) for m in PARTS)
    assert passed >= AT_LEAST_PASSED, f"only {passed} passed on numbakern's engine"
