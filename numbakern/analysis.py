"""What a kernel's own source says about its array arguments: which it writes, which it accumulates into.

Read from the Python AST of the kernel function, so it needs neither a GPU nor numba's typing:

- **written**: an element assigned (``out[i] = ...``, ``out[i] += ...``), the first argument of a
  ``cuda.atomic.*`` call, or the destination of numbakern's ``vstore4`` / ``copy_async4``;
- **accumulated**: written and also read, so the incoming values may matter: the first argument of
  ``cuda.atomic.*`` (``cuda.atomic.add(hist, b, 1)``), an augmented assignment to an element (``out[i] += ...``),
  or an array the kernel both reads and writes (``x[i] = 2 * x[i]``). Verification must not poison these: the case
  starts them at known values. (A kernel that only reads back its own writes is counted too: the safe side, since
  poisoning an array the kernel reads would break a correct kernel.)

Only the kernel's own body is read: an array that a device function writes or adds to must be named by hand.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass
from typing import Any

#: numbakern's helpers that store into the array given as their first argument (vector_io, async_copy)
STORES_TO_FIRST_ARGUMENT = frozenset({"vstore4", "copy_async4"})


@dataclass(frozen=True)
class ArgumentUse:
    params: tuple[str, ...]  # the kernel's parameters, in order
    written: frozenset[str]
    accumulated: frozenset[str]


def argument_use(kernel: Any) -> ArgumentUse:
    """How ``kernel`` (a ``@cuda.jit`` kernel, simulator kernel or plain function) uses its parameters."""
    fn = _function_node(getattr(kernel, "py_func", kernel))
    params = tuple(a.arg for a in fn.args.args)
    written: set[str] = set()
    accumulated: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name):
            read.add(node.value.id)
        if isinstance(node, ast.Assign):
            for target in node.targets:
                written |= _subscripted(target)
        elif isinstance(node, ast.AnnAssign):
            written |= _subscripted(node.target)
        elif isinstance(node, ast.AugAssign):
            written |= _subscripted(node.target)
            accumulated |= _subscripted(node.target)
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name):
            if _is_atomic(node.func):
                written.add(node.args[0].id)
                accumulated.add(node.args[0].id)
            elif _called_name(node.func) in STORES_TO_FIRST_ARGUMENT:
                written.add(node.args[0].id)
    names = set(params)
    accumulated |= written & read
    return ArgumentUse(params, frozenset(written & names), frozenset(accumulated & names))


def _function_node(pyfunc) -> ast.FunctionDef:
    source = textwrap.dedent(inspect.getsource(pyfunc))
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == pyfunc.__name__:
            return node
    raise ValueError(f"cannot find the source of kernel '{pyfunc.__name__}'")


def _subscripted(target: ast.AST) -> set[str]:
    """``{"out"}`` for ``out[i]`` / ``out[i, j]``, every such name in a tuple target (``a[i], b[i] = ...``)."""
    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
        return {target.value.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*map(_subscripted, target.elts))
    return set()


def _is_atomic(func: ast.AST) -> bool:
    """``cuda.atomic.add`` (any ``<something>.atomic.<op>``) or ``atomic.add`` after
    ``from numba.cuda import atomic``."""
    if not isinstance(func, ast.Attribute):
        return False
    owner = func.value
    return (isinstance(owner, ast.Attribute) and owner.attr == "atomic") or (
        isinstance(owner, ast.Name) and owner.id == "atomic"
    )


def _called_name(func: ast.AST) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
