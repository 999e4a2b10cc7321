"""The manifest (``translate.manifest``): damaged or newer manifests give one line naming the file and what to do
and are never rewritten; concurrent writers into one folder never lose an entry; a ``.cu`` and its entry agree after
a kill at any step of a write; ``--out`` with ``..`` through a missing folder creates no stray folder."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forked
from translate import api, manifest
from translate.manifest import ManifestError

ROOT = Path(__file__).resolve().parents[2]

#: a damaged or unusable manifest -> (its text, or None for a folder in its place; words the message must have)
DAMAGED = {
    "empty": ("", "is empty"),
    "half-written": ('{"version": 1, "files": {"vector_add.cu": {"kernel": "numbakern.ker', "not valid JSON"),
    "files-null": ('{"version": 1, "files": null}', '"files" is null'),
    "files-list": ('{"version": 1, "files": []}', '"files" is a list'),
    "a-list": ("[]", "holds a list"),
    "entry-not-object": ('{"version": 1, "files": {"vector_add.cu": 3}}', "'vector_add.cu' is a number"),
    "no-version": ('{"files": {}}', 'no valid "version"'),
    "newer": ('{"version": 2, "files": {}}', "newer numbakern"),
    "a-folder": (None, "is a folder"),
}


def _damage(folder: Path, text: str | None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "manifest.json"
    if text is None:
        path.mkdir()
    else:
        path.write_text(text)
    return path


def _state(path: Path):
    return sorted(p.name for p in path.iterdir()) if path.is_dir() else path.read_bytes()


def _cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    return forked.run([sys.executable, "-m", "translate.cli", *args], cwd=cwd, env=env, timeout=600)


@pytest.mark.parametrize("case", list(DAMAGED))
def test_a_damaged_manifest_is_one_line_naming_the_file_and_is_left_alone(case, tmp_path):
    text, words = DAMAGED[case]
    path = _damage(tmp_path / "gen", text)
    before = _state(path)
    for attempt in (lambda: manifest.load(tmp_path / "gen"),
                    lambda: api.check(str(tmp_path / "gen"), registry=False),               # through the helper
                    lambda: api.translate_kernel("vector_add", out_dir=str(tmp_path / "gen")),
                    lambda: manifest.update_entry(tmp_path / "gen", "x.cu", {"file_sha256": "0"})):
        with pytest.raises(ManifestError) as info:
            attempt()
        message = str(info.value)
        assert "\n" not in message and str(path) in message and words in message, message
        assert ("restore it" in message or "upgrade numbakern" in message or "move it away" in message), message
    assert _state(path) == before, "a damaged manifest was rewritten"
    assert sorted(p.name for p in (tmp_path / "gen").iterdir()) == ["manifest.json"], "a file was written beside it"


@pytest.mark.parametrize("case", ["half-written", "files-null", "newer"])
def test_the_command_says_it_in_one_line_without_a_traceback(case, tmp_path):
    text, words = DAMAGED[case]
    path = _damage(tmp_path / "gen", text)
    for args in (("--check", "--out", str(tmp_path / "gen")), ("vector_add", "--out", str(tmp_path / "gen"))):
        run = _cli(*args)
        assert run.returncode == 2, run.stdout + run.stderr
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("translate: ") and words in lines[0], run.stderr
        assert "Traceback" not in run.stdout + run.stderr
    assert path.read_text() == text


def test_a_missing_manifest_is_an_empty_one(tmp_path):
    assert manifest.load(tmp_path / "nowhere") == {"version": 1, "files": {}}
    assert not (tmp_path / "nowhere").exists()


# -- concurrent writers ----------------------------------------------------------------------------------------

WRITER = """
import sys
from translate import manifest
folder, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(n):
    manifest.update_entry(folder, f"{who}-{i}.cu", {"file_sha256": f"{who}-{i}", "compile": {}})
"""


@pytest.mark.parametrize("round_", range(3))
def test_concurrent_writers_never_lose_an_entry(round_, tmp_path):
    """Six processes, 40 read-modify-writes each, into one folder (without the folder lock this loses entries in
    nearly every round)."""
    folder = tmp_path / "gen"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(folder), f"w{k}", "40"], cwd=ROOT)
             for k in range(6)]
    assert [p.wait(timeout=300) for p in procs] == [0] * 6
    files = manifest.load(folder)["files"]
    assert len(files) == 240 and files["w5-39.cu"]["file_sha256"] == "w5-39"
    assert sorted(p.name for p in folder.iterdir()) == ["manifest.json"]  # no temp or lock file left


#: kernels that translate quickly, one per process
CONCURRENT_KERNELS = ("vector_add", "transpose", "block_sum", "matmul_naive", "matmul_tiled", "matmul_tiled_static")


def test_six_translate_commands_into_one_folder(tmp_path):
    """Six ``translate`` processes write six kernels into one folder at the same time: every entry is there and
    describes the file on disk."""
    folder = tmp_path / "gen"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    procs = [subprocess.Popen([sys.executable, "-m", "translate.cli", name, "--out", str(folder)], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for name in CONCURRENT_KERNELS]
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, "\n".join(outputs)
    files = manifest.load(folder)["files"]
    assert sorted(files) == sorted(f"{name}.cu" for name in CONCURRENT_KERNELS)
    for name, entry in files.items():
        assert entry["file_sha256"] == hashlib.sha256((folder / name).read_bytes()).hexdigest()
    assert api.check(str(folder), registry=False) == []


# -- a kill between the steps of a write -----------------------------------------------------------------------

KILLED_WRITER = """
import os, signal, sys
from translate import manifest
folder, code, entry, kill_after = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
real_replace, done = os.replace, []

def replace(src, dst):
    real_replace(src, dst)
    done.append(dst)
    if len(done) == kill_after:
        os.kill(os.getpid(), signal.SIGKILL)

os.replace = replace
manifest.write_translation(folder, "k.cu", code, {**__import__("json").loads(entry)})
"""


def _entry(code: str, source: str) -> dict:
    return {"kernel": "m:k", "source_sha256": source, "file_sha256": manifest.sha256_text(code),
            "backend": {"name": "ast"}, "compile": {"ok": True}}


@pytest.mark.parametrize("kill_after", [1, 2, 3])
def test_a_kill_between_the_steps_leaves_the_file_and_its_entry_agreeing(kill_after, tmp_path):
    """``write_translation`` replaces three files in turn (the manifest with the pending entry, the .cu, the
    manifest with the entry in place); the writer is killed right after the first, second or third."""
    folder = tmp_path / "gen"
    old, new = "// old\n", "// new\n"
    manifest.write_translation(folder, "k.cu", old, _entry(old, "s-old"))
    run = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(folder), new, json.dumps(_entry(new, "s-new")),
                          str(kill_after)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == -9, run.stderr  # killed, as planned
    on_disk = (folder / "k.cu").read_text()
    assert on_disk == (old if kill_after == 1 else new)
    entry = manifest.load(folder)["files"]["k.cu"]
    assert entry["file_sha256"] == manifest.sha256_text(on_disk)
    assert entry["source_sha256"] == ("s-old" if on_disk == old else "s-new")
    # the next writer settles what the killed one left, for good
    manifest.update_entry(folder, "other.cu", {"file_sha256": "x"})
    data = json.loads((folder / "manifest.json").read_text())
    assert manifest.PENDING not in data and data["files"]["k.cu"]["file_sha256"] == manifest.sha256_text(on_disk)


def test_an_unchanged_file_is_not_rewritten(tmp_path):
    folder = tmp_path / "gen"
    code = "// same\n"
    manifest.write_translation(folder, "k.cu", code, _entry(code, "s"))
    os.utime(folder / "k.cu", (1, 1))
    manifest.write_translation(folder, "k.cu", code, _entry(code, "s"))
    assert (folder / "k.cu").stat().st_mtime == 1


def test_a_verified_entry_guards_its_file_under_the_lock(tmp_path):
    """Against a model's translation; never against the deterministic one (a record is only a claim: issue 38)."""
    folder = tmp_path / "gen"
    code = "// verified\n"
    manifest.write_translation(folder, "k.cu", code, _entry(code, "s"))
    manifest.set_verification(folder, "k.cu", {"ok": True, "file_sha256": manifest.sha256_text(code)})
    from translate.errors import TranslationError

    other = {**_entry("// other\n", "s"), "backend": {"name": "llm"}}
    with pytest.raises(TranslationError, match="was verified on a GPU"):
        manifest.write_translation(folder, "k.cu", "// other\n", other)
    assert (folder / "k.cu").read_text() == code
    manifest.write_translation(folder, "k.cu", "// other\n", other, force=True)
    assert manifest.load(folder)["files"]["k.cu"]["verification"] is None
    manifest.set_verification(folder, "k.cu", {"ok": True, "file_sha256": manifest.sha256_text("// other\n")})
    manifest.write_translation(folder, "k.cu", code, _entry(code, "s"))  # the deterministic translation: written
    assert (folder / "k.cu").read_text() == code


# -- output folders --------------------------------------------------------------------------------------------


def test_out_through_a_missing_folder_creates_no_stray_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = api.translate_kernel("vector_add", out_dir="a/missing/../../d")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]
    assert (tmp_path / "d" / "vector_add.cu").read_text() == result.code
    assert api.check("a/missing/../../d", registry=False) == []


def test_the_command_with_out_through_a_missing_folder(tmp_path):
    run = _cli("vector_add", "--out", "a/missing/../../d", cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"]
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["manifest.json", "vector_add.cu"]
