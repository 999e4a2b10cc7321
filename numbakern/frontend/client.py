"""Asking the helper process (``worker``) for a request's facts, through the disk cache.

One helper per calling process, started at the first cache miss and kept until the process exits; it is
restarted if it died. ``facts(request)`` returns the facts dict (``facts["ok"]`` False for a rejected kernel).
"""

from __future__ import annotations

import atexit
import json
import os
import pickle
import subprocess
import sys
import threading

from . import cache
from .request import TypingRequest
from .worker import read_frame, write_frame

#: "1" also runs NVVM (LLVM IR to PTX) on every kernel the helper types
PTX_ENV = "NUMBAKERN_TYPING_PTX"

_proc: subprocess.Popen | None = None
_lock = threading.Lock()
_memory: dict[str, dict] = {}
stats = {"memory": 0, "disk": 0, "helper": 0, "helper_seconds": 0.0}


def facts(request: TypingRequest) -> dict:
    key = request.key
    found = _memory.get(key)
    if found is not None:
        stats["memory"] += 1
        return found
    found = cache.load(key)
    if found is not None:
        stats["disk"] += 1
    else:
        found = _ask_helper(request)
        stats["helper"] += 1
        if found.get("ok") or found.get("error", {}).get("kind") != "HelperError":
            cache.store(key, found)
    _memory[key] = found
    return found


def _ask_helper(request: TypingRequest) -> dict:
    import time

    message = pickle.dumps({
        "payload": request.payload,
        "argtypes": request.argtypes,
        "sources": {k: (s.filename, s.first_line, s.text) if s else None for k, s in request.sources.items()},
        "cc": request.cc,
        "ptx": os.environ.get(PTX_ENV, "").strip() not in ("", "0"),
        "path": list(sys.path),
    })
    start = time.perf_counter()
    with _lock:
        proc = _helper()
        try:
            write_frame(proc.stdin, message)
            data = read_frame(proc.stdout)
        except (BrokenPipeError, OSError):
            data = None
        if data is None:
            _stop()
            raise RuntimeError(
                "numbakern's typing helper process (python -m numbakern.frontend.worker) exited unexpectedly; "
                "its error output is above (NUMBAKERN_SIM_TYPING=0 runs kernels without it, untyped)"
            )
    stats["helper_seconds"] += time.perf_counter() - start
    return json.loads(data)


def _helper() -> subprocess.Popen:
    global _proc
    if _proc is None or _proc.poll() is not None:
        env = dict(os.environ)
        env["NUMBA_ENABLE_CUDASIM"] = "0"
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
            proc.stdin.close()
            proc.wait(timeout=10)
        except Exception:  # noqa: BLE001 - a helper that will not go quietly
            proc.kill()
