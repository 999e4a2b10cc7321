"""What a kernel calls, before numba types it: a device function that calls itself (directly or through others)
is a located error at the call that closes the cycle (numba would fail deep in its compiler, slowly, and C
recursion is not what a numba kernel means); numba's typing errors are summarised and located."""

from __future__ import annotations

import ast
import linecache
import os
import re

from numba.core.dispatcher import Dispatcher

from numbakern.frontend import closures

from ..errors import TranslationError
from .source import NoSource, parse_function


def _callee(pyfunc, node: ast.Call):
    """The Python function a call in ``pyfunc`` reaches, if it is a jitted function of its module (or None)."""
    f = node.func
    chain = []
    while isinstance(f, ast.Attribute):
        chain.append(f.attr)
        f = f.value
    if not isinstance(f, ast.Name):
        return None
    obj = closures.lookup(pyfunc, f.id)
    obj = None if obj is closures.MISSING else obj
    for attr in reversed(chain):
        obj = getattr(obj, attr, None)
    inner = getattr(obj, "py_func", None)
    return inner if callable(inner) and hasattr(obj, "targetoptions") or _is_cpu_jit(obj) else None


def _is_cpu_jit(obj) -> bool:
    return isinstance(obj, Dispatcher)


def find_recursion(pyfunc) -> TranslationError | None:
    """A located TranslationError if the functions ``pyfunc`` calls call back into one of them, else None."""
    stack: list = []
    done: set = set()

    def visit(func):
        if func in done:
            return None
        try:
            fn, src = parse_function(func)
        except NoSource:
            return None
        stack.append(func)
        for node in ast.walk(fn):
            if isinstance(node, ast.Call):
                callee = _callee(func, node)
                if callee is None:
                    continue
                if callee in stack:
                    chain = " -> ".join(f.__name__ for f in stack[stack.index(callee):]) + f" -> {callee.__name__}"
                    return src.error(node, f"'{callee.__name__}' is recursive ({chain}): recursive device functions "
                                     "are not supported", hint="write the recursion as a loop")
                err = visit(callee)
                if err is not None:
                    return err
        stack.pop()
        done.add(func)
        return None

    return visit(pyfunc)


def typing_error(e: Exception, src, fn, what: str) -> TranslationError:
    """numba's typing error as a located TranslationError: at the file and line numba names (when it names one
    in a source file), else at the function; a numpy ufunc that numba-cuda has no CUDA loop for, at its call."""
    missing = _missing_ufunc(e)
    if missing is not None:
        name, instead = missing
        call = next((n for n in ast.walk(fn) if isinstance(n, ast.Call) and
                     getattr(n.func, "attr", getattr(n.func, "id", None)) == name), fn)
        return src.error(call, f"{what}: numba-cuda has no CUDA loop for np.{name} (its ufuncs.py lists none)",
                         hint=instead)
    summary, path, line = typing_failure(e)
    message = f"{what}: {summary}"
    hint = "numba itself rejects this; its full message comes from running the kernel with numba"
    if path and line and os.path.exists(path):
        text = linecache.getline(path, line).rstrip("\n")
        col = len(text) - len(text.lstrip())
        return TranslationError(message, filename=path, line=line, col=col, source_line=text,
                                width=max(1, len(text.strip())), hint=hint)
    return src.error(fn, message, hint=hint)


#: what a kernel writes instead of a numpy ufunc numba-cuda has no CUDA loop for, where math has no namesake
_UFUNC_INSTEAD = {"absolute": "abs(x)", "add": "a + b", "subtract": "a - b", "multiply": "a * b", "power": "a ** b",
                  "negative": "-x", "square": "x * x", "remainder": "a % b", "floor_divide": "a // b",
                  "reciprocal": "1 / x", "float_power": "a ** b", "rint": "round(x)"}


def _missing_ufunc(e: Exception) -> tuple[str, str] | None:
    """(the ufunc's name, what to write instead) where ``e`` is numba-cuda's KeyError for a numpy ufunc whose CUDA
    loop it lacks (``np.sqrt``: numba-cuda's CUDA target has loops for fewer ufuncs than numba's CPU target)."""
    import math

    import numpy as np

    key = e.args[0] if isinstance(e, KeyError) and e.args else None
    if not isinstance(key, np.ufunc):
        return None
    name = key.__name__
    instead = f"math.{name}(x)" if hasattr(math, name) else _UFUNC_INSTEAD.get(name, "the math module's function")
    return name, f"{instead}, which numba-cuda compiles"


def typing_failure(e: Exception) -> tuple[str, str | None, int | None]:
    """numba's error about a kernel, summarised: (its first relevant line, the file and line it names, if any).
    Numba's messages run to dozens of lines (every candidate overload); the summary is what a located error
    needs."""
    # numba colours its messages with terminal escapes where its colour scheme is on (NUMBA_COLOR_SCHEME)
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(e)).strip()
    lines = [line.rstrip() for line in text.splitlines()]
    body = [line for line in lines if line.strip() and not line.startswith(("Failed in ", "- Resolution"))]
    summary = body[0].strip() if body else type(e).__name__
    if summary.endswith("found for signature:"):
        sig = next((line.strip()[4:].strip() for line in body if line.strip().startswith(">>>")), "")
        summary = summary[: -len("found for signature:")] + f"found for {sig}"
    summary = re.sub(r"\s+", " ", summary)[:300]
    m = re.search(r'File "([^"]+)", line (\d+)', text)
    if m is None:
        return summary, None, None
    path = m.group(1)
    if not os.path.isabs(path):
        path = os.path.abspath(path)
    return summary, path, int(m.group(2))


def internal_error(src, node, exc: BaseException) -> TranslationError:
    """A failure of the code generator itself (not of the kernel) as a located error: at the construct being
    translated, with the original exception (as Warp and Triton report theirs)."""
    what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return src.error(node, f"internal error of the code generator while translating this ({what}); this is a "
                     "numbakern bug, please report it with this message and the kernel")
