"""A C/C++ lexer for model-written CUDA: the translation phases first, then tokens, as a compiler reads them.

Phase 1 replaces trigraphs (``??=`` is ``#``) and phase 2 splices lines (a backslash before a newline joins the
lines, also inside identifiers, numbers and comments); phase 3 splits the result into comments, preprocessing
directives and tokens: identifiers, pp-numbers (with C++14 digit separators, ``1'0``), string and character
literals (with their ``u8``/``u``/``U``/``L`` and ``R`` raw prefixes), and punctuators, where digraphs (``<%``
``%>`` ``<:`` ``:>`` ``%:`` ``%:%:``) and the alternative tokens (``and``, ``bitor``, ``not_eq``, ...) get their
primary spelling. So ``%:include``, ``??=define`` and ``#\\<newline>include`` are all a ``#include`` directive
here, as they are to the compiler.

Every token keeps the physical line and column where it starts, for messages. The lexer accepts only ASCII outside
comments (an identifier with a Cyrillic ``а`` is not ``a``; a universal character name ``\\u0061`` is refused), so
what it reads cannot be read differently by another tool. It decides nothing about what is allowed: that is
``translate.llm.gate``. Linear time, no regular expressions over the whole text.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

TRIGRAPHS = {"=": "#", "/": "\\", "'": "^", "(": "[", ")": "]", "!": "|", "<": "{", ">": "}", "-": "~"}

#: digraphs and %:%: -> their primary spelling
DIGRAPHS = {"<%": "{", "%>": "}", "<:": "[", ":>": "]", "%:": "#", "%:%:": "##"}

#: C++ alternative tokens: identifiers to the lexer's eye, operators to the compiler
ALTERNATIVE_TOKENS = {
    "and": "&&", "and_eq": "&=", "bitand": "&", "bitor": "|", "compl": "~", "not": "!", "not_eq": "!=",
    "or": "||", "or_eq": "|=", "xor": "^", "xor_eq": "^=",
}

#: punctuators by length, longest first (digraphs included)
PUNCTUATORS = (
    ("%:%:",),
    ("...", "<<=", ">>=", "->*"),  # no "<=>": C++17, which NVRTC is given, reads "<=" ">"
    ("::", "##", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=", "/=", "%=",
     "&=", "|=", "^=", ".*", "<%", "%>", "<:", ":>", "%:"),
    tuple("{}[]()<>;:,.?+-*/%^&|~!=#"),
)

ENCODING_PREFIXES = ("u8", "u", "U", "L")


class LexError(ValueError):
    """The text cannot be read as C++ tokens; ``line`` is the physical line (1-based)."""

    def __init__(self, message: str, line: int):
        super().__init__(f"line {line}: {message}")
        self.message, self.line = message, line


@dataclass(frozen=True)
class Token:
    kind: str  # "ident" | "number" | "string" | "char" | "punct" | "comment" | "directive"
    text: str  # canonical spelling: digraphs and alternative tokens as their primary spelling
    spelling: str  # as written, after phases 1 and 2 (what a message quotes)
    line: int  # physical line where the token starts (1-based)
    col: int  # physical column where it starts (0-based)
    end_line: int  # physical line of its last character
    logical_line: int  # index of the logical line (after splicing) it starts on
    start: int = 0  # offsets in the text after phases 1 and 2 (``Logical.text``)
    end: int = 0
    parts: tuple[Token, ...] = field(default=())  # a directive's tokens, '#' included

    def __str__(self) -> str:
        return self.spelling


@dataclass
class Logical:
    """The text after phases 1 and 2, and where each of its characters came from."""

    text: str
    line: list[int]  # physical line of each character (1-based)
    col: list[int]  # physical column of each character
    physical: list[str]  # the physical lines, newline-free
    spliced: bool = False  # a backslash-newline was removed somewhere
    trigraphs: bool = False  # a trigraph was replaced somewhere


def translation_phases(source: str) -> Logical:
    """Phases 1 and 2: newlines made ``\\n`` (``\\r\\n`` and a lone ``\\r`` alike), trigraphs replaced, spliced
    lines joined. A backslash, spaces and then a newline also splice (GCC's reading, the more revealing one)."""
    text = source.replace("\r\n", "\n").replace("\r", "\n")
    physical = text.split("\n")
    chars: list[str] = []
    lines: list[int] = []
    cols: list[int] = []
    out = Logical("", lines, cols, physical)
    line, col, i, n = 1, 0, 0, len(text)
    while i < n:
        c, width = text[i], 1
        if c == "?" and text.startswith("??", i) and i + 2 < n and text[i + 2] in TRIGRAPHS:
            c, width = TRIGRAPHS[text[i + 2]], 3
            out.trigraphs = True
        if c == "\\":
            j = i + width
            while j < n and text[j] in " \t":
                j += 1
            if j < n and text[j] == "\n":  # a line splice: drop it, continue on the next physical line
                out.spliced = True
                i, line, col = j + 1, line + 1, 0
                continue
        chars.append(c)
        lines.append(line)
        cols.append(col)
        if c == "\n":
            line, col = line + 1, 0
        else:
            col += width
        i += width
    out.text = "".join(chars)
    return out


def tokenize(source: str) -> list[Token]:
    """Comments, directives (one token each, with their parts) and tokens of ``source``, in order."""
    return _Lexer(translation_phases(source)).run()


def lex(source: str) -> tuple[Logical, list[Token]]:
    """``source`` after phases 1 and 2, and its tokens."""
    logical = translation_phases(source)
    return logical, _Lexer(logical).run()


class _Lexer:
    def __init__(self, logical: Logical):
        self.src = logical
        self.text = logical.text
        self.n = len(self.text)
        self.logical_line = 0
        self.line_has_token = False

    def error(self, message: str, pos: int) -> LexError:
        pos = min(pos, self.n - 1)
        return LexError(message, self.src.line[pos] if pos >= 0 else 1)

    def token(self, kind: str, start: int, end: int, text: str | None = None) -> Token:
        spelling = self.text[start:end]
        return Token(kind, spelling if text is None else text, spelling, self.src.line[start], self.src.col[start],
                     self.src.line[end - 1], self.logical_line, start, end)

    def run(self) -> list[Token]:
        out: list[Token] = []
        directive: list[Token] | None = None
        i = 0
        while i < self.n:
            c = self.text[i]
            if c == "\n":
                if directive is not None:
                    out.append(self._directive(directive))
                    directive = None
                self.logical_line += 1
                self.line_has_token = False
                i += 1
                continue
            if c in " \t\f\v":
                i += 1
                continue
            if self.text.startswith("//", i):
                end = self.text.find("\n", i)
                end = self.n if end < 0 else end
                if directive is None:  # inside a directive a comment is whitespace of the directive
                    out.append(self.token("comment", i, end, self.text[i + 2:end]))
                i = end
                continue
            if self.text.startswith("/*", i):
                end = self.text.find("*/", i + 2)
                if end < 0:
                    raise self.error("a /* comment is never closed", i)
                if directive is None:  # a comment is one space: its newlines do not end the logical line
                    out.append(self.token("comment", i, end + 2, self.text[i + 2:end]))
                i = end + 2
                continue
            tok, i = self._next(i)
            if directive is None and not self.line_has_token and tok.text == "#":
                directive = [tok]
            elif directive is not None:
                directive.append(tok)
            else:
                out.append(tok)
            self.line_has_token = True
        if directive is not None:
            out.append(self._directive(directive))
        return out

    def _directive(self, parts: list[Token]) -> Token:
        first, last = parts[0], parts[-1]
        spelling = " ".join(p.spelling for p in parts)
        return Token("directive", " ".join(p.text for p in parts), spelling, first.line, first.col, last.end_line,
                     first.logical_line, first.start, last.end, tuple(parts))

    def _next(self, i: int) -> tuple[Token, int]:
        text, c = self.text, self.text[i]
        if c.isascii() and (c.isalpha() or c == "_"):
            j = i + 1
            while j < self.n and text[j].isascii() and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            if j < self.n and text[j] in "\"'" and _literal_prefix(word, text[j]):
                return self._literal(i, j)
            if word in ALTERNATIVE_TOKENS:
                return self.token("punct", i, j, ALTERNATIVE_TOKENS[word]), j
            return self.token("ident", i, j), j
        if c.isdigit() or (c == "." and i + 1 < self.n and text[i + 1].isdigit()):
            return self._number(i)
        if c in "\"'":
            return self._literal(i, i)
        for group in PUNCTUATORS:
            for p in group:
                if text.startswith(p, i):
                    # "<::" is "<" "::" unless ":" or ">" follows (C++11 [lex.pptoken]), so "a<::b>" is not "a[:b>"
                    if p == "<:" and text.startswith("<::", i) and not text.startswith(("<:::", "<::>"), i):
                        p = "<"
                    return self.token("punct", i, i + len(p), DIGRAPHS.get(p, p)), i + len(p)
        if c == "\\":
            raise self.error("a stray backslash outside a literal (universal character names such as \\u0061 "
                             "are not accepted: write plain ASCII)", i)
        if not c.isascii():
            name = unicodedata.name(c, "unnamed")
            raise self.error(f"the non-ASCII character U+{ord(c):04X} ({name}) outside a comment: code must be "
                             "plain ASCII", i)
        raise self.error(f"the character {c!r} is not C++", i)

    def _number(self, i: int) -> tuple[Token, int]:
        """A pp-number: digits, letters, '_', '.', e+/e-/p+/p-, and ' followed by a digit or letter."""
        text, j = self.text, i + 1
        while j < self.n:
            c = text[j]
            if c in "+-" and text[j - 1] in "eEpP":
                j += 1
            elif c.isascii() and (c.isalnum() or c in "_."):
                j += 1
            elif (c == "'" and j + 1 < self.n and text[j + 1].isascii()
                  and (text[j + 1].isalnum() or text[j + 1] == "_")):
                j += 2
            else:
                break
        return self.token("number", i, j), j

    def _literal(self, start: int, quote_at: int) -> tuple[Token, int]:
        text = self.text
        prefix = text[start:quote_at]
        quote = text[quote_at]
        kind = "string" if quote == '"' else "char"
        if kind == "string" and prefix.endswith("R"):
            end = self._raw_string_end(quote_at)
        else:
            j = quote_at + 1
            while True:
                if j >= self.n or text[j] == "\n":
                    what = "string" if kind == "string" else "character"
                    raise self.error(f"a {what} literal is not closed on its line", start)
                if text[j] == "\\":
                    j += 2
                    continue
                if not text[j].isascii():
                    raise self.error(f"the non-ASCII character U+{ord(text[j]):04X} in a literal: code must be "
                                     "plain ASCII", j)
                if text[j] == quote:
                    break
                j += 1
            end = j + 1
        while end < self.n and text[end].isascii() and (text[end].isalnum() or text[end] == "_"):
            end += 1  # a user-defined literal's suffix belongs to the token (the gate refuses it)
        return self.token(kind, start, end), end

    def _raw_string_end(self, quote_at: int) -> int:
        text = self.text
        open_paren = text.find("(", quote_at + 1, quote_at + 18)
        delimiter = text[quote_at + 1:open_paren] if open_paren >= 0 else None
        if delimiter is None or any(ch in delimiter for ch in ' ()\\\t\v\f\n"'):
            raise self.error("a raw string literal with a malformed delimiter", quote_at)
        close = text.find(")" + delimiter + '"', open_paren + 1)
        if close < 0:
            raise self.error("a raw string literal is never closed", quote_at)
        return close + len(delimiter) + 2


def _literal_prefix(word: str, quote: str) -> bool:
    if word in ENCODING_PREFIXES:
        return True
    return quote == '"' and word in ("R", "u8R", "uR", "UR", "LR")


def significant(tokens: list[Token]) -> list[Token]:
    """The tokens without comments."""
    return [t for t in tokens if t.kind != "comment"]
