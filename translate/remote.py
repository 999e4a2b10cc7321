"""translate's work run in the front end's helper process, for a caller in simulator mode (``translate.api``).

A process that imported numba in simulator mode (``NUMBA_ENABLE_CUDASIM=1``, e.g. the test suite on a machine
without a GPU) has no CUDA front end, and a process has only one of the two. The helper process of
``numbakern.frontend`` has numba's real target: ``call(name, **kwargs)`` runs this module's function ``name``
there (``HELPER_FUNCTIONS``) with JSON arguments. Its answer is JSON, a result or an error, and the error is raised
in the caller as the same exception type: a located ``TranslationError`` or ``CompileError``, a ``ManifestError``;
anything else as a ``RuntimeError`` with its type and text.
"""

from __future__ import annotations

from numbakern.frontend import client
from numbakern.project import ProjectError

from .errors import CompileError, TranslationError, UnknownKernel
from .manifest import ManifestError

#: the functions of this module the helper process may run (``numbakern.frontend.worker``)
HELPER_FUNCTIONS = ("translate", "translate_kernel", "check")

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


def translate_kernel(**kwargs) -> dict:
    """``api.translate_kernel`` with JSON arguments and result (in the helper)."""
    try:
        # numba's real CUDA target: only in the helper process, as translate above
        from .project_kernels import translate_kernel as in_project

        return {"result": in_project(**kwargs).to_json()}
    except Exception as e:  # noqa: BLE001 - every error goes back to the caller
        return {"error": encode_error(e)}


def check(*, project_dir: str, **kwargs) -> dict:
    """``api.check`` with JSON arguments and result (in the helper), in the project of ``project_dir``."""
    try:
        # numba's real CUDA target: only in the helper process, as translate above
        from .project_kernels import check as in_project

        return {"result": in_project(project_dir=project_dir, **kwargs)}
    except Exception as e:  # noqa: BLE001 - every error goes back to the caller
        return {"error": encode_error(e)}


def encode_error(e: Exception) -> dict:
    """An exception as the helper sends it back."""
    if isinstance(e, TranslationError):
        return {"type": type(e).__name__, "message": e.message, "filename": e.filename, "line": e.line,
                "col": e.col, "source_line": e.source_line, "width": e.width, "hint": e.hint}
    if isinstance(e, ManifestError):
        return {"type": "ManifestError", "message": str(e)}
    kind = next((name for name, cls in _typed().items() if type(e) is cls), None)
    if kind is None:  # the nearest documented type it is an instance of (a SignatureError is a ValueError)
        kind = next((name for name, cls in _typed().items() if isinstance(e, cls)), None)
    if kind is not None:
        message = e.args[0] if isinstance(e, KeyError) and e.args else str(e)  # KeyError's str() adds quotes
        return {"type": kind, "message": str(message)}
    return {"type": type(e).__name__, "message": f"{type(e).__name__}: {e}"}


def decode_error(err: dict) -> Exception:
    cls = _LOCATED.get(str(err.get("type")))
    if cls is not None:
        return cls(err["message"], filename=err["filename"], line=err["line"], col=err["col"],
                   source_line=err["source_line"], width=err["width"], hint=err["hint"])
    if err.get("type") == "ManifestError":
        return ManifestError(err["message"])
    typed = _typed().get(str(err.get("type")))
    if typed is not None:
        return typed(err["message"])
    return RuntimeError(err["message"])


def _typed() -> dict[str, type]:
    """The exception types ``translate.api`` documents, which travel back as themselves (most specific first)."""
    from .llm.client import LLMError  # the llm backend's module: imported when an error comes back, not before

    return {"UnknownKernel": UnknownKernel, "ProjectError": ProjectError, "LLMError": LLMError,
            "FileNotFoundError": FileNotFoundError, "PermissionError": PermissionError, "KeyError": KeyError,
            "LookupError": LookupError, "TypeError": TypeError, "ValueError": ValueError, "OSError": OSError}
