"""A child process for code nobody has vouched for: building, loading and running a candidate ``.cu``.

``run(argv, workdir=...)`` starts ``argv`` with:

- **a scrubbed environment**: an allow-list (``PATH``, the locale, the CUDA toolkit and device variables, the
  library path), never a variable whose name looks like a secret or whose value holds one (``OPENAI_API_KEY``
  and its like), with ``HOME`` and ``TMPDIR`` set to the child's own folder and ``PYTHONPATH`` to this process's
  import path;
- **its own working folder** (``workdir``), stdin from ``/dev/null``, stdout and stderr into files there (only
  their tails are read back);
- **resource limits**, set in the child before it executes anything (``python -m translate.verify.sandbox``
  applies them, then ``exec``s ``argv``): CPU seconds, the size of any file it writes, open files, no core dumps.
  No address-space limit: the CUDA driver reserves far more virtual memory than it uses, so ``RLIMIT_AS`` would
  break every CUDA process;
- **a deadline**: the child is the leader of a new session and process group, and when the wall-clock limit
  passes the whole group is killed (``SIGKILL``); the group is killed after a normal exit too, so nothing the
  child started outlives it in its group.

Standard library only.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

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


@dataclass(frozen=True)
class Limits:
    wall_seconds: float = 600.0  # then the process group is killed
    cpu_seconds: int = 600  # per process (RLIMIT_CPU): SIGXCPU, then SIGKILL a few seconds later
    file_bytes: int = 1 << 30  # the largest file the child may write (RLIMIT_FSIZE)
    open_files: int = 1024  # RLIMIT_NOFILE


@dataclass(frozen=True)
class Completed:
    returncode: int | None  # None when the deadline killed it
    timed_out: bool
    stdout: str  # the last TAIL_BYTES of each
    stderr: str
    seconds: float

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


def run(argv: Sequence[str], *, workdir: str | os.PathLike, limits: Limits = Limits(),
        env_extra: Mapping[str, str] | None = None) -> Completed:
    """Run ``argv`` sandboxed in ``workdir`` (which must exist); wait at most ``limits.wall_seconds``."""
    workdir = Path(workdir)
    command = [sys.executable, "-m", "translate.verify.sandbox", json.dumps(asdict(limits)), "--", *argv]
    out_path, err_path = workdir / "sandbox.stdout", workdir / "sandbox.stderr"
    t0 = time.monotonic()
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(command, cwd=workdir, env=child_env(workdir, env_extra), stdin=subprocess.DEVNULL,
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
            kill_group(proc.pid)  # whatever the child left running in its group
    return Completed(None if timed_out else proc.returncode, timed_out, _tail(out_path), _tail(err_path),
                     time.monotonic() - t0)


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
    command = argv[2:]
    os.execvp(command[0], command)  # never returns
    return 127


if __name__ == "__main__":
    raise SystemExit(main())
