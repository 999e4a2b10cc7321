"""The static gate on a model's reply: what may reach NVRTC and the generated file.

``check_reply(text, expected_signature=...)`` extracts the code block and accepts it only if, at the top level, it
holds nothing but ``__global__``/``__device__`` function definitions, constants (``constexpr``/``const``/
``__constant__`` variables and object-like ``#define``s) and includes from a small allowlist; no inline assembly,
no host API calls, no ``printf`` unless allowed, no kernel launches; below a size cap; with exactly one
``__global__`` function, whose signature matches the one the project's launcher calls.

It is a pure function: no I/O, no compiler. A rejection carries a reason meant for both the user and the model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: includes a reply may carry; the project's emitter already provides all of them, so they are dropped from the code
ALLOWED_INCLUDES = frozenset({"cuda_runtime.h", "stdint.h", "cstdint", "math.h", "cmath", "float.h", "cfloat"})

#: the largest reply code the gate accepts
MAX_CODE_BYTES = 32 * 1024
MAX_CODE_LINES = 800

#: identifiers that are never allowed in device code the project ships
_FORBIDDEN_CALLS = {
    "malloc": "dynamic memory allocation",
    "free": "dynamic memory allocation",
    "calloc": "dynamic memory allocation",
    "realloc": "dynamic memory allocation",
    "fopen": "file I/O",
    "fprintf": "file I/O",
    "fwrite": "file I/O",
    "system": "process control",
    "exit": "process control",
    "abort": "process control",
    "__trap": "a trap instruction",
    "__brkpt": "a breakpoint instruction",
    "main": "a host entry point",
}
_FORBIDDEN_WORDS = {
    "asm": "inline assembly",
    "__asm__": "inline assembly",
    "__asm": "inline assembly",
    "__host__": "host code (__host__)",
    "new": "dynamic allocation (new)",
    "delete": "dynamic allocation (delete)",
    "namespace": "a namespace (only functions and constants are accepted)",
    "class": "a class (only functions and constants are accepted)",
    "struct": "a struct (only functions and constants are accepted)",
    "union": "a union (only functions and constants are accepted)",
    "typedef": "a typedef (only functions and constants are accepted)",
    "using": "a using-declaration (only functions and constants are accepted)",
}

_FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+.-]*)[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.S | re.M)
_CODE_LANGS = {"", "cuda", "cu", "c", "cpp", "c++", "cxx", "h", "hpp", "cuh"}
_IDENT = re.compile(r"[A-Za-z_]\w*")
_HOST_API = re.compile(r"\b(cuda[A-Z]\w*|cu[A-Z]\w*|nvrtc\w*|std\s*::\s*\w+)\s*\(")


class GateError(ValueError):
    """A reply the gate refused; ``str(e)`` is the reason."""


@dataclass(frozen=True)
class GateResult:
    ok: bool
    code: str = ""  # the accepted device code (includes removed); empty when rejected
    reason: str = ""  # why it was rejected; empty when accepted
    functions: tuple[str, ...] = field(default=())  # names of the functions it defines


def check_reply(
    text: str | None,
    *,
    kernel_name: str,
    expected_signature: str,
    allow_printf: bool = False,
    reserved_names: frozenset[str] | set[str] = frozenset(),
    max_bytes: int = MAX_CODE_BYTES,
    max_lines: int = MAX_CODE_LINES,
) -> GateResult:
    """Gate a model reply. ``expected_signature`` is the kernel's declaration up to its ``(...)``, as the emitter
    writes it (e.g. ``__global__ void k(const float* x, int64_t x_shape0)``, maybe with a ``template<...>`` prefix).
    ``reserved_names`` are the project's helper names, which the reply must not redefine."""
    try:
        code = extract_code(text)
        code = _check_size(code, max_bytes, max_lines)
        stripped = strip_comments_and_strings(code)
        _check_words(stripped, allow_printf)
        items = _top_level_items(stripped)
        kept, functions = _check_items(code, items, kernel_name, expected_signature, reserved_names)
    except GateError as e:
        return GateResult(ok=False, reason=str(e))
    return GateResult(ok=True, code=kept, functions=tuple(functions))


# ---------------------------------------------------------------------------------------------------------------
# extraction


def extract_code(text: str | None) -> str:
    """The reply's code: its single fenced code block (or the one defining a ``__global__`` function when there are
    several), or the whole reply when it has no fence at all and looks like code."""
    if text is None or not text.strip():
        raise GateError("the reply is empty")
    blocks = [(lang.lower(), body) for lang, body in _FENCE.findall(text)]
    blocks = [(lang, body) for lang, body in blocks if lang in _CODE_LANGS]
    if not blocks:
        if "```" in text:
            raise GateError("the reply's code block is not closed (or not a C/CUDA block): end it with ```")
        if "__global__" in text and text.lstrip().startswith(("#", "__", "template", "extern", "static", "constexpr", "/")):
            return text.strip("\n") + "\n"
        raise GateError("the reply has no ```cuda code block")
    if len(blocks) > 1:
        with_kernel = [body for _, body in blocks if "__global__" in body]
        if len(with_kernel) != 1:
            raise GateError(
                f"the reply has {len(blocks)} code blocks; put all device code in one ```cuda block")
        return with_kernel[0]
    return blocks[0][1]


def strip_comments_and_strings(code: str) -> str:
    """``code`` with comments replaced by spaces and string/char literal contents blanked, newlines kept, so that
    positions and line numbers still match the original."""
    out = []
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if code.startswith("//", i):
            j = code.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif code.startswith("/*", i):
            j = code.find("*/", i + 2)
            if j < 0:
                raise GateError("a /* comment is not closed")
            j += 2
            out.append("".join(ch if ch == "\n" else " " for ch in code[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and code[j] != c:
                if code[j] == "\n":
                    raise GateError("a string or character literal is not closed")
                j += 2 if code[j] == "\\" else 1
            if j >= n:
                raise GateError("a string or character literal is not closed")
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


# ---------------------------------------------------------------------------------------------------------------
# checks


def _check_size(code: str, max_bytes: int, max_lines: int) -> str:
    size = len(code.encode("utf-8"))
    if size > max_bytes:
        raise GateError(f"the code is {size} bytes, over the {max_bytes}-byte limit")
    lines = code.count("\n") + 1
    if lines > max_lines:
        raise GateError(f"the code is {lines} lines, over the {max_lines}-line limit")
    if "\x00" in code:
        raise GateError("the code contains a NUL byte")
    return code


def _line_of(code: str, pos: int) -> int:
    return code.count("\n", 0, pos) + 1


def _check_words(stripped: str, allow_printf: bool) -> None:
    for m in _IDENT.finditer(stripped):
        word = m.group(0)
        line = _line_of(stripped, m.start())
        if word in _FORBIDDEN_WORDS:
            raise GateError(f"line {line}: {_FORBIDDEN_WORDS[word]} is not allowed ('{word}')")
        if word in _FORBIDDEN_CALLS and re.match(r"\s*\(", stripped[m.end():]):
            raise GateError(f"line {line}: {_FORBIDDEN_CALLS[word]} is not allowed ('{word}(')")
        if word == "printf" and not allow_printf:
            raise GateError(f"line {line}: printf is not allowed (no output was asked for)")
    m = _HOST_API.search(stripped)
    if m:
        raise GateError(f"line {_line_of(stripped, m.start())}: host/runtime API call '{m.group(1)}' is not allowed; "
                        "write device code only, the project's launcher does the host side")
    if "<<<" in stripped:
        raise GateError(f"line {_line_of(stripped, stripped.index('<<<'))}: kernel launches (<<<...>>>) are not "
                        "allowed; the project's launcher launches the kernel")


@dataclass(frozen=True)
class _Item:
    kind: str  # "pp" (preprocessor line), "decl" (ends with ';'), "func" (ends with a {...} body)
    start: int
    end: int
    head: str  # for func: the text before the body's '{'; for others: the whole item


def _top_level_items(stripped: str) -> list[_Item]:
    """Split comment-free code into top-level items: preprocessor lines, declarations and function definitions."""
    items: list[_Item] = []
    i, n = 0, len(stripped)
    while i < n:
        while i < n and stripped[i].isspace():
            i += 1
        if i >= n:
            break
        if stripped[i] == "#":
            j = i
            while True:  # a preprocessor line, with its backslash continuations
                k = stripped.find("\n", j)
                k = n if k < 0 else k
                if stripped[k - 1 : k] == "\\" and k < n:
                    j = k + 1
                    continue
                break
            items.append(_Item("pp", i, k, stripped[i:k]))
            i = k
            continue
        start, depth, paren, j = i, 0, 0, i
        while j < n:
            c = stripped[j]
            if c == "(":
                paren += 1
            elif c == ")":
                paren -= 1
            elif c == "{":
                if depth == 0 and paren == 0 and _is_function_head(stripped[start:j]):
                    end = _matching_brace(stripped, j)
                    items.append(_Item("func", start, end, stripped[start:j]))
                    j = end
                    break
                if depth == 0 and paren == 0 and "=" not in stripped[start:j]:
                    head = " ".join(stripped[start:j].split())
                    if head.startswith("extern"):
                        raise GateError(f"line {_line_of(stripped, start)}: extern blocks are not accepted; write "
                                        "plain __global__/__device__ functions (the project adds the linkage)")
                    raise GateError(f"line {_line_of(stripped, start)}: only __global__/__device__ functions and "
                                    f"constants are accepted at the top level, got a block: {_short(head)} {{...}}")
                depth += 1
            elif c == "}":
                depth -= 1
                if depth < 0:
                    raise GateError(f"line {_line_of(stripped, j)}: unbalanced '}}'")
            elif c == ";" and depth == 0 and paren == 0:
                items.append(_Item("decl", start, j + 1, stripped[start : j + 1]))
                j += 1
                break
            elif c == "#" and depth == 0 and stripped[:j].rstrip(" \t").endswith("\n"):
                raise GateError(f"line {_line_of(stripped, start)}: a declaration is not finished with ';'")
            j += 1
        else:
            raise GateError(f"line {_line_of(stripped, start)}: unexpected text at the end of the code "
                            f"(an unfinished declaration, or prose outside the code block?)")
        i = j
    return items


def _is_function_head(head: str) -> bool:
    return head.rstrip().endswith(")") or bool(re.search(r"\)\s*(const\s*)?$", head))


def _matching_brace(s: str, open_pos: int) -> int:
    depth = 0
    for j in range(open_pos, len(s)):
        if s[j] == "{":
            depth += 1
        elif s[j] == "}":
            depth -= 1
            if depth == 0:
                return j + 1
    raise GateError(f"line {_line_of(s, open_pos)}: the '{{' here is never closed")


_INCLUDE = re.compile(r"#\s*include\s*[<\"]([^>\"]+)[>\"]\s*$")
_DEFINE = re.compile(r"#\s*define\s+([A-Za-z_]\w*)(\(?)")
_CONST_DECL = re.compile(
    r"^(?:static\s+)?(?:(?:__device__\s+)?__constant__|constexpr|(?:__device__\s+)?const|static\s+constexpr)\b[^;{}]*=[^;]*;$",
    re.S,
)
_PROTOTYPE = re.compile(r"^(?:template\s*<[^>]*>\s*)?[^;{}=]*\b__device__\b[^;{}=]*\)\s*;$")
_DEFINE_BODY = re.compile(r"^[\w\s().+\-*/%<>&|^~!?:]*$")


def _check_items(code: str, items: list[_Item], kernel_name: str, expected_signature: str,
                 reserved: frozenset[str] | set[str]) -> tuple[str, list[str]]:
    drop: list[tuple[int, int]] = []
    functions: list[str] = []
    kernels: list[tuple[str, str, int]] = []
    for item in items:
        line = _line_of(code, item.start)
        original = " ".join(code[item.start:item.end].split())
        text = " ".join(item.head.split())
        if item.kind == "pp":
            text = original
            inc = _INCLUDE.match(text)
            if inc:
                if inc.group(1) not in ALLOWED_INCLUDES:
                    allowed = ", ".join(f"<{h}>" for h in sorted(ALLOWED_INCLUDES))
                    raise GateError(f"line {line}: #include <{inc.group(1)}> is not allowed; allowed: {allowed}")
                drop.append((item.start, item.end))
                continue
            if re.match(r"#\s*pragma\s+once\s*$", text):
                drop.append((item.start, item.end))
                continue
            define = _DEFINE.match(text)
            if define:
                if define.group(2):
                    raise GateError(f"line {line}: function-like macro '{define.group(1)}' is not allowed; "
                                    "write a __device__ function instead")
                body = text[define.end():]
                if not _DEFINE_BODY.match(body):
                    raise GateError(f"line {line}: #define {define.group(1)} must be a constant expression")
                _check_name(define.group(1), reserved, line)
                continue
            raise GateError(f"line {line}: preprocessor directive '{text.split()[0]}' is not allowed "
                            "(only allowlisted #include and constant #define)")
        if item.kind == "decl":
            if text == ";":
                continue
            if _PROTOTYPE.match(text):
                continue
            if not _CONST_DECL.match(text):
                raise GateError(f"line {line}: only __global__/__device__ functions and constants are accepted at "
                                f"the top level, got: {_short(original)}")
            name = _declared_name(text)
            if name:
                _check_name(name, reserved, line)
            continue
        # a function definition
        name = _function_name(item.head)
        quals = set(re.findall(r"\b(__global__|__device__|__host__)\b", item.head))
        if "__global__" in quals:
            kernels.append((name, item.head, line))
        elif "__device__" not in quals:
            raise GateError(f"line {line}: function '{name}' is neither __global__ nor __device__ "
                            "(host code is not accepted)")
        _check_name(name, reserved, line)
        functions.append(name)
    _check_kernel(kernels, kernel_name, expected_signature)
    kept = code
    for start, end in reversed(drop):
        kept = kept[:start] + kept[end:]
    kept = re.sub(r"\n{3,}", "\n\n", kept).strip("\n") + "\n"
    return kept, functions


def _check_name(name: str, reserved: frozenset[str] | set[str], line: int) -> None:
    if name in reserved:
        raise GateError(f"line {line}: '{name}' is a helper the project already defines; use it, or give your "
                        "function another name")


def _declared_name(decl: str) -> str | None:
    left = decl.split("=", 1)[0]
    left = re.sub(r"\[[^\]]*\]", "", left)
    names = _IDENT.findall(left)
    return names[-1] if names else None


def _function_name(head: str) -> str:
    head = re.sub(r"__launch_bounds__\s*\([^)]*\)", " ", head)
    m = re.search(r"([A-Za-z_]\w*)\s*\([^()]*(?:\([^()]*\)[^()]*)*\)\s*(?:const\s*)?$", head.strip())
    return m.group(1) if m else "?"


def _check_kernel(kernels: list[tuple[str, str, int]], kernel_name: str, expected: str) -> None:
    if not kernels:
        raise GateError(f"the code has no __global__ function; expected: {expected}")
    if len(kernels) > 1:
        names = ", ".join(k[0] for k in kernels)
        raise GateError(f"the code has {len(kernels)} __global__ functions ({names}); write exactly one, "
                        f"'{kernel_name}', and make any others __device__ functions")
    name, head, line = kernels[0]
    if name != kernel_name:
        raise GateError(f"line {line}: the __global__ function is named '{name}', expected '{kernel_name}'")
    got, want = normalize_signature(head), normalize_signature(expected)
    if got != want:
        raise GateError(f"line {line}: the kernel signature does not match the project's launcher.\n"
                        f"  expected: {want}\n  got:      {got}")


def normalize_signature(sig: str) -> str:
    """A declaration in a canonical spelling: no ``extern "C"``/``static``/``inline``/``__launch_bounds__``, single
    spaces, ``T* x`` pointer spacing, no spaces inside ``(``/``)``/``<``/``>`` or before ``,``."""
    s = strip_comments_and_strings(sig) if "/" in sig else sig
    s = re.sub(r'extern\s*"\s*C\s*"', " ", s)
    s = re.sub(r"__launch_bounds__\s*\([^)]*\)", " ", s)
    s = re.sub(r"\b(static|inline|__forceinline__|__noinline__)\b", " ", s)
    s = " ".join(s.split())
    s = re.sub(r"\s*\*\s*", "* ", s)
    s = re.sub(r"\s*([(),<>])\s*", r"\1", s)
    s = s.replace(",", ", ")
    s = re.sub(r">(?=\S)", "> ", s)
    s = re.sub(r"\* \)", "*)", s)
    return s.strip()


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
