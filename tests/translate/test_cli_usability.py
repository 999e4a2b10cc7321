"""The ``translate`` command as a new user meets it, through the real command in a child process: what it prints
while it works and when it is stopped, its one-line errors for bad input (found before any kernel is translated),
``--version``, ``--list``, ``--json``, ``--quiet``/``--verbose``, ``python -m translate`` and the ``numbakern``
command."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from numbakern._version import __version__
from tests import environments, forked

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def env() -> dict[str, str]:
    return environments.with_path_first({k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}, ROOT)


def run(*args: str, cwd: Path = ROOT, command: tuple[str, ...] = ("-m", "translate.cli")
        ) -> subprocess.CompletedProcess:
    return forked.run([sys.executable, *command, *args], cwd=cwd, env=env(), timeout=600)


def test_version_of_each_entry_point():
    assert run("--version").stdout == f"translate (numbakern) {__version__}\n"
    assert run("--version", command=("-m", "translate")).stdout == f"translate (numbakern) {__version__}\n"
    assert run("--version", command=("-m", "translate.commands")).stdout == f"numbakern {__version__}\n"


def test_an_unknown_kernel_is_one_line_with_the_closest_names(tmp_path):
    r = run("matmul_tild", "--out", str(tmp_path / "gen"))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == ("translate: no kernel named 'matmul_tild' in numbakern's library; did you mean "
                        "'matmul_tiled', 'matmul_tiled_fast' or 'matmul_pipelined'? (translate --list shows them)\n")
    assert not (tmp_path / "gen").exists()


def test_an_out_that_cannot_take_the_files_fails_before_any_kernel_is_translated(tmp_path):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine")
    t0 = time.monotonic()
    r = run("--all", "--out", str(a_file))
    assert r.returncode == 2 and r.stdout == "", r.stdout
    assert r.stderr == f"translate: --out {a_file} is a file, not a folder\n"
    assert time.monotonic() - t0 < 30  # not a single kernel: --all takes minutes
    r = run("vector_add", "--out", str(a_file / "gen"))
    assert r.returncode == 2 and r.stderr.startswith(f"translate: --out {a_file / 'gen'}: ") and "is a file" in r.stderr


def test_a_folder_that_cannot_be_written_is_named(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        # root writes anywhere but in a folder of a read-only file system: procfs stands in for one
        folder = locked if not os.access(locked, os.W_OK) else Path("/proc/self")
        if not folder.is_dir():
            pytest.skip("no read-only folder to try")
        r = run("vector_add", "--out", str(folder / "gen"))
    finally:
        locked.chmod(0o755)
    assert r.returncode == 2 and r.stdout == ""
    assert re.fullmatch(rf"translate: --out {re.escape(str(folder / 'gen'))}: cannot write in the folder "
                        rf"{re.escape(str(folder))} \(.+\)\n", r.stderr), r.stderr


def test_an_arch_nvrtc_cannot_compile_for_is_refused_up_front(tmp_path):
    r = run("vector_add", "--arch", "sm_1000", "--out", str(tmp_path / "gen"))
    assert r.returncode == 2 and r.stdout == ""
    assert re.fullmatch(r"translate: --arch sm_1000: NVRTC \d+\.\d+ does not compile for it; it compiles for "
                        r"(sm_\d+, )*sm_90(, sm_\d+)*\n", r.stderr), r.stderr
    assert "vector_add.cu" not in r.stderr and not (tmp_path / "gen").exists()
    r = run("vector_add", "--arch", "ampere", "--out", str(tmp_path / "gen"))
    assert r.stderr == "translate: --arch must look like sm_90 or compute_90, got 'ampere'\n"


def test_a_python_type_name_in_a_signature_suggests_numbas(tmp_path):
    r = run("vector_add", "--signature", "void(float32[::1], float32[::1], int)", "--out", str(tmp_path))
    assert r.returncode == 1
    assert "unknown type 'int' (did you mean int64 (Python's int) or int32?)" in r.stderr, r.stderr
    assert "uint" not in r.stderr.split("did you mean", 1)[1].split("?", 1)[0]


def library_kernels():
    from numbakern import registry

    return registry.all_specs()


def test_check_outside_a_project_says_it_checks_numbakerns_library(tmp_path):
    r = run("--check", cwd=tmp_path)
    assert r.returncode == 1
    first = r.stdout.splitlines()[0]
    assert first.startswith(f"translate --check: {len(library_kernels())} problem(s) in generated_cuda/ (numbakern's "
                            "library kernels: no [tool.numbakern] in a pyproject.toml here or above)"), first


def test_json_is_one_document_of_what_the_api_returns(tmp_path):
    out = tmp_path / "gen"
    r = run("vector_add", "--out", str(out), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)  # the whole of stdout: nothing else is printed there
    (kernel,) = doc["kernels"]
    assert kernel["kernel"] == "vector_add" and kernel["status"] == "written" and kernel["error"] is None
    manifest = json.loads((out / "manifest.json").read_text())["files"]["vector_add.cu"]
    assert kernel["result"]["entry"]["file_sha256"] == manifest["file_sha256"]
    assert kernel["result"]["code"] == (out / "vector_add.cu").read_text()
    assert doc["summary"] == {"written": 1, "unchanged": 0, "failed": 0} and doc["interrupted"] is False

    check = json.loads(run("--check", "--out", str(out), "--json").stdout)
    assert check == {"command": "check", "out": str(out), "library": False, "ok": True, "problems": []}
    failed = run("no_such_module:k", "--out", str(out), "--json")
    assert failed.returncode == 1 and json.loads(failed.stdout)["kernels"][0]["error"]["type"] == \
        "ModuleNotFoundError"


def test_quiet_prints_the_summary_only_and_verbose_the_stage_times(tmp_path):
    out = tmp_path / "gen"
    quiet = run("vector_add", "--out", str(out), "-q")
    assert quiet.stdout == f"translate -> {out}/ (ast, sm_90): 1 written, 0 unchanged, 0 failed\n"
    verbose = run("vector_add", "--out", str(out), "--verbose")
    line = verbose.stdout.splitlines()[0]
    assert line.startswith(f"unchanged  {out}/vector_add.cu ") and re.search(r"\(frontend \d+\.\d\ds, backend", line)


def test_list_names_the_projects_kernels_and_their_files_state():
    r = run("--list", cwd=EXAMPLES)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "project mykernels (pyproject.toml): 4 kernels, their files in generated_cuda/"
    assert [line.split()[0] for line in lines[1:]] == ["block_sum", "histogram", "row_softmax", "stencil5"]
    # each file's state, and its GPU record where the manifest holds one for these bytes
    records = json.loads((EXAMPLES / "generated_cuda" / "manifest.json").read_text())["files"]
    for line in lines[1:]:
        name = line.split()[1].removeprefix("generated_cuda/")
        verified = bool((records[name].get("verification") or {}).get("ok"))
        state = r"up to date; the manifest claims PASS on " if verified else r"up to date$"
        assert re.search(rf"generated_cuda/\w+\.cu +{state}", line), (line, r.stdout)
    as_json = json.loads(run("--list", "--json", cwd=EXAMPLES).stdout)
    assert as_json["kernels"][0]["target"] == "mykernels.reduce:block_sum"


def test_the_numbakern_command_runs_the_same_commands():
    check = run("check", cwd=EXAMPLES, command=("-m", "translate.commands"))
    assert check.returncode == 0 and check.stdout == "translate --check: every file in generated_cuda/ is up to date\n"
    listed = run("list", cwd=EXAMPLES, command=("-m", "translate.commands"))
    assert listed.stdout == run("--list", cwd=EXAMPLES).stdout
    usage = run("translate", "--bogus", command=("-m", "translate.commands"))
    assert usage.returncode == 2 and usage.stderr.startswith("usage: numbakern translate ")


def test_a_run_streams_its_lines_and_ctrl_c_leaves_them_with_a_summary(tmp_path):
    """Piped: each kernel's line as it finishes; Ctrl-C: one line on stderr, no traceback, and the summary."""
    # Ctrl-C's default action in the child, as in a terminal, even where this pytest runs as a background job
    # of a non-interactive shell (which starts it, and so the child, with SIGINT ignored)
    child = subprocess.Popen([sys.executable, "-m", "translate.cli", "--all", "--out", str(tmp_path / "gen")],
                             cwd=ROOT, env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        first = child.stdout.readline()  # arrives while the other kernels are still to do
        assert first.startswith("written "), first
        assert child.poll() is None
        child.send_signal(signal.SIGINT)
        rest, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 130
    assert err == "translate: interrupted\n", err
    lines = [first.rstrip("\n"), *rest.splitlines()]
    done = [line for line in lines if line.startswith("written ")]
    total = len(library_kernels())
    assert lines[-1] == (f"translate -> {tmp_path / 'gen'}/ (ast, sm_90): interrupted after {len(done)} of {total} "
                         f"kernels: {len(done)} written, 0 unchanged, 0 failed")


def test_the_other_translate_package_installed_beside_numbakern_is_named(tmp_path):
    """PyPI's unrelated ``translate`` writes its own ``translate`` package and command over numbakern's: the
    commands say so (docs/cli.md, 'The name')."""
    site = tmp_path / "site"
    info = site / "translate-3.6.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: translate\nVersion: 3.6.1\n")
    environment = environments.with_path_first(env(), ROOT, site)
    r = forked.run([sys.executable, "-m", "translate.cli", "--version"], env=environment, timeout=300)
    assert r.stdout == f"translate (numbakern) {__version__}\n"
    assert r.stderr.startswith("translate: warning: the PyPI package 'translate' 3.6.1 is installed in this "
                               "environment too;") and "docs/cli.md" in r.stderr, r.stderr
    assert run("--version").stderr == ""  # without it: no warning
