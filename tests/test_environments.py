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
