"""The kernel's comments in its C: each Python ``#`` comment becomes a ``//`` comment next to the C of the line it
annotates (found by tokenizing the function's source, so a ``#`` inside a string is no comment).

- a comment on a line of its own goes before the C of the next statement, at that statement's indentation;
- a comment after code goes at the end of the C line of that statement (a compound statement's: its header line,
  ``for (...) {  // ...``); one after ``else:`` goes first in the else block;
- comments in a branch the translator prunes (a compile-time condition) go with it;
- tool directives (``# noqa``, ``# type: ignore``, ``# pragma: no cover``, ``# fmt: off``) mean nothing in C and
  are left out.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass

DIRECTIVE = re.compile(r"^(noqa\b|type:|pragma:|fmt:|pylint:|ruff:|isort:)")


@dataclass(frozen=True)
class Comment:
    line: int        # in the function's source (1 = its first line)
    text: str        # without the '#'
    own_line: bool   # nothing but blanks before it


def collect(lines: list[str]) -> dict[int, list[Comment]]:
    """The comments of a function's source lines, by line."""
    out: dict[int, list[Comment]] = {}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return out
    for tok in tokens:
        if tok.type != tokenize.COMMENT:
            continue
        text = tok.string[1:].strip()
        if not text or DIRECTIVE.match(text):
            continue
        own = tok.line[:tok.start[1]].strip() == ""
        out.setdefault(tok.start[0], []).append(Comment(tok.start[0], c_text(text), own))
    return out


def c_text(text: str) -> str:
    """Comment text that stays one ``//`` comment in C (a trailing backslash would continue it on the next line)."""
    return text.rstrip("\\").rstrip()


class Comments:
    """The comments of one function, handed out once each as the statements are translated."""

    def __init__(self, lines: list[str]):
        self.by_line = collect(lines)
        self.said: set[int] = set()

    def before(self, line: int) -> list[str]:
        """The comments before source line ``line`` not yet placed (own lines, and those after ``else:``)."""
        out = []
        for ln in sorted(n for n in self.by_line if n < line and n not in self.said):
            self.said.add(ln)
            out += [c.text for c in self.by_line[ln]]
        return out

    def trailing(self, first: int, last: int) -> str:
        """`` // ...`` for the comments after code on lines ``first``..``last`` (a statement's), else ""."""
        texts = []
        for ln in range(first, last + 1):
            if ln in self.by_line and ln not in self.said and not self.by_line[ln][0].own_line:
                self.said.add(ln)
                texts += [c.text for c in self.by_line[ln]]
        return "  // " + "; ".join(texts) if texts else ""

    def drop(self, first: int, last: int) -> None:
        """The comments of lines ``first``..``last`` (code the C leaves out) are not placed."""
        self.said.update(n for n in self.by_line if first <= n <= last)
