"""A script imported for translation without running it: its definitions only.

A script that launches kernels at its top level (numbakern's quickstart does: ``c = matmul(a, b)``,
``scaled_copy(3)[grid, block](x, y)``) cannot be imported by ``translate``: the process has numba's real CUDA
target and usually no GPU, so the first launch fails, and with a GPU it would run the script's work. Translation
needs only the kernel and what it reads, so a script named by its path (``translate quickstart.py:scaled_copy``)
is executed as its definitions: every import, then the ``def``, ``class`` and assignment statements that define
the kernel's name and the names those read, transitively, and the statements that complete what those names hold:
calls that read them (a kernel's ``numbakern.declare(...)`` is part of its definition, an ``exec(source,
namespace)`` fills a namespace it reads) except launches (``kernel[grid, block](...)``) and prints, assignments
to their attributes and items (``config.THRESHOLD = 1e-14``), and ``for`` loops made only of those (``setattr`` of a
namespace in a loop). Other loops, asserts, other kernels and the ``if __name__ == "__main__":`` block are not
run. Statements keep their file and line numbers, so an error in one
points at the user's line.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable


def definitions(tree: ast.Module, wanted: Iterable[str]) -> ast.Module:
    """The statements of ``tree`` that define ``wanted`` names and what they read, in their order."""
    body = tree.body
    keep = [isinstance(stmt, (ast.Import, ast.ImportFrom)) for stmt in body]
    needed = set(wanted)
    changed = True
    while changed:  # a statement that defines a needed name (or declares a needed kernel), and what it reads in turn
        changed = False
        for i, stmt in enumerate(body):
            if not keep[i] and (_defines(stmt) & needed or _prepares(stmt) and _loads(stmt) & needed):
                keep[i] = True
                needed |= _loads(stmt)
                changed = True
    kept_tree = ast.Module(body=[s for s, k in zip(body, keep) if k], type_ignores=[])
    return ast.fix_missing_locations(kept_tree)


def _defines(stmt: ast.stmt) -> set[str]:
    """The module names ``stmt`` binds, in its branches too (``if config.ENABLE_CUDASIM: tpb = 8 else: tpb = 32``)
    but not inside the functions and classes it defines."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    names: set[str] = set()
    todo: list[ast.AST] = [stmt]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        todo.extend(ast.iter_child_nodes(node))
    return names


def _prepares(stmt: ast.stmt) -> bool:
    """A statement that may complete what a needed name holds: a call (``numbakern.declare(kernel, ...)``,
    ``exec(source, namespace)``, ``table.update(...)``), any but a kernel launch (``kernel[grid, block](...)``) and
    ``print``; or an assignment to an attribute or an item (``config.THRESHOLD = 1e-14``, ``table[0] = 1``); or a
    ``for`` loop made only of those (``for name, v in PARAMS: setattr(config, name, v)``)."""
    if isinstance(stmt, ast.For) and not stmt.orelse:
        return all(_prepares(s) for s in stmt.body)
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        return all(isinstance(t, (ast.Attribute, ast.Subscript)) for t in targets)
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    func = stmt.value.func
    return not (isinstance(func, ast.Subscript) or _call_name(func) == "print")


def _call_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _loads(stmt: ast.stmt) -> set[str]:
    """Every name the statement reads, in its body and its functions' bodies (a kernel reads module constants)."""
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
