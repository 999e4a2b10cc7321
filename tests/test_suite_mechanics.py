"""How the suite itself runs (tests/conftest.py), tried on a small suite of its own in a fresh pytest process: the
workers share set-up and a gate's records (no gate skips for want of the tests that ran on another worker), the
files run longest first, and the slow tests are the marked and the measured ones."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = Path(__file__).with_name("conftest.py")

SUITE = '''
import os
import pytest

KEYS = [f"k{i}" for i in range(8)]


def value(key):
    return int(key[1:]) ** 2


@pytest.mark.parametrize("key", KEYS)
def test_part(key, run_store):
    made = run_store.once("setup", lambda: {"pid": os.getpid()})
    run_store.record("parts", key, {"ran_in": os.getpid(), "setup_made_by": made["pid"]})
    run_store.record("squares", key, value(key))


def test_gate(run_records):
    done = run_records.records("squares")
    run_records.record("gate", "found", len(done))
    squares = [done[k] if k in done else value(k) for k in KEYS]
    assert sum(squares) == sum(i * i for i in range(8))
'''


@pytest.fixture
def small_suite(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copy(CONFTEST, pytester.path / "conftest.py")
    pytester.makepyfile(test_small=SUITE)
    return pytester


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A fresh pytest process on the small suite, without numbakern's own plugin: the suite uses none of it, and
    its import (numba's) cost each pytest process and each of its workers over a second of CPU."""
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:numbakern", *args)


def _records(pytester: pytest.Pytester, kind: str) -> dict:
    """What the run's tests recorded (pytester runs them with a ``--basetemp`` in its folder)."""
    (folder,) = pytester.path.glob(f"runpytest-[0-9]*/run-store/records-{kind}")
    return dict(json.loads(p.read_text()) for p in folder.glob("*.json"))


def test_a_gate_sees_the_records_of_every_worker_and_set_up_is_made_once(small_suite):
    result = _run(small_suite, "-n", "2")
    result.assert_outcomes(passed=9)
    assert _records(small_suite, "gate")["found"] >= 4  # it ran last: after the parts the workers were given first
    parts = _records(small_suite, "parts")
    assert len(parts) == 8 and len({p["ran_in"] for p in parts.values()}) == 2  # both workers ran parts ...
    assert len({p["setup_made_by"] for p in parts.values()}) == 1  # ... and one of them made the set-up


def test_a_gate_run_alone_computes_what_it_lacks_instead_of_skipping(small_suite):
    result = _run(small_suite, "-n", "2", "-k", "gate")
    result.assert_outcomes(passed=1)
    assert _records(small_suite, "gate")["found"] == 0


def test_files_run_longest_first_and_measured_slow_tests_are_marked(small_suite):
    (small_suite.path / "test_other.py").write_text("def test_quick():\n    pass\n\n\ndef test_long():\n    pass\n")
    (small_suite.path / "durations.json").write_text(json.dumps(
        {"test_other.py::test_quick": 0.1, "test_other.py::test_long": 99.0}))
    result = _run(small_suite, "-n", "0", "--collect-only", "-q")
    order = [line for line in result.stdout.lines if "::" in line]
    assert order[0].startswith("test_other.py::") and order[-1] == "test_small.py::test_gate", order
    slow = _run(small_suite, "-n", "0", "-m", "slow", "--collect-only", "-q")
    assert [line for line in slow.stdout.lines if "::" in line] == ["test_other.py::test_long"]


def test_a_test_a_quick_gate_gathers_from_is_never_slow(small_suite):
    """Left out of the quick tier, a part measured slow would be computed by the quick gate, at its end and alone
    (test_corpus.py's four slowest kernels did that: ten seconds on one worker while the other waited)."""
    (small_suite.path / "durations.json").write_text(json.dumps({"test_small.py::test_part[k3]": 99.0}))
    quick = _run(small_suite, "-n", "0", "-m", "not slow", "--collect-only", "-q")
    assert "test_small.py::test_part[k3]" in quick.stdout.lines
    # a slow gate's parts are slow as they measure (the gate does their work in the whole suite only)
    small = small_suite.path / "test_small.py"
    small.write_text(small.read_text().replace("def test_gate(", "@pytest.mark.slow\ndef test_gate("))
    slow = _run(small_suite, "-n", "0", "-m", "slow", "--collect-only", "-q")
    assert [line for line in slow.stdout.lines if "::" in line] == ["test_small.py::test_part[k3]",
                                                                    "test_small.py::test_gate"]


def test_store_durations_writes_each_tests_cpu_seconds(small_suite):
    (small_suite.path / "test_busy.py").write_text(
        "import time\n\n\ndef test_busy():\n    end = time.process_time() + 0.3\n"
        "    while time.process_time() < end:\n        pass\n")
    result = _run(small_suite, "-n", "2", "--store-durations")
    result.assert_outcomes(passed=10)
    times = json.loads((small_suite.path / "durations.json").read_text())
    assert len(times) == 10 and 0.3 <= times["test_busy.py::test_busy"] < 5, times
    assert all(re.fullmatch(r"test_\w+\.py::.+", k) for k in times)


def test_a_whole_run_drops_the_times_of_tests_that_are_gone_and_a_partial_run_keeps_them(small_suite):
    small_suite.makeini("[pytest]\ntestpaths = .\n")
    gone = "test_small.py::test_removed"
    durations = small_suite.path / "durations.json"
    durations.write_text(json.dumps({gone: 9.0}))
    partial = _run(small_suite, "-n", "2", "--store-durations", "-k", "gate")
    partial.assert_outcomes(passed=1)
    assert set(json.loads(durations.read_text())) == {gone, "test_small.py::test_gate"}
    whole = _run(small_suite, "-n", "2", "--store-durations")
    whole.assert_outcomes(passed=9)
    times = json.loads(durations.read_text())
    assert gone not in times and len(times) == 9, times
