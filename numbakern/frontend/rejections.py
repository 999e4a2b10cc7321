"""Numba's reason for rejecting a kernel, as the simulator reports it: a few lines, located at the failing
operation (helper process: the error's traceback holds numba's IR, tagged by ``compile.tagged_locations``)."""

from __future__ import annotations

import re
from typing import Any

from . import typer
from .compile import CodeRegistry


def describe_error(e: BaseException, registry: CodeRegistry) -> dict:
    filename, line, span = _location(e, registry)
    return {
        "kind": type(e).__name__,
        "reason": reason(str(e)),
        "filename": filename,
        "line": line,
        "span": span,
        "message": str(e),
    }


_NOISE = re.compile(r"^(Failed in .* pipeline|During:|File \"|<source elided>|There are \d+ candidate|\s*\^\s*$)")


def reason(message: str) -> str:
    """Numba's reason in a few lines: the first statement of the error and the specific error behind it."""
    lines = [ln.rstrip() for ln in message.splitlines()]
    kept: list[str] = []
    for ln in lines:
        text = ln.strip()
        if not text or _NOISE.match(text):
            if kept:
                break
            continue
        kept.append(text)
    for ln in lines:
        text = ln.strip()
        if text.startswith(">>> ") and text not in kept:
            kept.append(text)
            break
    for i, ln in enumerate(lines):
        if "raised a specific error" in ln and i + 1 < len(lines):
            specific = lines[i + 1].strip()
            if specific and specific not in kept:
                kept.append(specific)
            break
    return "\n".join(kept[:4]) if kept else message.strip().splitlines()[0] if message.strip() else ""


def _location(e: BaseException | None, registry: CodeRegistry):
    """The innermost IR location on the way the error took (numba's own ``loc`` is often unset for CUDA)."""
    ir = typer.module("core.ir")

    found = None
    seen = set()
    while e is not None and id(e) not in seen:  # the error, then the errors it was raised from
        seen.add(id(e))
        loc = getattr(e, "loc", None)
        if isinstance(loc, ir.Loc):
            found = loc
        tb = e.__traceback__
        while tb is not None:
            f = tb.tb_frame
            for name in ("loc", "inst", "stmt", "expr", "self"):
                value = f.f_locals.get(name)
                candidate: Any = value if isinstance(value, ir.Loc) else getattr(value, "loc", None)
                if isinstance(candidate, ir.Loc) and candidate.line is not None:
                    found = candidate
                    break
            tb = tb.tb_next
        e = e.__cause__
    if found is None:
        return None, None, None
    span = registry.position(found.col) if isinstance(found.col, int) else None
    return found.filename, (span[0] if span else found.line), span
