"""Where a function's C goes: its lines at their depth, its namespace of C names, and whether a statement may be
emitted before the expression being written (the builder of Triton's CodeGenerator/semantic/builder split: it
knows nothing of Python)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ..cnames import Namespace, c_name
from ..errors import SourceInfo
from .cexpr import CExpr


class Emitter:
    def __init__(self, names: Namespace, file_locals: set[str], src: SourceInfo):
        self.names = names              # the function's C names (parameters, locals, temporaries)
        self.file_locals = file_locals  # every name claimed inside any function of the file (unit.local_names)
        self.src = src                  # to locate the refusal of a statement where none may go
        self.lines: list[str] = []
        self.depth = 1
        #: > 0 while an expression is written that C evaluates conditionally or repeatedly (an `and`/`or` operand,
        #: a branch of a conditional expression, a while test, an elif test): no statement may go before it then
        self.unsafe_hoist = 0
        #: > 0 while an index of a shared or local (C) array is written
        self.in_c_index = 0

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    @contextlib.contextmanager
    def nested(self) -> Iterator[None]:
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def temp(self, want: str) -> str:
        """A fresh C name for a generated temporary (``ph_stop``, ``a_new``)."""
        name = self.names.claim(want)
        self.file_locals.add(name)
        return name

    @contextlib.contextmanager
    def no_hoist(self) -> Iterator[None]:
        self.unsafe_hoist += 1
        try:
            yield
        finally:
            self.unsafe_hoist -= 1

    @contextlib.contextmanager
    def c_index(self) -> Iterator[None]:
        self.in_c_index += 1
        try:
            yield
        finally:
            self.in_c_index -= 1

    def require_hoist(self, node) -> None:
        """A located error if a statement cannot be emitted before the current expression."""
        if self.unsafe_hoist:
            raise self.src.error(node, "this call needs a C statement before the expression, but the expression "
                                 "is evaluated conditionally or repeatedly here",
                                 hint="assign its result to a variable on a line of its own first")

    def hoist(self, e: CExpr, want: str) -> CExpr:
        """``e`` evaluated once, now, into a new constant (for values C would otherwise evaluate twice or not at
        all)."""
        self.require_hoist(None)
        name = self.temp(want)
        self.emit(f"const {c_name(e.key or '')} {name} = {e.code};")
        return CExpr(name, e.key, e.nbt, nonneg=e.nonneg, deps=e.deps)
