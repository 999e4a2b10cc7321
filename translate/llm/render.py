"""Checked tokens back to C++ text: what reaches NVRTC and the generated file is rebuilt from the tokens the gate
checked, never the reply's own text, so the compiler cannot read anything the gate did not.

The layout stays the model's (a token starts the line, and has the indentation, it had in the reply), so the file
reads like the reply and its line numbers map back to the reply's. The spelling is canonical: no trigraphs,
digraphs, alternative tokens, line splices or digit separators. Comments are kept as text that cannot end early
or swallow the next line (no trailing backslash, no ``??``, no control or bidirectional-formatting characters).
``render`` checks its own output: lexed again, it must give the same tokens.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

from .lexer import Logical, Token, tokenize


class RenderError(ValueError):
    """The tokens could not be written back unchanged (a bug, never the reply's fault alone)."""


@dataclass(frozen=True)
class Rendered:
    text: str
    origin: tuple[int, ...]  # for each line of ``text``, the reply's physical line it came from


def render(tokens: list[Token], logical: Logical) -> Rendered:
    lines: list[str] = []
    origin: list[int] = []
    current: list[str] = []
    last_line = 0  # the physical line the current output line has reached
    prev: Token | None = None
    for tok in tokens:
        text = token_text(tok)
        if prev is None or tok.line > last_line:
            if current:
                lines.append("".join(current))
            if prev is not None and tok.line > last_line + 1:  # blank lines between (tidied to one below)
                lines.append("")
                origin.append(last_line + 1)
            current = [_indentation(logical.physical[tok.line - 1], tok.col)]
            origin.append(tok.line)
        else:
            current.append(_separator(prev, tok, logical.text))
        pieces = text.split("\n")
        current.append(pieces[0])
        for k, piece in enumerate(pieces[1:], start=1):  # a block comment over several lines
            lines.append("".join(current))
            current = [piece]
            origin.append(tok.line + k)
        last_line = max(tok.end_line, tok.line + len(pieces) - 1)
        prev = tok
    if current:
        lines.append("".join(current))
    out_lines, out_origin = _tidy(lines, origin)
    rendered = Rendered("\n".join(out_lines) + "\n", tuple(out_origin))
    _check_round_trip(tokens, rendered.text)
    return rendered


def token_text(tok: Token) -> str:
    if tok.kind == "comment":
        return _comment(tok)
    if tok.kind == "number":
        return tok.text.replace("'", "")
    if tok.kind == "string":
        return _string(tok.text)
    if tok.kind == "directive":
        return " ".join(token_text(p) for p in tok.parts).replace("# ", "#", 1)
    return tok.text


def _comment(tok: Token) -> str:
    body = "".join(ch for ch in tok.text if ch in "\t\n" or unicodedata.category(ch) not in _HIDDEN)
    while "??" in body:  # a trigraph in a comment can be a line splice to a compiler that reads trigraphs
        body = body.replace("??", "? ?")
    body = body.replace("__global__", "global")  # the emitter finds the kernel by its "__global__ void name("
    if tok.spelling.startswith("//"):
        return "//" + body.replace("\n", " ").rstrip(" \t\\")
    body = body.replace("*/", "* /").replace("/*", "/ *")
    return "/*" + body + "*/"


#: characters a comment loses: controls, formatting (bidirectional overrides), separators, surrogates, unassigned
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def _string(text: str) -> str:
    """A plain narrow string literal (the only kind the gate lets through) with every '?' escaped (idempotent)."""
    out, body, i = [], text[1:-1], 0
    while i < len(body):
        if body[i] == "\\":
            out.append(body[i:i + 2])
            i += 2
            continue
        out.append("\\?" if body[i] == "?" else body[i])
        i += 1
    return '"' + "".join(out) + '"'


def _indentation(physical_line: str, col: int) -> str:
    lead = physical_line[:col]
    return lead if lead.strip(" \t") == "" else " " * col


def _separator(prev: Token, tok: Token, text: str) -> str:
    gap = text[prev.end:tok.start]
    if gap and gap.strip(" \t") == "":
        return gap
    if gap:
        return " "
    # adjacent in the reply: keep them adjacent unless their new spellings would read as other tokens
    a, b = token_text(prev), token_text(tok)
    if (a, b) == (prev.spelling, tok.spelling):
        return ""
    try:
        apart = [token_text(t) for t in tokenize(a + b)] == [a, b]
    except ValueError:
        apart = False
    return "" if apart else " "


def _tidy(lines: list[str], origin: list[int]) -> tuple[list[str], list[int]]:
    """Trailing spaces removed, runs of blank lines made one, no blank lines at either end."""
    out: list[str] = []
    out_origin: list[int] = []
    for line, where in zip(lines, origin):
        line = line.rstrip()
        if not line and (not out or not out[-1]):
            continue
        out.append(line)
        out_origin.append(where)
    while out and not out[-1]:
        out.pop()
        out_origin.pop()
    return out, out_origin


def _check_round_trip(tokens: list[Token], text: str) -> None:
    want = [token_text(t) for t in tokens if t.kind != "comment"]
    got = [token_text(t) for t in tokenize(text) if t.kind != "comment"]
    if got != want:
        first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        raise RenderError(f"the code written back from the checked tokens reads differently at token {first}")
