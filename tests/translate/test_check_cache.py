"""``translate --check`` remembers its derivations in the user's cache, keyed by everything the translation reads
(issue 40, item 3): a warm check derives nothing again, and any change the translation would see -- a module array,
an attribute of a settings module, the file itself -- is still caught (``translate.derivations``)."""

from __future__ import annotations

import os
import sys

import pytest

from tests import forked
from tests.environments import clean, with_path_first

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIGNATURE = "void(float32[::1], float32[::1])"
KERNEL = '''import numpy as np
from numba import cuda

import settings

WEIGHTS = np.array([1.0, 2.0, 3.0], np.float32)


@cuda.jit
def weigh(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * WEIGHTS[i % 3] + settings.OFFSET
'''


def _cli(*args, cwd, cache):
    env = with_path_first(clean(cwd, NUMBAKERN_CACHE_DIR=str(cache)), ROOT)
    return forked.run([sys.executable, "-m", "translate.cli", *args], cwd=cwd, env=env, timeout=600)


def _translated_project(tmp_path):
    """A project with the kernel translated into it, and the cache folder its commands use."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text('[tool.numbakern]\nkernels = ["weights"]\nout = "gen"\n')
    (root / "weights.py").write_text(KERNEL)
    (root / "settings.py").write_text("OFFSET = 1.5\n")
    cache = tmp_path / "cache"
    r = _cli("weights:weigh", "--signature", SIGNATURE, cwd=root, cache=cache)
    assert r.returncode == 0, r.stdout + r.stderr
    return root, cache


@pytest.fixture
def project(tmp_path):
    root, cache = _translated_project(tmp_path)
    r = _cli("--check", cwd=root, cache=cache)
    assert r.returncode == 0, r.stdout + r.stderr
    return root, cache


def _entries(cache):
    folder = cache / "derivations"
    return {p.name: p.stat().st_ino for p in folder.iterdir()} if folder.is_dir() else {}


def test_a_warm_check_derives_nothing_again_and_writes_nothing_in_the_project(project):
    root, cache = project
    remembered = _entries(cache)
    assert len(remembered) == 1
    files = sorted(p.relative_to(root) for p in root.rglob("*") if "__pycache__" not in p.parts)
    r = _cli("--check", cwd=root, cache=cache)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _entries(cache) == remembered, "the entry was derived and written again"
    assert sorted(p.relative_to(root) for p in root.rglob("*") if "__pycache__" not in p.parts) == files


def test_a_check_right_after_translate_finds_the_derivation_translate_made(tmp_path):
    """translate's deterministic file is the derivation: it is remembered as written, so the first check is warm."""
    root, cache = _translated_project(tmp_path)
    made = _entries(cache)
    assert len(made) == 1
    r = _cli("--check", cwd=root, cache=cache)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _entries(cache) == made, "the check derived the file again"
    (root / "settings.py").write_text("OFFSET = 2.5\n")  # and the entry translate made still has the full key
    r = _cli("--check", cwd=root, cache=cache)
    assert r.returncode == 1 and "weigh.cu" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("change", ["module array", "settings attribute"])
def test_a_change_only_the_translation_sees_is_caught_with_the_cache_warm(project, change):
    """Neither value is in the entry's source hash; the derivation's key covers both."""
    root, cache = project
    if change == "module array":
        (root / "weights.py").write_text(KERNEL.replace("[1.0, 2.0, 3.0]", "[1.0, 2.0, 4.0]"))
    else:
        (root / "settings.py").write_text("OFFSET = 2.5\n")
    r = _cli("--check", cwd=root, cache=cache)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "weigh.cu" in r.stdout and ("edited" in r.stdout or "stale" in r.stdout), r.stdout


def test_a_hand_edit_is_caught_with_the_cache_warm(project):
    root, cache = project
    cu = root / "gen" / "weigh.cu"
    cu.write_text(cu.read_text().replace("x[i]", "x[i + 1]", 1))
    r = _cli("--check", cwd=root, cache=cache)
    assert r.returncode == 1 and "edited" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("whose", ["another user's entry", "an entry in another user's folder"])
def test_an_entry_someone_else_wrote_never_vouches_for_a_file(project, whose):
    """The planted entry holds the hash of a tampered file, under the right key and with a valid binding: only the
    cache's ownership rules keep it out (numbakern.frontend.cache)."""
    import hashlib

    root, cache = project
    (name,) = _entries(cache)
    cu = root / "gen" / "weigh.cu"
    tampered = cu.read_text().replace("x[i]", "x[i + 1]", 1).encode()
    cu.write_bytes(tampered)
    data = hashlib.sha256(tampered).hexdigest().encode()
    binding = hashlib.sha256(b"\0".join((b"derivations", name.encode(), data))).hexdigest().encode()
    entry = cache / "derivations" / name
    entry.write_bytes(b"numbakern-cache-1\n" + binding + data)
    try:
        os.chown(entry if whose == "another user's entry" else entry.parent, 65534, -1)
    except PermissionError:
        pytest.skip(f"this process (uid {os.geteuid()}) cannot chown to another uid (only root or CAP_CHOWN)")
    r = _cli("--check", cwd=root, cache=cache)
    assert r.returncode == 1 and "edited" in r.stdout, r.stdout + r.stderr
