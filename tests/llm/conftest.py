"""Fixtures for the LLM backend's tests: the scripted server, the API key, and the check that the key went nowhere
but the Authorization header."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

# the llm backend is an optional extra (numbakern[llm]): without openai these tests skip, they do not fail
pytest.importorskip("openai", reason="the llm backend's tests need the openai package (pip install 'numbakern[llm]')")

from .server import ScriptedServer  # noqa: E402

#: the key the tests use; distinctive, so a leak anywhere is found by plain substring search
TEST_KEY = "sk-numbakern-test-7f3c9a1e5d-DO-NOT-LEAK"


@pytest.fixture
def server():
    s = ScriptedServer().start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="module")
def module_server():
    """One scripted server for a module's tests: the endpoint is in the environment the translate helper process
    keeps, so the translations that share it share one helper (a new endpoint starts a new helper, seconds each)."""
    s = ScriptedServer().start()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture
def module_llm_env(monkeypatch, module_server):
    """``llm_env`` with the module's server."""
    return _user_environment(monkeypatch, module_server)


@pytest.fixture
def llm_env(monkeypatch, server):
    return _user_environment(monkeypatch, server)


def _user_environment(monkeypatch, server):
    """The environment a user sets: key and endpoint; no proxy between the client and 127.0.0.1."""
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv("OPENAI_CUSTOM_HEADERS", raising=False)
    return server


@pytest.fixture
def no_key_leak(tmp_path, capsys, caplog, llm_env):
    """Runs the test with debug logging captured, then asserts the key is in no file under ``tmp_path``, not in
    stdout/stderr/logs, and was sent only as the Authorization header of each request."""
    caplog.set_level(logging.DEBUG)
    yield tmp_path
    assert_no_key_leak(tmp_path, capsys, caplog, llm_env)


def assert_no_key_leak(root: Path, capsys, caplog, server) -> None:
    key = TEST_KEY.encode()
    for path in root.rglob("*"):
        if path.is_file():
            assert key not in path.read_bytes(), f"the API key was written to {path}"
    out, err = capsys.readouterr()
    assert TEST_KEY not in out and TEST_KEY not in err, "the API key was printed"
    assert TEST_KEY not in caplog.text, "the API key was logged"
    for req in server.requests:
        assert key not in req.raw, "the API key was sent in a request body"
        for name, value in req.headers.items():
            if name == "authorization":
                assert value == f"Bearer {TEST_KEY}"
            else:
                assert TEST_KEY not in value, f"the API key was sent in header {name}"
