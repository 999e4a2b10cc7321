"""pytest plugin for running numba-cuda's own test suite (shipped in its wheel) against numbakern's engine.

numba-cuda's suite expects the fixture and option its repository's ``testing/conftest.py`` defines; the wheel does
not ship that file, so this plugin provides the same two (load it with ``-p tests.sim.numba_cuda.plugin``).

With ``NUMBAKERN_RUN_DOC_EXAMPLES=1`` the tests numba-cuda skips in the simulator only for what the stock engine
lacks run: a ``cuda`` module imported inside a function ("cuda import at non-top-level"; numbakern's engine reads
closure values), and the warp intrinsics.
"""

import os

import pytest

#: skip reasons of numba-cuda's suite that hold for the stock simulator engine only
RUNS_ON_NUMBAKERN = ("cuda import at non-top-level", "Warp Operations are not yet implemented")


def pytest_addoption(parser):
    parser.addoption("--dump-failed-filechecks", action="store_true",
                     help="Dump reproducers for FileCheck tests that fail.")


def pytest_configure(config):
    if os.environ.get("NUMBAKERN_RUN_DOC_EXAMPLES", "") not in ("", "0"):
        from numba.cuda import testing

        stock = testing.skip_on_cudasim

        def skip_on_cudasim(reason):
            if any(what in reason for what in RUNS_ON_NUMBAKERN):
                return lambda test: test
            return stock(reason)

        testing.skip_on_cudasim = skip_on_cudasim


@pytest.fixture(scope="class")
def initialize_from_pytest_config(request):
    request.cls._dump_failed_filechecks = request.config.getoption("dump_failed_filechecks")
