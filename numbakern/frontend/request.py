"""A typing request: one kernel, everything it reads, and the argument types of a launch, as bytes.

The kernel's Python function is pickled *by value* with cloudpickle (numba-cuda's vendored copy): its code, the
module constants and closure values it reads, and the device functions it calls (each rebuilt as a
``cuda.jit(device=True)`` function on the other side). So the request's hash is the cache key the issue asks for:
the kernel's source, its device functions' sources, the constants they read and the argument types.

The caller says which objects are device functions (``recognize``): numbakern's simulator recognises numba-cuda's
simulated kernels; another front end (numba-cuda-mlir) can pass its own.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import sys
import types as pytypes
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .source import Source, source_of

#: bump when the facts a worker returns change shape or meaning (old cache entries then miss)
FACTS_VERSION = 1

#: obj -> None (pickle it as it is), ("device", python function, cuda.jit options) for a device function,
#: ("value", stand-in) for an object the helper should see as something else (a simulated device array: its data),
#: or ("import", module, name) for an object the helper should take from a module (numba.cuda's vector types)
Recognizer = Callable[[Any], "tuple | None"]

KERNEL = "kernel"
#: "1": every function's Python is rebuilt from numba's typed IR, its source text left unread
REBUILD_ENV = "NUMBAKERN_SIM_REBUILD"


def _no_source(fn):
    return None


@dataclass(frozen=True)
class TypingRequest:
    payload: bytes  # cloudpickle of (kernel function, its jit options)
    argtypes: tuple  # numba types of the launch's arguments
    sources: dict[str, Source | None]  # "kernel" and "device:<i>" -> the function's own source
    cc: tuple[int, int]
    devices: list = field(default_factory=list, compare=False, repr=False)  # device functions' python functions

    @property
    def key(self) -> str:
        from numba_cuda import __version__ as numba_cuda_version

        h = hashlib.sha256()
        for part in (
            f"facts {FACTS_VERSION}; {_frontend_fingerprint()}; numba-cuda {numba_cuda_version}; "
            f"python {sys.version_info[:2]}; cc {self.cc}",
            repr(self.argtypes),
            repr(sorted((k, (s.filename, s.first_line, s.text) if s else None) for k, s in self.sources.items())),
        ):
            h.update(part.encode())
            h.update(b"\0")
        h.update(self.payload)
        return h.hexdigest()


def build_request(fn, options: dict, argtypes: tuple, recognize: Recognizer, cc=(9, 0)) -> TypingRequest:
    """Pickle ``fn`` (a kernel's Python function) by value for typing in the helper process."""
    buf = io.BytesIO()
    pickler = _pickler_class()(buf, recognize)
    pickler.by_value.add(id(fn))
    pickler.dump((fn, dict(options)))
    read = _no_source if os.environ.get(REBUILD_ENV, "").strip() not in ("", "0") else source_of
    sources = {KERNEL: read(fn)}
    for i, (_, pyfunc) in enumerate(pickler.devices):
        sources[f"device:{i}"] = read(pyfunc)
    return TypingRequest(buf.getvalue(), tuple(argtypes), sources, tuple(cc), [f for _, f in pickler.devices])


@functools.cache
def _pickler_class():
    # numba is imported only when a request is built: importing this module must not fix numba's CUDA mode
    from numba.cuda import cloudpickle

    class Pickler(cloudpickle.Pickler):
        def __init__(self, file, recognize: Recognizer):
            super().__init__(file, protocol=5)
            self._recognize = recognize
            self.devices: list[tuple[Any, Any]] = []  # (device function object, its python function)
            # the kernel's and device functions' own code always travels: cloudpickle would send a function its
            # module exports by name only, and importing a test module in the helper may need a GPU
            self.by_value: set[int] = set()

        def reducer_override(self, obj):
            if not isinstance(obj, _PLAIN):
                if id(obj) in self.by_value:
                    return self._dynamic_function_reduce(obj)
                found = self._recognize(obj)
                if found is not None and found[0] == "value":
                    return (_identity, (found[1],))
                if found is not None and found[0] == "import":
                    return (import_attribute, found[1:])
                if found is not None:
                    _, pyfunc, options = found
                    index = next((i for i, (d, _) in enumerate(self.devices) if d is obj), None)
                    if index is None:
                        index = len(self.devices)
                        self.devices.append((obj, pyfunc))
                    self.by_value.add(id(pyfunc))
                    return (rebuild_device, (pyfunc, index, dict(options)))
                if isinstance(obj, pytypes.FunctionType):
                    alias = _public_alias(obj)
                    if alias is not None:
                        return (import_attribute, alias)
            return super().reducer_override(obj)

    return Pickler


_PLAIN = (int, float, str, bytes, tuple, list, dict, type(None))


def _public_alias(fn) -> tuple[str, str] | None:
    """A private module-level function that the module also exports under a public name (``vload4 =
    _py_vload4`` in simulator mode): refer to it by the public name, which the real CUDA target binds to the
    GPU's version."""
    name = fn.__qualname__
    if not name.startswith("_") or "." in name:
        return None
    module = sys.modules.get(fn.__module__)
    if module is None or getattr(module, name, None) is not fn:
        return None
    public = sorted(n for n, v in vars(module).items() if v is fn and not n.startswith("_"))
    return (fn.__module__, public[0]) if public else None


def _identity(value):
    return value


def import_attribute(module: str, name: str):
    import importlib

    return getattr(importlib.import_module(module), name)


def rebuild_device(pyfunc, index: int, options: dict):
    """In the helper process: the device function as numba-cuda's own ``cuda.jit(device=True)`` function."""
    from numba import cuda

    dispatcher = cuda.jit(device=True, **options)(pyfunc)
    dispatcher._numbakern_device_index = index
    return dispatcher


_fingerprint = None


def _frontend_fingerprint() -> str:
    """A hash of this package's sources: facts from an older front end are never reused."""
    global _fingerprint
    if _fingerprint is None:
        import os

        h = hashlib.sha256()
        here = os.path.dirname(os.path.abspath(__file__))
        for name in sorted(os.listdir(here)):
            if name.endswith(".py"):
                with open(os.path.join(here, name), "rb") as f:
                    h.update(f.read())
        _fingerprint = h.hexdigest()[:16]
    return _fingerprint
