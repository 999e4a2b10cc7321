"""pytest plugin (registered through the ``pytest11`` entry point): run kernel tests on a CPU-only machine.

- With no GPU (or with ``--sim``) it sets ``NUMBA_ENABLE_CUDASIM=1`` before anything imports numba, so every
  ``@cuda.jit`` launch runs in the simulator, on numbakern's engine with its checkers on
  (``NUMBAKERN_SIM_CHECKS``, default ``all`` under pytest).
- ``--gpu`` forces the real CUDA target and fails at once if there is no GPU.
- ``@pytest.mark.gpu`` tests skip cleanly in simulator mode; ``@pytest.mark.sim`` tests skip on the GPU.
- If numba was imported in the other mode before the plugin could act, the run stops with a message that says
  how to fix it, instead of running every test in the wrong mode.

This module must not import numba at import time: pytest loads it before conftest files and test modules.
"""

from __future__ import annotations

import os

import pytest

from . import mode

CHECKS_ENV = "NUMBAKERN_SIM_CHECKS"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("numbakern", "numbakern: CUDA simulator or GPU")
    group.addoption("--sim", action="store_true", help="run kernels in the CUDA simulator even if a GPU is present")
    group.addoption("--gpu", action="store_true", help="run kernels on the GPU; error if there is none")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    # Runs before conftest.py files and test modules are imported: the last moment the mode can still be chosen.
    _choose_mode(early_config.known_args_namespace)


def _choose_mode(options) -> None:
    want_sim, want_gpu = bool(getattr(options, "sim", False)), bool(getattr(options, "gpu", False))
    if want_sim and want_gpu:
        raise pytest.UsageError("numbakern: --sim and --gpu exclude each other")
    if want_gpu:
        if not mode.gpu_available():
            raise pytest.UsageError("numbakern: --gpu was given but no CUDA GPU is visible "
                                    "(the CUDA driver reports none)")
        sim = False
    elif want_sim:
        sim = True
    elif mode.sim_requested():
        sim = True  # the user set NUMBA_ENABLE_CUDASIM=1 themselves
    else:
        sim = not mode.gpu_available()

    if mode.numba_cuda_imported() and mode.in_simulator() != sim:
        have = "the simulator" if mode.in_simulator() else "the real GPU target"
        want = "the simulator" if sim else "the GPU"
        raise pytest.UsageError(
            f"numbakern: numba.cuda was imported in {have} before the numbakern plugin could select {want}. "
            f"Set {mode.SIM_ENV}={'1' if sim else '0'} in the environment, or make sure nothing imports numba "
            "before pytest starts (e.g. a -p plugin or a sitecustomize)."
        )
    os.environ[mode.SIM_ENV] = "1" if sim else "0"
    if sim:
        os.environ.setdefault(CHECKS_ENV, "all")
        # numbakern itself was imported (to load this plugin) before the mode was chosen, so its import-time
        # install did not run: switch the simulator to numbakern's engine now, before any test launches a kernel.
        from . import sim as numbakern_sim

        numbakern_sim.install()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a real CUDA GPU (skipped in simulator mode)")
    config.addinivalue_line("markers", "sim: needs the CUDA simulator (skipped with --gpu)")


def pytest_report_header(config: pytest.Config) -> str:
    if mode.sim_requested():
        return f"numbakern: CUDA simulator ({CHECKS_ENV}={os.environ.get(CHECKS_ENV, '')})"
    return "numbakern: real CUDA GPU"


def pytest_runtest_setup(item: pytest.Item) -> None:
    sim = mode.in_simulator()
    if sim and item.get_closest_marker("gpu"):
        pytest.skip("needs a CUDA GPU (running in the simulator; use --gpu on a GPU machine)")
    if not sim and item.get_closest_marker("sim"):
        pytest.skip("simulator-only test (running on the GPU)")
