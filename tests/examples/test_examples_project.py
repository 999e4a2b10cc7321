"""The examples/ project, run the way its user runs it: its own pytest in its own folder, its generated C checked.

Both run in child processes: importing the project here would put its ``block_sum`` next to the library's in this
process's registry (the ambiguity the project namespace exists to report).
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.environments import pytest_plugin_args, with_path_first

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(args, **kwargs):
    env = with_path_first(dict(os.environ), EXAMPLES)
    return subprocess.run(args, cwd=EXAMPLES, env=env, capture_output=True, text=True, timeout=600, **kwargs)


def test_the_examples_own_tests_pass():
    # as a user runs them in their project: plain pytest, numbakern's plugin choosing the simulator
    env = {k: v for k, v in with_path_first(dict(os.environ), EXAMPLES).items() if k != "NUMBA_ENABLE_CUDASIM"}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *pytest_plugin_args()],
                            cwd=EXAMPLES, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    summary = result.stdout.strip().splitlines()[-1]
    passed = int(summary.split(" passed")[0].split()[-1])
    assert passed >= 40 and "failed" not in summary and "error" not in summary, summary


CHECK = textwrap.dedent("""
    import json
    import numbakern.project
    from translate.api import check

    project = numbakern.project.find(".")
    print(json.dumps({
        "pyproject": str(project.pyproject),
        "kernels": [spec.name for spec in project.specs()],
        "out_dir": str(project.out_dir),
        "problems": check(str(project.out_dir), registry=False),
    }))
""")


@pytest.fixture(scope="module")
def checked():
    result = run([sys.executable, "-c", CHECK])
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_examples_generated_c_is_up_to_date(checked):
    assert checked["pyproject"] == str(EXAMPLES / "pyproject.toml")
    assert checked["out_dir"] == str(EXAMPLES / "generated_cuda")
    assert checked["problems"] == []


def test_every_declared_kernel_has_its_file(checked):
    manifest = json.loads((EXAMPLES / "generated_cuda" / "manifest.json").read_text())
    files = {entry["target"].rsplit(":", 1)[1]: name for name, entry in manifest["files"].items()}
    assert sorted(checked["kernels"]) == ["block_sum", "histogram", "row_softmax", "stencil5"]
    assert sorted(files) == sorted(checked["kernels"])
    for kernel, file in files.items():
        assert file == f"{kernel}.cu"
        assert manifest["files"][file]["target"].startswith("mykernels.")  # the user's module, never an internal name


def test_translate_check_in_the_examples_as_ci_runs_it():
    """``.ci/run``'s step: ``translate --check`` in examples/, the project found from its pyproject.toml (the
    installed command; ``python -m translate.cli`` where it is not installed)."""
    command = Path(sys.executable).with_name("translate")
    command = [str(command)] if command.exists() else [sys.executable, "-m", "translate.cli"]
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    if not command[0].endswith("translate"):
        env = with_path_first(env, EXAMPLES.parent)  # (keeping a pip --target install's PYTHONPATH)
    result = subprocess.run([*command, "--check"], cwd=EXAMPLES, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout == "translate --check: every file in generated_cuda/ is up to date\n"
