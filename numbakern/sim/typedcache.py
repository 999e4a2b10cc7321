"""The rewritten code of typed kernels (``typed.CompiledKernel``), kept per typing request: a kernel is rewritten
once per (code, argument types), then read back, in this process from memory and in the next ones from disk.

On disk it is a ``marshal`` file beside the front end's facts (``numbakern.frontend.cache``), named by the request's
key and a fingerprint of the rewriter's own sources, so code rewritten by an older numbakern is never reused. The
request's key covers the kernel's code and every value it reads, which are all the rewrite depends on.
"""

from __future__ import annotations

import hashlib
import marshal
import os

from ..frontend import cache
from .typed import CompiledKernel

#: bump when CompiledKernel's data changes shape
FORMAT = 1
_memory: dict[str, CompiledKernel] = {}
#: reads from memory and disk, rewrites, and the seconds the rewrites took (``kerneltypes``)
stats = {"memory": 0, "disk": 0, "rewritten": 0, "rewrite_seconds": 0.0}


def forget() -> None:
    """Forget the rewritten kernels held in memory (the disk cache stays)."""
    _memory.clear()


def load(key: str) -> CompiledKernel | None:
    found = _memory.get(key)
    if found is not None:
        stats["memory"] += 1
        return found
    data = cache.load_bytes(_name(key))
    if data is None:
        return None
    try:
        found = CompiledKernel.from_data(marshal.loads(data))
    except (ValueError, EOFError, TypeError):
        return None  # another Python's marshal format, or a damaged file: rewrite it
    stats["disk"] += 1
    _memory[key] = found
    return found


def store(key: str, compiled: CompiledKernel) -> None:
    stats["rewritten"] += 1
    _memory[key] = compiled
    cache.store_bytes(_name(key), marshal.dumps(compiled.to_data()))


def _name(key: str) -> str:
    return f"{key}.{_fingerprint()}.code"


_print: str | None = None


def _fingerprint() -> str:
    """The rewriter's sources (and this format's): code they rewrote differently is never reused."""
    global _print
    if _print is None:
        h = hashlib.sha256(str(FORMAT).encode())
        here = os.path.dirname(os.path.abspath(__file__))
        for name in ("typed.py", "numerics.py", "typedcache.py"):
            with open(os.path.join(here, name), "rb") as f:
                h.update(f.read())
        _print = h.hexdigest()[:16]
    return _print
