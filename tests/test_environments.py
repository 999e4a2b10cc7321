"""The tests' child processes keep a ``pip --target`` install: the GPU machine's documented set-up puts numbakern's
dependencies on PYTHONPATH, and a child whose PYTHONPATH is the checkout alone cannot import numba there."""

import os
from pathlib import Path

import pytest

from tests import environments
from tests.perf import test_codegen_report
from tests.translate import test_cli_output, test_user_project

ROOT = Path(__file__).resolve().parents[1]
TARGET = "/opt/site-target"  # where `pip install --target` put the wheels


@pytest.mark.parametrize("child_env", [test_cli_output.child_env, test_codegen_report.child_env,
                                       test_user_project.env], ids=["cli_output", "codegen_report", "user_project"])
def test_a_child_has_the_checkout_first_and_keeps_the_pip_target_folder(monkeypatch, child_env):
    monkeypatch.setenv("PYTHONPATH", TARGET)
    path = child_env()["PYTHONPATH"].split(os.pathsep)
    assert path == [str(ROOT), TARGET]


@pytest.mark.parametrize("visible", ["GPU-7f3c", "1", ""])
def test_a_clean_child_stays_on_its_workers_gpu(monkeypatch, tmp_path, visible):
    """``pytest --gpu -n auto`` pins each worker to a GPU by CUDA_VISIBLE_DEVICES: a child started with a clean
    environment keeps it (and "" keeps hiding every GPU), or it would run on the first GPU beside another worker."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert environments.clean(tmp_path)["CUDA_VISIBLE_DEVICES"] == visible
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert "CUDA_VISIBLE_DEVICES" not in environments.clean(tmp_path)


def test_a_clean_child_uses_the_runs_numbakern_cache(monkeypatch, tmp_path):
    """A run made with an empty cache (scripts/time_suite.py's first run) gives its children that cache, not the
    user's warm one under HOME; a test about the cache still gives its child a folder of its own."""
    monkeypatch.setenv("NUMBAKERN_CACHE_DIR", str(tmp_path / "run-cache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    env = environments.clean(tmp_path)
    assert (env["NUMBAKERN_CACHE_DIR"], env["XDG_CACHE_HOME"]) == (str(tmp_path / "run-cache"), str(tmp_path / "xdg"))
    assert environments.clean(tmp_path, NUMBAKERN_CACHE_DIR="own")["NUMBAKERN_CACHE_DIR"] == "own"
    monkeypatch.delenv("NUMBAKERN_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert not {"NUMBAKERN_CACHE_DIR", "XDG_CACHE_HOME"} & set(environments.clean(tmp_path))
