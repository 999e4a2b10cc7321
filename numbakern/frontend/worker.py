"""The helper process: numba-cuda's real CUDA target, typing kernels for a caller in simulator mode.

A process that imported numba with ``NUMBA_ENABLE_CUDASIM=1`` has only the simulator; numba's CUDA front end
needs the real target, and numba chooses once per process. So one long-lived helper per caller runs
``python -m numbakern.frontend.worker`` with the simulator off and answers requests on its stdin/stdout:
length-prefixed frames, a pickled request in (from the caller's own process) and JSON out (the facts, or
numba's reason for rejecting the kernel).
"""

from __future__ import annotations

import json
import os
import pickle
import re
import struct
import sys
import time
import traceback

from .compile import CodeRegistry, compile_kernel
from .facts import kernel_facts
from .source import Source

_HEADER = struct.Struct("<Q")


def write_frame(stream, data: bytes) -> None:
    stream.write(_HEADER.pack(len(data)))
    stream.write(data)
    stream.flush()


def read_frame(stream) -> bytes | None:
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (n,) = _HEADER.unpack(head)
    data = stream.read(n)
    if len(data) < n:
        return None
    return data


def type_request(payload: bytes, argtypes: tuple, sources: dict, cc, ptx: bool = False) -> dict:
    """Facts for one request, or ``{"ok": False, "error": {...}}`` with numba's reason and the source line."""
    registry = CodeRegistry()
    start = time.perf_counter()
    try:
        pyfunc, _options = pickle.loads(payload)
        cres = compile_kernel(pyfunc, argtypes, registry, cc=cc, ptx=ptx)
    except Exception as e:  # noqa: BLE001 - numba's errors and anything it lets escape are rejections
        return {"ok": False, "error": describe_error(e, registry)}
    seconds = time.perf_counter() - start
    try:
        facts = kernel_facts(cres, sources, registry)
    except Exception:  # noqa: BLE001 - the kernel compiles; only the facts are missing (a numbakern bug)
        return {"ok": True, "functions": None, "facts_error": traceback.format_exc(), "seconds": round(seconds, 4)}
    facts["seconds"] = round(seconds, 4)
    return facts


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


def _location(e: BaseException, registry: CodeRegistry):
    """The innermost IR location on the way the error took (numba's own ``loc`` is often unset for CUDA)."""
    from numba.cuda.core import ir

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
                candidate = value if isinstance(value, ir.Loc) else getattr(value, "loc", None)
                if isinstance(candidate, ir.Loc) and candidate.line is not None:
                    found = candidate
                    break
            tb = tb.tb_next
        e = e.__cause__
    if found is None:
        return None, None, None
    span = registry.position(found.col) if isinstance(found.col, int) else None
    return found.filename, (span[0] if span else found.line), span


def serve() -> None:
    # user code imported while unpickling may print: keep the protocol's stdout apart from everything else
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout = sys.stderr
    stdin = sys.stdin.buffer
    while True:
        data = read_frame(stdin)
        if data is None:
            return
        try:
            req = pickle.loads(data)
            for p in req.get("path", []):
                if p not in sys.path:
                    sys.path.append(p)
            sources = {k: Source(*v) if v else None for k, v in req["sources"].items()}
            reply = type_request(req["payload"], req["argtypes"], sources, tuple(req["cc"]), req.get("ptx", False))
        except Exception as e:  # noqa: BLE001 - a request the helper could not even read
            reply = {"ok": False, "error": {"kind": "HelperError", "reason": f"{type(e).__name__}: {e}",
                                            "filename": None, "line": None, "span": None,
                                            "message": traceback.format_exc()}}
        write_frame(out, json.dumps(reply).encode())


if __name__ == "__main__":
    serve()
