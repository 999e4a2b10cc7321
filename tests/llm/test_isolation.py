"""Candidates are built, loaded and run in a sandboxed child, never in this process (CPU-only proofs).

A stand-in for hostile model code: a shared library whose static initialiser reports what it can see (the API key,
a planted secret, the environment, its folder and process) or misbehaves (sleeps forever with a grandchild, spins,
writes a huge file, opens many files). Built with gcc (or with nvcc, through the real isolated builder), loaded by
the sandboxed child. No GPU is needed: loading runs the initialiser before any CUDA call.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from translate.verify import isolated, sandbox

from .conftest import TEST_KEY

PLANTED = "planted-secret-3b1f-must-stay-here"

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc for the stand-in library")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (no GPU) for the isolated build")

REPORTER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
extern char **environ;
__attribute__((constructor)) static void report(void) {
    FILE *f = fopen("hostile-report.txt", "w");
    char cwd[4096];
    fprintf(f, "pid=%d\ncwd=%s\nkey=%s\nplanted=%s\n", (int)getpid(), getcwd(cwd, sizeof cwd),
            getenv("OPENAI_API_KEY") ? getenv("OPENAI_API_KEY") : "(none)",
            getenv("NUMBAKERN_PLANTED") ? getenv("NUMBAKERN_PLANTED") : "(none)");
    for (char **e = environ; *e; ++e) fprintf(f, "env=%s\n", *e);
    fclose(f);
}
"""

SLEEPER = r"""
#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void hang(void) {
    pid_t child = fork();
    if (child == 0) { for (;;) sleep(1); }
    FILE *f = fopen("grandchild.pid", "w"); fprintf(f, "%d", (int)child); fclose(f);
    for (;;) sleep(1);
}
"""

SPINNER = "__attribute__((constructor)) static void spin(void) { volatile unsigned long n = 0; for (;;) ++n; }\n"

BIG_WRITER = r"""
#include <stdio.h>
__attribute__((constructor)) static void fill(void) {
    static char block[1 << 16];
    FILE *f = fopen("big.bin", "wb");
    for (int i = 0; i < 1024; ++i) fwrite(block, 1, sizeof block, f);  /* 64 MiB */
    fclose(f);
}
"""

FILE_OPENER = r"""
#include <stdio.h>
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void many(void) {
    int fds[200], opened = 0;
    for (int i = 0; i < 200; ++i) if ((fds[opened] = open("/dev/null", O_RDONLY)) >= 0) ++opened;
    for (int i = 0; i < opened; ++i) close(fds[i]);
    FILE *f = fopen("opened.txt", "w"); fprintf(f, "%d", opened); fclose(f);
}
"""


def gcc_library(tmp_path: Path, source: str, name: str) -> Path:
    c = tmp_path / f"{name}.c"
    c.write_text(source)
    so = tmp_path / f"lib{name}.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O0", "-o", str(so), str(c)], check=True)
    return so


def load_in_sandbox(so: Path, workdir: Path, limits: sandbox.Limits) -> sandbox.Completed:
    workdir.mkdir(exist_ok=True)
    return sandbox.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])", str(so)],
                       workdir=workdir, limits=limits, read_only=[so])


@pytest.fixture
def planted(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("NUMBAKERN_PLANTED", PLANTED)
    monkeypatch.setenv("LD_LIBRARY_PATH", f"/opt/lib:{TEST_KEY}")  # an allowed name with a secret in its value
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_another_secret_value")


def test_the_child_environment_is_an_allow_list_without_secrets(planted, tmp_path):
    env = sandbox.child_env(tmp_path)
    assert "OPENAI_API_KEY" not in env and "NUMBAKERN_PLANTED" not in env and "GITHUB_TOKEN" not in env
    assert "LD_LIBRARY_PATH" not in env  # its value holds the key
    assert set(env) <= set(sandbox.ENV_ALLOWED) | {"HOME", "TMPDIR", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE",
                                                   "PYTHONNOUSERSITE", "PYTHONUNBUFFERED"}
    assert env["HOME"] == env["TMPDIR"] == str(tmp_path)
    assert not any(TEST_KEY in v or PLANTED in v for v in env.values())


@needs_gcc
def test_a_static_initialiser_sees_no_secret_and_only_its_own_folder(planted, tmp_path):
    so = gcc_library(tmp_path, REPORTER, "reporter")
    work = tmp_path / "work"
    done = load_in_sandbox(so, work, sandbox.Limits(wall_seconds=30))
    assert done.ok, done.stderr
    report = (work / "hostile-report.txt").read_text()
    assert TEST_KEY not in report and PLANTED not in report and "ghp_" not in report
    assert "key=(none)" in report and "planted=(none)" in report
    fields = dict(line.split("=", 1) for line in report.splitlines() if not line.startswith("env="))
    assert fields["cwd"] == str(work) and int(fields["pid"]) != os.getpid()
    names = {line[4:].split("=", 1)[0] for line in report.splitlines() if line.startswith("env=")}
    assert names <= set(sandbox.ENV_ALLOWED) | {"HOME", "TMPDIR", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE",
                                                "PYTHONNOUSERSITE", "PYTHONUNBUFFERED"}, names


@needs_gcc
def test_a_hanging_initialiser_and_its_grandchild_are_killed_at_the_deadline(tmp_path):
    so = gcc_library(tmp_path, SLEEPER, "sleeper")
    work = tmp_path / "work"
    t0 = time.monotonic()
    done = load_in_sandbox(so, work, sandbox.Limits(wall_seconds=2))
    assert done.timed_out and done.returncode is None and "wall-clock limit" in done.describe()
    assert time.monotonic() - t0 < 6
    assert (work / "grandchild.pid").read_text()  # the grandchild was started (its pid is of the child's namespace)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _working_in(work):
        time.sleep(0.05)
    assert not _working_in(work), "the initialiser's own child outlived the deadline"


def _working_in(folder: Path) -> list[int]:
    """The live processes whose current folder is ``folder`` (found by their host pids, whatever namespace)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{entry}/cwd") == str(folder) and _alive(int(entry)):
                found.append(int(entry))
        except OSError:
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"  # a zombie is dead; only its parent's reaping is left


@needs_gcc
def test_cpu_time_file_size_and_open_files_are_limited(tmp_path):
    t0 = time.monotonic()
    done = load_in_sandbox(gcc_library(tmp_path, SPINNER, "spinner"), tmp_path / "cpu",
                           sandbox.Limits(wall_seconds=30, cpu_seconds=1))
    assert done.returncode in (-signal.SIGXCPU, -signal.SIGKILL) and not done.timed_out, done.describe()
    assert time.monotonic() - t0 < 15

    # Python (the loader here) ignores SIGXFSZ, so the write past the limit fails instead of killing the process
    done = load_in_sandbox(gcc_library(tmp_path, BIG_WRITER, "writer"), tmp_path / "fsize",
                           sandbox.Limits(wall_seconds=30, file_bytes=1 << 20))
    assert done.returncode in (0, -signal.SIGXFSZ), done.describe()
    assert (tmp_path / "fsize" / "big.bin").stat().st_size <= 1 << 20

    done = load_in_sandbox(gcc_library(tmp_path, FILE_OPENER, "opener"), tmp_path / "nofile",
                           sandbox.Limits(wall_seconds=30, open_files=64))
    assert done.ok, done.describe()
    assert int((tmp_path / "nofile" / "opened.txt").read_text()) < 64


@needs_gcc
def test_the_isolated_runner_loads_a_prebuilt_library_only_in_the_child(tmp_path):
    so = gcc_library(tmp_path, SLEEPER, "sleeper")
    work = tmp_path / "work"
    work.mkdir()
    t0 = time.monotonic()
    runs = isolated.run_candidate(tmp_path / "none.cu", {"symbol": "launch_x", "params": []}, [], outputs=[],
                                  arch="sm_90", workdir=work, so=so, limits=sandbox.Limits(wall_seconds=2))
    assert runs.stage == "child" and "wall-clock limit" in runs.error and not runs.pairs
    assert time.monotonic() - t0 < 8
    assert str(so) not in Path("/proc/self/maps").read_text()


HOSTILE_CU = r"""
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static int reported = [] {
    FILE *f = fopen("hostile-report.txt", "w");
    fprintf(f, "pid=%d\nkey=%s\n", (int)getpid(), getenv("OPENAI_API_KEY") ? getenv("OPENAI_API_KEY") : "(none)");
    fclose(f);
    return 1;
}();
__global__ void vector_add(const float* a, int64_t a_shape0, const float* b, int64_t b_shape0, float* out,
                           int64_t out_shape0) { }
extern "C" cudaError_t launch_vector_add(const float* a, int64_t a_shape0, const float* b, int64_t b_shape0,
    float* out, int64_t out_shape0, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
    size_t shared_bytes, cudaStream_t stream) { return cudaSuccess; }
"""


@needs_nvcc
def test_verification_builds_and_loads_a_hostile_cu_only_in_the_sandbox(planted, tmp_path, monkeypatch):
    """The real harness path: nvcc builds the file in the child, the child loads it (its static initialiser runs
    there, without the key), then finds no CUDA device (on a GPU: runs the cases, whose launcher launches nothing,
    so every output stays poisoned); this process never loaded the library."""
    from numbakern.registry import get
    from translate.verify import harness

    cu = tmp_path / "vector_add.cu"
    cu.write_text(HOSTILE_CU)
    launcher = {"symbol": "launch_vector_add", "params": [
        {"name": "a", "kind": "array", "dtype": "float32", "ndim": 1, "const": True},
        {"name": "b", "kind": "array", "dtype": "float32", "ndim": 1, "const": True},
        {"name": "out", "kind": "array", "dtype": "float32", "ndim": 1}]}
    monkeypatch.setattr(harness, "device_facts", lambda arch=None: {"arch": "sm_90", "device": "none"})
    seen = {}

    def capture(cu, launcher, cases, **kw):
        seen["workdir"] = Path(kw["workdir"])
        runs = real(cu, launcher, cases, **kw)
        seen["report"] = (seen["workdir"] / "hostile-report.txt").read_text()
        seen["maps"] = Path("/proc/self/maps").read_text()
        seen["so"] = str(runs.so or "") or next(iter(seen["workdir"].glob("*.so")), "")
        return runs

    real = isolated.run_candidate
    monkeypatch.setattr(isolated, "run_candidate", capture)
    result = harness.verify(get("vector_add"), harness.Candidate(cu, launcher), seeds=(0,),
                            sizes=[{"n": 100}], dists=["normal"])
    assert not result.ok
    if result.stage:  # no GPU here
        assert result.stage == "load" and "no CUDA device" in result.error, result.error
    else:  # a GPU: the cases ran in the child and the unwritten outputs failed the comparison
        assert result.cases and "vs_numba" in result.failed_checks()
    assert "key=(none)" in seen["report"] and TEST_KEY not in seen["report"]
    assert int(seen["report"].split("pid=")[1].split()[0]) != os.getpid()
    assert seen["so"] and str(seen["so"]) not in seen["maps"], "the candidate was loaded into this process"
    assert not seen["workdir"].exists()  # the working folder is gone with its library


def test_forged_outputs_are_checked_before_anything_is_read(tmp_path):
    """The child's answer is data: an output with another shape, dtype or a forged header is no output."""
    import zipfile

    like = np.zeros(5, dtype=np.float32)
    np.savez(tmp_path / "outputs.npz", c0_a_out0=np.zeros(6, np.float32), c0_b_out0=np.zeros(5, np.float64))
    with zipfile.ZipFile(tmp_path / "outputs.npz") as z:
        assert isolated._read_array(z, "c0_a_out0", like) is None
        assert isolated._read_array(z, "c0_b_out0", like) is None
        assert isolated._read_array(z, "missing", like) is None
    np.savez(tmp_path / "ok.npz", c0_a_out0=np.arange(5, dtype=np.float32))
    with zipfile.ZipFile(tmp_path / "ok.npz") as z:
        assert np.array_equal(isolated._read_array(z, "c0_a_out0", like), np.arange(5, dtype=np.float32))
    case = type("Case", (), {"args": [like]})()
    done = sandbox.Completed(0, False, "", "", 0.1, answer={"runs": [{"a": {"error": ""}, "b": {"error": ""}}]})
    runs = isolated._read_answer(tmp_path, [case], [0], done)
    assert all("no valid output" in r.error for r in runs.pairs[0])


def test_the_file_limit_fits_two_runs_of_every_output(rng):
    """The child writes every output of every case twice (runs "a" and "b") into one archive: a large case must not
    hit the file-size limit (a full-size transpose writes more than the default 1 GiB)."""
    from types import SimpleNamespace

    small = SimpleNamespace(args=[rng.random(10, dtype=np.float32), rng.random(10, dtype=np.float32), 10])
    base = sandbox.Limits(file_bytes=1 << 20)
    assert isolated.limits_for_outputs(base, [small], outputs=[1]).file_bytes >= 1 << 20
    big_out = np.empty((4096, 4096), np.float32)  # 64 MiB
    big = SimpleNamespace(args=[rng.random(4, dtype=np.float32), big_out, 3])
    limits = isolated.limits_for_outputs(base, [big, big, big], outputs=[1])
    assert limits.file_bytes >= 3 * 2 * big_out.nbytes
    assert limits.wall_seconds == base.wall_seconds and limits.open_files == base.open_files
