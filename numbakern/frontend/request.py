"""A typing request: one kernel, everything it reads, and the argument types of a launch, as bytes.

The kernel's Python function is pickled *by value* with cloudpickle (the typer's vendored copy: ``typer``): its
code, the module constants and closure values it reads, and the device functions it calls (each rebuilt as a
``cuda.jit(device=True)`` function on the other side). So the request's hash is the cache key: the kernel's code
(its positions included), its device functions' code, the constants they read and the argument types.

The caller says which objects are device functions (``recognize``): numbakern's simulator recognises numba-cuda's
simulated kernels; another front end (numba-cuda-mlir) can pass its own.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import hashlib
import io
import sys
import threading
import types as pytypes
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from . import closures, typer
from .codetext import code_text

#: bump when the facts a worker returns change shape or meaning (old cache entries then miss)
FACTS_VERSION = 1

#: obj -> None (pickle it as it is), ("device", python function, cuda.jit options) for a device function,
#: ("value", stand-in) for an object the helper should see as something else (a simulated device array: its data),
#: ("import", module, name) for an object the helper should take from a module (numba.cuda's vector types), or
#: ("overloaded", [(overload function, its overload() options), ...]) for a plain function that ``@overload``
#: gives a CUDA implementation: it travels by value and the helper registers the same overloads for it
Recognizer = Callable[[Any], "tuple | None"]

KERNEL = "kernel"

#: the options key of numba-cuda's configuration settings the helper compiles with (``config_settings``)
CONFIG = "numba_config"
#: numba-cuda configuration a caller may change at run time that decides what compiles (a test turning the NRT on
#: for array methods that allocate: ``config.CUDA_ENABLE_NRT = True``)
CONFIG_NAMES = ("CUDA_ENABLE_NRT",)


def config_settings(config) -> dict:
    """The caller's ``CONFIG_NAMES`` that differ from numba-cuda's defaults (the defaults add nothing to a request,
    so its hash, the cache key, stays what it was)."""
    settings = {}
    for name in CONFIG_NAMES:
        value = getattr(config, name, False)
        if value:
            settings[name] = value
    return settings


@dataclass(frozen=True)
class TypingRequest:
    payload: bytes  # cloudpickle of (kernel function, its jit options)
    argtypes: tuple  # numba types of the launch's arguments
    cc: tuple[int, int]
    devices: list = field(default_factory=list, compare=False, repr=False)  # device functions' python functions
    #: the payload as every process pickles it: cloudpickle names a class it pickles by value with a random id
    identity: bytes | None = field(default=None, compare=False, repr=False)

    @functools.cached_property
    def key(self) -> str:
        h = hashlib.sha256()
        for part in (
            f"facts {FACTS_VERSION}; {_frontend_fingerprint()}; {typer.version()}; "
            f"python {sys.version_info[:2]}; cc {self.cc}",
            repr(self.argtypes),
        ):
            h.update(part.encode())
            h.update(b"\0")
        h.update(self.identity if self.identity is not None else self.payload)
        return h.hexdigest()


#: the names numbakern's rewritten code gives its own helpers (``decompile``, ``numbakern.sim.typed``)
RESERVED_PREFIX = "__nk_"


class ReservedName(ValueError):
    """A kernel or device function uses a name numbakern's rewritten code keeps for its own helpers."""


def build_request(fn, options: dict, argtypes: tuple, recognize: Recognizer, cc=(9, 0)) -> TypingRequest:
    """Pickle ``fn`` (a kernel's Python function) by value for typing in the helper process."""
    _refuse_reserved_names(fn)
    buf = io.BytesIO()
    pickler = _pickler_class()(buf, recognize)
    pickler.by_value.add(id(fn))
    with _submodules_indexed():
        pickler.dump((fn, dict(options)))
        # the overloads of the functions met so far, pickled after them with the same memo (the same objects in the
        # helper), until their own overload functions name no further ones: the helper registers each batch it loads
        done = 0
        while done < len(pickler.overloaded):
            batch = pickler.overloaded[done:]
            done = len(pickler.overloaded)
            pickler.dump(batch)
    for _, device in pickler.devices:
        _refuse_reserved_names(device)
    payload = buf.getvalue()
    return TypingRequest(payload, tuple(argtypes), tuple(cc), [f for _, f in pickler.devices],
                         _without_tracker_ids(payload, pickler.dynamic_classes))


def _refuse_reserved_names(fn) -> None:
    """A ``ReservedName`` for a function whose code (nested functions too) names anything ``__nk_...``: the rewritten
    code would read numbakern's helper of that name instead (a wrong result, or a crash)."""
    if not isinstance(fn, pytypes.FunctionType):
        return
    # (a nested function's free names are its enclosing code's cell names, or the kernel's own free names)
    outer = set(closures.free_names(fn))
    todo = [fn.__code__]
    while todo:
        code = todo.pop()
        found = sorted(n for n in {*code.co_names, *code.co_varnames, *code.co_cellvars, *outer}
                       if n.startswith(RESERVED_PREFIX))
        if found:
            raise ReservedName(f"{fn.__qualname__} uses the name '{found[0]}': names beginning with "
                               f"{RESERVED_PREFIX} are numbakern's own (its rewritten code's helpers); rename it")
        todo.extend(c for c in code.co_consts if isinstance(c, pytypes.CodeType))


@functools.cache
def _pickler_class():
    # numba is imported only when a request is built: importing this module must not fix numba's CUDA mode
    cloudpickle = typer.module("cloudpickle")

    class Pickler(cloudpickle.Pickler):
        def __init__(self, file, recognize: Recognizer):
            super().__init__(file, protocol=5)
            self._recognize = recognize
            self.devices: list[tuple[Any, Any]] = []  # (device function object, its python function)
            # the kernel's and device functions' own code always travels: cloudpickle would send a function its
            # module exports by name only, and importing a test module in the helper may need a GPU
            self.by_value: set[int] = set()
            self.dynamic_classes: list[type] = []  # classes pickled by value (with a tracker id)
            self.overloaded: list[tuple[Any, list]] = []  # (function, its overloads' (function, options))

        def reducer_override(self, obj):
            if isinstance(obj, type) and not cloudpickle.cloudpickle._should_pickle_by_reference(obj):
                self.dynamic_classes.append(obj)
            if isinstance(obj, pytypes.CodeType):
                return self.dispatch_table[pytypes.CodeType](_with_shared_names(obj))
            if not isinstance(obj, _PLAIN):
                if id(obj) in self.by_value:
                    return self._dynamic_function_reduce(obj)
                found = self._recognize(obj)
                if found is not None and found[0] == "value":
                    return (_identity, (found[1],))
                if found is not None and found[0] == "import":
                    return (import_attribute, found[1:])
                if found is not None and found[0] == "overloaded":
                    self.overloaded.append((obj, found[1]))
                    return self._dynamic_function_reduce(obj)
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


def _with_shared_names(code: pytypes.CodeType) -> pytypes.CodeType:
    """``code`` with its file name and names as the one string object per text (``sys.intern``). Pickle writes a
    string it has seen before as a reference to it only when it is the same object, so without this the payload's
    bytes, and with them the request's key, would depend on which code objects share a string: the code of a kernel
    that ``unroll`` expanded in this process shares its module's file name, the same code read back from the cache
    (``marshal``) has a copy of its own, and the helper would type the kernel again in every process that read it."""
    return code.replace(co_filename=sys.intern(code.co_filename), co_name=sys.intern(code.co_name),
                        co_qualname=sys.intern(code.co_qualname))


def _without_tracker_ids(payload: bytes, classes: list) -> bytes | None:
    """The payload with the random id cloudpickle gives each class it pickles by value (a class defined in a test
    function, a namedtuple of ``__main__``) replaced by its order of appearance: the same bytes in every process."""
    if not classes:
        return None
    cloudpickle = typer.module("cloudpickle.cloudpickle")

    for i, cls in enumerate(dict.fromkeys(classes)):
        tracker = cloudpickle._DYNAMIC_CLASS_TRACKER_BY_CLASS.get(cls)
        if tracker:
            payload = payload.replace(tracker.encode(), f"{i:0{len(tracker)}d}".encode())
    return payload


_submodules_lock = threading.Lock()
_submodule_index: tuple[int, dict[str, dict[str, list]]] = (-1, {})


@contextlib.contextmanager
def _submodules_indexed():
    """cloudpickle looks through every loaded module for each module a function reads (which of its submodules the
    function may reach as attributes): milliseconds per kernel with numba and torch loaded. The same answer, from
    an index of ``sys.modules`` made once per change of it."""
    cloudpickle = typer.module("cloudpickle.cloudpickle")

    with _submodules_lock:
        original = cloudpickle._find_imported_submodules
        cloudpickle._find_imported_submodules = _find_imported_submodules
        try:
            yield
        finally:
            cloudpickle._find_imported_submodules = original


def _find_imported_submodules(code, top_level_dependencies):
    global _submodule_index
    if _submodule_index[0] != len(sys.modules):
        # package -> the first name under it -> (submodule, every name of its path under the package)
        index: dict[str, dict[str, list]] = {}
        for name in list(sys.modules):
            if name is None:
                continue
            parts = name.split(".")
            for i in range(1, len(parts)):
                under = parts[i:]
                index.setdefault(".".join(parts[:i]), {}).setdefault(under[0], []).append((name, frozenset(under)))
        _submodule_index = (len(sys.modules), index)
    names = set(code.co_names)
    found = []
    for x in top_level_dependencies:
        if isinstance(x, pytypes.ModuleType) and getattr(x, "__package__", None):
            by_first = _submodule_index[1].get(x.__name__)
            if not by_first:
                continue
            for first in names & by_first.keys():
                for name, tokens in by_first[first]:
                    module = sys.modules.get(name)
                    if module is not None and tokens <= names:
                        found.append(module)
    return found


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

    found = importlib.import_module(module)
    if not hasattr(found, name):  # a submodule not imported yet (numba_cuda_mlir.cuda)
        return importlib.import_module(f"{module}.{name}")
    return getattr(found, name)


#: in the helper: device functions rebuilt by earlier requests, by their content (``_device_key``), so a device
#: function several kernels call is compiled once per signature, as numba-cuda compiles it once on a GPU
_devices: dict[bytes, Any] = {}
#: in the helper: id(device dispatcher) -> its index in the request being read (``device_index``)
_request_devices: dict[int, int] = {}
#: in the helper: id(its Python function's code) -> the same index (``device_index_of_code``)
_request_codes: dict[int, int] = {}


def begin_request() -> None:
    """In the helper, before a request's payload is read: its device functions are numbered afresh."""
    _request_devices.clear()
    _request_codes.clear()


def device_index(dispatcher) -> int | None:
    """The index in the current request of a device function ``rebuild_device`` made (None: not one of them)."""
    return _request_devices.get(id(dispatcher))


def device_index_of_code(code) -> int | None:
    """The index in the current request of the device function whose code this is (numba-cuda-mlir inlines small
    device functions: their IR carries their own code's positions)."""
    return _request_codes.get(id(code))


def rebuild_device(pyfunc, index: int, options: dict):
    """In the helper process: the device function as the typer's own ``cuda.jit(device=True)`` function (the one
    an earlier request rebuilt from the same code and values, with what it compiled).

    One dispatcher per function: a recursive function reaches its own object again while its code is being
    unpickled (through its globals), before the first rebuild returns; both must be the same dispatcher, or numba
    sees two functions calling each other instead of one calling itself."""
    cuda = typer.cuda_module()

    dispatcher = pyfunc.__dict__.get(_REBUILT)
    if dispatcher is None:
        key = _device_key(pyfunc, options)
        dispatcher = _devices.get(key) if key is not None else None
        if dispatcher is None:
            dispatcher = cuda.jit(device=True, **options)(pyfunc)
            dispatcher._numbakern_key = key
            if key is not None:
                _devices[key] = dispatcher
            _rebuilt.append(pyfunc)
        pyfunc.__dict__[_REBUILT] = dispatcher
    _request_devices[id(dispatcher)] = index
    _request_codes[id(dispatcher.py_func.__code__)] = index
    return dispatcher


_REBUILT = "_numbakern_rebuilt_dispatcher"
_rebuilt: list = []  # the device functions rebuilt while loading the payload in hand


def register_overloads(batch) -> None:
    """In the helper process: ``@overload`` again, for functions that travelled by value, each overload function
    with the options it was registered with in the caller's process."""
    overload = typer.module("extending").overload

    for func, overloads in batch:
        for overload_func, options in overloads:
            overload(func, **options)(overload_func)


def load_payload(payload: bytes):
    """In the helper process: the kernel's Python function and its options, with the overloads it reaches
    registered."""
    import pickle

    _rebuilt.clear()
    unpickler = pickle.Unpickler(io.BytesIO(payload))
    fn, options = unpickler.load()
    while True:
        try:
            batch = unpickler.load()
        except EOFError:
            break
        register_overloads(batch)
    for pyfunc in _rebuilt:
        # A device function whose module this process never imported: numba names its compiled code after
        # __module__ in one place and after the imported module (none: "<dynamic>") in another, so a call to itself
        # would not be recognised as one (and recursion needs a linker the CUDA target lacks). Dynamic it is.
        if pyfunc.__module__ not in sys.modules:
            pyfunc.__module__ = None
    _rebuilt.clear()
    return fn, options


def _device_key(pyfunc, options: dict) -> bytes | None:
    """A device function's code, options and the values it reads (device functions by their own keys), as bytes;
    None when a value has no bytes (then the function is compiled afresh)."""
    import pickle

    _extract_code_globals = typer.module("cloudpickle.cloudpickle")._extract_code_globals

    from .closures import closure_values

    parts = [code_text(pyfunc.__code__).encode(), repr(sorted(options.items())).encode()]
    names = sorted(_extract_code_globals(pyfunc.__code__))
    if any(n not in pyfunc.__globals__ and not hasattr(builtins, n) for n in names):
        # a name the function reads is not there yet: its globals are still being unpickled (a recursive function
        # reached from its own globals), so its content is not known; compiled afresh
        return None
    values = [(n, pyfunc.__globals__[n]) for n in names if n in pyfunc.__globals__]
    values += sorted(closure_values(pyfunc).items())
    for name, value in values:
        if isinstance(value, pytypes.ModuleType):
            encoded = b"module " + value.__name__.encode()
        elif getattr(value, "_numbakern_key", None) is not None:
            encoded = b"device " + value._numbakern_key
        else:
            try:
                encoded = pickle.dumps(value, protocol=5)
            except Exception:  # noqa: BLE001 - a value plain pickle cannot name: no reuse
                return None
        parts.append(name.encode() + b"=" + hashlib.sha256(encoded).digest())
    return hashlib.sha256(b"\0".join(parts)).digest()


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
