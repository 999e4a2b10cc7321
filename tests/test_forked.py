"""The suite's forked commands (``tests/forked.py``) against fresh processes: the same exit status, output and files
for the translate command's paths (a translation, a check, a usage error, an unknown kernel), a fresh process where a
folder on the path shadows what the template imported, and a timeout that kills the child."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import forked
from tests.environments import clean, with_path_first

ROOT = Path(__file__).resolve().parents[1]
KERNEL = '''
from numba import cuda


@cuda.jit
def halve(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * 0.5
'''
COMMANDS = [("--version",), ("halve:halve", "--signature", "void(float32[::1], float32[::1])"), ("--check",),
            ("--list",), ("nope",), ("--bogus",)]


def _project(folder: Path) -> Path:
    folder.mkdir()
    (folder / "pyproject.toml").write_text('[tool.numbakern]\nkernels = ["halve"]\nout = "gen"\n')
    (folder / "halve.py").write_text(KERNEL)
    return folder


def _timeless(text: str) -> str:
    return re.sub(r"\d+\.\d+s\b", "TIME", text)


def _files(folder: Path) -> dict[str, str]:
    """The files under ``folder`` (the manifest's times of day left out)."""
    return {str(p.relative_to(folder)): re.sub(r"\d{4}-\d\d-\d\dT[\d:]+Z", "TIME", p.read_text())
            for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def test_forked_commands_do_what_fresh_processes_do(tmp_path):
    runs = {}
    for how in ("forked", "fresh"):
        (tmp_path / how).mkdir()
        project = _project(tmp_path / how / "proj")  # one name: the output names the project
        env = with_path_first(clean(tmp_path), ROOT)
        before = dict(forked.COUNTS)
        results = []
        for args in COMMANDS:
            command = [sys.executable, "-m", "translate.cli", *args]
            if how == "forked":
                results.append(forked.run(command, cwd=project, env=env, timeout=300))
            else:
                results.append(subprocess.run(command, cwd=project, env=env, capture_output=True, text=True,
                                              timeout=300))
        if how == "forked":
            assert forked.COUNTS["forked"] - before["forked"] == len(COMMANDS), "a command ran fresh"
        runs[how] = [(r.returncode, _timeless(r.stdout), _timeless(r.stderr)) for r in results], _files(project)
    assert runs["forked"] == runs["fresh"]
    codes = [code for code, _, _ in runs["fresh"][0]]
    assert codes == [0, 0, 0, 0, 2, 2], runs["fresh"][0]  # the commands did what they were meant to


def test_a_folder_that_shadows_an_imported_module_gets_a_fresh_process(tmp_path):
    project = _project(tmp_path / "proj")
    shadow = tmp_path / "shadow"
    (shadow / "numba").mkdir(parents=True)
    (shadow / "numba" / "__init__.py").write_text("raise ImportError('the shadowing numba')\n")
    env = with_path_first(clean(tmp_path), shadow, ROOT)
    before = dict(forked.COUNTS)
    r = forked.run([sys.executable, "-m", "translate.cli", "--list"], cwd=project, env=env, timeout=300)
    assert forked.COUNTS["fresh"] == before["fresh"] + 1
    assert r.returncode != 0 and "the shadowing numba" in r.stderr, r.stdout + r.stderr


def test_a_command_past_its_timeout_is_killed(tmp_path):
    project = _project(tmp_path / "proj")
    (project / "halve.py").write_text("import time\ntime.sleep(120)\n" + KERNEL)
    env = with_path_first(clean(tmp_path), ROOT)
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        forked.run([sys.executable, "-m", "translate.cli", "--list"], cwd=project, env=env, timeout=3)
    assert time.monotonic() - started < 60
    # the template serves the next command
    r = forked.run([sys.executable, "-m", "translate.cli", "--version"], cwd=project, env=env, timeout=300)
    assert r.returncode == 0 and r.stdout.startswith("translate (numbakern)")
