"""The pytest plugin, exercised in fresh pytest processes (the mode is fixed once numba is imported)."""

import pytest

pytest_plugins = ["pytester"]

SIM_AND_GPU_TESTS = """
import os
import pytest

def test_runs_in_the_simulator():
    from numba.cuda.core import config
    assert os.environ["NUMBA_ENABLE_CUDASIM"] == "1" and config.ENABLE_CUDASIM

@pytest.mark.gpu
def test_needs_a_gpu():
    raise AssertionError("a gpu test must not run in the simulator")
"""


@pytest.mark.sim
def test_without_a_gpu_tests_run_in_the_simulator_and_gpu_tests_skip(pytester):
    pytester.makepyfile(SIM_AND_GPU_TESTS)
    result = pytester.runpytest_subprocess("-rs", "--sim")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*numbakern: CUDA simulator*", "*needs a CUDA GPU*"])


@pytest.mark.sim
def test_gpu_flag_without_a_gpu_is_a_clear_error(pytester):
    from numbakern import mode

    if mode.gpu_available():
        pytest.skip("this machine has a GPU")
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("--gpu")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*--gpu was given but no CUDA GPU is visible*"])


@pytest.mark.sim
def test_numba_imported_in_the_wrong_mode_is_reported(pytester):
    # a conftest-less early import: a plugin given with -p that imports numba before our hook runs
    pytester.makepyfile(early_numba="import os\nos.environ['NUMBA_ENABLE_CUDASIM'] = '0'\nimport numba.cuda\n")
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "early_numba", "--sim")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*numba.cuda was imported in the real GPU target before the numbakern plugin could "
                                 "select the simulator*"])
