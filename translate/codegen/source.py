"""A function's Python source as the translator reads it: its AST and where it lives (to locate errors)."""

from __future__ import annotations

import ast
import inspect
import textwrap

from ..errors import SourceInfo


class NoSource(Exception):
    """A function whose Python source cannot be read (made by exec/eval, a lambda, a builtin)."""


def parse_function(pyfunc) -> tuple[ast.FunctionDef, SourceInfo]:
    try:
        lines, first = inspect.getsourcelines(pyfunc)
    except (OSError, TypeError) as e:
        raise NoSource(f"'{getattr(pyfunc, '__name__', pyfunc)}' has no Python source file (a function made by "
                       "exec() or eval() of a string, or a builtin): translate reads a kernel's source") from e
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    tree = ast.parse(dedented)
    fn = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if fn is None:
        raise NoSource(f"'{pyfunc.__name__}' is not a def (a lambda?): translate reads a kernel's source; "
                       "write it with def")
    filename = inspect.getsourcefile(pyfunc) or "<unknown>"
    return fn, SourceInfo(filename, dedented.splitlines(), first, indent)
