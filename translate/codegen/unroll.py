"""``for i in unroll(range(C))`` (``numbakern.unroll``): the C keeps the loop as the author wrote it and asks nvcc
to unroll it with ``#pragma unroll``, whatever its trip count (Numba gets the expanded copies instead);
``unroll(range(C), k)`` becomes ``#pragma unroll k``."""

from __future__ import annotations

import ast


def unroll_range(tr, it: ast.expr):
    """``(range call, pragma line)`` for an iterable ``unroll(range(...)[, k])``, else None."""
    inner = _marked(it)
    if inner is None or not isinstance(it, ast.Call):
        return None
    from numbakern.unroll import unroll

    from .cexpr import Static

    try:
        f = tr.value(it.func)
    except Exception:  # noqa: BLE001 - not a name the kernel can call: not the marker
        return None
    if not (isinstance(f, Static) and f.obj is unroll):
        return None
    if len(it.args) == 1:
        return inner, "#pragma unroll"
    times = tr.const_value(it.args[1])
    if not isinstance(times, int) or isinstance(times, bool) or times < 1:
        raise tr.src.error(it.args[1], "unroll(range(...), times): times must be a positive compile-time integer")
    return inner, f"#pragma unroll {times}"


def range_call(it: ast.expr) -> ast.expr:
    """``it`` with an ``unroll(...)`` around it taken off (by name: for the analyses that run before typing)."""
    inner = _marked(it)
    return it if inner is None else inner


def _marked(it):
    if not (isinstance(it, ast.Call) and len(it.args) in (1, 2) and not it.keywords
            and isinstance(it.args[0], ast.Call)):
        return None
    f = it.func
    name = f.id if isinstance(f, ast.Name) else (f.attr if isinstance(f, ast.Attribute) else None)
    return it.args[0] if name == "unroll" else None
