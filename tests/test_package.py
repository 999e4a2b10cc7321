"""numbakern as a package: the wheel carries what an installed numbakern needs (its licence, type markers, the CUDA
helper file that verification compiles, both commands and the pytest plugin), CI builds and smoke-tests it in a
fresh environment, and the docs give commands that work in the README's environment."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest

from numbakern._version import __version__

ROOT = Path(__file__).resolve().parents[1]
#: the setuptools major version pyproject.toml's [build-system] requires (License-Expression, PEP 639)
SETUPTOOLS_NEEDED = int(re.fullmatch(r"setuptools>=(\d+)", tomllib.loads((ROOT / "pyproject.toml").read_text())
                                     ["build-system"]["requires"][0]).group(1))


def _pip_wheel(source: Path, dist: Path, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *options, "-w", str(dist),
                           str(source)], capture_output=True, text=True, timeout=600)


def _setuptools_major() -> int:
    try:
        return int(version("setuptools").split(".")[0])
    except PackageNotFoundError:
        return 0


def test_the_wheel_carries_the_licence_type_markers_the_cuda_helpers_and_both_commands(tmp_path):
    # built from a copy: setuptools writes build/ and egg-info next to the sources
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    for package in ("numbakern", "translate"):
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    build = _pip_wheel(source, tmp_path / "dist")
    if build.returncode != 0 and "No matching distribution found" in build.stderr:
        # no package index to fetch the build backend from (the offline GPU machine): the one installed here
        if _setuptools_major() < SETUPTOOLS_NEEDED:
            pytest.skip(f"no package index, and setuptools here is older than {SETUPTOOLS_NEEDED} (pyproject.toml's "
                        "[build-system]); CI builds the wheel (.ci/smoke_wheel)")
        build = _pip_wheel(source, tmp_path / "dist", "--no-build-isolation")
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("numbakern-*.whl")
    assert wheel.name == f"numbakern-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        info = f"numbakern-{__version__}.dist-info"
        metadata = z.read(f"{info}/METADATA").decode()
        entry_points = z.read(f"{info}/entry_points.txt").decode()
        licence = z.read(f"{info}/licenses/LICENSE").decode()
    assert {"numbakern/py.typed", "translate/py.typed", "translate/verify/gpu_helpers.cu"} <= names
    assert "License-Expression: BSD-2-Clause" in metadata and "Copyright (c) 2026, the numbakern authors" in licence
    assert "translate = translate.cli:main" in entry_points and "numbakern = translate.commands:main" in entry_points
    assert "numbakern = numbakern.pytest_plugin" in entry_points


def test_ci_builds_the_wheel_and_smoke_tests_it_after_the_readmes_test_command():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    # the README's test command (test_readme checks it is there verbatim), stopped by `|| exit` where it fails
    readme_tests = next(i for i, line in enumerate(ci) if line.endswith(("&& pytest", "&& pytest || exit")))
    assert readme_tests < ci.index("bash .ci/smoke_wheel")
    smoke = (ROOT / ".ci" / "smoke_wheel").read_text()
    for step in ("-m build", "translate --version", "numbakern --version", "python -m translate --version",
                 "translate vector_add", "numbakern check", "<!-- commands: examples -->"):
        assert step in smoke, step


def test_the_docs_install_the_examples_with_their_test_requirements_and_run_that_environments_pytest():
    doc = (ROOT / "docs" / "your-kernels.md").read_text()
    block = re.search(r"<!-- commands: examples -->\n```bash\n(.*?)```", doc, re.S).group(1)
    assert block.splitlines() == ["cd examples", 'pip install -e ".[test]"', "python -m pytest"]
    comment = (ROOT / "examples" / "pyproject.toml").read_text().split("[build-system]")[0]
    assert 'pip install -e ".[test]"' in comment and "python -m pytest" in comment
    assert "pip install -e .  " not in comment


def test_licence_and_changelog():
    licence = (ROOT / "LICENSE").read_text()
    assert licence.startswith("BSD 2-Clause License\n\nCopyright (c) 2026, the numbakern authors\n")
    assert "THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS \"AS IS\"" in licence
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert "## Unreleased" in changelog and re.search(rf"^## {re.escape(__version__)} - \d{{4}}-\d\d-\d\d$",
                                                      changelog, re.M)
