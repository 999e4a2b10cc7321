"""``translate`` in a user's project, run as its user runs it: a child process in a fresh project folder (a
``pyproject.toml`` with ``[tool.numbakern]``, a kernel module), never importing the user's module here (its
``block_sum`` next to the library's in this process's registry would make the bare name ambiguous for other tests).

The project's ``block_sum`` has a library kernel's name on purpose: everything must find the user's."""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import environments, forked

ROOT = Path(__file__).resolve().parents[2]

PYPROJECT = """\
[project]
name = "tinyproj"
version = "0.1.0"

[tool.numbakern]
kernels = ["tkern"]
out = "build/cuda"
"""

KERNELS = '''\
"""A user's kernels: one declared (its signature comes from its example inputs), one named like a library kernel."""

import numpy as np
from numba import cuda

import numbakern


@cuda.jit
def scale(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * 3


def scale_args(rand, n=1000):
    x = rand(n, np.float32)
    return x, np.empty_like(x)


numbakern.declare(scale, args=scale_args, launch=lambda x, out: numbakern.launch_config(x.shape[0], 128),
                  reference=lambda x, out: x.astype(np.float64) * 3)


@cuda.jit
def block_sum(x, total):
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.add(total, 0, np.float64(x[i]))


def block_sum_args(rand, n=777):
    return rand(n, np.float32), rand(1, np.float64)


numbakern.declare(block_sum, args=block_sum_args, launch=lambda x, total: numbakern.launch_config(x.shape[0], 64),
                  reference=lambda x, total: total + x.astype(np.float64).sum(),
                  error_scale=lambda x, total: np.abs(total) + np.abs(x.astype(np.float64)).sum(), rtol=1e-12,
                  verify_sizes=[{"n": 1}, {"n": 191}, {"n": 4099}])
'''

UNDECLARED = '''\
from numba import cuda


@cuda.jit
def halve(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] / 2
'''


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "tinyproj"
    root.mkdir()
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "tkern.py").write_text(KERNELS)
    (root / "loose.py").write_text(UNDECLARED)
    return root


def env(**extra):
    # numbakern and translate, as if installed (and a pip --target install's folder kept); never the project's folder
    e = environments.with_path_first({k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}, ROOT)
    e.update(extra)
    return e


def translate(cwd, *args, umask=None, command=None):
    command = command or [sys.executable, "-m", "translate.cli"]
    return forked.run([*command, *args], cwd=cwd, env=env(), timeout=600, umask=umask)


def python(cwd, code, **extra):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=env(**extra),
                          capture_output=True, text=True, timeout=600)


def test_all_translates_the_projects_kernels_into_its_folder_and_check_passes(project):
    r = translate(project, "--all")
    assert r.returncode == 0, r.stdout + r.stderr
    out = project / "build" / "cuda"
    manifest = json.loads((out / "manifest.json").read_text())
    # the project's kernels only: not the library's (its block_sum is the user's)
    assert sorted(manifest["files"]) == ["block_sum.cu", "scale.cu"]
    assert manifest["files"]["block_sum.cu"]["target"] == "tkern:block_sum"
    assert manifest["files"]["block_sum.cu"]["signature"] == "void(float32[::1], float64[::1])"
    assert manifest["files"]["scale.cu"]["signature"] == "void(float32[::1], float32[::1])"  # from the spec
    # piped: one whole line per kernel, what happened, the path, the launcher
    lines = r.stdout.splitlines()
    assert any(line.startswith("written") and " build/cuda/scale.cu " in line and "launcher launch_scale " in line
               for line in lines), r.stdout
    assert "…" not in r.stdout and "┃" not in r.stdout
    assert lines[-1] == "translate -> build/cuda/ (ast, sm_90): 2 written, 0 unchanged, 0 failed"

    again = translate(project, "--all")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[-1].endswith(": 0 written, 2 unchanged, 0 failed")

    for args in ((), ("--out", "build/cuda"), ("--out", str(out))):
        r = translate(project, "--check", *args)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "up to date" in r.stdout and "registered kernel" not in r.stdout


def test_check_of_the_projects_folder_wants_every_project_kernel_but_a_named_folder_only_its_manifest(project):
    assert translate(project, "scale").returncode == 0  # a bare name in a project: the project's kernel
    r = translate(project, "--check")
    assert r.returncode == 1
    assert re.search(r"^missing +block_sum\.cu +kernel 'tkern:block_sum' has no generated file", r.stdout, re.M), \
        r.stdout
    assert "matmul" not in r.stdout  # never the library's kernels
    other = project / "elsewhere"
    assert translate(project, "tkern:scale", "--out", str(other)).returncode == 0
    r = translate(project, "--check", "--out", str(other))
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_generated_files_honour_the_umask(project, umask, mode):
    r = translate(project, "scale", umask=umask)
    assert r.returncode == 0, r.stderr
    out = project / "build" / "cuda"
    for name in ("scale.cu", "manifest.json"):
        assert (out / name).stat().st_mode & 0o777 == mode, name
    assert not [p.name for p in out.iterdir() if p.name.startswith(".tmp-")]  # written atomically, nothing left


def test_piped_output_keeps_a_long_path_whole(project):
    deep = project.parent / ("a_rather_long_folder_name_" * 3) / "and_another_level_of_folders" / "generated"
    r = translate(project, "tkern:scale", "--out", str(deep))
    assert r.returncode == 0, r.stderr
    assert f" {deep}/scale.cu " in r.stdout  # outside the current folder: the absolute path, whole


def test_module_kernel_resolves_from_the_current_folder_with_the_installed_command(project):
    command = Path(sys.executable).with_name("translate")
    if not command.exists():
        pytest.skip("the translate command is not installed next to this python")
    r = translate(project, "loose:halve", "--signature", "void(float32[::1], float32[::1])", command=[str(command)])
    assert r.returncode == 0, r.stdout + r.stderr
    text = (project / "build" / "cuda" / "halve.cu").read_text()
    assert "// loose:halve for void(float32[::1], float32[::1])." in text


def test_a_file_kernel_is_named_by_its_file_never_an_internal_module(project):
    r = translate(project, "loose.py:halve", "--signature", "void(float32[::1], float32[::1])", "--out", "gen")
    assert r.returncode == 0, r.stdout + r.stderr
    header = (project / "gen" / "halve.cu").read_text().splitlines()[1]
    assert header == "// loose.py:halve for void(float32[::1], float32[::1]).", header
    entry = json.loads((project / "gen" / "manifest.json").read_text())["files"]["halve.cu"]
    assert entry["kernel"] == "loose.py:halve" and entry["target"] == "loose.py:halve"
    assert "_translate_" not in r.stdout + r.stderr


def test_a_missing_signature_is_located_at_the_kernels_def_line(project):
    r = translate(project, "loose.py:halve", "--out", "gen")
    assert r.returncode == 1
    def_line = UNDECLARED.splitlines().index("def halve(x, out):") + 1
    first = r.stderr.splitlines()[0]
    assert first.startswith(f"{project / 'loose.py'}:{def_line}:1: error: no argument types for loose.py:halve"), \
        first
    assert "_translate_" not in r.stderr


def test_a_bad_tool_table_is_a_usage_error_naming_the_file(project):
    (project / "pyproject.toml").write_text(PYPROJECT + 'arhc = "sm_90"\n')
    r = translate(project, "--all")
    assert r.returncode == 2
    assert str(project / "pyproject.toml") in r.stderr and "arhc" in r.stderr


def test_verification_finds_the_users_spec_and_file_not_the_librarys(project):
    assert translate(project, "--all").returncode == 0
    r = python(project, """
        import json
        import numbakern.project
        from numbakern import registry
        from translate.verify.cli import candidate_for, specs_named

        project = numbakern.project.find(".")
        [spec] = specs_named(["block_sum"], project)
        file_name, cand = candidate_for(spec, project.out_dir)
        library = registry.lookup("numbakern", "block_sum")
        try:
            candidate_for(library, project.out_dir)
            library_found = True
        except LookupError:
            library_found = False
        print(json.dumps({"module": spec.module, "file": file_name, "cu": str(cand.cu),
                          "by_target": specs_named(["tkern:block_sum"], project)[0] is spec,
                          "library_found": library_found}))
    """)
    assert r.returncode == 0, r.stderr
    found = json.loads(r.stdout.splitlines()[-1])
    assert found == {"module": "tkern", "file": "block_sum.cu", "cu": str(project / "build/cuda/block_sum.cu"),
                     "by_target": True, "library_found": False}


def test_the_sanitized_childs_spec_is_the_users_even_with_a_library_kernels_name(project, tmp_path):
    """The plan the sanitizer writes, read the way its child reads it (``sancase.plan_spec``), in a process of its
    own whose current folder and path know nothing of the project (like the sandboxed child)."""
    plan = tmp_path / "plan.json"
    r = python(project, f"""
        import json
        from pathlib import Path
        import tkern  # noqa: F401 - declares the project's kernels
        from numbakern import registry
        from translate.verify.harness import Candidate
        from translate.verify.sanitize import _plan_items

        spec = registry.lookup("tkern", "block_sum")
        Path({str(plan)!r}).write_text(json.dumps(_plan_items([(spec, Candidate(Path("block_sum.cu"), {{}}), "x.so")])))
    """)
    assert r.returncode == 0, r.stderr
    child = tmp_path / "child"
    child.mkdir()
    r = python(child, f"""
        import json
        import numpy as np
        from numbakern import registry
        from translate.verify.sancase import plan_spec

        [item] = json.load(open({str(plan)!r}))
        spec = plan_spec(item)
        case = spec.make_case(item["sizes"][0], np.random.default_rng(0), "normal")
        print(json.dumps({{"module": spec.module, "sizes": item["sizes"], "n": int(case.args[0].shape[0]),
                          "library": spec is registry.lookup("numbakern", "block_sum")}}))
    """)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout.splitlines()[-1])
    # the user's spec: its own verification sizes (the library's smallest are different), its own module
    assert got == {"module": "tkern", "sizes": [{"n": 1}, {"n": 191}], "n": 1, "library": False}


def test_the_library_joins_a_project_only_when_asked_and_a_name_clash_is_a_clear_error(project):
    r = translate(project, "--check")  # include-library unset: the library's kernels are not the project's
    assert r.returncode == 1 and "matmul" not in r.stdout and "block_sum" in r.stdout
    (project / "pyproject.toml").write_text(PYPROJECT + "include-library = true\n")
    r = translate(project, "--all")
    assert r.returncode == 2
    # both block_sums would write block_sum.cu: named, with the way out
    assert "two kernels named 'block_sum'" in r.stderr and "tkern:block_sum" in r.stderr, r.stderr
    assert "include-library = false" in r.stderr
    assert not (project / "build").exists()  # nothing written


def test_a_kernel_module_that_fails_to_import_is_named_with_its_line(project):
    kernels = project / "tkern.py"
    kernels.write_text(KERNELS + "\nraise RuntimeError('half-written module')\n")
    line = len(kernels.read_text().splitlines())
    for args in (("--all",), ("--check",), ("scale",)):
        r = translate(project, *args)
        assert r.returncode == 2, r.stdout + r.stderr
        assert r.stderr == (f"translate: importing the kernels of {project / 'pyproject.toml'} failed at "
                            f"tkern.py:{line}: RuntimeError: half-written module\n"), r.stderr


def test_a_file_kernels_device_functions_are_named_by_the_file_and_their_edits_make_it_stale(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.numbakern]\nkernels = ["dev"]\n')  # --check imports it
    (tmp_path / "dev.py").write_text(textwrap.dedent("""\
        from numba import cuda


        @cuda.jit(device=True)
        def twice(x):
            return x * 2


        @cuda.jit
        def scale(a, out):
            i = cuda.grid(1)
            if i < a.size:
                out[i] = twice(a[i])
        """))
    r = translate(tmp_path, "dev.py:scale", "--signature", "void(float32[::1], float32[::1])", "--out", "gen")
    assert r.returncode == 0, r.stdout + r.stderr
    entry = json.loads((tmp_path / "gen" / "manifest.json").read_text())["files"]["scale.cu"]
    assert entry["depends"]["device_functions"] == ["dev.py:twice"]
    assert translate(tmp_path, "--check", "--out", "gen").returncode == 0
    (tmp_path / "dev.py").write_text((tmp_path / "dev.py").read_text().replace("x * 2", "x * 3"))
    r = translate(tmp_path, "--check", "--out", "gen")
    assert r.returncode == 1 and "stale" in r.stdout and "dev.py:scale" in r.stdout, r.stdout + r.stderr


def test_a_kernel_made_by_exec_translates_checks_and_goes_stale_with_its_string(tmp_path):
    """A project kernel made by exec() of a string: translated from its Python rebuilt from numba's IR, named as the
    module binds it, up to date for --check, stale once the string changes."""
    (tmp_path / "pyproject.toml").write_text('[tool.numbakern]\nkernels = ["made"]\n')
    template = textwrap.dedent('''\
        from numba import cuda

        SOURCE = """
        def scale(x, out):
            i = cuda.grid(1)
            if i < x.size:
                out[i] = x[i] * FACTOR
        """
        ns = {"cuda": cuda}
        exec(SOURCE.replace("FACTOR", "2.0"), ns)
        twice = cuda.jit(ns["scale"])
        ''')
    (tmp_path / "made.py").write_text(template)
    r = translate(tmp_path, "made:twice", "--signature", "void(float32[::1], float32[::1])", "--out", "gen")
    assert r.returncode == 0, r.stdout + r.stderr
    code = (tmp_path / "gen" / "twice.cu").read_text()
    assert "__global__ void twice(" in code and "out[i] = x[i] * 2.0;" in code, code
    assert translate(tmp_path, "--check", "--out", "gen").returncode == 0
    (tmp_path / "made.py").write_text(template.replace('"2.0"', '"3.0"'))
    r = translate(tmp_path, "--check", "--out", "gen")
    assert r.returncode == 1 and "stale" in r.stdout and "made:twice" in r.stdout, r.stdout + r.stderr


VERIFY_WITHOUT_A_GPU = """
    import json
    import types
    from translate import cli
    from translate.verify import cli as verify_cli

    seen = {}

    def verify_kernels(specs, directory, **options):  # what verification would run: which spec, which file
        for spec in specs:
            file_name, cand = verify_cli.candidate_for(spec, directory)
            seen[spec.name] = {"module": spec.module, "file": file_name, "cu": str(cand.cu)}
        return [types.SimpleNamespace(ok=True)]

    verify_cli.preflight = lambda: ""  # no GPU here: everything up to the GPU runs as it would
    verify_cli.verify_kernels = verify_kernels
    rc = cli.main(%r)
    print(json.dumps({"rc": rc, "seen": seen}))
"""


@pytest.mark.parametrize("target", ["tkern.py:block_sum", "tkern:block_sum"])
def test_verify_finds_the_declared_spec_of_a_kernel_named_by_file_or_module(project, target):
    r = python(project, VERIFY_WITHOUT_A_GPU % ([target, "--out", "gen", "--verify"],))
    assert r.returncode == 0, r.stdout + r.stderr
    found = json.loads(r.stdout.splitlines()[-1])
    # the project's own block_sum (its module declares it), and the file this run wrote -- not the library's
    assert found == {"rc": 0, "seen": {"block_sum": {"module": "tkern", "file": "block_sum.cu",
                                                     "cu": "gen/block_sum.cu"}}}, found


def test_verify_of_an_undeclared_file_kernel_says_what_it_needs(project):
    r = python(project, VERIFY_WITHOUT_A_GPU % (
        ["loose.py:halve", "--signature", "void(float32[::1], float32[::1])", "--out", "gen", "--verify"],))
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout.splitlines()[-1]) == {"rc": 2, "seen": {}}
    assert "translate --verify: loose.py:halve is not declared (numbakern.declare(" in r.stderr, r.stderr


def test_the_shards_of_all_are_disjoint_cover_the_project_and_verify_only_their_own(project):
    written = []
    for i in (1, 2, 3):
        r = translate(project, "--all", "--shard", f"{i}/3", "--out", f"gen{i}")
        assert r.returncode == 0, r.stdout + r.stderr
        folder = project / f"gen{i}" / "manifest.json"
        written.append(sorted(json.loads(folder.read_text())["files"]) if folder.exists() else [])
    assert sorted(sum(written, [])) == ["block_sum.cu", "scale.cu"], written  # each kernel in exactly one shard
    first = next(i for i, files in enumerate(written, 1) if files)
    r = python(project, VERIFY_WITHOUT_A_GPU % (["--all", "--shard", f"{first}/3", "--out", "gen", "--verify"],))
    assert r.returncode == 0, r.stdout + r.stderr
    seen = json.loads(r.stdout.splitlines()[-1])["seen"]
    assert sorted(f"{name}.cu" for name in seen) == written[first - 1]  # the shard's kernels, and only once


@pytest.mark.parametrize("args, message", [(["scale", "--shard", "1/2"], "--shard I/N applies to --all"),
                                           (["--all", "--shard", "3/2"], "--shard 3/2: I must be between 1 and N"),
                                           (["--all", "--merge", "x"], "use one of KERNEL / --all, --check")])
def test_bad_shard_and_merge_options_are_one_line(project, args, message):
    r = translate(project, *args)
    assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
