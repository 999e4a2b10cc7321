"""pytest plugin (registered through the ``pytest11`` entry point): run kernel tests on a CPU-only machine.

- With no GPU (or with ``--sim``) it sets ``NUMBA_ENABLE_CUDASIM=1`` before anything imports numba, so every
  ``@cuda.jit`` launch runs in the simulator, on numbakern's engine with its checkers on
  (``NUMBAKERN_SIM_CHECKS``, default ``all`` under pytest).
- ``--gpu`` forces the real CUDA target and fails at once if there is no GPU.
- ``@pytest.mark.gpu`` tests skip cleanly in simulator mode; ``@pytest.mark.sim`` tests skip on the GPU.
- If numba was imported in the other mode before the plugin could act, the run stops with a message that says
  how to fix it, instead of running every test in the wrong mode.
- Random inputs: a test takes the ``rng`` fixture (a ``numpy.random.Generator``) or the ``seed`` fixture (the int
  behind it, for torch or CuPy generators). Each test's seed is derived from the run's base seed and the test's id,
  so a test draws the same inputs however the suite is selected or ordered. The base seed is ``DEFAULT_SEED``;
  ``pytest --seed N`` picks another and ``pytest --seed random`` a fresh one per run (printed in the header). When
  a test that drew random inputs fails, its report has a "random inputs" section with the seed and the command
  that reproduces the failure.
- The ``device`` fixture says where the test's kernels run (``device.simulator``, ``device.name``) and moves
  arrays there (``device.to_device``).
- With pytest-xdist (``pytest --gpu -n auto``) each worker gets a GPU of its own: worker ``gwK`` sees only GPU
  ``K mod n`` of the n visible ones (round robin once workers outnumber GPUs), through ``CUDA_VISIBLE_DEVICES`` set
  in the worker before anything in it can initialise CUDA. Without this every worker would use the first GPU. The
  GPUs are listed without initialising CUDA (``numbakern.gpus``: ``nvidia-smi``, or ``CUDA_VISIBLE_DEVICES``;
  ``NUMBAKERN_FAKE_GPUS`` for tests), and the header says which worker has which GPU.
- A kernel defect the simulator finds (``numbakern.sim.SimulationError``: a race, an out-of-bounds index, ...) is
  reported from the test and the kernel's own lines: the simulator's and numba's frames are left out of the
  traceback, as pytest leaves out its own (``pytest --fulltrace`` shows them).

This module must not import numba at import time: pytest loads it before conftest files and test modules.
"""

from __future__ import annotations

import os
import secrets
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import numpy as np
import pytest

from . import gpus, mode

CHECKS_ENV = "NUMBAKERN_SIM_CHECKS"
#: pytest-xdist's name of the worker a process is (``gw0``, ``gw1``, ...), set in the worker's environment
XDIST_WORKER_ENV = "PYTEST_XDIST_WORKER"
#: the base seed when ``--seed`` is not given
DEFAULT_SEED = 20_251_122

_SEED = pytest.StashKey[int]()
_BASE = pytest.StashKey[int]()
_WATCH = pytest.StashKey[object]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("numbakern", "numbakern: CUDA simulator or GPU")
    group.addoption("--sim", action="store_true", help="run kernels in the CUDA simulator even if a GPU is present")
    group.addoption("--gpu", action="store_true", help="run kernels on the GPU; error if there is none")
    group.addoption("--seed", default=None, metavar="N|random",
                    help=f"base seed of every test's random inputs (the rng and seed fixtures; default "
                         f"{DEFAULT_SEED}; 'random': a fresh one, printed in the header)")
    group.addoption("--profile-kernel", action="append", default=[], metavar="KERNEL",
                    help="profile each distinct launch of the declared kernel KERNEL in the simulator "
                         "(numbakern.profile; repeatable) and print the profiles after the run")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    # Runs before conftest.py files and test modules are imported: the last moment the mode can still be chosen, and
    # the first moment of an xdist worker at which this plugin runs (xdist names the worker in the environment
    # before it parses the command line), before anything in it can initialise CUDA.
    _choose_worker_gpu(early_config.known_args_namespace)
    _choose_mode(early_config.known_args_namespace)


def _choose_worker_gpu(options) -> None:
    """In a pytest-xdist worker, make only the worker's own GPU visible (``numbakern.gpus.worker_gpu``)."""
    number = gpus.xdist_worker_number(os.environ.get(XDIST_WORKER_ENV, ""))
    if number is None or getattr(options, "sim", False):
        return
    found = _visible_gpus()
    if found:
        os.environ[gpus.VISIBLE_ENV] = gpus.worker_gpu(number, found).token


def _visible_gpus() -> list[gpus.Gpu]:
    try:
        return gpus.visible()
    except gpus.GpuListError as e:
        raise pytest.UsageError(f"numbakern: {e}") from None


def _xdist_workers(config: pytest.Config) -> int:
    """How many pytest-xdist workers this run starts (0 without xdist, or with ``-n 0``)."""
    if config.getoption("dist", "no") == "no":
        return 0
    count = 0
    for spec in config.getoption("tx", None) or ():
        times, star, _ = str(spec).partition("*")
        count += int(times) if star and times.isdigit() else 1
    return count


def worker_gpu_lines(workers: int, found: list[gpus.Gpu]) -> list[str]:
    """The header's account of which xdist worker has which GPU."""
    if not workers or not found:
        return []
    by_gpu: dict[int, list[str]] = {}
    for k in range(workers):
        by_gpu.setdefault(gpus.worker_gpu(k, found).index, []).append(f"gw{k}")
    shared = " (round robin: more workers than GPUs)" if workers > len(found) else ""
    lines = [f"numbakern: {workers} xdist workers on {len(found)} GPU{'s' if len(found) != 1 else ''}, each with "
             f"CUDA_VISIBLE_DEVICES set to its own{shared}:"]
    for g in found:
        if g.index in by_gpu:
            lines.append(f"  {g.label} [{g.token}]: {', '.join(by_gpu[g.index])}")
    return lines


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
        if getattr(options, "fulltrace", False):
            from .sim.errors import TRACEBACK_ENV

            os.environ.setdefault(TRACEBACK_ENV, "full")  # the simulator's errors keep its own frames
        # numbakern itself was imported (to load this plugin) before the mode was chosen, so its import-time
        # install did not run: switch the simulator to numbakern's engine now, before any test launches a kernel.
        from . import sim as numbakern_sim

        numbakern_sim.install()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu: needs a real CUDA GPU (skipped in simulator mode)")
    config.addinivalue_line("markers", "sim: needs the CUDA simulator (skipped with --gpu)")
    _base_seed(config)  # a bad --seed is a usage error before any test runs
    names = config.getoption("profile_kernel", None)
    if names:
        if not mode.in_simulator():
            raise pytest.UsageError("numbakern: --profile-kernel profiles launches in the simulator; drop --gpu")
        from .profiler.watch import Watch

        config.stash[_WATCH] = watch = Watch(names, "H100")
        watch.install()


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    watch = config.stash.get(_WATCH, None)
    if watch is not None:
        terminalreporter.section("numbakern profile")
        terminalreporter.write_line(watch.report())


def pytest_report_header(config: pytest.Config) -> list[str]:
    where = f"CUDA simulator ({CHECKS_ENV}={os.environ.get(CHECKS_ENV, '')})" if mode.sim_requested() \
        else "real CUDA GPU"
    lines = [f"numbakern: {where}", f"random inputs: base seed {_base_seed(config)} (pytest --seed N to change it)"]
    workers = _xdist_workers(config)
    if workers and not config.getoption("sim", False):
        lines += worker_gpu_lines(workers, _visible_gpus())
    return lines


def pytest_runtest_setup(item: pytest.Item) -> None:
    sim = mode.in_simulator()
    if sim and item.get_closest_marker("gpu"):
        pytest.skip("needs a CUDA GPU (running in the simulator; use --gpu on a GPU machine)")
    if not sim and item.get_closest_marker("sim"):
        pytest.skip("simulator-only test (running on the GPU)")


# ---------------------------------------------------------------------------------------------------------------
# random inputs


def _base_seed(config: pytest.Config) -> int:
    if _BASE in config.stash:
        return config.stash[_BASE]
    given = config.getoption("--seed")
    if given is None:
        base = DEFAULT_SEED
    elif given == "random":
        base = secrets.randbits(32)
    else:
        try:
            base = int(given)
        except ValueError:
            raise pytest.UsageError(f"--seed must be an integer or 'random', got {given!r}") from None
        if base < 0:
            raise pytest.UsageError(f"--seed must be non-negative, got {base}")
    config.stash[_BASE] = base
    return base


def derive_seed(base: int, nodeid: str) -> int:
    """The seed of one test: a function of the base seed and the test's id (stable across runs and selections)."""
    return int(np.random.SeedSequence([base, zlib.crc32(nodeid.encode())]).generate_state(1)[0])


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    """This test's seed (also recorded for the failure report)."""
    value = derive_seed(_base_seed(request.config), request.node.nodeid)
    request.node.stash[_SEED] = value
    return value


@pytest.fixture
def rng(seed: int) -> np.random.Generator:
    """A generator seeded for this test alone; its seed is printed if the test fails."""
    return np.random.default_rng(seed)


# ---------------------------------------------------------------------------------------------------------------
# where kernels run


@dataclass(frozen=True)
class Device:
    """Where a test's kernels run: numbakern's simulator or a CUDA GPU."""

    simulator: bool
    name: str     # the GPU's name, or "numbakern simulator"
    checks: str   # the simulator's checkers in force (NUMBAKERN_SIM_CHECKS); "" on a GPU
    visible: str = ""  # CUDA_VISIBLE_DEVICES of this process (an xdist worker's own GPU); "" when unset

    def to_device(self, array: Any) -> Any:
        """``array`` where kernels read it: a device array on the GPU (the simulator takes host arrays as they are,
        and so does this)."""
        from numba import cuda  # the mode is chosen: numba may be imported now

        return cuda.to_device(array)

    def synchronize(self) -> None:
        """Wait for the kernels launched so far (the simulator's launches finish before they return)."""
        from numba import cuda

        cuda.synchronize()


@pytest.fixture(scope="session")
def device() -> Device:
    """Where this run's kernels run (``device.simulator``, ``device.name``), and ``device.to_device(array)``."""
    if mode.in_simulator():
        return Device(True, "numbakern simulator", os.environ.get(CHECKS_ENV, ""))
    from numba import cuda

    name = cuda.get_current_device().name
    return Device(False, name.decode() if isinstance(name, bytes) else str(name), "",
                  os.environ.get(gpus.VISIBLE_ENV, ""))


# ---------------------------------------------------------------------------------------------------------------
# failure reports


def _engine_folders() -> tuple[str, ...]:
    """Where the frames of the simulator, numba and greenlet come from (their source folders)."""
    folders = [os.path.join(os.path.dirname(__file__), "sim")]
    for name in ("numba", "numba.cuda", "numba_cuda", "greenlet"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            folders.append(os.path.dirname(module.__file__))
    return tuple(f + os.sep for f in folders)


def _drop_frames(tb: TracebackType, drop: Callable[[str], bool]) -> None:
    """Unlink from the traceback ``tb`` the frames whose file ``drop`` names, in place (pytest re-reads a report's
    frames from the raw traceback, so a filtered copy would not do); the first frame (pytest's) always stays."""
    kept = [tb]
    while (tb := tb.tb_next) is not None:
        if not drop(tb.tb_frame.f_code.co_filename):
            kept.append(tb)
    for a, b in zip(kept, kept[1:]):
        a.tb_next = b
    kept[-1].tb_next = None


def _is_kernel_defect(error: BaseException) -> bool:
    errors = sys.modules.get("numbakern.sim.errors")
    return errors is not None and isinstance(error, errors.SimulationError)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    excinfo = call.excinfo
    if excinfo is not None and _is_kernel_defect(excinfo.value) and not item.config.getoption("fulltrace", False):
        # the test's and the kernel's own frames; the message names the threads and the lines
        engine = _engine_folders()
        _drop_frames(excinfo.tb, lambda filename: filename.startswith(engine))
        excinfo.traceback = type(excinfo.traceback)(excinfo.tb)  # the cached entries, read again
    report = yield
    value = item.stash.get(_SEED, None)
    if value is not None and report.failed:
        base = _base_seed(item.config)
        why = (f"this test's seed: {value} (np.random.default_rng({value})), from base seed {base}\n"
               f"reproduce: pytest --seed {base} '{item.nodeid}'")
        report.sections.append(("random inputs", why))
    return report
