"""A script imported for translation without running it: its definitions only.

A script that launches kernels at its top level (numbakern's quickstart does: ``c = matmul(a, b)``,
``scaled_copy(3)[grid, block](x, y)``) cannot be imported by ``translate``: the process has numba's real CUDA
target and usually no GPU, so the first launch fails, and with a GPU it would run the script's work. Translation
needs only the kernel and what it reads, so a script named by its path (``translate quickstart.py:scaled_copy``)
is executed as its definitions: every import, then the ``def``, ``class`` and assignment statements that define
the kernel's name and the names those read, transitively, and the ``numbakern.declare(...)`` calls of those
kernels (a kernel's declaration is part of its definition); loops, launches, asserts, prints, other kernels and the
``if __name__ == "__main__":`` block are not run. Statements keep their file and line numbers, so an error in one
points at the user's line.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

#: top-level calls that belong to a kernel's definition (kept whatever they assign)
DEFINING_CALLS = frozenset({"declare"})


def definitions(tree: ast.Module, wanted: Iterable[str]) -> ast.Module:
    """The statements of ``tree`` that define ``wanted`` names and what they read, in their order."""
    body = tree.body
    keep = [isinstance(stmt, (ast.Import, ast.ImportFrom)) for stmt in body]
    needed = set(wanted)
    changed = True
    while changed:  # a statement that defines a needed name (or declares a needed kernel), and what it reads in turn
        changed = False
        for i, stmt in enumerate(body):
            if not keep[i] and (_defines(stmt) & needed or _declares(stmt) and _loads(stmt) & needed):
                keep[i] = True
                needed |= _loads(stmt)
                changed = True
    kept_tree = ast.Module(body=[s for s, k in zip(body, keep) if k], type_ignores=[])
    return ast.fix_missing_locations(kept_tree)


def _defines(stmt: ast.stmt) -> set[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _declares(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and \
        _call_name(stmt.value.func) in DEFINING_CALLS


def _call_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _loads(stmt: ast.stmt) -> set[str]:
    """Every name the statement reads, in its body and its functions' bodies (a kernel reads module constants)."""
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
