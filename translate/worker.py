"""Runs translation in a helper process with numba's real CUDA target, for callers whose process imported
numba in simulator mode (``NUMBA_ENABLE_CUDASIM=1``, e.g. the test suite on a machine without a GPU).

One long-lived helper per calling process; requests and answers are JSON lines on its stdin/stdout.
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import threading

from .errors import TranslationError

_proc = None
_proc_env = None
_lock = threading.Lock()

# a backend reads its endpoint and key from the environment (the key never travels in a request): a helper
# started under other values of these is replaced
_BACKEND_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "NO_PROXY", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


def _backend_env():
    return tuple(os.environ.get(k) for k in _BACKEND_ENV)


def _start():
    global _proc, _proc_env
    env = dict(os.environ)
    env["NUMBA_ENABLE_CUDASIM"] = "0"
    _proc_env = _backend_env()
    _proc = subprocess.Popen([sys.executable, "-m", "translate.worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             env=env, text=True, cwd=os.getcwd())
    atexit.register(_stop)


def _stop():
    global _proc
    if _proc is not None and _proc.poll() is None:
        try:
            _proc.stdin.close()
            _proc.wait(timeout=10)
        except Exception:
            _proc.kill()
    _proc = None


def call(op: str, **kwargs):
    """Run ``op`` (``translate`` or ``check``) in the helper; re-raise its TranslationError here."""
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
        err = reply["error"]
        cls = TranslationError
        if err.get("type") == "CompileError":
            from .pipeline import CompileError as cls
        if err.get("type") in ("TranslationError", "CompileError"):
            raise cls(err["message"], filename=err["filename"], line=err["line"], col=err["col"],
                      source_line=err["source_line"], width=err["width"], hint=err["hint"])
        raise RuntimeError(err["message"])
    if op == "translate":
        from .pipeline import TranslationResult

        return TranslationResult(**reply["result"])
    return reply["result"]


def _serve():
    from . import check, pipeline

    for line in sys.stdin:
        req = json.loads(line)
        for p in req.get("path", []):
            if p not in sys.path:
                sys.path.append(p)
        try:
            if req["op"] == "translate":
                result = pipeline.translate_kernel(**req["kwargs"]).to_json()
            elif req["op"] == "check":
                result = check.check(**req["kwargs"])
            else:
                raise ValueError(f"unknown op {req['op']}")
            reply = {"result": result}
        except TranslationError as e:
            reply = {"error": {"type": type(e).__name__, "message": e.message, "filename": e.filename,
                               "line": e.line, "col": e.col, "source_line": e.source_line, "width": e.width,
                               "hint": e.hint}}
        except Exception as e:  # noqa: BLE001 - report anything to the caller
            reply = {"error": {"type": type(e).__name__, "message": f"{type(e).__name__}: {e}"}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    _serve()
