"""Every launch typed by numba-cuda's own front end before any thread runs.

For the launch's argument types the front end (``numbakern.frontend``, a helper process with the real CUDA
target, cached on disk) either rejects the kernel, which is then a ``TypingError`` naming numba's reason and the
kernel's own line, or returns its facts, from which ``typed`` builds the kernel that computes with Numba's types.

Launches of the same kernel with the same argument types reuse that outcome in memory, as long as the values the
kernel reads from its module and closure (and those of its device functions) are still the same objects.
"""

from __future__ import annotations

import linecache
import os
import types as pytypes
import warnings
import weakref

import numpy as np

from . import cudasim, typed
from .errors import TypingError

_memo: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # python function -> {argtypes: (fingerprint, outcome)}


class Rejected:
    """numba-cuda rejects the kernel: the message a ``TypingError`` carries."""

    def __init__(self, message: str):
        self.message = message


def type_launch(kernel, args, arg_names) -> typed.TypedKernel | None:
    """The typed kernel for this launch (None: run the kernel as written); raises ``TypingError`` if numba-cuda
    rejects it."""
    fn = kernel.fn
    argtypes = argument_types(kernel, args, arg_names)
    fingerprint = _fingerprint(fn)
    per_function = _memo.get(fn)
    if per_function is None:
        per_function = _memo[fn] = {}
    found = per_function.get(argtypes)
    if found is not None and found[0] == fingerprint:
        outcome = found[1]
    else:
        outcome = _type(kernel, argtypes, arg_names)
        per_function[argtypes] = (fingerprint, outcome)
    if isinstance(outcome, Rejected):
        raise TypingError(outcome.message)
    return outcome


def argument_types(kernel, args, arg_names) -> tuple:
    """Numba's types for the arguments, as numba-cuda's dispatcher types them (``typeof`` for an argument)."""
    from numba.cuda.typing.typeof import Purpose, typeof

    types = []
    for name, arg in zip(arg_names, args):
        value = cudasim.typing_value(arg)
        if type(value) is np.ndarray:
            # an array's type depends only on these (typeof is the costliest part of a small launch)
            flags = value.flags
            key = (value.dtype, value.ndim, flags.c_contiguous, flags.f_contiguous, flags.writeable, flags.aligned)
            t = _array_types.get(key)
            if t is not None:
                types.append(t)
                continue
        try:
            t = typeof(value, Purpose.argument)
        except Exception as e:  # noqa: BLE001 - numba's own refusal, whatever its class
            t = None
            reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        else:
            reason = "numba has no type for it"
        if t is None:
            raise TypingError(
                f"kernel '{kernel.fn.__name__}': argument '{name}' ({type(value).__module__}."
                f"{type(value).__qualname__}) cannot be passed to a CUDA kernel: {reason}")
        if type(value) is np.ndarray and value.dtype.fields is None:
            _array_types[key] = t
        types.append(t)
    return tuple(types)


_array_types: dict = {}


def _type(kernel, argtypes: tuple, arg_names):
    from ..frontend import build_request, client

    fn = kernel.fn
    request = build_request(fn, {}, argtypes, cudasim.device_function)
    facts = client.facts(request)
    if not facts.get("ok"):
        return Rejected(_rejection(fn.__name__, argtypes, arg_names, facts["error"]))
    if facts.get("facts_error"):
        warnings.warn(f"numbakern: kernel '{fn.__name__}' runs with Python's arithmetic, not Numba's: its types could "
                      f"not be read ({facts['facts_error'].strip().splitlines()[-1]})", stacklevel=4)
        return None
    devices = [cudasim.device_function(d)[0] for d in request.devices]
    built = typed.build(facts, fn, request.sources, devices, _is_cuda_module)
    if built is None:
        warnings.warn(f"numbakern: kernel '{fn.__name__}' runs with Python's arithmetic, not Numba's: the source of "
                      "it or of a device function it calls is not available", stacklevel=4)
    return built


def _rejection(name: str, argtypes, arg_names, error: dict) -> str:
    where = ""
    if error.get("filename") and error.get("line"):
        text = linecache.getline(error["filename"], error["line"]).strip()
        where = f"\n  at {os.path.basename(error['filename'])}:{error['line']}" + (f": {text}" if text else "")
    reason = "\n  ".join(error.get("reason", "").splitlines()) or error.get("kind", "")
    readonly = [n for n, t in zip(arg_names, argtypes) if getattr(t, "mutable", True) is False]
    hint = ""
    if readonly and "readonly" in error.get("message", "").replace("read-only", "readonly"):
        hint = ("\n  " + ", ".join(f"argument '{n}'" for n in readonly) +
                f" {'is a read-only array' if len(readonly) == 1 else 'are read-only arrays'} "
                "(numpy writeable=False): the kernel may not write it")
    shown = ", ".join(f"{n}: {t}" for n, t in zip(arg_names, argtypes))
    return (f"numba-cuda cannot compile kernel '{name}' for these arguments ({shown}); on a GPU this launch fails "
            f"the same way.{where}\n  {error.get('kind', 'Error')}: {reason}{hint}")


def _is_cuda_module(value) -> bool:
    from numba import cuda

    return value is cuda


# -- whether what a kernel reads is still what it was typed with ---------------------------------------------------

_names_cache: dict[int, tuple] = {}  # id(code) -> (code, the global names it and its nested code read)


def _fingerprint(fn, depth: int = 0) -> tuple:
    names = _read_names(fn.__code__)
    glob = fn.__globals__
    parts = [id(fn.__code__)]
    for name in names:
        value = glob.get(name, _MISSING)
        parts.append(id(value))
        if depth < 8:
            device = cudasim.device_function(value)
            if device is not None:
                parts.append(_fingerprint(device[0], depth + 1))
    for cell in fn.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:
            value = _MISSING
        parts.append(id(value))
        if depth < 8:
            device = cudasim.device_function(value)
            if device is not None:
                parts.append(_fingerprint(device[0], depth + 1))
    return tuple(parts)


_MISSING = object()


def _read_names(code) -> tuple:
    cached = _names_cache.get(id(code))
    if cached is not None and cached[0] is code:
        return cached[1]
    found = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):
            found.update(_read_names(const))
    names = tuple(sorted(found))
    _names_cache[id(code)] = (code, names)
    return names
