"""The sandboxed child cannot take the key, reach the network, write outside its folder or signal its parent.

A hostile child (a Python program, a shared library's static initialiser built with gcc, a ``.cu`` built with
nvcc) runs through the paths verification uses (``sandbox.run``, ``isolated.run_candidate`` with a prebuilt
library, ``harness.verify``), started by a *parent* process that holds ``OPENAI_API_KEY`` the way the ``translate``
command does: exported in its environment and read by the llm backend's client. The child:

1. reads every ``/proc/<pid>/environ`` it can (its parent's first) and reports any ``OPENAI_API_KEY`` value;
2. connects to a port this test listens on, on 127.0.0.1;
3. creates a file outside its working folder;
4. sends ``SIGTERM`` to its parent.

With bubblewrap it must get nothing, and the parent must finish unharmed; the tests skip (saying why) only where
bubblewrap cannot create namespaces. Without bubblewrap (``NUMBAKERN_SANDBOX=none``) the defence in depth still
keeps the key out of the parent's ``/proc/<pid>/environ`` (documented: the network, writes and signals are open).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from translate.verify import sandbox

# one key per test process: under pytest-xdist the other workers' parents hold keys too, and without namespaces a
# child run as root can read their environments (the test asks that it find no copy of *its* parent's key)
KEY = f"sk-numbakern-sandbox-test-{uuid.uuid4().hex}-DO-NOT-LEAK"

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc for the stand-in library")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (no GPU) for the isolated build")


@pytest.fixture(scope="module")
def bwrap():
    found = sandbox.probe_bwrap()
    if found.program is None:
        pytest.skip(f"bubblewrap cannot isolate children on this machine: {found.reason}")
    return found.program


ATTACK_PY = r"""
import os, signal, socket, sys
port, outside, kill = int(sys.argv[1]), sys.argv[2].split(","), sys.argv[3] == "kill"
lines = [f"ppid={os.getppid()}"]
try:
    open(f"/proc/{os.getppid()}/environ", "rb").read()
    lines.append("parent_environ=readable")
except OSError as e:
    lines.append(f"parent_environ={type(e).__name__}")
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        block = open(f"/proc/{pid}/environ", "rb").read()
    except OSError:
        continue
    lines += [f"found {pid}: {e.decode(errors='replace')}" for e in block.split(b"\0")
              if e.startswith(b"OPENAI_API_KEY=") and e.strip(b"\0") != b"OPENAI_API_KEY="]
try:
    socket.create_connection(("127.0.0.1", port), timeout=3).close()
    lines.append("connect=ok")
except OSError as e:
    lines.append(f"connect={type(e).__name__}")
for k, path in enumerate(outside):
    try:
        open(path, "w").write("pwned")
        lines.append(f"write{k}=ok")
    except OSError as e:
        lines.append(f"write{k}={type(e).__name__}")
open("attack-report.txt", "w").write("\n".join(lines) + "\n")
if kill:  # its parent, and the process that started the sandbox (it wrote its pid into the working folder)
    for name, pid in (("kill_ppid", os.getppid()), ("kill_parent", int(open("parent.pid").read()))):
        try:
            os.kill(pid, signal.SIGTERM)
            result = "ok"
        except OSError as e:
            result = type(e).__name__
        open("attack-report.txt", "a").write(f"{name}={result}\n")
"""

#: the same attack as a static initialiser, in C that gcc and nvcc (its host compiler) both take
ATTACK_C = r"""
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PORT @PORT@
#define OUTSIDE0 "@OUTSIDE0@"
#define OUTSIDE1 "@OUTSIDE1@"
#define KILL @KILL@

__attribute__((constructor)) static void attack(void) {
    FILE *report = fopen("attack-report.txt", "w");
    char path[300], block[65536];
    fprintf(report, "ppid=%d\n", (int)getppid());
    snprintf(path, sizeof path, "/proc/%d/environ", (int)getppid());
    int fd = open(path, O_RDONLY);
    fprintf(report, "parent_environ=%s\n", fd >= 0 ? "readable" : strerror(errno));
    if (fd >= 0) close(fd);
    DIR *proc = opendir("/proc");
    for (struct dirent *d; proc && (d = readdir(proc));) {
        if (d->d_name[0] < '0' || d->d_name[0] > '9') continue;
        snprintf(path, sizeof path, "/proc/%s/environ", d->d_name);
        if ((fd = open(path, O_RDONLY)) < 0) continue;
        ssize_t n = read(fd, block, sizeof block - 1);
        close(fd);
        for (ssize_t i = 0; i < n; i += strlen(block + i) + 1) {
            block[n] = 0;
            if (strncmp(block + i, "OPENAI_API_KEY=", 15) == 0 && block[i + 15])
                fprintf(report, "found %s: %s\n", d->d_name, block + i);
        }
    }
    if (proc) closedir(proc);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in to;
    memset(&to, 0, sizeof to);
    to.sin_family = AF_INET;
    to.sin_port = htons(PORT);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fprintf(report, "connect=%s\n", connect(s, (struct sockaddr *)&to, sizeof to) == 0 ? "ok" : strerror(errno));
    close(s);
    const char *outside[2] = {OUTSIDE0, OUTSIDE1};
    for (int k = 0; k < 2; ++k) {
        fd = open(outside[k], O_WRONLY | O_CREAT, 0644);
        fprintf(report, "write%d=%s\n", k, fd >= 0 ? "ok" : strerror(errno));
        if (fd >= 0) close(fd);
    }
    fflush(report);
    if (KILL) {  /* its parent, and the process that started the sandbox (it wrote its pid into the folder) */
        int parent = 0;
        FILE *f = fopen("parent.pid", "r");
        if (f) { if (fscanf(f, "%d", &parent) != 1) parent = 0; fclose(f); }
        fprintf(report, "kill_ppid=%s\n", kill(getppid(), SIGTERM) == 0 ? "ok" : strerror(errno));
        fprintf(report, "kill_parent=%s\n", parent > 0 && kill(parent, SIGTERM) == 0 ? "ok" : strerror(errno));
    }
    fclose(report);
}
"""

#: the kernel and launcher the verification path binds (a launcher that launches nothing)
VECTOR_ADD_CU = r"""
#include <cuda_runtime.h>
#include <stdint.h>
__global__ void vector_add(const float* a, int64_t a_shape0, const float* b, int64_t b_shape0, float* out,
                           int64_t out_shape0) { }
extern "C" cudaError_t launch_vector_add(const float* a, int64_t a_shape0, const float* b, int64_t b_shape0,
    float* out, int64_t out_shape0, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
    size_t shared_bytes, cudaStream_t stream) { return cudaSuccess; }
"""
LAUNCHER = {"symbol": "launch_vector_add", "params": [
    {"name": "a", "kind": "array", "dtype": "float32", "ndim": 1, "const": True},
    {"name": "b", "kind": "array", "dtype": "float32", "ndim": 1, "const": True},
    {"name": "out", "kind": "array", "dtype": "float32", "ndim": 1}]}

#: the parent: holds the key as the ``translate`` command does, reads it through the llm client (unless the job says
#: otherwise: verification without a model), then runs the hostile child through one of verification's paths;
#: prints what it saw afterwards (it must still be alive)
PARENT = r"""
import hashlib, json, os, sys
job = json.loads(sys.argv[1])
if job.get("client", True):  # reads OPENAI_API_KEY, as the llm backend does first
    from translate.llm.client import ChatClient
    ChatClient(model="m", base_url="http://127.0.0.1:9/v1")
from translate.verify import isolated, sandbox
work = job["work"]
open(os.path.join(work, "parent.pid"), "w").write(str(os.getpid()))
if job["path"] == "sandbox":
    done = sandbox.run([sys.executable, "-c", job["attack"], str(job["port"]), ",".join(job["outside"]), job["kill"]],
                       workdir=work, limits=sandbox.Limits(wall_seconds=60))
    said = done.describe()
elif job["path"] == "library":
    runs = isolated.run_candidate(job["cu"], {"symbol": "launch_x", "params": []}, [], outputs=[], arch="sm_90",
                                  workdir=work, so=job["so"], limits=sandbox.Limits(wall_seconds=60))
    said = runs.error
elif job["path"] == "cli":  # what `python -m translate.verify vector_add` runs, the child's folder kept
    from translate.verify import cli
    real = isolated.run_candidate
    isolated.run_candidate = lambda *a, **kw: real(*a, **{**kw, "workdir": work})
    # in this process (gpus=None): the command's worker processes would not see the patch that keeps the folder
    results = cli.verify_kernels(["vector_add"], directory=job["dir"], record=False, seeds=1)
    said = f"exit status {0 if all(r.ok for r in results) else 1}"
else:
    from numbakern.registry import get
    from translate.verify import harness
    harness.device_facts = lambda arch=None: {"arch": "sm_90", "device": "none"}  # no GPU here
    real = isolated.run_candidate
    isolated.run_candidate = lambda *a, **kw: real(*a, **{**kw, "workdir": work})  # keep the child's report
    result = harness.verify(get("vector_add"), harness.Candidate(job["cu"], job["launcher"]), seeds=(0,),
                            sizes=[{"n": 100}], dists=["normal"])
    said = result.error
key = os.environ.get("OPENAI_API_KEY", "")
print(json.dumps({"alive": True, "said": said, "key_sha256": hashlib.sha256(key.encode()).hexdigest()}))
"""


def run_parent(tmp_path: Path, path: str, *, sandbox_mode: str, kill: bool,
               **job) -> tuple[dict, str, list[Path]]:
    """Start the parent with the key in its environment; the parent's answer, the child's report and the files
    the child tried to write outside its folder (in this process's /tmp, and in /var/tmp)."""
    work = tmp_path / "work"
    work.mkdir()
    outside = [tmp_path / "outside.txt", Path("/var/tmp") / f"numbakern-sandbox-{os.getpid()}-{tmp_path.name}.txt"]
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    port = listener.getsockname()[1]
    job.update(path=path, work=str(work), outside=[str(p) for p in outside], port=port,
               kill="kill" if kill else "no", attack=ATTACK_PY)
    for name in ("cu", "so"):
        if name in job:
            job[name] = str(job[name])
    if "source" in job:  # a C/.cu attack: its port, outside path and whether it signals are compiled in
        source = job.pop("source").replace("@PORT@", str(port))
        source = source.replace("@OUTSIDE0@", str(outside[0])).replace("@OUTSIDE1@", str(outside[1]))
        Path(job["cu"]).write_text(source.replace("@KILL@", "1" if kill else "0"))
        if path == "library":
            subprocess.run(["gcc", "-x", "c", "-shared", "-fPIC", "-o", job["so"], job["cu"]], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", sandbox.SANDBOX_ENV)}
    env.update(OPENAI_API_KEY=KEY, NUMBAKERN_SANDBOX=sandbox_mode)
    try:
        proc = subprocess.run([sys.executable, "-c", PARENT, json.dumps(job)], capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=300)
        listener.setblocking(False)
        try:
            listener.accept()[0].close()
            reached = True
        except BlockingIOError:
            reached = False
    finally:
        listener.close()
        written = [p for p in outside if p.exists()]
        for p in written:
            p.unlink()
    assert proc.returncode == 0, f"the parent was harmed (exit status {proc.returncode}): {proc.stderr[-2000:]}"
    answer = json.loads(proc.stdout.strip().splitlines()[-1])
    answer["listener_reached"], answer["written"] = reached, [str(p) for p in written]
    report = (work / "attack-report.txt").read_text()
    return answer, report, outside


def assert_nothing_taken(answer: dict, report: str, *, kill: bool) -> None:
    assert answer["alive"]
    assert KEY not in report, report
    assert "found " not in report, report  # no OPENAI_API_KEY value in any environment the child could read
    assert "connect=ok" not in report and not answer["listener_reached"], report
    assert not answer["written"], report  # its own /tmp is a private one: what it wrote there is gone with it
    assert "write1=ok" not in report, report  # /var/tmp, like the rest of the file system, is read-only to it
    if kill:  # its parent in its namespace is bubblewrap's init; the process that started it has no pid there
        assert "kill_ppid=" in report and "kill_parent=" in report and "kill_parent=ok" not in report, report
    # the parent's own environment is as it was: the key is hidden from /proc, not taken from the program
    assert answer["key_sha256"] == hashlib.sha256(KEY.encode()).hexdigest()


def test_a_python_child_gets_nothing(bwrap, tmp_path):
    answer, report, _ = run_parent(tmp_path, "sandbox", sandbox_mode="bwrap", kill=True)
    assert_nothing_taken(answer, report, kill=True)
    assert "ppid=1\n" in report  # its parent is bubblewrap's init: this process has no pid in its namespace


@needs_gcc
def test_a_static_initialiser_loaded_by_the_isolated_runner_gets_nothing(bwrap, tmp_path):
    answer, report, _ = run_parent(tmp_path, "library", sandbox_mode="bwrap", kill=True, source=ATTACK_C,
                                   cu=tmp_path / "attack.c", so=tmp_path / "libattack.so")
    assert_nothing_taken(answer, report, kill=True)


@needs_nvcc
def test_a_cu_built_and_loaded_by_verification_gets_nothing(bwrap, tmp_path):
    """The real harness path: nvcc builds the ``.cu`` in the child and the child loads it (its static initialiser
    runs there); then it finds no CUDA device (here) or runs the cases (on a GPU)."""
    answer, report, _ = run_parent(tmp_path, "cu", sandbox_mode="bwrap", kill=True,
                                   source=ATTACK_C + VECTOR_ADD_CU, cu=tmp_path / "vector_add.cu", launcher=LAUNCHER)
    assert_nothing_taken(answer, report, kill=True)


@pytest.mark.gpu
def test_verify_command_on_a_hand_edited_cu_gives_it_nothing(bwrap, tmp_path):
    """No model at all: a ``.cu`` edited by hand, then ``python -m translate.verify`` on the GPU (what ``translate
    --verify`` runs after translating). The candidate builds, loads (its initialiser attacks) and runs in the
    sandbox; its launcher launches nothing, so verification fails: exit status 1, not a signal."""
    folder = tmp_path / "generated"
    folder.mkdir()
    library = json.loads((Path(__file__).parents[2] / "generated_cuda" / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**library, "files": {
        "vector_add.cu": library["files"]["vector_add.cu"]}}))
    answer, report, _ = run_parent(tmp_path, "cli", sandbox_mode="bwrap", kill=True, source=ATTACK_C + VECTOR_ADD_CU,
                                   cu=folder / "vector_add.cu", dir=str(folder), client=False)
    assert answer["said"] == "exit status 1", answer
    assert_nothing_taken(answer, report, kill=True)


def test_without_namespaces_the_parent_environ_holds_no_key(tmp_path):
    """The defence that holds without bubblewrap: the parent is non-dumpable (another user's process cannot open
    its /proc files; a root child still can) and the key's bytes are gone from its environment block."""
    answer, report, _ = run_parent(tmp_path, "sandbox", sandbox_mode="none", kill=False)
    ppid = report.split("ppid=")[1].split()[0]
    # (other processes of the user that hold a key, as the test runs of other checkouts may, are not protected
    # without namespaces: documented; this test's key is in its parent alone)
    assert KEY not in report and f"found {ppid}:" not in report, report
    if os.geteuid() != 0:
        assert "parent_environ=PermissionError" in report, report
    assert answer["key_sha256"] == hashlib.sha256(KEY.encode()).hexdigest()


def test_bwrap_command_line(tmp_path):
    """The namespaces and mounts asked for, in the order bwrap applies them (a later mount covers an earlier)."""
    work = tmp_path / "job"
    work.mkdir()
    inside_tmp = tmp_path / "kernel.cu"
    inside_tmp.write_text("")
    argv = sandbox.bwrap_command("bwrap", work, [inside_tmp], ["python", "-V"])
    joined = " ".join(argv)
    assert joined.startswith("bwrap --unshare-all --die-with-parent --new-session --ro-bind / / --dev /dev ")
    assert "--tmpfs /dev/shm --proc /proc --tmpfs /tmp" in joined
    real_work, real_cu = os.path.realpath(work), os.path.realpath(inside_tmp)
    assert joined.index("--tmpfs /tmp") < joined.index(f"--ro-bind {real_cu} {real_cu}") \
        < joined.index(f"--bind {real_work} {real_work}")
    assert argv[-5:] == ["--chdir", real_work, "--", "python", "-V"]


def test_the_child_is_given_the_packages_it_runs():
    """An editable install maps ``translate`` and ``numbakern`` to their checkout through a finder, not through
    ``sys.path``: a checkout under /tmp (hidden by the child's private /tmp) must be bound for the child to start."""
    import numbakern
    import translate

    folders = sandbox._package_folders()
    assert str(Path(translate.__file__).resolve().parent) in folders
    assert str(Path(numbakern.__file__).resolve().parent) in folders
