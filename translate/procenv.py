"""What other processes can read of this one: ``/proc/<pid>/environ`` and ptrace-style access.

``/proc/<pid>/environ`` does not show ``os.environ``: it shows the environment block the process was started with,
a region of its own memory (``env_start``..``env_end`` in ``/proc/<pid>/stat``) that later changes never touch. A
secret exported by the user's shell stays there for the life of the process, readable by every process of the same
user (and by root). So, before this process starts a child it does not trust (``translate.verify.sandbox``) and
once the llm backend has read its key:

- ``make_non_dumpable()``: ``prctl(PR_SET_DUMPABLE, 0)``, after which ``/proc/<pid>/environ``, ``/proc/<pid>/mem``
  and ptrace are closed to other processes of the same user (root keeps them);
- ``conceal(names)``: the values of those variables (and any other copy of those values) are overwritten in the
  environment block, so even root reading ``/proc/<pid>/environ`` finds nothing. The variables stay in the process's
  environment (``os.environ``, ``getenv`` and the children this process starts see them as before): they are copied
  to memory of their own first, which is only as readable as the rest of the process's memory (non-dumpable: not
  to other users' processes; root can read it through ``/proc/<pid>/mem``).

Linux only; elsewhere both are no-ops that return False. Standard library only.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Iterable

PR_SET_DUMPABLE = 4
#: a value shorter than this is not searched for elsewhere in the block (it would match harmless text)
MIN_SECRET_CHARS = 8

_lock = threading.Lock()  # one rewrite of the block at a time (parallel builds start children from threads)


def make_non_dumpable() -> bool:
    """``prctl(PR_SET_DUMPABLE, 0)`` for this process: True when it took effect."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0


def environ_block() -> tuple[int, int] | None:
    """(start, end) of this process's initial environment block, from ``/proc/self/stat``; None if unknown."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # fields 50 and 51 of proc(5) (env_start, env_end); the list starts at field 3, after the command name
    try:
        start, end = int(fields[47]), int(fields[48])
    except (IndexError, ValueError):
        return None
    return (start, end) if 0 < start < end else None


def conceal(names: Iterable[str]) -> bool:
    """Overwrite the values of ``names`` (and every other copy of those values) in this process's initial
    environment block with NUL bytes, keeping the variables in the environment. True when the block was read and
    holds none of them any more."""
    with _lock:
        return _conceal([n for n in names if n])


def _conceal(names: list[str]) -> bool:
    block = environ_block()
    if block is None or not names:
        return False
    start, end = block
    try:
        with open("/proc/self/environ", "rb") as f:
            shown = f.read()
    except OSError:
        return False
    memory = ctypes.string_at(start, end - start)
    if memory != shown:  # not the block /proc shows: write nothing
        return False
    wanted = {n.encode() for n in names}
    entries = memory.split(b"\0")
    secrets = {value for name, _, value in (e.partition(b"=") for e in entries)
               if name in wanted and len(value) >= MIN_SECRET_CHARS}
    spans: list[tuple[int, int]] = []  # (offset in the block, length) of the bytes to overwrite
    touched: set[str] = set()  # the variables whose entries change
    offset = 0
    for entry in entries:
        name, sep, value = entry.partition(b"=")
        value_at = offset + len(name) + len(sep)
        offset += len(entry) + 1
        if not (sep and value):
            continue
        found = [(value_at, len(value))] if name in wanted else [
            (value_at + at, len(secret)) for secret in secrets for at in _find_all(value, secret)]
        if found:
            spans += found
            touched.add(name.decode(errors="replace"))
    for name in touched:  # the environment keeps them: their entries move from the block to memory of their own
        if name in os.environ:
            os.putenv(name, os.environ[name])
    for at, length in spans:
        ctypes.memset(start + at, 0, length)
    return True


def _find_all(text: bytes, part: bytes) -> list[int]:
    out, at = [], text.find(part)
    while at >= 0:
        out.append(at)
        at = text.find(part, at + 1)
    return out
