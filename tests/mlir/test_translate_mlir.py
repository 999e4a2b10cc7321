"""translate on numba-cuda-mlir kernels: the library written against numba-cuda-mlir (``NUMBAKERN_FRONTEND=
numba-cuda-mlir`` loads it so) translates to the same C, byte for byte, as the library written against numba-cuda;
the manifest records the front end and ``translate --check`` notices a kernel that changed front end."""

import filecmp
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from numbakern.frontend.choice import numba_cuda_installed

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not numba_cuda_installed(), reason="translate types kernels with numba-cuda")


def translate(*args, frontend=None):
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_ENABLE_CUDASIM", "PYTEST_VERSION")}
    env.pop("NUMBAKERN_FRONTEND", None)
    if frontend:
        env["NUMBAKERN_FRONTEND"] = frontend
    return subprocess.run([sys.executable, "-m", "translate.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=1200)


def _translate_the_library(out: Path) -> None:
    result = translate("--all", "--out", str(out), frontend="numba-cuda-mlir")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


@pytest.fixture
def mlir_library(run_store) -> Path:
    """The library translated from its numba-cuda-mlir source (a minute and a half): once per run, whichever
    workers run these tests, which only read it."""
    return run_store.folder("mlir-library", _translate_the_library)


def test_every_library_kernel_gives_the_same_c_on_both_front_ends(mlir_library):
    reference = ROOT / "generated_cuda"
    files = sorted(p.name for p in reference.glob("*.cu"))
    assert len(files) >= 30
    match, mismatch, errors = filecmp.cmpfiles(reference, mlir_library, files, shallow=False)
    assert not mismatch and not errors, f"differ: {mismatch}, missing: {errors}"


def test_the_manifest_records_the_front_end(mlir_library):
    files = json.loads((mlir_library / "manifest.json").read_text())["files"]
    reference = json.loads((ROOT / "generated_cuda" / "manifest.json").read_text())["files"]
    assert set(files) == set(reference)
    for name, entry in files.items():
        assert entry["frontend"] == {"source": "numba-cuda-mlir", "typed_by": "numba-cuda"}, name
        assert "frontend" not in reference[name]
        assert entry["source_sha256"] == reference[name]["source_sha256"], name


def test_check_is_green_on_the_same_front_end_and_stale_on_the_other(mlir_library):
    same = translate("--check", "--out", str(mlir_library), frontend="numba-cuda-mlir")
    assert same.returncode == 0, same.stdout[-3000:] + same.stderr[-2000:]
    other = translate("--check", "--out", str(mlir_library))
    assert other.returncode != 0
    assert "numba-cuda-mlir" in other.stdout and "re-run translate" in other.stdout.replace("\n", " ")
