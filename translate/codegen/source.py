"""A function's Python source as the translator reads it: its AST and where it lives (to locate errors)."""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
import types

from numbakern.frontend import closures

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


#: the functions rebuilt so far, by (code object, argument types, return type)
_rebuilt: dict[tuple, types.FunctionType] = {}


def rebuilt_function(pyfunc, argtypes: tuple, return_type=None) -> types.FunctionType:
    """A function with no source text (made by ``exec`` of a string, read from stdin) as one that has: its Python
    rebuilt from numba's typed IR for ``argtypes`` (``numbakern.frontend.function_types.rebuilt_python``), compiled
    under the file name ``<name, rebuilt from numba's IR>`` (registered in ``linecache``, as IPython registers a
    cell) with the same globals and closure values. The translator then reads, types and locates errors in that
    text; verification compares the C with the original kernel. Raises ``NoSource`` where numba's IR holds what the
    rebuilt text can only run in the simulator (a function made inside the kernel), numba's error if it rejects
    the function."""
    from numbakern.frontend.decompile import INLINED, MAKE_FUNCTION, DecompileError
    from numbakern.frontend.function_types import rebuilt_python

    key = (pyfunc.__code__, tuple(argtypes), return_type)
    found = _rebuilt.get(key)
    if found is not None:
        return found
    name = getattr(pyfunc, "__qualname__", pyfunc.__name__)
    if any(isinstance(c, types.CodeType) for c in pyfunc.__code__.co_consts):
        raise NoSource(f"'{name}' has no Python source file, and it defines a function inside it: numba inlines "
                       "that function, and the Python rebuilt from numba's IR has no names of its own for it; "
                       "define the kernel in a file")
    try:
        text = rebuilt_python(pyfunc, tuple(argtypes), return_type)
    except DecompileError as e:
        raise NoSource(f"'{name}' has no Python source file, and numba's IR of it has no Python equivalent to "
                       f"translate ({e})") from e
    if MAKE_FUNCTION in text or INLINED in text:  # what only the simulator runs (``numbakern.sim.typed``)
        raise NoSource(f"'{name}' has no Python source file, and numba's IR of it makes a function, which the "
                       "rebuilt Python cannot translate: define the kernel in a file")
    text = _without_tail_returns(text)
    filename = f"<{name}, rebuilt from numba's IR>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace = dict(pyfunc.__globals__)
    namespace.update(closures.closure_values(pyfunc))
    exec(compile(text, filename, "exec"), namespace)
    defined = next(n.name for n in ast.parse(text).body if isinstance(n, ast.FunctionDef))
    made = namespace[defined]
    made.__qualname__ = name
    _rebuilt[key] = made
    return made


def _without_tail_returns(text: str) -> str:
    """``text`` (one function) without the bare ``return`` statements that end it anyway: numba's IR ends every
    path of a function that returns nothing with one, which a person leaves out."""
    fdef = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef))

    def trim(body: list) -> list:
        if body and isinstance(body[-1], ast.Return) and body[-1].value is None:
            body = body[:-1]
        if body and isinstance(body[-1], ast.If):
            last = body[-1]
            last.body = trim(last.body) or [ast.Pass()]
            last.orelse = trim(last.orelse)
        return body

    fdef.body = trim(fdef.body) or [ast.Pass()]
    return ast.unparse(fdef) + "\n"
