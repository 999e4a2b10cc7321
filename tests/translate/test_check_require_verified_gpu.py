"""``translate --check --require-verified`` on a GPU (issue 38, finding 3): CI re-verifies the files instead of
trusting the manifest's records. Marked ``gpu``: ``pytest --gpu tests/translate/test_check_require_verified_gpu.py``
on the GPU machine (without one, test_check_claims.py covers the refusal)."""

from __future__ import annotations

import hashlib
import json
import os
import sys

import pytest

from tests import forked
from tests.environments import clean, with_path_first

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.gpu


def _cli(*args, cwd):
    env = with_path_first(clean(cwd), ROOT)
    return forked.run([sys.executable, "-m", "translate.cli", *args], cwd=cwd, env=env, timeout=600)


def test_require_verified_verifies_every_file_and_writes_no_record(tmp_path):
    r = _cli("vector_add", "--out", "gen", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    before = (tmp_path / "gen" / "manifest.json").read_text()
    r = _cli("--check", "--out", "gen", "--require-verified", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS" in r.stdout and "vector_add" in r.stdout, r.stdout
    assert (tmp_path / "gen" / "manifest.json").read_text() == before  # a check writes nothing


def test_require_verified_fails_a_claimed_file_that_computes_something_else(tmp_path):
    """The attack of issue 38: a - b, its entry claiming the llm backend with a forged record. --require-verified
    takes the claim to the GPU, which refutes it."""
    r = _cli("vector_add", "--out", "gen", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    cu = tmp_path / "gen" / "vector_add.cu"
    hostile = cu.read_text().replace("out[i] = a[i] + b[i];", "out[i] = a[i] - b[i];")
    cu.write_text(hostile)
    sha = hashlib.sha256(hostile.encode()).hexdigest()
    data = json.loads((tmp_path / "gen" / "manifest.json").read_text())
    entry = data["files"]["vector_add.cu"]
    entry.update(backend={"name": "llm", "model": "m"}, file_sha256=sha,
                 verification={"ok": True, "device": "NVIDIA H200", "file_sha256": sha})
    (tmp_path / "gen" / "manifest.json").write_text(json.dumps(data))
    r = _cli("--check", "--out", "gen", "--require-verified", cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "FAIL" in r.stdout and "vector_add" in r.stdout, r.stdout
