"""translate's work run in the front end's helper process, for a caller in simulator mode (``translate.api``).

A process that imported numba in simulator mode (``NUMBA_ENABLE_CUDASIM=1``, e.g. the test suite on a machine
without a GPU) has no CUDA front end, and a process has only one of the two. The helper process of
``numbakern.frontend`` has numba's real target: ``call(name, **kwargs)`` runs this module's function ``name``
there (``HELPER_FUNCTIONS``) with JSON arguments. Its answer is JSON, a result or an error, and the error is raised
in the caller as the same exception type: a located ``TranslationError`` or ``CompileError``, a ``ManifestError``;
anything else as a ``RuntimeError`` with its type and text.
"""

from __future__ import annotations

import os

from numbakern.frontend import client

from .errors import CompileError, TranslationError
from .manifest import ManifestError

#: the functions of this module the helper process may run (``numbakern.frontend.worker``)
HELPER_FUNCTIONS = ("translate", "check")

#: the exceptions that travel back as themselves (anything else becomes a RuntimeError with its text)
_LOCATED = {"TranslationError": TranslationError, "CompileError": CompileError}


def call(name: str, **kwargs):
    """This module's function ``name`` run in the helper with JSON ``kwargs``: its result, or its error raised
    here."""
    reply = client.call(f"{__name__}:{name}", **kwargs)
    if "error" in reply:
        raise decode_error(reply["error"])
    return reply["result"]


def translate(*, opts: dict, **kwargs) -> dict:
    """``pipeline.translate`` with JSON arguments and result (in the helper)."""
    try:
        # numba's real CUDA target: only in the helper process (a simulator-mode caller cannot import it)
        from . import pipeline
        from .request import TranslateOptions

        return {"result": pipeline.translate(**kwargs, opts=TranslateOptions(**opts)).to_json()}
    except Exception as e:  # noqa: BLE001 - every error goes back to the caller
        return {"error": encode_error(e)}


def check(*, out_dir: str, expected: list, project_dir: str) -> dict:
    """``translate.check.check`` with JSON arguments and result (in the helper), vouched for by the project of
    ``project_dir``."""
    try:
        # the kernels' modules under numba's real CUDA target, as translate above
        from numbakern import project as projects

        from .check import check as freshness

        # relative file targets in a manifest are relative to the folder translate ran in: the project's (the
        # helper goes back to its caller's folder at its next request)
        os.chdir(project_dir)
        return {"result": freshness(out_dir, expected, projects.find("."))}
    except Exception as e:  # noqa: BLE001 - every error goes back to the caller
        return {"error": encode_error(e)}


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
