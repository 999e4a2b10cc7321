"""A function's Python text as the record reads it: its syntax tree and where it lives; for a function with no
text (made by ``exec`` of a string, read from stdin) the Python rebuilt from numba's typed IR, registered as a
file of its own so that everything after this reads it like any other."""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
import types
from dataclasses import dataclass

from . import closures


class NoSource(Exception):
    """A function whose Python source cannot be read (made by exec/eval, a lambda, a builtin)."""


@dataclass(frozen=True)
class FunctionSource:
    tree: ast.FunctionDef  # the function's syntax tree, positions relative to ``lines``
    filename: str
    lines: list            # the dedented function source, one entry per line
    first_line: int        # the file's line of ``lines[0]``
    indent: int            # columns removed by dedent


def function_source(pyfunc) -> FunctionSource:
    """The text and syntax tree of ``pyfunc``; ``NoSource`` where there is no text to read."""
    try:
        lines, first = inspect.getsourcelines(pyfunc)
    except (OSError, TypeError) as e:
        raise NoSource(f"'{getattr(pyfunc, '__name__', pyfunc)}' has no Python source file (a function made by "
                       "exec() or eval() of a string, or a builtin): translate reads a kernel's source") from e
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    tree = ast.parse(dedented)
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef)), None)
    if fn is None:
        raise NoSource(f"'{pyfunc.__name__}' is not a def (a lambda?): translate reads a kernel's source; "
                       "write it with def")
    filename = inspect.getsourcefile(pyfunc) or "<unknown>"
    return FunctionSource(_AnnotationsDropped().visit(fn), filename, dedented.splitlines(), first, indent)


class _AnnotationsDropped(ast.NodeTransformer):
    """``x: T = v`` as ``x = v``: Python does not evaluate a local's annotation, and numba ignores it."""

    def visit_AnnAssign(self, node):
        if node.value is None:
            return node
        return ast.copy_location(ast.Assign([node.target], node.value), node)


#: the functions rebuilt so far, by (code object, argument types, return type)
_rebuilt: dict[tuple, types.FunctionType] = {}


def rebuilt_function(pyfunc, argtypes: tuple, return_type=None) -> types.FunctionType:
    """A function with no source text (made by ``exec`` of a string, read from stdin) as one that has: its Python
    rebuilt from numba's typed IR for ``argtypes`` (``decompile``), compiled under the file name ``<name, rebuilt
    from numba's IR>`` (registered in ``linecache``, as IPython registers a cell) with the same globals and closure
    values. Raises ``NoSource`` where numba's IR holds what the rebuilt text can only run in the simulator (a
    function made inside the kernel), numba's error if it rejects the function."""
    from .compile import CodeRegistry, compile_function, tagged_locations
    from .decompile import INLINED, MAKE_FUNCTION, DecompileError
    from .facts import DeviceFacts, FunctionFacts

    key = (pyfunc.__code__, tuple(argtypes), return_type)
    found = _rebuilt.get(key)
    if found is not None:
        return found
    name = getattr(pyfunc, "__qualname__", pyfunc.__name__)
    if any(isinstance(c, types.CodeType) for c in pyfunc.__code__.co_consts):
        raise NoSource(f"'{name}' has no Python source file, and it defines a function inside it: numba inlines "
                       "that function, and the Python rebuilt from numba's IR has no names of its own for it; "
                       "define the kernel in a file")
    registry = CodeRegistry()
    with tagged_locations(registry):
        cres = compile_function(pyfunc, tuple(argtypes), return_type)
    facts = FunctionFacts("kernel" if return_type is None else "device", cres, registry, DeviceFacts(registry))
    try:
        facts.collect()
    except DecompileError as e:
        raise NoSource(f"'{name}' has no Python source file, and numba's IR of it has no Python equivalent to "
                       f"translate ({e})") from e
    text = facts.python["text"]
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
