"""What goes wrong around a model's reply, not in it, through the real CLI (issue 38): a key no HTTP header can
carry, an endpoint URL that does not parse, a timeout that is no number of seconds, a sandbox setting that cannot
work, ``--verify`` without a GPU. Each is one line, refused before anything is sent to the model, and the key is
never shown."""

from __future__ import annotations

import os
import sys

import pytest

from numbakern import mode
from tests import forked
from tests.environments import clean, with_path_first
from translate.verify import sandbox

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECRET = "sk-numbakern-secret-part-3b9e"


def _translate(server, tmp_path, *extra, key=SECRET, **env):
    environ = with_path_first(clean(tmp_path, OPENAI_API_KEY=key, NO_PROXY="127.0.0.1,localhost", **env), ROOT)
    return forked.run([sys.executable, "-m", "translate.cli", "vector_add", "--backend", "llm", "--model",
                       "scripted-model", "--base-url", server.base_url, "--max-retries", "0", "--out",
                       str(tmp_path / "gen"), *extra], cwd=tmp_path, env=environ, timeout=300)


def _one_line(r) -> str:
    assert "Traceback" not in r.stderr, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("numbakern: warning")]
    assert len(lines) == 1, r.stderr
    return lines[0]


@pytest.mark.parametrize("key, kind", [(f"{SECRET}\nsk-second-line-4c1d", "a newline"),
                                       (f"{SECRET}é", "a non-ASCII character"),
                                       (f"{SECRET}\x1b[2J", "a control character")])
def test_a_key_no_header_can_carry_is_refused_unshown_before_anything_is_sent(server, tmp_path, key, kind):
    r = _translate(server, tmp_path, key=key)
    assert r.returncode == 2
    assert _one_line(r) == (f"translate: OPENAI_API_KEY holds {kind}, which no HTTP header can carry: export the "
                            "key exactly as the endpoint issued it (the key is not shown)")
    for part in (SECRET, "sk-second-line-4c1d"):
        assert part not in r.stdout + r.stderr
    assert server.requests == []


@pytest.mark.parametrize("url, why", [("http://[::1", "Invalid IPv6 URL"),
                                      ("http://127.0.0.1:99999/v1", "out of range")])
def test_an_endpoint_url_that_does_not_parse_is_one_line(server, tmp_path, url, why):
    environ = with_path_first(clean(tmp_path, OPENAI_API_KEY=SECRET), ROOT)
    r = forked.run([sys.executable, "-m", "translate.cli", "vector_add", "--backend", "llm", "--model", "m",
                    "--base-url", url, "--out", "gen"], cwd=tmp_path, env=environ, timeout=300)
    assert r.returncode == 2
    line = _one_line(r)
    assert line.startswith("translate: the endpoint (--base-url) is not a valid URL: ") and why in line, line


@pytest.mark.parametrize("value", ["inf", "nan", "-1"])
def test_a_timeout_that_is_no_number_of_seconds_is_refused(server, tmp_path, value):
    r = _translate(server, tmp_path, "--timeout", value)
    assert r.returncode == 2 and "--timeout: must be a number of seconds more than 0" in r.stderr, r.stderr
    assert server.requests == []


def _bwrap_works() -> bool:
    return sandbox.probe_bwrap().program is not None


@pytest.mark.parametrize("setting", ["bogus", "bwrap"])
def test_a_sandbox_setting_that_cannot_work_is_refused_before_the_model_is_asked(server, tmp_path, setting):
    if setting == "bwrap" and _bwrap_works():
        pytest.skip("bubblewrap works here: NUMBAKERN_SANDBOX=bwrap is a setting that can work")
    r = _translate(server, tmp_path, NUMBAKERN_SANDBOX=setting)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "NUMBAKERN_SANDBOX" in r.stderr and "without a diagnostic" not in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert server.requests == [], "the prompt was sent for a run that could only fail"


@pytest.mark.skipif(mode.gpu_available(), reason="checks --verify on a machine without a GPU")
def test_verify_without_a_gpu_sends_nothing(server, tmp_path):
    r = _translate(server, tmp_path, "--verify")
    assert r.returncode == 2
    assert _one_line(r) == ("translate: --verify: no CUDA GPU is visible (verification runs the compiled C and the "
                            "Numba kernel on a GPU); nothing was sent to the model")
    assert server.requests == []


@pytest.mark.skipif(mode.gpu_available(), reason="checks --verify on a machine without a GPU")
def test_verify_without_a_gpu_sends_nothing_through_the_api(llm_env, tmp_path):
    from translate import api
    from translate.errors import TranslationError

    options = {"model": "scripted-model", "base_url": None, "max_turns": 1, "timeout": 5.0, "max_retries": 0}
    with pytest.raises(TranslationError, match="--verify: no CUDA GPU is visible .*nothing was sent to the model"):
        api.translate_kernel("vector_add", backend="llm", verify=True, out_dir=str(tmp_path), backend_options=options)
    assert llm_env.requests == []
