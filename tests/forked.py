"""numbakern's commands run as child processes forked from one that imported numba and numbakern already.

A test of the ``translate`` command runs it as a process of its own: its exit status, its output, the files it
leaves. Started with ``python -m translate.cli``, each such process spends about a second importing numba, its CUDA
target and the translator before doing a test's few milliseconds of work, and the suite starts some two hundred of
them. ``run`` starts them from a *template* process instead, one per pytest worker, that imported all of that once
(with ``NUMBA_ENABLE_CUDASIM=0``, as the command sets it) and loaded numba's CUDA typing and lowering registries (what
a process's first compile does), and then forks a child per command. The child is what
``python -m <module>`` would be: the test's working folder, environment, ``sys.argv``, ``sys.path`` (the working
folder, then the environment's PYTHONPATH, then the interpreter's own), a fresh ``__main__`` run by ``runpy``, its
own stdin, stdout and stderr, its own process group (killed whole on a timeout), and the exit status it sets.

Where a forked child could differ from a fresh process, ``run`` starts a fresh one (``subprocess.run``), so a test
never passes on the template's account:

- a command that is not ``python -m`` one of ``FORKABLE``, or a call with a ``preexec_fn``;
- an environment whose variables read at interpreter start or at import (``PYTHON*``, ``NUMBA_*``, ``NUMBAKERN_*``,
  the locale's) differ from a template's: another template is made for them (at most ``_TEMPLATES``, then fresh
  processes), except the few read only when used (``_READ_WHEN_USED``) or that the child sets up itself
  (``PYTHONUNBUFFERED``, ``PYTHONPATH``; and ``PYTHONDONTWRITEBYTECODE``: a child writes no bytecode, ``_child``
  says why);
- a folder on the call's path that holds a module of another file than the one the template imported (a project
  shadowing ``numpy``, say), a call whose path leaves out a folder the template imported from (its PYTHONPATH's),
  or a template whose imports printed anything (a warning a fresh process would print
  again, which the children would not).

``NUMBAKERN_TEST_FORKED=0`` turns the templates off: every command a fresh process (``COUNTS`` says how many of
each a worker ran).
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import tempfile
import threading

#: the modules a test may run forked (``python -m`` these: the translate command) and the module each runs as
#: ``__main__``
FORKABLE = {"translate.cli": "translate.cli", "translate": "translate.__main__",
            "translate.commands": "translate.commands"}
#: what a template imports before it forks: what those commands import before their first kernel (never the
#: modules run as ``__main__``: runpy runs those afresh)
PRELOAD = ("numpy", "numba", "numba.cuda", "numbakern", "numbakern.project", "translate.api", "translate.pipeline",
           "translate.request", "translate.project_kernels", "translate.verify.cli")
FORKED_ENV = "NUMBAKERN_TEST_FORKED"
#: variables of the families a template's imports could read that numbakern reads only when it uses them
_READ_WHEN_USED = ("NUMBAKERN_CACHE_DIR", "NUMBAKERN_SAFE_DIRECTORIES", "NUMBAKERN_BUILD_DIR",
                   "NUMBA_ENABLE_CUDASIM")
#: set up by the child itself (the streams it makes, sys.dont_write_bytecode, sys.path)
_CHILD_MADE = ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED")
_TEMPLATES = 3
#: how many commands this process ran forked and how many fresh
COUNTS = {"forked": 0, "fresh": 0}


def run(command: list[str], *, cwd=None, env: dict[str, str] | None = None, timeout: float | None = None,
        input: str | None = None, umask: int | None = None, preexec_fn=None) -> subprocess.CompletedProcess:
    """``subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, input=input)``,
    the process forked from a template where that is the same (this module's docstring); ``umask``: the child's. A
    ``preexec_fn`` (resource limits, say) is run in a fresh process only."""
    env = dict(os.environ) if env is None else env
    cwd = os.getcwd() if cwd is None else os.fspath(cwd)
    module = _forkable_module(command)
    template = _template_for(env) if module and preexec_fn is None else None
    if template is not None:
        done = template.run(module, command[3:], cwd, env, timeout, input, umask)
        if done is not None:
            COUNTS["forked"] += 1
            return done
    COUNTS["fresh"] += 1
    if umask is not None:
        assert preexec_fn is None, "umask or preexec_fn, not both"
        preexec_fn = lambda: os.umask(umask)  # noqa: E731
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, input=input,
                          preexec_fn=preexec_fn)


def _forkable_module(command: list[str]) -> str | None:
    if os.environ.get(FORKED_ENV) == "0" or len(command) < 3 or command[0] != sys.executable or command[1] != "-m":
        return None
    return command[2] if command[2] in FORKABLE else None


def _start_signature(env: dict[str, str]) -> tuple:
    """The variables of ``env`` a process reads at its start or while the template imports."""
    home = env.get("HOME", "")
    user_site = os.path.join(home, ".local", "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}",
                             "site-packages")
    read = sorted((k, v) for k, v in env.items()
                  if k.startswith(("PYTHON", "NUMBA", "LANG", "LC_")) and k not in _READ_WHEN_USED + _CHILD_MADE)
    # a user site folder is on a fresh process's path when HOME has one
    return tuple(read), user_site if os.path.isdir(user_site) else None


_templates: dict[tuple, _Template | None] = {}
_lock = threading.Lock()


def _template_for(env: dict[str, str]) -> _Template | None:
    signature = _start_signature(env)
    with _lock:
        if signature not in _templates:
            if len(_templates) >= _TEMPLATES:
                return None
            _templates[signature] = _Template.start(env)
        return _templates[signature]


class _Template:
    """A process that imported ``PRELOAD`` and forks a child per request (``_serve``), over its stdin and stdout."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc
        self.busy = threading.Lock()  # one request at a time: a second caller meanwhile gets a fresh process

    @classmethod
    def start(cls, env: dict[str, str]) -> _Template | None:
        start_env = {**env, "NUMBA_ENABLE_CUDASIM": "0", "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
        # not `python forked.py`: its folder first on sys.path would make tests/numbakern the numbakern imported
        serve = "import runpy, sys; del sys.path[0]; runpy.run_path(sys.argv[1], run_name='__main__')"
        proc = subprocess.Popen([sys.executable, "-c", serve, __file__], env=start_env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd="/")
        assert proc.stdout is not None
        ready = json.loads(proc.stdout.readline() or '{"ready": false}')
        if not ready.get("ready"):
            proc.kill()
            proc.wait()
            return None
        template = cls(proc)
        atexit.register(template.close)
        return template

    def run(self, module, args, cwd, env, timeout, input, umask) -> subprocess.CompletedProcess | None:
        if not self.busy.acquire(blocking=False):
            return None
        try:
            return self._run(module, args, cwd, env, timeout, input, umask)
        finally:
            self.busy.release()

    def _run(self, module, args, cwd, env, timeout, input, umask) -> subprocess.CompletedProcess | None:
        with tempfile.TemporaryDirectory(prefix="forked-") as streams:
            paths = {name: os.path.join(streams, name) for name in ("stdin", "stdout", "stderr")}
            with open(paths["stdin"], "w") as f:
                f.write(input or "")
            request = {"module": module, "args": args, "cwd": cwd, "env": env, "timeout": timeout, "umask": umask,
                       "streams": paths}
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
            if not line:  # the template is gone (killed from outside): fresh processes from now on
                return None
            reply = json.loads(line)
            if "fresh" in reply:
                return None
            with open(paths["stdout"]) as out, open(paths["stderr"]) as err:
                stdout, stderr = out.read(), err.read()
        command = [sys.executable, "-m", module, *args]
        if reply.get("timed_out"):
            raise subprocess.TimeoutExpired(command, timeout, output=stdout, stderr=stderr)
        return subprocess.CompletedProcess(command, reply["returncode"], stdout, stderr)

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait()


# ---- the template process ------------------------------------------------------------------------------------


def _serve() -> None:
    """Import ``PRELOAD``, say whether it is ready, then fork a child per request line until stdin closes."""
    import gc
    import importlib
    import io
    import site

    reply = sys.stdout
    sys.stdout = sys.stderr  # nothing but replies on the reply stream
    # what a fresh process would print while importing these (a warning, say) the children would not print again
    printed = tempfile.TemporaryFile()
    saved = os.dup(2), os.dup(1)
    os.dup2(printed.fileno(), 2)
    os.dup2(printed.fileno(), 1)
    try:
        for name in PRELOAD:
            importlib.import_module(name)
        # numba's CUDA typing and lowering registries loaded, as the first compile of a process loads them (a later
        # import's registries are added at the child's first compile, after these, in the order it would add them)
        from numba.cuda.descriptor import cuda_target

        cuda_target.typing_context.refresh()
        cuda_target.target_context.refresh()
        ok = True
    except BaseException:
        ok = False
    os.dup2(saved[0], 2)
    os.dup2(saved[1], 1)
    ok = ok and os.fstat(printed.fileno()).st_size == 0 and not any(m in sys.modules for m in FORKABLE.values())
    reply.write(json.dumps({"ready": ok}) + "\n")
    reply.flush()
    if not ok:
        return
    own = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    base = [p for p in sys.path if p not in own]
    user_site = site.getusersitepackages()
    # the children's collector leaves the template's objects alone: their pages stay shared, not copied
    gc.freeze()
    for line in sys.stdin:
        request = json.loads(line)
        path = [os.path.abspath(request["cwd"]),
                *[p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p], *base]
        if user_site not in path and os.path.isdir(user_site):
            path.append(user_site)
        # a folder the template imported from that the call's path leaves out (numba where PYTHONPATH put it) would
        # be missing from a fresh process: not there, as there
        missing = [p for p in own if p not in path]
        shadowed = f"{missing[0]} is not on the path" if missing else _shadowed([p for p in path if p not in base])
        if shadowed:
            reply.write(json.dumps({"fresh": shadowed}) + "\n")
        else:
            reply.write(json.dumps(_fork(request, path, io)) + "\n")
        reply.flush()


def _shadowed(path: list[str]) -> str | None:
    """A module already imported that ``path`` would find in another file first (then a fresh process is needed)."""
    for folder in path:
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue
        for entry in names:
            name = entry[:-3] if entry.endswith(".py") else entry.split(".")[0] if entry.endswith(".so") else entry
            module = sys.modules.get(name)
            if module is None or name in sys.builtin_module_names:
                continue
            origin = os.path.realpath(os.path.join(folder or ".", entry))
            where = getattr(module, "__file__", None)
            here = ([os.path.realpath(where)] if where
                    else [os.path.realpath(p) for p in getattr(module, "__path__", ())])
            if not any(h == origin or h.startswith(origin + os.sep) for h in here):
                return f"{name} in {folder}"
    return None


def _fork(request: dict, path: list[str], io) -> dict:
    import signal
    import time

    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.setpgid(0, 0)
        code = 1
        try:
            code = _child(request, path, io)
        finally:
            os._exit(code)
    try:  # (both sides set it: a timeout's kill finds the group whichever ran first)
        os.setpgid(pid, pid)
    except OSError:  # the child set it already, or has exited
        pass
    deadline = None if request["timeout"] is None else time.monotonic() + request["timeout"]
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return {"returncode": os.waitstatus_to_exitcode(status)}
        if deadline is not None and time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return {"timed_out": True}
        time.sleep(0.005)


def _child(request: dict, path: list[str], io) -> int:
    import runpy
    import traceback

    streams = request["streams"]
    for fd, name, mode in ((0, "stdin", os.O_RDONLY), (1, "stdout", os.O_WRONLY), (2, "stderr", os.O_WRONLY)):
        opened = os.open(streams[name], mode | (os.O_CREAT | os.O_TRUNC if fd else 0), 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    env = request["env"]
    unbuffered = bool(env.get("PYTHONUNBUFFERED"))
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), write_through=unbuffered)
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), write_through=True, errors="backslashreplace")
    os.environ.clear()
    os.environ.update(env)
    # a child writes no bytecode: a .pyc records its source's mtime in whole seconds, and commands this quick would
    # run a module a test rewrote to the same size within that second from the previous command's stale .pyc
    sys.dont_write_bytecode = True
    if request["umask"] is not None:
        os.umask(request["umask"])
    os.chdir(request["cwd"])
    sys.path[:] = path
    sys.argv = ["-m", *request["args"]]  # runpy puts the module's file first, as `python -m` does
    module = request["module"]
    code = 0
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
    except BaseException:
        traceback.print_exc()
        code = 1
    # what a fresh interpreter does on its way out: wait for its threads, run its exit handlers, flush its streams
    import atexit
    import threading

    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    return code


if __name__ == "__main__":
    _serve()
