"""Fixtures shared by the whole suite, and how it runs in minutes.

Random inputs come from numbakern's pytest plugin (``numbakern/pytest_plugin.py``), as in any user's project: a
test takes the ``rng`` fixture (a ``numpy.random.Generator``) or the ``seed`` fixture (the int behind it, for torch
or CuPy generators), seeded per test from the run's base seed (``pytest --seed N|random``); a failing test's report
has a "random inputs" section with its seed and the command that reproduces it.

How the suite runs:

- on pytest-xdist's workers, one per core and one more (``-n auto`` in pyproject's addopts and
  ``pytest_xdist_auto_num_workers`` below; ``-n 0`` runs one process), the test files longest first by their
  measured CPU times (``tests/durations.json``, which ``pytest --store-durations`` writes again: CPU time, child
  processes included, is what a test costs whatever else the machine runs), so that
  the long ones start at once and the short ones fill the end; a file's tests stay together and in their order, so
  a module fixture is made at most once per worker;
- ``slow``: a test marked so (``@pytest.mark.slow``, or a module's ``pytestmark``), or one that durations.json
  measured at ``SLOW_SECONDS`` or more, unless a gate of the quick tier gathers its result (a gate computes what
  the tests it gathers from did not, so they run in the quick tier, spread over the workers, not in the gate at
  its end). ``pytest -m "not slow"`` is the quick tier;
- ``run_store``: what the tests of one run share across the workers: set-up made once (the first worker to need it
  makes it under a file lock, the others read it) and results that a gate test gathers from tests that ran on any
  worker (never a module global, which a worker of its own would find empty);
- the translate command, which the tests run as a process of its own some two hundred times, is forked from a
  process per worker that imported numba and the translator once (``tests/forked.py``: a second of imports saved
  per command; a fresh process wherever a forked one could differ, and ``tests/test_forked.py`` compares the two).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

DURATIONS = Path(__file__).with_name("durations.json")
#: a test measured at this many CPU seconds or more (set-up and teardown included) is slow: the quick tier keeps
#: about 190 CPU seconds of tests (of about 1,100), about 3 minutes on 2 cores with the workers' start (0.8 kept
#: 212: 3.1 min, once the translate command's tests were forked and cheaper; 1.0 kept 260: 3.2 min)
SLOW_SECONDS = 0.7
#: what a test without a measured time is taken to need, for the order
UNMEASURED_SECONDS = 0.5


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--store-durations", action="store_true",
                     help=f"write each test's CPU time (set-up, call and teardown, its child processes included) "
                          f"into {DURATIONS.name}, which orders the test files and marks the slow tests")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: one of the long tests; pytest -m 'not slow' is the quick tier")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` in simulator mode: a worker per core and one more. With a worker per core, a fifth of the cores'
    time went idle on 2 cores (a test waiting on its child processes, on a file lock another worker holds while it
    makes what both need, or on a deadline); a third worker fills it, for some CPU time of its own: the whole suite
    with an empty cache took 12.3 and 12.7 min on two workers, 11.1, 12.0 and 11.9 on three. With ``--gpu``, xdist's
    own count (numbakern's plugin gives each worker a GPU)."""
    if config.getoption("gpu", False):
        return None
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return cores + 1


#: this run's measured times, test id -> CPU seconds (on xdist's controller: every worker's reports come to it)
_times: dict[str, float] = {}
_CPU = "cpu_seconds"
_started = pytest.StashKey[float]()


def measured() -> dict[str, float]:
    try:
        return json.loads(DURATIONS.read_text())
    except (OSError, ValueError):
        return {}


def _cpu_seconds() -> float:
    """The CPU time of this process and of every process it started, live or ended: what a test costs a machine,
    whatever else runs on it (wall-clock time on a shared machine says more about the others)."""
    import resource

    import psutil

    own = resource.getrusage(resource.RUSAGE_SELF)
    ended = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + ended.ru_utime + ended.ru_stime
    for child in psutil.Process().children(recursive=True):
        try:
            t = child.cpu_times()
        except psutil.Error:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


@pytest.hookimpl(tryfirst=True)  # before the fixtures are made
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.config.getoption("store_durations"):
        item.stash[_started] = _cpu_seconds()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if report.when == "teardown" and _started in item.stash:
        report.user_properties.append((_CPU, round(_cpu_seconds() - item.stash[_started], 3)))
    return report


@pytest.hookimpl(tryfirst=True)  # the slow marks before pytest's -m selects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    times = measured()

    def slow(item: pytest.Item) -> bool:
        return item.get_closest_marker("slow") is not None or times.get(item.nodeid, 0.0) >= SLOW_SECONDS

    # a test whose result a gate of the quick tier gathers (one that takes run_store, in the file of a gate that is
    # not slow) is never slow: left out, its work would move into the gate, which runs last and alone
    gates = [item for item in items if "run_records" in getattr(item, "fixturenames", ())]
    gathered = {_file(gate) for gate in gates if not slow(gate)}
    for item in items:
        if item.get_closest_marker("slow") is not None or times.get(item.nodeid, 0.0) < SLOW_SECONDS:
            continue
        if item in gates or _file(item) not in gathered or "run_store" not in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
    # files longest first; in a file its own order (stable sort); gates last, after the tests they gather from
    per_file: dict[str, float] = {}
    for item in items:
        per_file[_file(item)] = per_file.get(_file(item), 0.0) + times.get(item.nodeid, UNMEASURED_SECONDS)
    items.sort(key=lambda item: ("run_records" in getattr(item, "fixturenames", ()), -per_file[_file(item)],
                                 _file(item)))


def _file(item: pytest.Item) -> str:
    return _file_of(item.nodeid)


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    for name, value in report.user_properties:
        if name == _CPU:
            _times[report.nodeid] = value


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if not config.getoption("store_durations") or hasattr(config, "workerinput"):
        return
    # a whole run (the testpaths, no -k or -m, not stopped early) measured every test there is: its times are the
    # file; a partial run's go over the stored ones, and the files that are gone are dropped
    whole = (config.args_source == pytest.Config.ArgsSource.TESTPATHS and not config.option.keyword
             and not config.option.markexpr and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
             and not session.shouldstop and not session.shouldfail)
    root = Path(str(config.rootpath))
    times = {**({} if whole else measured()), **{k: round(v, 2) for k, v in _times.items()}}
    kept = {k: v for k, v in sorted(times.items()) if (root / _file_of(k)).exists()}
    tmp = DURATIONS.with_suffix(".tmp")
    tmp.write_text(json.dumps(kept, indent=0, sort_keys=True) + "\n")
    os.replace(tmp, DURATIONS)


# ---------------------------------------------------------------------------------------------------------------
# what the workers of one run share


class RunStore:
    """A folder all the workers of one run see (pytest's base temporary folder of the run), with a file lock per
    name: ``once`` and ``folder`` make set-up once per run, ``record``/``records`` carry results to a gate."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def _lock(self, name: str) -> FileLock:
        return FileLock(str(self.root / f"{name}.lock"))

    def once(self, name: str, make: Callable[[], Any]) -> Any:
        """``make()``'s value (JSON data), made by the first worker to ask, read by the others."""
        path = self.root / f"{name}.json"
        with self._lock(name):
            if path.exists():
                return json.loads(path.read_text())
            value = make()
            path.write_text(json.dumps(value))
            return value

    def folder(self, name: str, build: Callable[[Path], None]) -> Path:
        """A folder ``build(folder)`` filled, by the first worker to ask; a failed build is tried again by the next."""
        path = self.root / name
        done = self.root / f"{name}.done"
        with self._lock(name):
            if not done.exists():
                if path.exists():
                    shutil.rmtree(path)
                path.mkdir()
                build(path)
                done.touch()
        return path

    def record(self, kind: str, key: str, value: Any) -> None:
        """One test's result for a gate (``records(kind)``)."""
        folder = self.root / f"records-{kind}"
        folder.mkdir(exist_ok=True)
        name = hashlib.sha256(key.encode()).hexdigest()[:32]
        tmp = folder / f".{name}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps([key, value]))
        os.replace(tmp, folder / f"{name}.json")

    def records(self, kind: str) -> dict[str, Any]:
        """Every ``record(kind, key, value)`` of this run so far, ``{key: value}``."""
        folder = self.root / f"records-{kind}"
        pairs = (json.loads(path.read_text()) for path in (folder.glob("*.json") if folder.exists() else ()))
        return dict(pairs)


@pytest.fixture(scope="session")
def run_store(tmp_path_factory: pytest.TempPathFactory) -> RunStore:
    """What the workers of this run share (see ``RunStore``)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    return RunStore(shared / "run-store")


@pytest.fixture
def run_records(run_store: RunStore) -> RunStore:
    """``run_store``, for a gate test: the tests that take this fixture run after all the others."""
    return run_store
