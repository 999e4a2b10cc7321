"""What a process in simulator mode asks of the helper process (``helper``):

- ``facts(request)``: numba-cuda's facts about a kernel for a launch's argument types, through the disk cache
  (``facts["ok"]`` False for a rejected kernel);
- ``call(function, **kwargs)``: a named function of a module, run in the helper with numba's real CUDA target, with
  JSON arguments and a JSON result (``translate.api`` translates this way).
"""

from __future__ import annotations

import json
import os
import time

from . import cache, helper, typer
from .request import TypingRequest

#: "1" also runs NVVM (LLVM IR to PTX) on every kernel the helper types
PTX_ENV = "NUMBAKERN_TYPING_PTX"

_memory: dict[str, dict] = {}
stats = {"memory": 0, "disk": 0, "helper": 0, "helper_seconds": 0.0}


def forget() -> None:
    """Forget the facts held in memory (the disk cache stays): the next request reads the disk, or asks the helper."""
    _memory.clear()


def facts(request: TypingRequest) -> dict:
    key = request.key
    found = _memory.get(key)
    if found is not None:
        stats["memory"] += 1
        return found
    found = cache.load(key)
    if found is None:
        with cache.making(key + ".json"):  # another process typing this request: its answer, once it has it
            found = cache.load(key)
            if found is None:
                found = _ask_helper(request)
                stats["helper"] += 1
                if found.get("ok") or found.get("error", {}).get("kind") != "HelperError":
                    cache.store(key, found)
            else:
                stats["disk"] += 1
    else:
        stats["disk"] += 1
    _memory[key] = found
    return found


def _ask_helper(request: TypingRequest) -> dict:
    start = time.perf_counter()
    try:
        found = helper.ask({
            "op": "type",
            "payload": request.payload,
            # by value: an argument's type may name a class its module does not export (a namedtuple made in a
            # function), which plain pickle cannot send
            "argtypes": _by_value(request.argtypes),
            "cc": request.cc,
            "ptx": os.environ.get(PTX_ENV, "").strip() not in ("", "0"),
        })
    except helper.HelperExited as e:
        raise RuntimeError(f"{e} (NUMBAKERN_SIM_TYPING=0 runs kernels without it, untyped)") from None
    stats["helper_seconds"] += time.perf_counter() - start
    return found


def _by_value(obj) -> bytes:
    return typer.module("cloudpickle").dumps(obj, protocol=5)


class HelperCallError(RuntimeError):
    """A function run by ``call`` raised: its text is ``"<exception type>: <message>"``."""


def call(function: str, **kwargs):
    """``function`` (``"package.module:name"``, a name the module lists in its ``HELPER_FUNCTIONS``) run in the
    helper with ``kwargs`` (JSON values); its JSON result, or ``HelperCallError`` with its error's text."""
    reply = helper.ask({"op": "call", "function": function, "kwargs": json.dumps(kwargs)})
    if "error" in reply:
        error = reply["error"]  # a request the helper could not even read: its HelperError record
        raise HelperCallError(error["reason"] if isinstance(error, dict) else error)
    return reply["result"]
