"""``translate --backend llm`` through the translator's pipeline against the scripted server: the same manifest
entry and ``.cu`` layout as the deterministic backend (docs/design/translate-contract.md).

Under pytest without a GPU, ``translate_kernel`` runs the translation in a helper process (numba's simulator and
its CUDA front end cannot share a process): the backend options travel with the request, the key in the
environment only.
"""

from __future__ import annotations

import json
import os
import sys
import time

from tests import forked

from . import samples
from .conftest import TEST_KEY
from .server import completion

ENTRY_KEYS = {"kernel", "registry_name", "source_sha256", "file_sha256", "signature", "constants", "backend",
              "launchers", "compile", "verification", "created", "updated"}


def test_llm_backend_through_the_pipeline(no_key_leak, llm_env):
    from translate import api

    llm_env.script(completion(samples.GOOD_REPLY, prompt_tokens=1000, completion_tokens=500))
    out = no_key_leak / "generated_cuda"
    options = {"model": "scripted-model", "base_url": None, "max_turns": 3, "timeout": 5.0, "max_retries": 1}
    api.translate_kernel("matmul_tiled", backend="llm", out_dir=str(out), backend_options=options)

    cu = (out / "matmul_tiled.cu").read_text()
    assert "#include <cuda_runtime.h>" in cu and "#include <stdint.h>" in cu
    assert "__global__ void matmul_tiled(" in cu
    assert 'extern "C" cudaError_t launch_matmul_tiled(' in cu
    manifest = json.loads((out / "manifest.json").read_text())
    entry = manifest["files"]["matmul_tiled.cu"]
    assert ENTRY_KEYS <= set(entry)
    assert entry["backend"]["name"] == "llm" and entry["backend"]["model"] == "scripted-model"
    assert entry["backend"]["turns"] == 1 and entry["backend"]["usage"]["total_tokens"] == 1500
    assert entry["backend"]["endpoint_host"] == llm_env.base_url.split("//")[1].split("/")[0]
    assert entry["compile"]["ok"] is True
    assert TEST_KEY not in json.dumps(manifest)


def _cli(args, env_overrides, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(env_overrides)
    return forked.run([sys.executable, "-m", "translate.cli", *args], env=env, cwd=cwd, timeout=120)


def test_translate_command_with_the_llm_backend(tmp_path, server):
    server.script(completion(samples.GOOD_REPLY))
    out = tmp_path / "out"
    env = {"OPENAI_API_KEY": TEST_KEY, "OPENAI_BASE_URL": server.base_url, "NO_PROXY": "127.0.0.1"}
    run = _cli(["matmul_tiled", "--backend", "llm", "--model", "scripted-model", "--out", str(out),
                "--max-retries", "0"], env, tmp_path)
    assert run.returncode == 0, run.stderr
    assert (out / "matmul_tiled.cu").exists()
    entry = json.loads((out / "manifest.json").read_text())["files"]["matmul_tiled.cu"]
    assert entry["backend"]["name"] == "llm" and entry["backend"]["turns"] == 1
    for text in (run.stdout, run.stderr, *(p.read_text() for p in out.iterdir())):
        assert TEST_KEY not in text
    assert server.requests[0].headers.get("authorization") == f"Bearer {TEST_KEY}"


def test_translate_command_fails_fast_with_one_line_when_the_endpoint_is_down(tmp_path):
    out = tmp_path / "out"
    env = {"OPENAI_API_KEY": TEST_KEY, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "NO_PROXY": "127.0.0.1"}
    # the client's own retries (3) would back off for seconds: the endpoint is tried once, before any kernel
    t0 = time.monotonic()
    run = _cli(["matmul_tiled", "--backend", "llm", "--model", "m", "--out", str(out)], env, tmp_path)
    assert run.returncode == 2
    assert run.stderr == ("translate: cannot reach the endpoint http://127.0.0.1:9/v1: connection refused; is the "
                          "server running? (--base-url or OPENAI_BASE_URL names it)\n"), run.stderr
    assert time.monotonic() - t0 < 20  # the interpreter's start and imports; no request, no retries
    assert not (out / "matmul_tiled.cu").exists() and not (out / "manifest.json").exists()
    assert TEST_KEY not in run.stdout + run.stderr


def test_translate_command_says_what_the_model_did_and_that_the_file_is_unverified(tmp_path, server):
    server.script(completion(samples.ASM_REPLY, prompt_tokens=1200, completion_tokens=300),
                  completion(samples.GOOD_REPLY, prompt_tokens=1500, completion_tokens=310))
    out = tmp_path / "out"
    env = {"OPENAI_API_KEY": TEST_KEY, "OPENAI_BASE_URL": server.base_url, "NO_PROXY": "127.0.0.1"}
    run = _cli(["matmul_tiled", "--backend", "llm", "--model", "scripted-model", "--out", str(out),
                "--max-retries", "0"], env, tmp_path)
    assert run.returncode == 0, run.stderr
    host = server.base_url.split("//")[1].split("/")[0]
    # what the model did, in order; where bubblewrap is missing the sandbox warns too (its own tests: tests/verify)
    lines = [line for line in run.stderr.splitlines() if not line.startswith("numbakern: warning: sandboxed children")]
    assert lines[0].startswith("matmul_tiled: llm turn 1: rejected by the static gate: "), run.stderr
    assert lines[1] == "matmul_tiled: llm turn 2: accepted", run.stderr
    assert lines[2] == (f"matmul_tiled: llm model 'scripted-model' at {host}: 2 turns (turn 1 rejected by the static "
                        "gate), 2,700 prompt + 610 completion tokens; the file is UNVERIFIED: check it on a GPU with "
                        f"`python -m translate.verify matmul_tiled --dir {out}` before you use it"), run.stderr
    assert run.stdout.startswith("written    out/matmul_tiled.cu ")  # the path as seen from the current folder
    entry = json.loads((out / "manifest.json").read_text())["files"]["matmul_tiled.cu"]
    assert entry["backend"]["turn_outcomes"] == ["gate", "ok"] and entry["verification"] is None


def test_show_prompt_prints_the_messages_and_sends_nothing(tmp_path, server):
    env = {"OPENAI_BASE_URL": server.base_url}  # and no key: nothing is to be sent
    out = tmp_path / "out"
    run = _cli(["matmul_tiled", "--backend", "llm", "--show-prompt", "--out", str(out)], env, tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("----- system -----\n") and "\n----- user -----\n" in run.stdout
    assert "def matmul_tiled(" in run.stdout and "__global__ void matmul_tiled(" in run.stdout
    assert run.stdout.rstrip().endswith("characters; nothing was sent -----")
    assert server.requests == [] and not out.exists()
    as_json = _cli(["matmul_tiled", "--show-prompt", "--json"], env, tmp_path)
    document = json.loads(as_json.stdout)
    assert [m["role"] for m in document["messages"]] == ["system", "user"]


def test_translate_command_without_a_key_sends_nothing(tmp_path, server):
    run = _cli(["matmul_tiled", "--backend", "llm", "--model", "m", "--out", str(tmp_path / "out")],
               {"OPENAI_BASE_URL": server.base_url}, tmp_path)
    assert run.returncode == 2 and "OPENAI_API_KEY" in run.stderr
    assert server.requests == []
