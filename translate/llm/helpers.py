"""The project's C helpers (``translate/codegen/helpers.py``) as the LLM backend sees them: which the model may
call, which names it must not redefine, and which ones a reply uses (so the emitter includes them)."""

from __future__ import annotations

import re

from ..codegen.helpers import HELPERS
from ..codegen.hopper import made_helper

#: helpers offered to the model, with the declaration shown in the prompt
OFFERED = {
    "nk_floordiv": "int64_t nk_floordiv(int64_t x, int64_t y)  // Python's x // y (also float/double overloads)",
    "nk_floormod": "int64_t nk_floormod(int64_t x, int64_t y)  // Python's x % y (also float/double overloads)",
    "nk_ipow": "int64_t nk_ipow(int64_t a, int64_t b)  // Python's integer a ** b",
}

#: a helper call, also with template arguments (``nk_async_wait<1>()``)
_DEFINED = re.compile(r"\b(nk_\w+)\s*(?:<[^<>()]*>\s*)?\(")


def function_to_helper() -> dict[str, str]:
    """Each C function name the helpers define -> the key of the helper that defines it."""
    out: dict[str, str] = {}
    for key, body in HELPERS.items():
        for name in _DEFINED.findall(body):
            out.setdefault(name, key)
        out.setdefault(key, key)
    return out


def offered() -> dict[str, str]:
    return {k: v for k, v in OFFERED.items() if k in HELPERS}


def reserved_names() -> frozenset[str]:
    return frozenset(function_to_helper())


#: the headers a type of the reply needs (a kernel whose 16-bit values only pass through names no helper call)
_TYPE_HEADERS = {"nk_fp16": re.compile(r"\b__half2?\b"), "nk_bf16": re.compile(r"\b__nv_bfloat162?\b"),
                 "nk_complex": re.compile(r"\bcu(?:Float|Double)Complex\b")}


def used_helpers(device_code: str) -> set[str]:
    """The helper keys whose functions ``device_code`` calls, and the headers of the CUDA types it names."""
    table = function_to_helper()  # (and the wgmma helpers, made per shape: no fixed table has them)
    calls = {table[name] if name in table else name for name in _DEFINED.findall(device_code)
             if name in table or made_helper(name)}
    return calls | {key for key, used in _TYPE_HEADERS.items() if key in HELPERS and used.search(device_code)}
