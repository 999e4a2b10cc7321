"""The tests' child processes keep a ``pip --target`` install: the GPU machine's documented set-up puts numbakern's
dependencies on PYTHONPATH, and a child whose PYTHONPATH is the checkout alone cannot import numba there."""

import os
from pathlib import Path

import pytest

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
