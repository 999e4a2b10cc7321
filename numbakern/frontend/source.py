"""A function's own source, parsed with the positions Python records in its code object.

Facts about a kernel are keyed by the source span of each AST node (line, column, end line, end column), the
same spans ``code.co_positions()`` gives each bytecode instruction. So both sides, the helper process that types
the kernel and the simulator that rewrites it, must parse the very same text with file positions intact: the
text is read once, in the simulator's process, and travels with the request.
"""

from __future__ import annotations

import ast
import linecache
import os
from dataclasses import dataclass

#: the attribute of a function whose code was not compiled from its file's text (``numbakern.unroll``'s expansions
#: keep their original there): its ``def`` in the file is not what runs, so it has no source here
ROLLED_ATTR = "__numbakern_rolled__"


@dataclass(frozen=True)
class Source:
    """The text of one ``def`` (decorators included) and where it starts in its file."""

    filename: str
    first_line: int  # the file line of the segment's first line
    text: str

    def parse(self) -> ast.FunctionDef:
        """The function's ``def`` node, with line and column numbers of the file it came from."""
        lines = self.text.splitlines(keepends=True)
        indented = bool(lines) and lines[0][:1] in (" ", "\t")
        # Blank lines shift the line numbers; an indented (nested) def is parsed inside an `if 1:` placed on the
        # line before it, which keeps its columns as they are in the file.
        pad = self.first_line - 1 - (1 if indented else 0)
        head = "\n" * pad + ("if 1:\n" if indented else "")
        module = ast.parse(head + self.text, filename=self.filename)
        node = module.body[0].body[0] if indented else module.body[0]
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            raise ValueError(f"{self.filename}:{self.first_line} does not start a function definition")
        return node


def span(node: ast.AST) -> tuple[int, int, int, int]:
    return (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)


def node_key(node: ast.AST) -> str:
    """The key facts use for an AST node: its span and its class (several nodes can share one span)."""
    return "{}:{}:{}:{}:{}".format(*span(node), type(node).__name__)


def source_of(fn) -> Source | None:
    """The ``def`` of a Python function, read from its file (as tracebacks do); None where there is none."""
    if getattr(fn, ROLLED_ATTR, None) is not None:
        return None
    code = fn.__code__
    lines = linecache.getlines(code.co_filename, fn.__globals__)
    if not lines:
        return None
    tree = _parsed(code.co_filename, lines)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == code.co_name:
            start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            if start == code.co_firstlineno:
                return Source(code.co_filename, start, "".join(lines[start - 1 : node.end_lineno]))
    return None


_parse_cache: dict[str, tuple[tuple, ast.Module | None]] = {}


def _parsed(filename: str, lines: list[str]) -> ast.Module | None:
    stamp = (len(lines), hash(lines[0]) if lines else 0, hash(lines[-1]) if lines else 0, _mtime(filename))
    cached = _parse_cache.get(filename)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    try:
        tree = ast.parse("".join(lines), filename=filename)
    except SyntaxError:
        tree = None
    _parse_cache[filename] = (stamp, tree)
    return tree


def _mtime(filename: str) -> float:
    try:
        return os.stat(filename).st_mtime
    except OSError:
        return 0.0
