"""The hostile-reply suite through the real CLI: ``translate vector_add --backend llm ...`` against the scripted
server, with an API key and a planted secret in the environment.

Every hostile reply (``hostile.HOSTILE``) is refused with a clear one-line reason, twice (the model gets one repair
turn), and then: the exit status is 1, no file and no manifest are written, nothing was compiled or run, and no
request body carries the key or the secret. The good reply and its unusual spellings are still accepted.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from translate import cli

from . import hostile
from .conftest import TEST_KEY
from .server import Scripted, ScriptedServer, completion

PLANTED = "planted-secret-5e8d-never-in-a-request"


@pytest.fixture(scope="module")
def endpoint():
    """One server and one environment for the module, so the translator's helper process is started once."""
    server = ScriptedServer().start()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OPENAI_API_KEY", TEST_KEY)
        mp.setenv("OPENAI_BASE_URL", server.base_url)
        mp.setenv("NUMBAKERN_PLANTED", PLANTED)
        mp.setenv("NO_PROXY", "127.0.0.1,localhost")
        for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
            mp.delenv(var, raising=False)
        # the CLI sets NUMBA_ENABLE_CUDASIM=0 in this process; the context puts back what was there
        if "NUMBA_ENABLE_CUDASIM" in os.environ:
            mp.setenv("NUMBA_ENABLE_CUDASIM", os.environ["NUMBA_ENABLE_CUDASIM"])
        else:
            mp.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
        yield server
    server.stop()


def translate(out: Path, *extra: str) -> int:
    return cli.main(["vector_add", "--backend", "llm", "--model", "scripted-model", "--out", str(out),
                     "--max-retries", "0", *extra])


def assert_no_secret_sent(server: ScriptedServer) -> None:
    for request in server.requests:
        assert TEST_KEY.encode() not in request.raw and PLANTED.encode() not in request.raw
        assert request.headers.get("authorization") == f"Bearer {TEST_KEY}"


@pytest.mark.parametrize("name", list(hostile.HOSTILE))
def test_a_hostile_reply_is_refused_and_nothing_is_written_or_run(name, endpoint, tmp_path, capsys):
    reply, fragment = hostile.HOSTILE[name]
    endpoint.queue.clear()  # a reply the client stopped reading must not answer the next test
    endpoint.script(completion(reply), completion(reply))
    before = len(endpoint.requests)
    out = tmp_path / "generated"
    rc = translate(out, "--max-turns", "2", "--timeout", "30")
    err = capsys.readouterr().err
    assert rc == 1, err
    assert fragment in err, err
    assert not out.exists() or not any(out.iterdir()), "a file was written"
    assert not Path(hostile.PWNED).exists()
    sent = endpoint.requests[before:]
    assert_no_secret_sent(endpoint)
    if "characters; the stream was closed" in err:  # the 300 KB reply: the client stops reading it
        assert len(sent) == 1
        return
    # each turn's rejection is in the final message, and also on a line of its own as the turn ends where the
    # translation runs in this process (with a GPU; in simulator mode it runs in numbakern's helper)
    rejected = {int(m) for m in re.findall(r"turn (\d+): rejected by the static gate", err)}
    assert len(sent) == 2 and rejected == {1, 2}, err
    assert "did not compile" not in err and "failed verification" not in err  # never compiled, never run
    for line in err.splitlines():
        if "turn " in line and "rejected by the static gate" in line:
            assert fragment in line or fragment.split("'")[1] in line  # the reason is on the turn's one line
    assert fragment in sent[1].messages[-1]["content"]  # the model was told why


def test_the_good_reply_is_accepted(endpoint, tmp_path, capsys):
    endpoint.queue.clear()
    endpoint.script(completion(hostile.GOOD))
    out = tmp_path / "generated"
    assert translate(out) == 0, capsys.readouterr().err
    code = (out / "vector_add.cu").read_text()
    assert "__global__ void vector_add(" in code and 'extern "C" cudaError_t launch_vector_add(' in code
    entry = json.loads((out / "manifest.json").read_text())["files"]["vector_add.cu"]
    assert entry["backend"]["name"] == "llm" and entry["compile"]["ok"] is True
    assert TEST_KEY not in code and TEST_KEY not in json.dumps(entry)
    assert_no_secret_sent(endpoint)


@pytest.mark.parametrize("name", list(hostile.GOOD_VARIANTS))
def test_unusual_spellings_of_good_code_are_accepted_and_written_canonically(name, endpoint, tmp_path, capsys):
    endpoint.queue.clear()
    endpoint.script(completion(hostile.GOOD_VARIANTS[name]))
    out = tmp_path / "generated"
    assert translate(out) == 0, capsys.readouterr().err
    text = (out / "vector_add.cu").read_text()
    code = text[text.index("__global__ void vector_add("):text.index("#ifndef __CUDACC_RTC__")]
    for odd in ("<%", "%>", "<:", ":>", "1'0", " and ", " not "):
        assert odd not in code, odd


def test_a_trickling_server_is_cut_off_at_the_total_deadline(endpoint, tmp_path, capsys):
    endpoint.queue.clear()
    endpoint.script(Scripted(body=completion(hostile.GOOD).body, trickle=0.2))
    out = tmp_path / "generated"
    t0 = time.monotonic()
    rc = translate(out, "--timeout", "2")
    err = capsys.readouterr().err
    assert rc == 1 and "timed out after 2 s" in err, err
    assert time.monotonic() - t0 < 15  # the reply would take minutes at this pace
    assert not out.exists() or not any(out.iterdir())


#: the turn deadline of the compile-stall tests; the command may take longer by the helper process's start
TURN_SECONDS = 8


@pytest.mark.parametrize("name", list(hostile.STALLS))
def test_a_reply_that_stalls_the_compiler_is_stopped_at_the_turn_deadline(name, endpoint, tmp_path, capsys):
    """NVRTC of the model's code runs in a sandboxed child: a reply that makes it work without end is stopped when
    the turn's --timeout (request and compile together) runs out, with one line saying so; nothing is written."""
    endpoint.queue.clear()
    endpoint.script(completion(hostile.STALLS[name]))
    out = tmp_path / "generated"
    t0 = time.monotonic()
    rc = translate(out, "--max-turns", "1", "--timeout", str(TURN_SECONDS))
    elapsed = time.monotonic() - t0
    err = capsys.readouterr().err
    assert rc == 1, err
    stopped = [line for line in err.splitlines() if "NVRTC was stopped" in line]
    # the final message's line, and with a GPU the turn's own line as it ended (see the test above)
    assert 1 <= len(stopped) <= 2 and all("turn 1: did not compile" in line for line in stopped), err
    assert "GiB of memory" in stopped[0], stopped[0]
    if "killed after the " in stopped[0]:  # else NVRTC failed an allocation under the memory limit and said so
        limit = float(stopped[0].split("killed after the ")[1].split(" s wall-clock limit")[0])
        assert limit <= TURN_SECONDS, stopped[0]
    else:
        assert "it ran out of memory" in stopped[0], stopped[0]
    assert elapsed < TURN_SECONDS + 40, f"{elapsed:.0f} s"  # the helper process may start first (numba's import)
    assert not out.exists() or not any(out.iterdir()), "a file was written"


def test_the_model_is_told_its_code_stalled_the_compiler_and_can_repair_it(endpoint, tmp_path, capsys):
    endpoint.queue.clear()
    endpoint.script(completion(hostile.STALLS["a 1 GiB constant array with two initialisers"]),
                    completion(hostile.GOOD))
    before = len(endpoint.requests)
    out = tmp_path / "generated"
    assert translate(out, "--max-turns", "2", "--timeout", str(TURN_SECONDS)) == 0, capsys.readouterr().err
    told = endpoint.requests[before + 1].messages[-1]["content"]
    assert "NVRTC was stopped" in told and "huge array initialiser" in told, told
    assert "table" not in (out / "vector_add.cu").read_text()
