"""``TranslationError``: a located, readable error (model: Triton's compile errors).

Every construct the translator does not support raises one, pointing at ``file:line:col`` with the source line,
a caret under the construct and what is supported instead. The translator never emits C for a construct it
cannot translate faithfully.
"""

from __future__ import annotations

from typing import Any


class TranslationError(Exception):
    def __init__(self, message: str, *, filename: str = "<unknown>", line: int = 0, col: int = 0,
                 source_line: str = "", width: int = 1, hint: str = ""):
        self.message = message
        self.filename = filename
        self.line = line
        self.col = col
        self.source_line = source_line
        self.width = max(1, width)
        self.hint = hint
        super().__init__(self.format())

    def format(self) -> str:
        head = f"{self.filename}:{self.line}:{self.col + 1}: error: {self.message}"
        parts = [head]
        if self.source_line:
            text = self.source_line.rstrip("\n")
            parts.append("    " + text)
            parts.append("    " + " " * self.col + "^" + "~" * (self.width - 1))
        if self.hint:
            parts.append(f"supported instead: {self.hint}")
        return "\n".join(parts)


class CompileError(TranslationError):
    """NVRTC rejected the generated file (never written)."""


class SourceInfo:
    """A kernel's source text with its file and first line, to locate AST nodes in the original file."""

    def __init__(self, filename: str, lines: list[str], first_line: int, indent: int):
        self.filename = filename
        self.lines = lines          # the dedented function source, one entry per line
        self.first_line = first_line
        self.indent = indent        # columns removed by dedent

    def error(self, node: Any, message: str, hint: str = "") -> TranslationError:
        """A located error at ``node`` (any syntax node with a position; None or one without: the function)."""
        if node is None or not hasattr(node, "lineno"):
            return TranslationError(message, filename=self.filename, line=self.first_line, hint=hint)
        lineno = node.lineno
        col = node.col_offset
        end_col = getattr(node, "end_col_offset", None)
        width = (end_col - col) if (end_col is not None and getattr(node, "end_lineno", lineno) == lineno) else 1
        src = self.lines[lineno - 1] if 0 < lineno <= len(self.lines) else ""
        return TranslationError(
            message, filename=self.filename, line=self.first_line + lineno - 1, col=col + self.indent,
            source_line=" " * self.indent + src, width=width, hint=hint,
        )


class UnknownKernel(KeyError):
    """A bare kernel name that neither the project nor numbakern's library declares (the message names the closest
    ones). A ``KeyError``, as ``numbakern.registry.get`` raises for an unknown name."""

    def __str__(self) -> str:  # KeyError's own str() quotes its message
        return self.args[0] if self.args else ""
