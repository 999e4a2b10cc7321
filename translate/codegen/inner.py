"""Functions defined inside a kernel or device function (``def sq(v): ...``, ``f = lambda v: ...``): numba inlines
them where they are called; the C gets a device function of each, as it gets one of each ``@cuda.jit(device=True)``
function, specialised per argument types.

What such a function reads of the enclosing function's parameters and locals (a closure, ``lambda v: v * scale``)
becomes leading parameters of the device function, passed at each call: Python reads a closure's variables when it
is called, so their values at the call are the ones it sees. An inner function keeps its own text, comments and line
numbers (errors name the kernel file's lines): as it stands in the kernel's file where it reads no such names, else
with them inserted as parameters (and passed on to the inner functions it calls), under a file name of its own
registered in ``linecache``; a lambda is written out as a one-line def."""

from __future__ import annotations

import ast
import copy
import linecache
import textwrap
from dataclasses import dataclass
from typing import Any

from numba import cuda

from numbakern.frontend import closures

from ..writes import function_def, lambda_as_def


@dataclass(frozen=True)
class InnerFunction:
    dispatcher: Any           # the function as a ``cuda.jit(device=True)`` device function
    free: tuple[str, ...]     # the enclosing function's names it reads: its leading parameters


def define(tr, node: ast.FunctionDef | ast.Assign) -> tuple[str, InnerFunction]:
    """The inner function a ``def`` (or ``name = lambda ...``) statement of ``tr``'s function defines."""
    fdef = node if isinstance(node, ast.FunctionDef) else lambda_as_def(node)
    args = fdef.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or args.defaults or fdef.decorator_list:
        raise tr.src.error(node, f"the inner function '{fdef.name}' takes its arguments by position only here, "
                           "without defaults or decorators", hint="def f(a, b): ...")
    own = {a.arg for a in args.args} | {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name)
                                        and isinstance(n.ctx, ast.Store)}
    enclosing = set(tr.ctx.params) | set(tr.local_c)
    called = {n.func.id: tr.inner[n.func.id] for n in ast.walk(fdef) if isinstance(n, ast.Call)
              and isinstance(n.func, ast.Name) and n.func.id in tr.inner and n.func.id not in own}
    free = tuple(sorted({n.id for n in ast.walk(fdef) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                         and n.id in enclosing and n.id not in own and n.id not in tr.inner}
                        | {name for f in called.values() for name in f.free}))  # (what the ones it calls read)
    namespace = dict(tr.ctx.pyfunc.__globals__)
    namespace.update(closures.closure_values(tr.ctx.pyfunc))
    namespace.update({name: f.dispatcher for name, f in tr.inner.items()})  # one inner function calls another
    if not free and isinstance(node, ast.FunctionDef):
        code = _own_text(tr, fdef)  # its own text, at its place in the kernel's file
    elif isinstance(node, ast.FunctionDef):
        code = _with_free(tr, fdef, free, called)
    else:  # a lambda: a def of one line
        params = ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in free] + list(args.args), vararg=None,
                               kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
        body = [_PassingFree(called).visit(copy.deepcopy(s)) for s in fdef.body]
        text = ast.unparse(ast.fix_missing_locations(function_def(fdef.name, params, body))) + "\n"
        code = _registered(tr, fdef.name, text)
    exec(code, namespace)
    made = namespace[fdef.name]
    made.__qualname__ = fdef.name
    made.__numbakern_inner_of__ = tr.ctx.pyfunc
    return fdef.name, InnerFunction(cuda.jit(device=True)(made), free)


def inner_of(pyfunc):
    """The function ``pyfunc`` was defined inside (``define``), else None."""
    return getattr(pyfunc, "__numbakern_inner_of__", None)


def call_node(node: ast.Call, inner: InnerFunction) -> ast.Call:
    """The call ``node`` with the enclosing function's names the inner function reads passed first."""
    free = [ast.copy_location(ast.Name(n, ast.Load()), node.func) for n in inner.free]
    return ast.copy_location(ast.Call(node.func, free + list(node.args), node.keywords), node)


class _PassingFree(ast.NodeTransformer):
    """Each call of an inner function with what it reads of the enclosing function passed first."""

    def __init__(self, called: dict):
        self.called = called

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id in self.called:
            return call_node(node, self.called[node.func.id])
        return node


def _with_free(tr, fdef: ast.FunctionDef, free: tuple, called: dict):
    """``fdef``'s own text, its comments and lines kept, with the enclosing function's names it reads (``free``)
    inserted as its first parameters, and passed first to the inner functions it calls that read some of their own
    (``called``)."""
    lines = tr.src.lines[fdef.lineno - 1:fdef.end_lineno]
    inserts = [(0, lines[0].index("(", fdef.col_offset) + 1, free)]  # (line, column, names): after "def name("
    for n in ast.walk(fdef):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in called \
                and called[n.func.id].free:
            line = (n.func.end_lineno or n.func.lineno) - fdef.lineno
            end = n.func.end_col_offset or n.func.col_offset
            inserts.append((line, lines[line].index("(", end) + 1, called[n.func.id].free))
    for line, col, names in sorted(inserts, reverse=True):
        text = lines[line]
        rest = text[col:].lstrip()
        sep = "" if rest.startswith(")") else ", "
        lines[line] = text[:col] + ", ".join(names) + sep + text[col:]
    # at the kernel's own line numbers, so that an error in it names the kernel file's line
    padding = "\n" * (tr.src.first_line + fdef.lineno - 2)
    return _registered(tr, fdef.name, padding + textwrap.dedent("\n".join(lines)) + "\n")


def _registered(tr, name: str, text: str):
    """``text`` compiled under a file name of its own, registered in ``linecache`` (where inspect reads it)."""
    filename = f"<{tr.ctx.name}.{name}, an inner function of {tr.ctx.name}, with its closure as parameters>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    return compile(text, filename, "exec")


def _own_text(tr, fdef: ast.FunctionDef):
    """``fdef``'s own lines of the kernel's file, compiled with the file's line numbers (numba's IR and inspect
    read them: numba's IR by line, inspect the text from the first one)."""
    text = textwrap.dedent("\n".join(tr.src.lines[fdef.lineno - 1:fdef.end_lineno])) + "\n"
    tree = ast.parse(text)
    ast.increment_lineno(tree, tr.src.first_line + fdef.lineno - 2)
    indent = tr.src.indent + fdef.col_offset  # (and the file's columns: numba's IR locations carry them)
    for n in ast.walk(tree):
        if isinstance(n, (ast.expr, ast.stmt, ast.arg, ast.keyword)):
            n.col_offset += indent
            n.end_col_offset = (n.end_col_offset or 0) + indent
    return compile(tree, tr.src.filename, "exec")
