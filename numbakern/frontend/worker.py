"""The helper process: numba-cuda's real CUDA target, working for a caller in simulator mode (``helper`` starts it).

A process that imported numba with ``NUMBA_ENABLE_CUDASIM=1`` has only the simulator; numba's CUDA front end
needs the real target, and numba chooses once per process. So one long-lived helper per caller runs
``python -m numbakern.frontend.worker`` with the simulator off and answers requests on its stdin/stdout
(``protocol``), one at a time. Two kinds:

- ``type``: the facts of one kernel for one launch's argument types (``facts``), or numba's reason for rejecting
  it (``rejections``);
- ``call``: a named function of a module, with JSON arguments and a JSON result, for work that needs numba's real
  target in the caller's stead (``translate``'s). The module lists the names it may be called by in
  ``HELPER_FUNCTIONS``; an error comes back as its text (``"<type>: <message>"``).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import pickle
import sys
import time
import traceback

from . import typer
from .compile import CodeRegistry, compile_kernel
from .facts import kernel_facts
from .protocol import read_frame, write_frame
from .rejections import describe_error
from .request import CONFIG, begin_request, load_payload

#: one registry for the helper's life: device functions compiled for an earlier request keep their IR's tags
_registry = CodeRegistry()


def type_request(payload: bytes, argtypes: tuple, cc, ptx: bool = False) -> dict:
    """Facts for one request, or ``{"ok": False, "error": {...}}`` with numba's reason and the source line."""
    registry = _registry
    start = time.perf_counter()
    try:
        begin_request()
        pyfunc, options = load_payload(payload)
        with numba_config(options.get(CONFIG, {})):
            cres = compile_kernel(pyfunc, argtypes, registry, cc=cc, ptx=ptx)
    except Exception as e:  # noqa: BLE001 - numba's errors and anything it lets escape are rejections
        return {"ok": False, "error": describe_error(e, registry)}
    seconds = time.perf_counter() - start
    try:
        facts = kernel_facts(cres, registry)
    except Exception:  # noqa: BLE001 - the kernel compiles; only the facts are missing (a numbakern bug)
        return {"ok": True, "functions": None, "facts_error": traceback.format_exc(), "seconds": round(seconds, 4)}
    facts["seconds"] = round(seconds, 4)
    return facts


@contextlib.contextmanager
def numba_config(settings: dict):
    """numba-cuda's configuration as the caller's process had it (``request.CONFIG_NAMES``), for one compile."""
    config = typer.module("core.config")
    saved = {name: getattr(config, name, None) for name in settings}
    for name, value in settings.items():
        setattr(config, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(config, name, value)


def call_request(function: str, kwargs: str) -> dict:
    """``{"result": ...}`` of ``module:name(**kwargs)``, or ``{"error": "<type>: <message>"}``."""
    try:
        module_name, _, name = function.partition(":")
        module = importlib.import_module(module_name)
        if name not in getattr(module, "HELPER_FUNCTIONS", ()):
            raise LookupError(f"{function} is not one of the functions {module_name} lets the helper run "
                              "(HELPER_FUNCTIONS)")
        return {"result": getattr(module, name)(**json.loads(kwargs))}
    except Exception as e:  # noqa: BLE001 - every error goes back to the caller
        return {"error": f"{type(e).__name__}: {e}"}


def _answer(req: dict) -> dict:
    for p in req.get("path", []):
        if p not in sys.path:
            sys.path.append(p)
    if req.get("cwd"):
        os.chdir(req["cwd"])  # relative paths in a request mean what they mean to the caller
    if req["op"] == "call":
        return call_request(req["function"], req["kwargs"])
    argtypes = req["argtypes"]
    if isinstance(argtypes, bytes):  # pickled by value (client._by_value)
        argtypes = pickle.loads(argtypes)
    return type_request(req["payload"], argtypes, tuple(req["cc"]), req.get("ptx", False))


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
            reply = _answer(pickle.loads(data))
        except Exception as e:  # noqa: BLE001 - a request the helper could not even read
            reply = {"ok": False, "error": {"kind": "HelperError", "reason": f"{type(e).__name__}: {e}",
                                            "filename": None, "line": None, "span": None,
                                            "message": traceback.format_exc()}}
        write_frame(out, json.dumps(reply).encode())


if __name__ == "__main__":
    serve()
