"""Translation in a helper process with numba's real CUDA target, for callers whose process imported numba in
simulator mode (``NUMBA_ENABLE_CUDASIM=1``, e.g. the test suite on a machine without a GPU): the simulator has no
CUDA front end, and a process has only one of the two.

``call(op, **kwargs)`` is the caller's side (``translate.api``): one long-lived helper per calling process, started
as ``python -m translate.worker`` (``__main__``), requests and answers as JSON lines on its stdin/stdout. Errors
come back as the same exception types; results as plain JSON values.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import threading

from ..errors import CompileError, TranslationError
from ..manifest import ManifestError

_proc: subprocess.Popen | None = None
_proc_env: tuple[str | None, ...] | None = None
_lock = threading.Lock()

# a backend reads its endpoint and key from the environment (the key never travels in a request): a helper
# started under other values of these is replaced
_BACKEND_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "NO_PROXY", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")

#: the exceptions that travel back as themselves (anything else becomes a RuntimeError with its text)
_LOCATED = {"TranslationError": TranslationError, "CompileError": CompileError}


def _backend_env() -> tuple[str | None, ...]:
    return tuple(os.environ.get(k) for k in _BACKEND_ENV)


def _start() -> None:
    global _proc, _proc_env
    env = dict(os.environ)
    env["NUMBA_ENABLE_CUDASIM"] = "0"
    _proc_env = _backend_env()
    _proc = subprocess.Popen([sys.executable, "-m", "translate.worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             env=env, text=True, cwd=os.getcwd())
    atexit.register(_stop)


def _stop() -> None:
    global _proc
    if _proc is not None and _proc.poll() is None:
        try:
            _proc.stdin.close()
            _proc.wait(timeout=10)
        except Exception:  # noqa: BLE001 - a helper that does not stop is killed
            _proc.kill()
    _proc = None


def call(op: str, **kwargs):
    """Run ``op`` (``translate`` or ``check``) in the helper with JSON ``kwargs``; its result, or its error raised
    here."""
    with _lock:
        if _proc is not None and _proc_env != _backend_env():
            _stop()
        if _proc is None or _proc.poll() is not None:
            _start()
        _proc.stdin.write(json.dumps({"op": op, "kwargs": kwargs, "path": sys.path[:]}) + "\n")
        _proc.stdin.flush()
        line = _proc.stdout.readline()
    if not line:
        raise RuntimeError("the translate helper process exited unexpectedly")
    reply = json.loads(line)
    if "error" in reply:
        raise decode_error(reply["error"])
    return reply["result"]


def encode_error(e: Exception) -> dict:
    """An exception as the helper sends it back."""
    if isinstance(e, TranslationError):
        return {"type": type(e).__name__, "message": e.message, "filename": e.filename, "line": e.line,
                "col": e.col, "source_line": e.source_line, "width": e.width, "hint": e.hint}
    if isinstance(e, ManifestError):
        return {"type": "ManifestError", "message": str(e)}
    return {"type": type(e).__name__, "message": f"{type(e).__name__}: {e}"}


def decode_error(err: dict) -> Exception:
    cls = _LOCATED.get(err.get("type"))
    if cls is not None:
        return cls(err["message"], filename=err["filename"], line=err["line"], col=err["col"],
                   source_line=err["source_line"], width=err["width"], hint=err["hint"])
    if err.get("type") == "ManifestError":
        return ManifestError(err["message"])
    return RuntimeError(err["message"])
