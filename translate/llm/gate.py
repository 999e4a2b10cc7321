"""The static gate on a model's reply: what may reach NVRTC and the generated file.

``check_reply(text, kernel_name=..., expected_signature=...)`` takes the reply's code (``translate.llm.reply``),
runs C's translation phases and splits it into tokens (``translate.llm.lexer``), then applies the rules of
``translate.llm.rules`` to the tokens: every identifier wherever it appears, every literal, every directive, the
shape of the top level (only ``__global__``/``__device__`` functions, ``__device__`` prototypes, constants and
``extern __shared__`` arrays) and the kernel's signature, token by token. The accepted code is written back from
the checked tokens (``translate.llm.render``), so NVRTC and the generated file get exactly what was checked.

The size is checked before anything reads the reply; every step is linear in its length. A pure function: no I/O,
no compiler. A rejection carries one reason, meant for the user and the model alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from .lexer import LexError, Logical, Token, lex, tokenize
from .render import RenderError, render
from .reply import Code, ReplyError, extract_code
from .rules import CAST_TYPES, CUDA_BUILTINS, INCLUDES, KEYWORDS, MAX_UNROLL, REFUSED, TYPE_NAMES, refusal, word_rule

#: the longest reply read at all, and the largest code accepted
MAX_REPLY_CHARS = 256 * 1024
MAX_CODE_BYTES = 32 * 1024
MAX_CODE_LINES = 800


class GateError(ValueError):
    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.message, self.line = message, line


@dataclass(frozen=True)
class GateResult:
    ok: bool
    code: str = ""  # the accepted device code, written back from its tokens; empty when rejected
    reason: str = ""  # why it was rejected; empty when accepted
    functions: tuple[str, ...] = field(default=())  # names of the functions it defines
    origin: tuple[str, ...] = field(default=())  # for each line of ``code``, where it was in the reply


def check_reply(
    text: str | None,
    *,
    kernel_name: str,
    expected_signature: str,
    allow_printf: bool = False,
    reserved_names: frozenset[str] | set[str] = frozenset(),
    max_bytes: int = MAX_CODE_BYTES,
    max_lines: int = MAX_CODE_LINES,
    max_reply_chars: int = MAX_REPLY_CHARS,
) -> GateResult:
    """Gate a model reply. ``expected_signature`` is the kernel's declaration up to its ``(...)``, as the emitter
    writes it (``__global__ void k(const float* x, int64_t x_shape0)``, maybe after ``template <int tw>``).
    ``reserved_names`` are the project's helper names, which the reply may call but not define."""
    code: Code | None = None
    try:
        if text is None or not text.strip():
            raise GateError("the reply is empty")
        if len(text) > max_reply_chars:
            raise GateError(refusal("size", f"the reply is {len(text)} characters, over the {max_reply_chars} limit"))
        try:
            code = extract_code(text)
        except ReplyError as e:
            raise GateError(str(e)) from None
        _check_size(code.text, max_bytes, max_lines)
        try:
            logical, tokens = lex(code.text)
        except LexError as e:
            raise GateError(e.message, e.line) from None
        checker = _Checker(logical, kernel_name, expected_signature, allow_printf, frozenset(reserved_names))
        kept, functions = checker.run(tokens)
        try:
            rendered = render(kept, logical)
        except RenderError as e:
            raise GateError(str(e)) from None
    except GateError as e:
        where = code.where(e.line) if code is not None and e.line else ""
        return GateResult(ok=False, reason=f"{where}: {e.message}" if where else e.message)
    return GateResult(ok=True, code=rendered.text, functions=tuple(functions),
                      origin=tuple(code.where(line) for line in rendered.origin))


def _check_size(code: str, max_bytes: int, max_lines: int) -> None:
    size = len(code.encode("utf-8", errors="replace"))
    if size > max_bytes:
        raise GateError(refusal("size", f"the code is {size} bytes, over the {max_bytes}-byte limit"))
    lines = code.count("\n") + 1
    if lines > max_lines:
        raise GateError(refusal("size", f"the code is {lines} lines, over the {max_lines}-line limit"))
    if "\x00" in code:
        raise GateError("the code contains a NUL byte")


# ---------------------------------------------------------------------------------------------------------------
# number literals (a C++ integer or floating literal, digit separators removed; no user-defined suffix)

_INTEGER = re.compile(r"(?:0[xX][0-9a-fA-F]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)(?:[uU](?:ll|LL|l|L)?|(?:ll|LL|l|L)[uU]?)?")
_FLOATING = re.compile(r"(?:(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+"
                       r"|0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFlL]?")


def is_number_literal(spelling: str) -> bool:
    text = spelling.replace("'", "")
    return bool(_INTEGER.fullmatch(text) or _FLOATING.fullmatch(text))


#: what a constant's initialiser may contain besides numbers and earlier constants
_INITIALISER_PUNCT = frozenset("+ - * / % << >> & | ^ ~ ! ( ) ? : < > <= >= == != && || { } ,".split())
_INITIALISER_WORDS = frozenset({"true", "false", "sizeof"}) | CAST_TYPES
_TEMPLATE_PARAM_TYPES = frozenset({"typename", "int", "unsigned", "bool", "int64_t", "int32_t", "uint32_t",
                                   "uint64_t", "size_t", "long"})
_CONSTANT_SPECIFIERS = frozenset({"constexpr", "const", "__constant__"})


@dataclass(frozen=True)
class _Item:
    kind: str  # "function" | "declaration"
    head: list[Token]  # a function's tokens before its body; a declaration's tokens, ';' included
    body: list[Token]


class _Checker:
    def __init__(self, logical: Logical, kernel_name: str, expected_signature: str, allow_printf: bool,
                 reserved: frozenset[str]):
        self.logical = logical
        self.kernel_name = kernel_name
        self.expected = [t.text for t in tokenize(expected_signature) if t.kind != "comment"]
        self.allow_printf = allow_printf
        self.reserved = reserved
        self.constants: set[str] = set()

    def run(self, tokens: list[Token]) -> tuple[list[Token], list[str]]:
        significant = [t for t in tokens if t.kind != "comment"]
        dropped = self._scan(significant)
        functions = self._structure([t for t in significant if id(t) not in dropped])
        return [t for t in tokens if id(t) not in dropped], functions

    def written(self, tok: Token) -> str:
        return " ".join(self.logical.text[tok.start:tok.end].split())

    # -- every token ---------------------------------------------------------------------------------------------

    def _scan(self, tokens: list[Token]) -> set[int]:
        """Literals, words, punctuation and directives, wherever they are; the ids of the tokens to drop."""
        dropped: set[int] = set()
        depth = 0
        for i, tok in enumerate(tokens):
            after = tokens[i + 1].text if i + 1 < len(tokens) else ""
            if tok.kind == "directive":
                if self._directive(tok, depth) == "drop":
                    dropped.add(id(tok))
            elif tok.kind == "punct":
                if tok.text == "{":
                    depth += 1
                elif tok.text == "}":
                    depth -= 1
                elif tok.text == "::":
                    raise GateError(refusal("scope", "'::'"), tok.line)
                elif tok.text in ("#", "##"):
                    raise GateError(refusal("paste", f"'{tok.spelling}'"), tok.line)
                elif tok.text == "<<" and after == "<":
                    raise GateError(refusal("launch", "a kernel launch (<<<...>>>)"), tok.line)
                elif tok.text == "[" and after == "[":
                    raise GateError(refusal("attribute", "an attribute ([[...]])"), tok.line)
            elif tok.kind == "string":
                if not (self.allow_printf and tok.spelling.startswith('"') and tok.spelling.endswith('"')):
                    raise GateError(refusal("string", f"the string literal {_short(tok.spelling, 40)}"), tok.line)
            elif tok.kind == "char":
                raise GateError(refusal("char", f"the character literal {_short(tok.spelling, 40)}"), tok.line)
            elif tok.kind == "number":
                if not is_number_literal(tok.spelling):
                    raise GateError(refusal("number", f"'{tok.spelling}' is not a C++ number literal"), tok.line)
            elif tok.kind == "ident":
                self._word(tokens, i, depth)
        return dropped

    def _directive(self, tok: Token, depth: int) -> str:
        names = [p.text for p in tok.parts]
        if names[1:2] == ["include"] and depth == 0:
            header = "".join(names[2:])
            if len(header) > 2 and header[0] == "<" and header[-1] == ">" and header[1:-1] in INCLUDES:
                return "drop"
        if names[1:3] == ["pragma", "unroll"] and depth > 0:
            if len(names) == 3:
                return "keep"
            if len(names) == 4 and tok.parts[3].kind == "number" and tok.parts[3].spelling.isdigit():
                if 1 <= int(tok.parts[3].spelling) <= MAX_UNROLL:
                    return "keep"
                raise GateError(refusal("unroll_count", f"'{_short(self.written(tok), 60)}'"), tok.line)
        raise GateError(refusal("directive", f"the preprocessor line '{_short(self.written(tok), 60)}'"), tok.line)

    def _word(self, tokens: list[Token], i: int, depth: int) -> None:
        tok = tokens[i]
        word = tok.text
        if word == "printf" and self.allow_printf:
            return
        if word == "extern":
            if not _extern_shared(tokens, i):
                raise GateError(refusal("extern", "'extern' (other than `extern __shared__ T name[];`)"), tok.line)
            return
        if word == "static" and depth > 0:
            raise GateError(refusal("static", "'static' inside a function"), tok.line)
        if word == "template" and depth > 0:
            raise GateError(refusal("template", "'template' inside a function"), tok.line)
        rule = word_rule(word)
        if rule is not None and rule.verdict == REFUSED:
            raise GateError(refusal(rule.key, f"'{word}'"), tok.line)

    # -- the top level -------------------------------------------------------------------------------------------

    def _structure(self, tokens: list[Token]) -> list[str]:
        functions: list[str] = []
        kernels: list[tuple[str, list[Token]]] = []
        for item in _items(tokens):
            if item.kind == "function":
                name, is_kernel = self._function(item.head)
                functions.append(name)
                if is_kernel:
                    kernels.append((name, item.head))
            else:
                self._declaration(item.head)
        self._kernel(kernels)
        return functions

    def _function(self, head: list[Token]) -> tuple[str, bool]:
        line = head[0].line
        start = self._template_header(head, line) if head[0].text == "template" else 0
        open_at = _matching_open(head)
        if open_at is None or open_at <= start or head[open_at - 1].kind != "ident":
            raise GateError(refusal("top_level", f"a block at the top level that is not a function "
                                    f"({_short(_joined(head))} {{...}})"), line)
        name = head[open_at - 1].text
        prefix = head[start:open_at - 1]
        if any(t.text == "template" for t in prefix):
            raise GateError(refusal("template", "'template' here"), line)
        qualifiers = {t.text for t in prefix}
        if "__global__" in qualifiers:
            if name != self.kernel_name:
                raise GateError(f"the __global__ function is named '{name}', expected '{self.kernel_name}'", line)
            return name, True
        if "__device__" not in qualifiers:
            raise GateError(refusal("host", f"function '{name}' is neither __global__ nor __device__ (host code is "
                                    "not accepted)"), line)
        self._definable(name, line)
        return name, False

    def _template_header(self, prefix: list[Token], line: int) -> int:
        """Check ``template <typename T, int N>`` of a function; the index of the token after it."""
        if len(prefix) < 2 or prefix[1].text != "<":
            raise GateError(refusal("template", "an explicit instantiation or specialisation"), line)
        close = next((k for k in range(2, len(prefix)) if prefix[k].text == ">"), None)
        if close is None or close == 2:
            raise GateError(refusal("template", "an explicit specialisation (template <>)"), line)
        if "__global__" not in {t.text for t in prefix[close:]}:  # the kernel's header is checked as its signature
            for param in _split(prefix[2:close], ","):
                words = [t.text for t in param]
                if len(words) != 2 or words[0] not in _TEMPLATE_PARAM_TYPES or param[1].kind != "ident":
                    raise GateError(refusal("template", f"the template parameter '{' '.join(words)}'"), line)
        return close + 1

    def _declaration(self, tokens: list[Token]) -> None:
        body = tokens[:-1]  # without ';'
        if not body:
            return
        line = body[0].line
        words = [t.text for t in body]
        if words[0] == "extern":  # `extern __shared__ T name[];`, checked where the word was read
            return
        if words[0] == "template":
            raise GateError(refusal("template", "an explicit instantiation or a template declaration"), line)
        if "(" in words and _outside_brackets(body, "=") is None:
            if "__device__" in words and "__global__" not in words:
                self._definable(body[words.index("(") - 1].text, line)
                return
            raise GateError(refusal("top_level", f"a function declaration that is not __device__: "
                                    f"{_short(_joined(tokens))}"), line)
        self._constant(body, line)

    def _constant(self, body: list[Token], line: int) -> None:
        equals = _outside_brackets(body, "=")
        equals = len(body) if equals is None else equals
        left, right = body[:equals], body[equals + 1:]
        specifiers = {t.text for t in left} & _CONSTANT_SPECIFIERS
        if not specifiers:
            raise GateError(refusal("top_level", f"a variable that is not a constant: {_short(_joined(body))}"), line)
        if any(t.text == "," for t in left) or _outside_brackets(right, ",") is not None:
            raise GateError(f"declare one constant per declaration: {_short(_joined(body))}", line)
        dims_at = next((k for k, t in enumerate(left) if t.text == "["), len(left))
        if dims_at == 0 or left[dims_at - 1].kind != "ident":
            raise GateError(refusal("top_level", f"cannot read the constant's name in {_short(_joined(body))}"), line)
        name = left[dims_at - 1].text
        if any(t.kind != "ident" for t in left[:dims_at - 1]):
            raise GateError(refusal("top_level", f"the constant '{name}' must have a scalar type (or be an array "
                                    "of one)"), line)
        if not right and "__constant__" not in specifiers:
            raise GateError(f"the constant '{name}' needs an initialiser", line)
        self._initialiser(name, left[dims_at:], line, brackets=True)
        self._initialiser(name, right, line)
        self._definable(name, line)
        self.constants.add(name)

    def _initialiser(self, name: str, tokens: list[Token], line: int, brackets: bool = False) -> None:
        """Numbers, operators, braces and earlier constants only (``brackets``: an array's dimensions)."""
        punct = _INITIALISER_PUNCT | {"[", "]"} if brackets else _INITIALISER_PUNCT
        for tok in tokens:
            if tok.kind == "number" or (tok.kind == "punct" and tok.text in punct):
                continue
            if tok.kind == "ident" and (tok.text in self.constants or tok.text in _INITIALISER_WORDS):
                continue
            raise GateError(refusal("top_level", f"the initialiser of '{name}' uses '{tok.spelling}', which is "
                                    "neither a number, an operator nor a constant declared before it"), tok.line)

    def _definable(self, name: str, line: int) -> None:
        if name in self.reserved:
            raise GateError(f"'{name}' is a helper the project already defines; use it, or give your function "
                            "another name", line)
        if (name in KEYWORDS or name in TYPE_NAMES or name.endswith("_t") or name in CUDA_BUILTINS
                or name == self.kernel_name or name.startswith("launch_")):
            raise GateError(refusal("names", f"the name '{name}'"), line)

    def _kernel(self, kernels: list[tuple[str, list[Token]]]) -> None:
        expected = _signature_text(self.expected)
        if not kernels:
            raise GateError(f"the code has no __global__ function; expected: {expected}")
        if len(kernels) > 1:
            names = ", ".join(k[0] for k in kernels)
            raise GateError(f"the code has {len(kernels)} __global__ functions ({names}); write exactly one, "
                            f"'{self.kernel_name}', and make any others __device__ functions", kernels[1][1][0].line)
        _, head = kernels[0]
        got = [t.text for t in head]
        if got != self.expected:
            raise GateError(f"the kernel signature does not match the project's launcher.\n  expected: {expected}\n"
                            f"  got:      {_signature_text(got)}", head[0].line)


def _items(tokens: list[Token]) -> list[_Item]:
    """The top-level items: function definitions (head, body) and declarations (up to their ';')."""
    items: list[_Item] = []
    i, n = 0, len(tokens)
    while i < n:
        start, nest, assigned = i, 0, False  # assigned: an '=' outside parentheses (a default argument is inside)
        while True:
            if i >= n:
                raise GateError("the code ends inside a declaration (an unfinished declaration, or prose outside "
                                "the code block?)", tokens[start].line)
            t = tokens[i].text
            if t in ("(", "["):
                nest += 1
            elif t in (")", "]"):
                nest -= 1
                if nest < 0:
                    raise GateError(f"an unbalanced '{t}'", tokens[i].line)
            elif t == "=" and nest == 0:
                assigned = True
            elif t == "{" and nest == 0:
                end = _matching_brace(tokens, i)
                head = tokens[start:i]
                if assigned:  # a brace initialiser: the declaration goes on
                    i = end + 1
                    continue
                if head and head[-1].text == ")":
                    items.append(_Item("function", head, tokens[i + 1:end]))
                    i = end + 1
                    break
                raise GateError(refusal("top_level", f"a block at the top level ({_short(_joined(head))} {{...}})"),
                                tokens[start].line)
            elif t == "}" and nest == 0:
                raise GateError("an unbalanced '}'", tokens[i].line)
            elif t == ";" and nest == 0:
                items.append(_Item("declaration", tokens[start:i + 1], []))
                i += 1
                break
            i += 1
    return items


def _matching_brace(tokens: list[Token], open_at: int) -> int:
    depth = 0
    for k in range(open_at, len(tokens)):
        if tokens[k].text == "{":
            depth += 1
        elif tokens[k].text == "}":
            depth -= 1
            if depth == 0:
                return k
    raise GateError("the '{' here is never closed", tokens[open_at].line)


def _matching_open(head: list[Token]) -> int | None:
    if not head or head[-1].text != ")":
        return None
    depth = 0
    for k in range(len(head) - 1, -1, -1):
        if head[k].text == ")":
            depth += 1
        elif head[k].text == "(":
            depth -= 1
            if depth == 0:
                return k
    return None


def _extern_shared(tokens: list[Token], i: int) -> bool:
    """``extern __shared__ [__align__(N)] T... name [ ] ;`` starts at ``tokens[i]``."""
    texts = [t.text for t in tokens[i:i + 12]]
    if texts[1:2] != ["__shared__"]:
        return False
    k = 2
    if texts[k:k + 2] == ["__align__", "("]:
        if len(texts) < k + 4 or tokens[i + k + 2].kind != "number" or texts[k + 3] != ")":
            return False
        k += 4
    names = 0
    while k < len(texts) and tokens[i + k].kind == "ident":
        names, k = names + 1, k + 1
    return names >= 2 and texts[k:k + 3] == ["[", "]", ";"]


def _split(tokens: list[Token], sep: str) -> list[list[Token]]:
    groups: list[list[Token]] = [[]]
    for t in tokens:
        if t.text == sep:
            groups.append([])
        else:
            groups[-1].append(t)
    return groups


def _outside_brackets(tokens: list[Token], text: str) -> int | None:
    """The index of the first ``text`` token outside (), [] and {}, or None."""
    depth = 0
    for k, t in enumerate(tokens):
        if t.text in ("(", "[", "{"):
            depth += 1
        elif t.text in (")", "]", "}"):
            depth -= 1
        elif t.text == text and depth == 0:
            return k
    return None


def _joined(tokens: list[Token]) -> str:
    return " ".join(t.spelling for t in tokens)


def _signature_text(words: list[str]) -> str:
    """Tokens of a declaration as one readable line: ``__global__ void k(const float* x, int64_t n)``."""
    out = ""
    for w in words:
        if not out:
            out = w
        elif w in (",", ")", ">", "*", "&", "(") or out.endswith(("(", "<")):
            out += w
        elif w == "<":
            out += " <" if out.endswith("template") else "<"
        else:
            out += " " + w
    return out


def signature_text(signature: str) -> str:
    """A declaration in the gate's canonical spelling (what a signature mismatch message shows)."""
    return _signature_text([t.text for t in tokenize(signature) if t.kind != "comment"])


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
