"""``--verify`` inside the repair loop, on a GPU: a reply that compiles but computes the wrong thing is caught by
the verification harness, the report goes back to the model, and only the verified repair is written."""

from __future__ import annotations

import json

import pytest

from translate import api

from . import samples
from .server import completion

pytestmark = pytest.mark.gpu


def test_wrong_reply_is_verified_reported_and_repaired(tmp_path, llm_env):
    assert samples.FIRST_TILE_ONLY_REPLY != samples.GOOD_REPLY
    llm_env.script(completion(samples.FIRST_TILE_ONLY_REPLY), completion(samples.GOOD_REPLY))
    out = tmp_path / "gen"
    options = {"model": "scripted-model", "base_url": None, "max_turns": 3, "timeout": 30.0, "max_retries": 0}
    api.translate_kernel("matmul_tiled", backend="llm", out_dir=str(out), backend_options=options, verify=True)

    assert len(llm_env.requests) == 2
    feedback = llm_env.requests[1].messages[-1]["content"]
    assert "differ from the Numba kernel" in feedback and "max abs error" in feedback
    entry = json.loads((out / "manifest.json").read_text())["files"]["matmul_tiled.cu"]
    assert entry["backend"]["turns"] == 2
    assert "ph < 1" not in (out / "matmul_tiled.cu").read_text()


def test_reply_that_never_verifies_writes_nothing(tmp_path, llm_env):
    llm_env.script(completion(samples.FIRST_TILE_ONLY_REPLY), completion(samples.FIRST_TILE_ONLY_REPLY))
    out = tmp_path / "gen"
    options = {"model": "scripted-model", "base_url": None, "max_turns": 2, "timeout": 30.0, "max_retries": 0}
    with pytest.raises(Exception, match="verification"):
        api.translate_kernel("matmul_tiled", backend="llm", out_dir=str(out), backend_options=options, verify=True)
    assert not (out / "matmul_tiled.cu").exists()
