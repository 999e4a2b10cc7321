"""No field of a manifest decides whether ``translate --check`` runs a check, and a verification record is shown as
what it is: a claim (issue 38, findings 1, 3 and 7), through the real CLI.

The attack: ``vector_add.cu`` rewritten to compute ``a - b`` and to run ``system()`` from a constructor, its entry
marked as written by the llm backend with the new bytes' hash, and a forged record "verified on an H200".
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest

from numbakern import mode
from tests import forked
from tests.environments import clean, with_path_first

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: what the planted file does when it is loaded: leave a marker (a successful attack)
PAYLOAD = '''
#include <cstdlib>
__attribute__((constructor)) static void nk_setup() {{ std::system("touch {marker}"); }}
'''


def _cli(*args, cwd, cache):
    env = with_path_first(clean(cwd, NUMBAKERN_CACHE_DIR=str(cache)), ROOT)
    return forked.run([sys.executable, "-m", "translate.cli", *args], cwd=cwd, env=env, timeout=600)


@pytest.fixture(scope="module")
def translated(tmp_path_factory):
    """vector_add translated into gen/ of a folder that is no project (numbakern's library), and a derivation cache
    warmed by one --check of the untouched folder: a cache hit must not make a tampered file pass."""
    root = tmp_path_factory.mktemp("claims")
    cache = root / "cache"
    r = _cli("vector_add", "--out", "gen", cwd=root, cache=cache)
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli("--check", "--out", "gen", cwd=root, cache=cache)
    assert r.returncode == 0, r.stdout + r.stderr
    return root, cache


@pytest.fixture
def attacked(translated, tmp_path):
    root, cache = translated
    work = tmp_path / "work"
    subprocess.run(["cp", "-r", str(root / "gen"), str(work)], check=True)
    cu = work / "vector_add.cu"
    honest = cu.read_text()
    assert "out[i] = a[i] + b[i];" in honest
    hostile = honest.replace("out[i] = a[i] + b[i];", "out[i] = a[i] - b[i];") + \
        PAYLOAD.format(marker=tmp_path / "pwned")
    cu.write_text(hostile)
    sha = hashlib.sha256(hostile.encode()).hexdigest()
    data = json.loads((work / "manifest.json").read_text())
    entry = data["files"]["vector_add.cu"]
    entry["backend"] = {"name": "llm", "model": "gpt-x", "tool_version": "0.1.0"}
    entry["file_sha256"] = sha
    entry["verification"] = {"ok": True, "device": "NVIDIA H200", "date": "2026-11-26T23:26:06Z", "cases": 72,
                             "failed_cases": 0, "file_sha256": sha}
    (work / "manifest.json").write_text(json.dumps(data, indent=2))
    yield root, cache, work, honest
    assert not (tmp_path / "pwned").exists(), "the planted file's constructor ran"


def test_a_manifest_that_claims_another_backend_does_not_switch_the_check_off(attacked):
    root, cache, work, _ = attacked
    for _ in range(2):  # the second with the derivation of this very entry cached
        r = _cli("--check", "--out", str(work), cwd=root, cache=cache)
        assert r.returncode == 1, r.stdout + r.stderr
        line = next(ln for ln in r.stdout.splitlines() if "vector_add.cu" in ln)
        assert line.startswith("unverifiable"), r.stdout
        assert "backend 'llm'" in line and "not what the deterministic translator produces" in line, line
        assert "--require-verified" in line and "--accept-unverifiable" in line, line
        assert "up to date" not in r.stdout
    # accepting claims is the user's choice, on the command line: then it is listed as an accepted claim
    r = _cli("--check", "--out", str(work), "--accept-unverifiable", cwd=root, cache=cache)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("accepted     vector_add.cu  the manifest says backend 'llm' wrote it"), r.stdout
    assert "an accepted claim (1)" in r.stdout


def test_an_entry_that_claims_the_deterministic_backend_is_edited(attacked):
    root, cache, work, _ = attacked
    data = json.loads((work / "manifest.json").read_text())
    data["files"]["vector_add.cu"]["backend"] = {"name": "ast"}
    (work / "manifest.json").write_text(json.dumps(data))
    r = _cli("--check", "--out", str(work), "--accept-unverifiable", cwd=root, cache=cache)
    assert r.returncode == 1 and "edited       vector_add.cu" in r.stdout, r.stdout + r.stderr


def test_list_shows_a_record_as_a_claim_and_never_for_a_file_that_fails_the_check(attacked):
    root, cache, work, _ = attacked
    r = _cli("--list", "--out", str(work), cwd=root, cache=cache)
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("vector_add "))
    assert line.endswith("unverifiable"), line
    assert "verified" not in line and "H200" not in line, line
    kernels = json.loads(_cli("--list", "--out", str(work), "--json", cwd=root, cache=cache).stdout)["kernels"]
    mine = next(k for k in kernels if k["kernel"] == "vector_add")
    assert mine["status"] == "unverifiable" and mine["claimed_verification"] is None and "verified" not in mine


def test_list_presents_a_record_of_a_current_file_as_what_the_manifest_claims(translated, tmp_path):
    root, cache = translated
    work = tmp_path / "work"
    subprocess.run(["cp", "-r", str(root / "gen"), str(work)], check=True)
    data = json.loads((work / "manifest.json").read_text())
    entry = data["files"]["vector_add.cu"]
    entry["verification"] = {"ok": True, "device": "NVIDIA H200\x1b[2J", "host": "gpu-7", "date": "2026-11-26",
                             "file_sha256": entry["file_sha256"]}
    (work / "manifest.json").write_text(json.dumps(data))
    r = _cli("--list", "--out", str(work), cwd=root, cache=cache)
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("vector_add "))
    assert line.endswith(f"up to date; the manifest claims PASS on NVIDIA H200\\x1b[2J (host gpu-7), 2026-11-26, "
                         f"bytes {entry['file_sha256'][:12]}"), line
    assert "\x1b" not in r.stdout


def test_translate_replaces_the_file_whatever_its_record_claims(attacked):
    root, cache, work, honest = attacked
    r = _cli("vector_add", "--out", str(work), cwd=root, cache=cache)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (work / "vector_add.cu").read_text() == honest
    entry = json.loads((work / "manifest.json").read_text())["files"]["vector_add.cu"]
    assert entry["backend"]["name"] == "ast" and entry["verification"] is None
    r = _cli("--check", "--out", str(work), cwd=root, cache=cache)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.skipif(mode.gpu_available(), reason="this machine has a GPU: test_check_require_verified_gpu.py")
def test_require_verified_refuses_without_a_gpu(translated):
    root, cache = translated
    r = _cli("--check", "--out", "gen", "--require-verified", cwd=root, cache=cache)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == ("translate: --check --require-verified: no CUDA GPU is visible (verification runs "
                                "the compiled C and the Numba kernel on a GPU); nothing was verified (run it on a "
                                "machine with a GPU, or drop the flag: --check alone derives every file from its "
                                "kernel but runs none)")
    assert r.stdout == ""


@pytest.mark.parametrize("flag", ["--accept-unverifiable", "--require-verified"])
def test_the_check_flags_apply_to_check_only(translated, flag):
    root, cache = translated
    r = _cli("vector_add", "--out", "gen", flag, cwd=root, cache=cache)
    assert r.returncode == 2 and r.stderr.strip() == f"translate: {flag} applies to --check"
