"""A child process for code nobody has vouched for: building, loading and running a candidate ``.cu``, and
compiling a model's reply with NVRTC.

``run(argv, workdir=...)`` starts ``argv`` with the protections below; ``run(job=...)`` starts verification's child
(``translate.verify.protocol``: the job on its stdin, its answer, one JSON line on its stdout, read back capped at
``max_answer`` bytes into ``Completed.answer``). ``argv`` runs with:

- **namespaces of its own** (bubblewrap, ``bwrap``, where it can create them): no network (a fresh network
  namespace), no view of other processes (a fresh pid namespace: this process has no pid there, so it cannot be
  signalled or read through ``/proc``), the whole file system read-only but for its working folder, a private
  ``/tmp`` and ``/dev/shm``, of ``/dev`` only the basic nodes and the GPU's, a new session (no terminal to write
  into), killed when this process dies (see ``bwrap_command``). Where ``bwrap`` is missing or cannot create
  namespaces (some containers forbid it), one warning line says so and the child runs without them
  (``NUMBAKERN_SANDBOX=none`` chooses that, ``=bwrap`` makes it an error; ``NUMBAKERN_BWRAP`` names the program);
- **a parent with nothing to read**: before the first child starts, this process is made non-dumpable and the
  values of secret-looking variables are overwritten in its initial environment block, what
  ``/proc/<pid>/environ`` shows (``translate.procenv``), which also holds without namespaces;

- **a scrubbed environment**: an allow-list (``PATH``, the locale, the CUDA toolkit and device variables, the
  library path), never a variable whose name looks like a secret or whose value holds one (``OPENAI_API_KEY``
  and its like), with ``HOME`` and ``TMPDIR`` set to the child's own folder and ``PYTHONPATH`` to this process's
  import path;
- **its own working folder** (``workdir``), stdin from ``/dev/null`` (or the job's file), stdout and stderr into
  files there (only their tails are read back, and the answer);
- **resource limits**, set in the child before it executes anything (``python -m translate.verify.sandbox``
  applies them, then ``exec``s ``argv``): CPU seconds, the size of any file it writes, open files, no core dumps,
  and an address-space limit only where it is asked for (``Limits.address_bytes``: NVRTC's child has one; the CUDA
  driver reserves far more virtual memory than it uses, so ``RLIMIT_AS`` would break every CUDA process);
- **a deadline**: the child is the leader of a new session and process group, and when the wall-clock limit
  passes the whole group is killed (``SIGKILL``); the group is killed after a normal exit too, so nothing the
  child started outlives it in its group.

Standard library only.
"""

from __future__ import annotations

import contextlib
import glob
import importlib.util
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .. import procenv
from . import protocol

#: the variables a child may inherit (if their names and values look harmless)
ENV_ALLOWED = (
    "PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_NUMERIC", "TZ", "LD_LIBRARY_PATH",
    "CUDA_HOME", "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_LAUNCH_BLOCKING",
    "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "CC", "CXX", "NVCC_CCBIN",
)
#: a variable whose name contains one of these is never passed on, and neither is any value that contains its value
SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE", "SESSION")

#: how much of the child's stdout and stderr is read back
TAIL_BYTES = 64 * 1024

#: "auto" (bwrap where it works, else a warning and no namespaces), "bwrap" (an error where it does not work) or
#: "none" (no namespaces)
SANDBOX_ENV = "NUMBAKERN_SANDBOX"
#: the bubblewrap program (default: ``bwrap`` on ``PATH``), e.g. one unpacked with ``dpkg -x`` on a machine
#: without a package manager
BWRAP_ENV = "NUMBAKERN_BWRAP"


class SandboxError(RuntimeError):
    """``NUMBAKERN_SANDBOX=bwrap`` and bubblewrap cannot isolate children here, or a bad ``NUMBAKERN_SANDBOX``."""


@dataclass(frozen=True)
class Limits:
    wall_seconds: float = 600.0  # then the process group is killed
    cpu_seconds: int = 600  # per process (RLIMIT_CPU): SIGXCPU, then SIGKILL a few seconds later
    file_bytes: int = 1 << 30  # the largest file the child may write (RLIMIT_FSIZE)
    open_files: int = 1024  # RLIMIT_NOFILE
    address_bytes: int | None = None  # RLIMIT_AS; None: no limit (a CUDA-driver process needs none)


@dataclass(frozen=True)
class Completed:
    returncode: int | None  # None when the deadline killed it
    timed_out: bool
    stdout: str  # the last TAIL_BYTES of each
    stderr: str
    seconds: float
    answer: dict | None = None  # a protocol child's answer (``run(job=...)``); None when it gave none

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def describe(self) -> str:
        """Why the child did not succeed, in one line."""
        if self.timed_out:
            return f"killed after the {self.seconds:.0f} s wall-clock limit"
        if self.returncode is not None and self.returncode < 0:
            name = signal.Signals(-self.returncode).name if -self.returncode in signal.valid_signals() else "?"
            hint = " (the CPU-time limit)" if name in ("SIGXCPU", "SIGKILL") else ""
            return f"killed by {name}{hint}"
        return f"exit status {self.returncode}"


def looks_secret(name: str) -> bool:
    upper = name.upper()
    return any(word in upper for word in SECRET_WORDS)


def child_env(workdir: str | os.PathLike, extra: Mapping[str, str] | None = None,
              environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a sandboxed child: the allow-list of ``environ`` minus secrets, then ``extra``."""
    environ = os.environ if environ is None else environ
    secrets = [v for k, v in environ.items() if looks_secret(k) and len(v) >= 8]
    env = {}
    for name in ENV_ALLOWED:
        value = environ.get(name)
        if value is not None and not looks_secret(name) and not any(s in value for s in secrets):
            env[name] = value
    path = [os.path.abspath(p) for p in sys.path if p]
    env.update(HOME=str(workdir), TMPDIR=str(workdir), PYTHONPATH=os.pathsep.join(dict.fromkeys(path)),
               PYTHONDONTWRITEBYTECODE="1", PYTHONNOUSERSITE="1", PYTHONUNBUFFERED="1")
    env.update(extra or {})
    return env


def run(argv: Sequence[str] = protocol.ARGV, *, workdir: str | os.PathLike, limits: Limits = Limits(),
        env_extra: Mapping[str, str] | None = None, read_only: Sequence[str | os.PathLike] = (),
        job: Mapping[str, Any] | None = None, max_answer: int = 1 << 20) -> Completed:
    """Run ``argv`` sandboxed in ``workdir`` (which must exist); wait at most ``limits.wall_seconds``. ``read_only``:
    files or folders the child reads that may lie in this process's ``/tmp`` (the child's ``/tmp`` is its own).
    ``job``: the one job of a protocol child (``argv`` by default), whose answer is ``Completed.answer``."""
    protect_parent()
    workdir = Path(workdir)
    command = [sys.executable, "-m", "translate.verify.sandbox", json.dumps(asdict(limits)), "--", *argv]
    way = isolation()
    if way.program is not None:
        command = bwrap_command(way.program, workdir, [*read_only, *_python_paths()], command)
    out_path, err_path = workdir / "sandbox.stdout", workdir / "sandbox.stderr"
    in_path = workdir / "sandbox.stdin"
    if job is not None:
        in_path.write_text(protocol.encode(job))
    t0 = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err, \
            open(in_path, "rb") if job is not None else contextlib.nullcontext(subprocess.DEVNULL) as stdin:
        proc = subprocess.Popen(command, cwd=workdir, env=child_env(workdir, env_extra), stdin=stdin,
                                stdout=out, stderr=err, start_new_session=True, close_fds=True)
        timed_out = False
        try:
            proc.wait(timeout=limits.wall_seconds)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_group(proc.pid)
            proc.wait()
        except BaseException:  # interrupted (Ctrl-C): the child must not outlive us
            kill_group(proc.pid)
            proc.wait()
            raise
        finally:
            kill_group(proc.pid)  # whatever the child left running in its group (bwrap: its namespace dies too)
    returncode = proc.returncode
    if way.program is not None and returncode is not None and returncode > 128 \
            and returncode - 128 in signal.valid_signals():
        returncode = 128 - returncode  # bwrap reports a child killed by signal N as 128 + N; subprocess says -N
    seconds = time.monotonic() - t0
    answer = _answer(out_path, max_answer) if job is not None else None
    return Completed(None if timed_out else returncode, timed_out, "" if job is not None else _tail(out_path),
                     _tail(err_path), seconds, answer)


def _answer(path: Path, limit: int) -> dict | None:
    """A protocol child's answer: the one line of its stdout, if it is at most ``limit`` bytes of a JSON object."""
    with open(path, "rb") as f:
        line = f.readline(limit + 1)
    return protocol.decode(line) if 0 < len(line) <= limit else None


def protect_parent() -> None:
    """Before a child runs: this process non-dumpable, and no secret in what ``/proc/<pid>/environ`` shows."""
    procenv.make_non_dumpable()
    procenv.conceal([name for name in os.environ if looks_secret(name)])


# ---------------------------------------------------------------------------------------------------------------
# namespaces (bubblewrap)


@dataclass(frozen=True)
class Isolation:
    program: str | None  # the bwrap program, or None: children run without namespaces
    reason: str = ""  # why not (None only)


_isolation: Isolation | None = None
_isolation_lock = threading.Lock()


def isolation() -> Isolation:
    """How children are isolated in this process (found once): bwrap if it can create the namespaces here."""
    global _isolation
    with _isolation_lock:
        if _isolation is None:
            _isolation = _find_isolation()
            if _isolation.program is None:
                sys.stderr.write(f"numbakern: warning: sandboxed children run without namespaces ({_isolation.reason})"
                                 ": they can use the network, write wherever you can and signal this process; "
                                 "see docs/llm.md#security-model\n")
                sys.stderr.flush()
        return _isolation


def _find_isolation() -> Isolation:
    choice = os.environ.get(SANDBOX_ENV, "auto").strip().lower() or "auto"
    if choice not in ("auto", "bwrap", "none"):
        raise SandboxError(f"{SANDBOX_ENV} must be auto, bwrap or none, got {choice!r}")
    if choice == "none":
        return Isolation(None, f"{SANDBOX_ENV}=none")
    found = probe_bwrap()
    if found.program is None and choice == "bwrap":
        raise SandboxError(f"{SANDBOX_ENV}=bwrap, but {found.reason}")
    return found


def probe_bwrap() -> Isolation:
    """Whether bubblewrap (``$NUMBAKERN_BWRAP``, else ``bwrap`` on ``PATH``) can isolate a child here, tried now."""
    program = os.environ.get(BWRAP_ENV) or shutil.which("bwrap")
    if not program:
        return Isolation(None, "bubblewrap is not installed: apt-get install bubblewrap")
    return _probe(program)


def _probe(program: str) -> Isolation:
    """``program`` runs ``true`` in the namespaces ``run`` asks for, or the reason it cannot."""
    true = shutil.which("true") or "/bin/true"
    with tempfile.TemporaryDirectory(prefix="numbakern-bwrap-") as workdir:
        try:
            done = subprocess.run(bwrap_command(program, Path(workdir), [], [true]), capture_output=True, text=True,
                                  timeout=30, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as e:
            return Isolation(None, f"bubblewrap ({program}) cannot run: {e}")
    if done.returncode != 0:
        said = " ".join((done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1].split())[:200]
        return Isolation(None, f"bubblewrap cannot create namespaces here: {said}")
    return Isolation(program)


def bwrap_command(program: str, workdir: Path, read_only: Sequence[str | os.PathLike],
                  command: Sequence[str]) -> list[str]:
    """``command`` under bubblewrap (see bwrap(1)): every namespace of its own (user where allowed, pid, network,
    ipc, uts, cgroup where allowed), killed when its parent dies, a new session (no terminal), the file system
    read-only, a fresh ``/dev`` with the GPU's device nodes, ``/proc`` of its own pid namespace, private ``/tmp``
    and ``/dev/shm``, ``read_only`` paths visible again, ``workdir`` writable and the current folder."""
    args = [program, "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/", "/", "--dev", "/dev"]
    for node in sorted(glob.glob("/dev/nvidia*")):  # nvidiactl, nvidia0..N, nvidia-uvm(-tools), nvidia-caps/
        args += ["--dev-bind", node, node]
    args += ["--tmpfs", "/dev/shm", "--proc", "/proc", "--tmpfs", "/tmp"]
    work = os.path.realpath(workdir)
    for path in dict.fromkeys(os.path.realpath(p) for p in read_only):
        if os.path.exists(path) and not _inside(path, work):
            args += ["--ro-bind", path, path]
    return [*args, "--bind", work, work, "--chdir", work, "--", *command]


def _python_paths() -> list[str]:
    """What the child's Python needs that may lie in this process's ``/tmp``: its prefix, its import path and the
    packages it runs (an editable install maps them to their checkout through a finder, not through the path)."""
    tmp = os.path.realpath("/tmp")
    paths = [sys.prefix, sys.base_prefix, *(p for p in sys.path if p), *_package_folders()]
    return [p for p in dict.fromkeys(os.path.realpath(p) for p in paths) if _inside(p, tmp) and os.path.exists(p)]


def _package_folders() -> list[str]:
    """The folders of the packages a sandboxed child imports: ``translate`` (this one) and ``numbakern``."""
    folders = [str(Path(__file__).resolve().parents[1])]
    spec = importlib.util.find_spec("numbakern")
    if spec is not None and spec.origin:
        folders.append(str(Path(spec.origin).resolve().parent))
    return folders


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _tail(path: Path) -> str:
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - TAIL_BYTES))
        return f.read().decode(errors="replace")


def apply_limits(limits: Limits) -> None:
    """In the child, before it runs anything: lower (never raise) each limit, no core dumps, a private umask."""
    def lower(which: int, value: int, hard_extra: int = 0) -> None:
        soft, hard = resource.getrlimit(which)
        new_hard = value + hard_extra if hard == resource.RLIM_INFINITY else min(hard, value + hard_extra)
        new_soft = min(value, new_hard) if soft == resource.RLIM_INFINITY else min(soft, value, new_hard)
        resource.setrlimit(which, (new_soft, new_hard))

    lower(resource.RLIMIT_CPU, int(limits.cpu_seconds), hard_extra=5)
    lower(resource.RLIMIT_FSIZE, int(limits.file_bytes))
    lower(resource.RLIMIT_NOFILE, int(limits.open_files))
    if limits.address_bytes is not None:
        lower(resource.RLIMIT_AS, int(limits.address_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.umask(0o077)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m translate.verify.sandbox LIMITS_JSON -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    apply_limits(Limits(**json.loads(argv[0])))
    for name in ("SIGPIPE", "SIGXFSZ"):  # Python ignores these; the program it becomes gets the defaults back
        signal.signal(getattr(signal, name), signal.SIG_DFL)
    os.environ.pop("PWD", None)  # bwrap sets it (to the working folder): the child's environment is the allow-list
    command = argv[2:]
    os.execvp(command[0], command)  # never returns
    return 127


if __name__ == "__main__":
    raise SystemExit(main())
