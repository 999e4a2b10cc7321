"""pytest plugin standing in for numba-cuda's ``testing/conftest.py`` when its test suite runs from the wheel.

numba-cuda's tests expect the option and the fixture its repository's ``testing/conftest.py`` defines; the wheel
ships the tests but not that file, so this plugin provides the same two (``-p tests.sim.numba_cuda.plugin``, as
``scripts/numba_cuda_suite.py`` loads it). It changes nothing else: it imports neither numba nor numbakern.
"""

import pytest


def pytest_addoption(parser):
    parser.addoption("--dump-failed-filechecks", action="store_true",
                     help="Dump reproducers for FileCheck tests that fail.")


@pytest.fixture(scope="class")
def initialize_from_pytest_config(request):
    request.cls._dump_failed_filechecks = request.config.getoption("dump_failed_filechecks")
