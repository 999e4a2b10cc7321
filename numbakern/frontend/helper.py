"""The caller's side of the one helper process (``python -m numbakern.frontend.worker``) that has numba's real CUDA
target, for a process in simulator mode, which has none.

One helper per calling process, started at the first request and kept until the process exits; restarted if it
died, and replaced if the caller's environment changed in a way it must see (``helper_env``). Requests are
answered one at a time.
"""

from __future__ import annotations

import atexit
import json
import os
import pickle
import subprocess
import sys
import threading

from . import helper_env
from .protocol import read_frame, write_frame

_proc: subprocess.Popen | None = None
_proc_env: tuple | None = None
_lock = threading.Lock()


class HelperExited(RuntimeError):
    """The helper process ended while answering (its error output went to the caller's stderr)."""


def ask(request: dict) -> dict:
    """The helper's JSON answer to ``request`` (pickled, so its values may be numba types and bytes); the caller's
    ``sys.path`` and working directory travel with it."""
    message = pickle.dumps({**request, "path": list(sys.path), "cwd": os.getcwd()})
    with _lock:
        proc = _helper()
        try:
            write_frame(proc.stdin, message)
            data = read_frame(proc.stdout)
        except (BrokenPipeError, OSError):
            data = None
        if data is None:
            _stop()
            raise HelperExited("numbakern's front-end helper process (python -m numbakern.frontend.worker) exited "
                               "unexpectedly; its error output is above")
    return json.loads(data)


def stop() -> None:
    """End the helper (the next request starts a fresh one)."""
    with _lock:
        _stop()


def _helper() -> subprocess.Popen:
    global _proc, _proc_env
    if _proc is not None and _proc_env != helper_env.snapshot():
        _stop()
    if _proc is None or _proc.poll() is not None:
        env = dict(os.environ)
        env["NUMBA_ENABLE_CUDASIM"] = "0"
        _proc_env = helper_env.snapshot()
        _proc = subprocess.Popen(
            [sys.executable, "-m", "numbakern.frontend.worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=os.getcwd(),
        )
        atexit.register(_stop)
    return _proc


def _stop() -> None:
    global _proc
    proc, _proc = _proc, None
    if proc is not None and proc.poll() is None:
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(timeout=10)
        except Exception:  # noqa: BLE001 - a helper that will not go quietly
            proc.kill()
