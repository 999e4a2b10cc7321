"""The bugs of issue 38's hostile review that live in translate's inputs, each through the real CLI: a package's
``__main__``, kernel names no manifest can list, ``--const`` values a constant cannot take, a FIFO as the manifest,
records whose ``ok`` is not a boolean, a merge larger than a manifest may be, a check of nothing, a standard-library
module as the project's kernels, escape sequences in manifest fields, and malformed ``--apply`` records."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest

from numbakern import mode
from tests import forked
from tests.environments import clean, with_path_first

from . import test_hostile_manifests as hostile
from .test_hostile_manifests import KERNEL, SIGNATURE, _manifest, _write_manifest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DECLARED = '''

import numpy as np

import numbakern


def scale_args(rand, n=100):
    return rand(n, np.float32), np.empty(n, np.float32)


numbakern.declare(scale, args=scale_args, launch=lambda x, out: ((x.shape[0] + 31) // 32, 32),
                  reference=lambda x, out: x.astype(np.float64) * 2, outputs="out")
'''


#: a copy of this module's ``template`` for each test
project = hostile.project


def _run(*args, cwd, module="translate.cli", timeout=300, **env):
    environ = with_path_first(clean(cwd, **env), ROOT)
    return forked.run([sys.executable, "-m", module, *args], cwd=cwd, env=environ, timeout=timeout)


def _no_traceback(r):
    assert "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A project whose kernel is declared (``--list`` lists it), translated once."""
    root = tmp_path_factory.mktemp("inputs") / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text('[tool.numbakern]\nkernels = ["mykern"]\nout = "gen"\n')
    (root / "mykern.py").write_text(KERNEL + DECLARED)
    r = _run("mykern:scale", "--signature", SIGNATURE, cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    return root


def test_list_never_runs_a_kernel_packages_main(tmp_path):
    package = tmp_path / "mykernels"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "scaling.py").write_text(KERNEL)
    (package / "__main__.py").write_text(f"import pathlib, sys\npathlib.Path({str(tmp_path / 'ran')!r})"
                                         ".write_text(' '.join(sys.argv))\n")
    (tmp_path / "pyproject.toml").write_text('[tool.numbakern]\nkernels = ["mykernels"]\n')
    r = _run("--list", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not (tmp_path / "ran").exists(), "translate --list ran the package's __main__.py"


@pytest.mark.parametrize("name", ["café", "k" + "x" * 229])
def test_a_kernel_whose_file_no_manifest_can_list_is_refused_and_the_folder_stays_usable(project, name):
    (project / "odd.py").write_text(KERNEL.replace("def scale(", f"def {name}("))
    r = _run(f"odd.py:{name}", "--signature", SIGNATURE, cwd=project)
    _no_traceback(r)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"{name + '.cu'!r} cannot be a generated file's name" in r.stderr and "rename the kernel" in r.stderr
    assert not (project / "gen" / f"{name}.cu").exists()
    r = _run("--check", cwd=project)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("value, why", [("64.5", "the kernel's 'd' is int (64), so it takes int values only"),
                                        ("1e999", "constant values must be finite numbers"),
                                        ("nan", "constant values must be finite numbers")])
def test_a_const_the_constant_cannot_take_is_refused(tmp_path, value, why):
    r = _run("attention_d64", "--const", f"d={value}", "--out", "gen", cwd=tmp_path)
    _no_traceback(r)
    assert r.returncode in (1, 2) and why in r.stderr, r.stdout + r.stderr
    assert not (tmp_path / "gen" / "attention_d64.cu").exists()


@pytest.mark.parametrize("command", [("--check",), ("--merge", "other")])
def test_a_fifo_as_the_manifest_is_refused_not_waited_on(project, command):
    other = project / "other"
    subprocess.run(["cp", "-r", str(project / "gen"), str(other)], check=True)
    data = json.loads((other / "manifest.json").read_text())  # a record to merge
    data["files"]["scale.cu"]["verification"] = {"ok": True, "file_sha256": data["files"]["scale.cu"]["file_sha256"]}
    (other / "manifest.json").write_text(json.dumps(data))
    target = project / "gen" / "manifest.json"
    target.unlink()
    os.mkfifo(target)
    r = _run(*command, cwd=project, timeout=120)
    _no_traceback(r)
    assert r.returncode == 2 and "manifest.json is not a regular file" in r.stderr, r.stdout + r.stderr
    # the same as the folder merged from
    target.unlink()
    subprocess.run(["cp", str(other / "manifest.json"), str(target)], check=True)
    (other / "manifest.json").unlink()
    os.mkfifo(other / "manifest.json")
    r = _run("--merge", "other", cwd=project, timeout=120)
    _no_traceback(r)
    assert r.returncode == 1 and "manifest.json is not a regular file" in r.stderr, r.stdout + r.stderr


def test_a_record_whose_ok_is_text_is_no_pass(project):
    data = _manifest(project)
    sha = data["files"]["scale.cu"]["file_sha256"]
    data["files"]["scale.cu"]["verification"] = {"ok": True, "device": "real pass", "file_sha256": sha}
    _write_manifest(project, data)
    shard = project / "shard"
    subprocess.run(["cp", "-r", str(project / "gen"), str(shard)], check=True)
    forged = json.loads((shard / "manifest.json").read_text())
    forged["files"]["scale.cu"]["verification"] = {"ok": "false", "device": "text", "file_sha256": sha,
                                                   "date": "2099-01-01T00:00:00Z"}
    (shard / "manifest.json").write_text(json.dumps(forged))
    r = _run("--merge", "shard", cwd=project)
    _no_traceback(r)
    assert r.returncode == 1 and "not a verification record (its ok is 'false', not true or false)" in r.stderr, \
        r.stdout + r.stderr
    assert _manifest(project)["files"]["scale.cu"]["verification"]["device"] == "real pass"
    data["files"]["scale.cu"]["verification"] = forged["files"]["scale.cu"]["verification"]
    _write_manifest(project, data)
    r = _run("--list", "--json", cwd=project)
    (kernel,) = json.loads(r.stdout)["kernels"]
    assert kernel["status"] == "up to date" and kernel["claimed_verification"] is None


def test_a_merge_that_would_make_a_manifest_too_large_writes_nothing(project):
    """Two shards, each a manifest of 34 MiB, whose records (each under the 64 KiB a record may be) together would
    make this folder's manifest 68 MiB: more than translate reads back."""
    data = _manifest(project)
    shards = {label: json.loads(json.dumps(data)) for label in ("one", "two")}
    for i in range(1100):
        name, text = f"k{i}.cu", f"// {i}\n"
        (project / "gen" / name).write_text(text)
        entry = {"file_sha256": hashlib.sha256(text.encode()).hexdigest()}
        data["files"][name] = entry
        for n, shard in enumerate(shards.values()):
            shard["files"][name] = dict(entry)
            if i % 2 == n:
                shard["files"][name]["verification"] = {"ok": True, "file_sha256": entry["file_sha256"],
                                                        "notes": "x" * (62 << 10)}
    _write_manifest(project, data)
    for label, shard in shards.items():
        (project / label).mkdir()
        (project / label / "manifest.json").write_text(json.dumps(shard))
        for name in shard["files"]:
            shutil.copyfile(project / "gen" / name, project / label / name)
    before = (project / "gen" / "manifest.json").read_text()
    r = _run("--merge", "one", "two", cwd=project, timeout=600)
    _no_traceback(r)
    assert r.returncode == 2 and "would be larger than 64 MiB" in r.stderr, r.stdout + r.stderr
    assert (project / "gen" / "manifest.json").read_text() == before


def test_a_check_of_a_folder_that_does_not_exist_fails(project):
    r = _run("--check", "--out", "nowhere", cwd=project)
    _no_traceback(r)
    assert r.returncode == 2 and "nowhere is not a folder of generated files" in r.stderr, r.stdout + r.stderr


def test_list_of_a_project_not_yet_translated_says_missing(project):
    subprocess.run(["rm", "-r", str(project / "gen")], check=True)
    r = _run("--list", cwd=project)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1].endswith("missing"), r.stdout


def test_the_standard_librarys_module_is_no_kernel_module(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.numbakern]\nkernels = ["json"]\n')
    for args in (("--all",), ("--check",), ("--list",)):
        r = _run(*args, cwd=tmp_path)
        _no_traceback(r)
        assert r.returncode == 2, r.stdout + r.stderr
        assert "'json' is Python's standard library module" in r.stderr and "rename your module" in r.stderr


def test_escape_sequences_in_manifest_fields_never_reach_the_terminal(project):
    data = _manifest(project)
    data["files"]["scale.cu"]["kernel"] = "mykern:scale\x1b]0;owned\x07\x1b[2J"
    data["files"]["scale.cu"]["source_sha256"] = "0" * 64  # stale: the message names the kernel
    _write_manifest(project, data)
    r = _run("--check", cwd=project)
    assert r.returncode == 1
    assert "\x1b" not in r.stdout + r.stderr and "\x07" not in r.stdout + r.stderr
    assert "mykern:scale\\x1b]0;owned\\x07\\x1b[2J changed since translation" in r.stdout, r.stdout


@pytest.mark.parametrize("content, why", [
    (None, "no such file"),
    ("{not json", "not valid JSON"),
    ('{"file": "scale.cu"}', "holds dict, not the list of records"),
    ('[{"file": "../escape.cu", "record": {}}]', "is not a plain file name"),
    ('[{"file": "scale.cu", "record": {"ok": "yes", "file_sha256": "' + "0" * 64 + '"}}]',
     "not a verification record: its ok is 'yes'"),
    ('[["scale.cu"]]', 'item 1 is not {"file": ..., "record": ...}'),
])
def test_verify_apply_reads_a_records_file_as_data(project, content, why):
    if content is not None:
        (project / "records.json").write_text(content)
    before = (project / "gen" / "manifest.json").read_text()
    r = _run("--apply", "records.json", cwd=project, module="translate.verify")
    _no_traceback(r)
    assert r.returncode == 2 and why in r.stderr.splitlines()[-1], r.stdout + r.stderr
    assert (project / "gen" / "manifest.json").read_text() == before


@pytest.mark.skipif(mode.gpu_available(), reason="checks what verification says on a machine without a GPU")
def test_verification_without_a_gpu_says_so_not_that_the_simulator_was_asked_for(tmp_path):
    r = _run("vector_add", cwd=tmp_path, module="translate.verify")
    _no_traceback(r)
    assert r.returncode == 2 and "no CUDA GPU is visible" in r.stderr, r.stderr
    assert "NUMBA_ENABLE_CUDASIM=1 is set" not in r.stderr
