"""The front end's one helper process (``numbakern.frontend.helper``): it types kernels for the simulator and runs
named functions (translate's work) for a caller in simulator mode; one process serves both."""

from __future__ import annotations

import os
import threading
import time
import types

import numpy as np
import pytest
from numba import cuda

from numbakern import mode
from numbakern.frontend import client, helper
from numbakern.sim import config, kerneltypes

FUNCTIONS = "tests.numbakern.helper_functions"


def _environment(name):
    return client.call(f"{FUNCTIONS}:environment", name=name)


def test_a_named_function_runs_in_the_helper_with_json_arguments(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pid, _, cwd = _environment("HOME")
    assert pid != os.getpid()
    assert cwd == str(tmp_path), "relative paths in a request mean what they mean to the caller"


def test_its_errors_come_back_as_their_text():
    with pytest.raises(client.HelperCallError, match="^ValueError: no such thing$"):
        client.call(f"{FUNCTIONS}:fails", message="no such thing")


def test_only_the_functions_a_module_lists_run():
    with pytest.raises(client.HelperCallError, match=r"not_listed is not one of the functions .*\(HELPER_FUNCTIONS\)"):
        client.call(f"{FUNCTIONS}:not_listed")


def test_a_helper_started_under_other_backend_settings_is_replaced(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    first, seen, _ = _environment("OPENAI_BASE_URL")
    assert seen is None
    monkeypatch.setenv("NUMBAKERN_UNWATCHED_TEST_VARIABLE", "1")  # not one the helper must share: the same helper
    assert _environment("OPENAI_BASE_URL")[0] == first
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    second, seen, _ = _environment("OPENAI_BASE_URL")
    assert second != first and seen == "http://127.0.0.1:9/v1"
    monkeypatch.delenv("OPENAI_BASE_URL")
    third, seen, _ = _environment("OPENAI_BASE_URL")
    assert third != second and seen is None


@cuda.jit
def _doubled(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * 2


@pytest.mark.skipif(not mode.in_simulator(), reason="the simulator types kernels in the helper only in simulator mode")
@pytest.mark.skipif(not config.current().typing, reason="typing is off (NUMBAKERN_SIM_TYPING=0): no helper to share")
def test_typing_and_named_functions_share_one_helper(tmp_path, monkeypatch, rng):
    monkeypatch.setenv("NUMBAKERN_CACHE_DIR", str(tmp_path))  # a fresh cache: the launch asks the helper
    kerneltypes.forget()
    helper.stop()
    before = client.stats["helper"]
    x = rng.standard_normal(40).astype(np.float32)
    out = np.full_like(x, np.nan)
    _doubled[2, 32](x, out)
    assert client.stats["helper"] == before + 1
    np.testing.assert_array_equal(out, x * 2)
    typed_by = helper._proc.pid
    assert _environment("HOME")[0] == typed_by


def test_a_request_two_processes_miss_together_is_typed_once(tmp_path, monkeypatch):
    """Two pytest-xdist workers (here two threads: each takes the key's lock through its own open file, as a process
    does) reaching the same kernel at once: the second waits for the first's entry instead of asking its helper."""
    monkeypatch.setenv("NUMBAKERN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(client, "_memory", {})
    typing_started, second_asks = threading.Event(), threading.Event()
    asked = []

    def slow_helper(request):
        asked.append(threading.current_thread().name)
        typing_started.set()
        second_asks.wait(10)
        time.sleep(0.3)  # the second thread's disk read misses meanwhile: the entry is not stored yet
        return {"ok": True, "functions": [], "seconds": 1.0}

    monkeypatch.setattr(client, "_ask_helper", slow_helper)
    request = types.SimpleNamespace(key="a" * 64)
    found = {}
    first = threading.Thread(target=lambda: found.setdefault("first", client.facts(request)), name="first")
    first.start()
    assert typing_started.wait(10)
    client._memory.clear()  # the second thread stands for another process: nothing in its memory
    second_asks.set()
    found["second"] = client.facts(request)
    first.join(10)
    assert asked == ["first"], "the request was typed twice"
    assert found["first"] == found["second"] == {"ok": True, "functions": [], "seconds": 1.0}
