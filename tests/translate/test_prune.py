"""Generated files of kernels that no longer exist (issue 41, "Generated files"): ``--check`` and ``--list`` say so
and point at ``translate --prune``, which removes them and their entries, and never a file of a kernel that exists;
inside a project that does not include numbakern's library, a library kernel is not translated into it."""

from __future__ import annotations

import json
import os
import sys

import pytest

from tests import forked
from tests.environments import clean, with_path_first

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KERNELS = '''import numpy as np
from numba import cuda

import numbakern


@cuda.jit
def saxpy_clamp(a, x, y, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = min(a * x[i] + y[i], 1.0)


@cuda.jit
def scale(x, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[i] * 2


def saxpy_args(rand, n=100):
    return np.float32(0.5), rand(n, np.float32), rand(n, np.float32), np.empty(n, np.float32)


def scale_args(rand, n=100):
    return rand(n, np.float32), np.empty(n, np.float32)


def _launch(*args):
    return (args[-1].shape[0] + 31) // 32, 32


numbakern.declare(saxpy_clamp, args=saxpy_args, launch=_launch, outputs="out",
                  reference=lambda a, x, y, out: np.minimum(a * x.astype(np.float64) + y, 1.0))
numbakern.declare(scale, args=scale_args, launch=_launch, outputs="out",
                  reference=lambda x, out: x.astype(np.float64) * 2)
'''


def _cli(*args, cwd):
    return forked.run([sys.executable, "-m", "translate.cli", *args], cwd=cwd, env=with_path_first(clean(cwd), ROOT),
                      timeout=600)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.numbakern]\nkernels = ["mykern"]\nout = "gen"\n')
    (tmp_path / "mykern.py").write_text(KERNELS)
    r = _cli("--all", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    # the kernel that stays is verified (a record the guard would honour)
    data = json.loads((tmp_path / "gen" / "manifest.json").read_text())
    entry = data["files"]["scale.cu"]
    entry["verification"] = {"ok": True, "device": "NVIDIA H200", "file_sha256": entry["file_sha256"]}
    (tmp_path / "gen" / "manifest.json").write_text(json.dumps(data))
    return tmp_path


def _files(project):
    return sorted(json.loads((project / "gen" / "manifest.json").read_text())["files"])


def test_a_renamed_kernels_file_is_reported_and_pruned(project):
    (project / "mykern.py").write_text(KERNELS.replace("saxpy_clamp", "saxpy"))
    assert _cli("--all", cwd=project).returncode == 0
    r = _cli("--check", cwd=project)
    assert r.returncode == 1
    line = next(ln for ln in r.stdout.splitlines() if "saxpy_clamp.cu" in ln)
    assert "has no attribute 'saxpy_clamp'" in line and "translate --prune removes its file and entry" in line
    listed = _cli("--list", cwd=project).stdout
    assert "(no kernel)  gen/saxpy_clamp.cu  unresolvable:" in listed, listed
    scale_before = (project / "gen" / "scale.cu").read_bytes()
    r = _cli("--prune", cwd=project)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == [
        "removed    gen/saxpy_clamp.cu  mykern:saxpy_clamp: 'mykern' has no attribute 'saxpy_clamp'",
        "translate --prune -> gen/: 1 removed"]
    assert not (project / "gen" / "saxpy_clamp.cu").exists()
    assert _files(project) == ["saxpy.cu", "scale.cu"]
    assert (project / "gen" / "scale.cu").read_bytes() == scale_before
    r = _cli("--check", cwd=project)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _cli("--prune", cwd=project).stdout == "translate --prune -> gen/: 0 removed\n"


def test_a_kernel_whose_module_does_not_import_now_keeps_its_verified_file(project):
    """The kernel may still exist: a syntax error is no proof that it is gone."""
    (project / "mykern.py").write_text(KERNELS + "\ndef broken(:\n")
    r = _cli("--prune", cwd=project)
    assert r.returncode == 2 and "importing the kernels of" in r.stderr, r.stdout + r.stderr
    assert _files(project) == ["saxpy_clamp.cu", "scale.cu"]
    (project / "mykern.py").write_text(KERNELS.replace("import numbakern\n", "import numbakern\nimport nowhere_\n"))
    assert _cli("--prune", cwd=project).returncode == 2
    assert _files(project) == ["saxpy_clamp.cu", "scale.cu"]


def test_a_library_kernel_is_not_translated_into_a_project_that_excludes_the_library(project):
    r = _cli("matmul_tiled", cwd=project)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.strip() == (f"translate: 'matmul_tiled' is a kernel of numbakern's library, which project "
                                f"{project.name} does not include (include-library = false in "
                                f"{project / 'pyproject.toml'}): set include-library = true to translate library "
                                "kernels in this project")
    assert not (project / "gen" / "matmul_tiled.cu").exists()
    # one written before the rule (or by hand) is no kernel of the project: --prune removes it
    outside = project.parent / f"{project.name}-no-project"  # no pyproject.toml here or above: the library
    outside.mkdir()
    assert _cli("matmul_tiled", "--out", str(project / "lib"), cwd=outside).returncode == 0
    lib = json.loads((project / "lib" / "manifest.json").read_text())["files"]["matmul_tiled.cu"]
    data = json.loads((project / "gen" / "manifest.json").read_text())
    data["files"]["matmul_tiled.cu"] = lib
    (project / "gen" / "manifest.json").write_text(json.dumps(data))
    (project / "gen" / "matmul_tiled.cu").write_bytes((project / "lib" / "matmul_tiled.cu").read_bytes())
    r = _cli("--prune", cwd=project)
    assert r.returncode == 0 and "1 removed" in r.stdout and "matmul_tiled" in r.stdout, r.stdout + r.stderr
    assert _files(project) == ["saxpy_clamp.cu", "scale.cu"]
    # with include-library = true the library's kernels are the project's: translated, and never pruned
    (project / "pyproject.toml").write_text('[tool.numbakern]\nkernels = ["mykern"]\nout = "gen"\n'
                                            "include-library = true\n")
    assert _cli("matmul_tiled", cwd=project).returncode == 0
    assert "0 removed" in _cli("--prune", cwd=project).stdout


def test_an_entry_that_names_a_gone_kernel_for_a_current_file_does_not_get_it_removed(project):
    """The manifest is data: an entry of scale.cu rewritten to name a kernel outside the project would make scale.cu
    look like the file of a kernel that is gone; scale's kernel exists and writes it, so it stays."""
    data = json.loads((project / "gen" / "manifest.json").read_text())
    data["files"]["scale.cu"]["target"] = "elsewhere:scale"
    (project / "gen" / "manifest.json").write_text(json.dumps(data))
    r = _cli("--prune", cwd=project)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == "translate --prune -> gen/: 0 removed, 1 kept\n"
    assert "kept gen/scale.cu: a kernel of the project writes it, though its entry names elsewhere:scale" in r.stderr
    assert (project / "gen" / "scale.cu").exists() and _files(project) == ["saxpy_clamp.cu", "scale.cu"]
