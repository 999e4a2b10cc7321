"""The Python API reads a project as the ``translate`` command does, a script's kernel translates without its GPU
work running, and a project that leaves the library out never imports it — each through the real API or CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from tests import forked
from tests.environments import clean, with_path_first
from translate import api
from translate.errors import UnknownKernel

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

KERNEL = '''import numpy as np
from numba import cuda

import numbakern


@cuda.jit
def scale(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * 2


def scale_args(rand, n=1000):
    return rand(n, np.float32), rand(n, np.float32)


numbakern.declare(scale, args=scale_args, launch=lambda x, out: numbakern.launch_config(x.shape[0], 128),
                  reference=lambda x, out: x.astype(np.float64) * 2, outputs="out")
'''


def _env(cwd, **extra):
    return with_path_first(clean(cwd, **extra), ROOT)


def _cli(*args, cwd):
    return forked.run([sys.executable, "-m", "translate.cli", *args], cwd=cwd, env=_env(cwd), timeout=600)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("api") / "proj"
    (root / "mykern").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "mykern"\n[tool.numbakern]\nkernels = ["mykern"]\n'
                                         'out = "gen"\narch = "sm_80"\n')
    (root / "mykern" / "__init__.py").write_text("")
    (root / "mykern" / "scaling.py").write_text(KERNEL)
    r = _cli("--all", cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    return root


def test_the_api_reads_the_project_as_the_command_does(project):
    """In a project where ``translate --check`` is up to date, ``api.check()`` is too (it once listed the library's
    35 files as missing), and ``api.translate_kernel`` finds the project's kernel by its bare name, writes into the
    project's folder for its arch."""
    assert _cli("--check", cwd=project).returncode == 0
    assert api.check(project_dir=str(project)) == []
    result = api.translate_kernel("scale", project_dir=str(project), write=False)
    assert result.entry["kernel"] == "mykern.scaling:scale" and result.path is None
    written = api.translate_kernel("scale", project_dir=str(project))
    assert os.path.realpath(written.path) == os.path.realpath(project / "gen" / "scale.cu")
    assert written.entry["compile"]["arch"] == "sm_80"
    # --json prints what the API returns
    r = _cli("--check", "--json", cwd=project)
    assert json.loads(r.stdout)["problems"] == api.check(project_dir=str(project))


def test_the_api_raises_the_documented_types(project):
    with pytest.raises(KeyError) as found:  # a KeyError, as for any unknown name (not a RuntimeError)
        api.translate_kernel("scael", project_dir=str(project), write=False)
    assert isinstance(found.value, UnknownKernel)
    assert "did you mean 'scale'" in str(found.value)
    bad = project.parent / "bad"
    bad.mkdir(exist_ok=True)
    (bad / "pyproject.toml").write_text('[tool.numbakern]\nkernels = "not a list"\n')
    with pytest.raises(ValueError, match="'kernels' must be a list"):
        api.check(project_dir=str(bad))


QUICKSTART_MARKER = "print-this-and-fail"


def _readme_quickstart() -> str:
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    block = re.search(r"## Quickstart.*?```python\n(.*?)```", text, re.S)
    assert block, "README's quickstart block"
    return block.group(1)


def test_a_scripts_kernel_translates_without_its_gpu_work(tmp_path):
    """The README's quickstart launches kernels at its top level; translating its kernel runs none of that."""
    marker = tmp_path / "ran"
    script = _readme_quickstart() + f"\nimport pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n"
    (tmp_path / "quickstart.py").write_text(script)
    r = _cli("quickstart.py:scaled_copy", "--const", "factor=3", "--signature", "void(float32[::1], float32[::1])",
             "--out", "gen", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "gen" / "scaled_copy.cu").exists()
    assert not marker.exists(), "translating the script ran its top level"


def test_an_import_failure_points_at_the_users_line(tmp_path):
    (tmp_path / "broken.py").write_text(textwrap.dedent("""\
        from numba import cuda

        LIMIT = undefined_name + 1


        @cuda.jit
        def clamp(x):
            x[0] = min(x[0], LIMIT)
        """))
    r = _cli("broken.py:clamp", "--signature", "void(float32[::1])", "--out", "gen", cwd=tmp_path)
    assert r.returncode == 1
    assert "broken.py:3:" in r.stderr and "NameError" in r.stderr, r.stderr


NO_LIBRARY = """
import sys
from translate import cli
rc = cli.main(["--all", "-q"])
assert rc == 0, rc
rc = cli.main(["--check", "-q"])
assert rc == 0, rc
print(sorted(m for m in sys.modules if m.startswith("numbakern.kernels")))
"""


def test_a_project_without_the_library_never_imports_it(project):
    """``include-library = false`` (the default): the library's 35 kernels (seconds of import) are not imported."""
    r = subprocess.run([sys.executable, "-c", NO_LIBRARY], cwd=project, capture_output=True, text=True,
                       env=_env(project), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[]", r.stdout
