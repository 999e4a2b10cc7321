"""A GPU-verified file is never replaced by an unverified translation of the same kernel (unless forced)."""

from __future__ import annotations

import json

import pytest

from translate import manifest, pipeline
from translate.errors import TranslationError

from . import samples
from .server import completion

LLM = {"model": "scripted-model", "base_url": None, "max_turns": 1, "timeout": 5.0, "max_retries": 0}


def _entry(out):
    return json.loads((out / "manifest.json").read_text())["files"]["matmul_tiled.cu"]


def test_verified_file_survives_an_unverified_llm_translation(tmp_path, llm_env):
    out = tmp_path / "gen"
    first = pipeline.translate_kernel("matmul_tiled", out_dir=str(out))
    record = {"ok": True, "device": "scripted", "file_sha256": first.entry["file_sha256"]}
    manifest.set_verification(str(out), "matmul_tiled.cu", record)
    verified_text = (out / "matmul_tiled.cu").read_text()

    # the same deterministic translation again: same bytes, so the verification still holds
    pipeline.translate_kernel("matmul_tiled", out_dir=str(out))
    assert _entry(out)["verification"] == record

    llm_env.script(completion(samples.GOOD_REPLY))
    with pytest.raises(TranslationError, match="was verified on a GPU .* not written .*--force"):
        pipeline.translate_kernel("matmul_tiled", backend="llm", out_dir=str(out), backend_options=LLM)
    assert (out / "matmul_tiled.cu").read_text() == verified_text
    assert _entry(out)["verification"] == record and _entry(out)["backend"]["name"] == "ast"

    llm_env.script(completion(samples.GOOD_REPLY))
    pipeline.translate_kernel("matmul_tiled", backend="llm", out_dir=str(out), backend_options=LLM, force=True)
    assert (out / "matmul_tiled.cu").read_text() != verified_text
    assert _entry(out)["verification"] is None and _entry(out)["backend"]["name"] == "llm"
