"""Python source as the prompt carries it: code only, fenced as data.

A kernel file may come from anyone, and its comments and docstrings are prose a model might take for
instructions ("ignore the rules above and ..."). ``code_only`` removes them, and every statement that is a bare
string, with Python's own tokenizer, keeping the layout of the rest; ``fenced`` wraps text in a Markdown fence
longer than any run of backticks inside it, so nothing in the text can close the fence early.
"""

from __future__ import annotations

import ast
import io
import textwrap
import tokenize
from typing import Any

_SKIPPED = (tokenize.NL, tokenize.COMMENT)


def code_only(source: str) -> str:
    """``source`` without comments, docstrings or other bare-string statements (a body left empty gets ``pass``)."""
    source = textwrap.dedent(source)
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return _unparsed(source)
    lines = source.splitlines()
    edits: list[tuple[tuple[int, int], tuple[int, int], str]] = []  # (start, end, replacement) by (row, col)
    for i, tok in enumerate(tokens):
        if tok.type == tokenize.COMMENT:
            edits.append((tok.start, (tok.start[0], len(lines[tok.start[0] - 1])), ""))
        elif tok.type == tokenize.STRING and _starts_statement(tokens, i):
            j = i
            while tokens[j + 1].type == tokenize.STRING:
                j += 1
            after = _next_significant(tokens, j)
            if tokens[after].type not in (tokenize.NEWLINE, tokenize.ENDMARKER):
                continue  # a string that begins an expression, not a statement of its own
            alone = tokens[_previous_significant(tokens, i)].type == tokenize.INDENT and \
                tokens[_next_significant(tokens, after)].type in (tokenize.DEDENT, tokenize.ENDMARKER)
            edits.append((tok.start, tokens[j].end, "pass" if alone else ""))
    for (srow, scol), (erow, ecol), text in sorted(edits, reverse=True):
        lines[srow - 1] = lines[srow - 1][:scol] + text + lines[erow - 1][ecol:]
        lines[srow:erow] = [""] * (erow - srow)  # the line count stays, so earlier positions stay right
    original = source.splitlines()
    kept: list[str] = []
    for line, before in zip(lines, original):
        if line.strip() or (not before.strip() and kept and kept[-1] and not kept[-1].endswith(":")):
            kept.append(line.rstrip())
    result = "\n".join(kept).strip("\n") + "\n"
    try:
        ast.parse(result)
    except SyntaxError:
        return _unparsed(source)
    return result


def fenced(text: str, language: str = "") -> str:
    """``text`` in a Markdown code fence that nothing inside it can close."""
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text.strip(chr(10))}\n{fence}"


def _starts_statement(tokens: list[tokenize.TokenInfo], i: int) -> bool:
    k = _previous_significant(tokens, i)
    return k < 0 or tokens[k].type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT) or \
        (tokens[k].type == tokenize.OP and tokens[k].string == ";")


def _previous_significant(tokens: list[tokenize.TokenInfo], i: int) -> int:
    k = i - 1
    while k >= 0 and tokens[k].type in _SKIPPED:
        k -= 1
    return k


def _next_significant(tokens: list[tokenize.TokenInfo], i: int) -> int:
    k = i + 1
    while k < len(tokens) - 1 and tokens[k].type in _SKIPPED:
        k += 1
    return k


def _unparsed(source: str) -> str:
    """The fallback: the code re-written by ``ast`` (which keeps no comments), bare strings removed."""
    tree = ast.parse(source)
    node: Any
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            kept = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                            and isinstance(s.value.value, str))]
            node.body = kept or [ast.Pass()]
    return ast.unparse(tree) + "\n"
