"""The one protocol between verification and its child processes: a job is one JSON object on one line of the
child's stdin, its answer one JSON object on one line of the child's stdout.

Every child is ``python -m translate.verify.worker`` (``ARGV``), and it serves two kinds of parent alike:

- the pool's long-lived workers (``translate.verify.pool``): many jobs over pipes, one answer each, in turn;
- the sandbox's one-shot children (``translate.verify.sandbox.run(..., job=...)``): one job read from a file,
  the answer read back from the file its stdout went to, size-capped, checked like any input.

``serve`` is the child's loop: it gives the answers the real stdout to themselves, and sends whatever else writes to
fd 1 (``print``, numba, a candidate's host code) to stderr, so that nothing can break a line of the protocol. A job
names its handler by ``kind`` (``HANDLERS``, imported only when a job needs it: the sandboxed children never import
numba); an exception in a handler is its answer, ``{"error": ..., "traceback": ...}``, and the loop goes on.

Standard library only.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping
from typing import IO, Any

#: the child's command, started with the current interpreter
ARGV = (sys.executable, "-m", "translate.verify.worker")

#: each job kind's handler, ``module:function`` (a function of the job that returns the answer)
HANDLERS = {
    "cases": "translate.verify.worker:run_cases",
    "sanitize": "translate.verify.worker:run_sanitize",
    "whoami": "translate.verify.worker:whoami",
    "candidate": "translate.verify.isolated:serve",
    "compile": "translate.verify.sandboxed_compile:serve",
}


def encode(message: Mapping[str, Any]) -> str:
    """``message`` as one line of the protocol (with its newline); numpy scalars become Python numbers."""
    return json.dumps(message, separators=(",", ":"), default=_scalar) + "\n"


def _scalar(value: Any) -> Any:
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON data")


def decode(line: str | bytes) -> dict[str, Any] | None:
    """The message on ``line``, or None when it is not a JSON object (a child that died, or a forged answer)."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def handler(kind: Any) -> Callable[[Mapping[str, Any]], dict[str, Any]] | None:
    where = HANDLERS.get(kind) if isinstance(kind, str) else None
    if where is None:
        return None
    module, _, name = where.partition(":")
    return getattr(importlib.import_module(module), name)


def handle(job: Mapping[str, Any]) -> dict[str, Any]:
    """The answer to one job, by its kind (an error is an answer too)."""
    run = handler(job.get("kind"))
    if run is None:
        return {"error": f"unknown job kind {job.get('kind')!r}"}
    return _answer(run, job)


def _answer(answer: Callable[[Mapping[str, Any]], dict[str, Any]], job: Mapping[str, Any]) -> dict[str, Any]:
    try:
        return answer(job)
    except Exception as exc:  # noqa: BLE001 - the parent reports it as the job's failure
        return {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-4000:]}


def serve(answer: Callable[[Mapping[str, Any]], dict[str, Any]] = handle, lines: Iterable[str] | None = None,
          answers: IO[str] | None = None) -> int:
    """The child's loop: a job from each line of ``lines`` (stdin), ``answer(job)`` on ``answers`` (the real stdout),
    until the input ends. ``answer``: by default ``handle``, by the job's kind; a script's own workers pass theirs."""
    if answers is None:
        answers = os.fdopen(os.dup(1), "w", buffering=1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    for line in sys.stdin if lines is None else lines:
        if not line.strip():
            continue
        job = decode(line)
        answers.write(encode(_answer(answer, job) if job is not None else {"error": f"not a JSON job: {line[:200]!r}"}))
        answers.flush()
    return 0
