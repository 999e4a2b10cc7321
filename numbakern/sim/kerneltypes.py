"""Every launch typed by numba-cuda's own front end before any thread runs (numba-cuda-mlir's, where numba-cuda is
not installed: ``numbakern.frontend.typer``).

For the launch's argument types the front end (``numbakern.frontend``, a helper process with the real CUDA
target, cached on disk) either rejects the kernel, which is then a ``TypingError`` naming numba's reason and the
kernel's own line, or returns its facts, from which ``typed`` builds the kernel that computes with Numba's types.

Like numba-cuda's dispatcher, a kernel object is typed once per set of argument types, and the module constants and
closure values it reads are frozen then (numpy arrays copied): changing them later in the process changes nothing,
on a GPU as here. The disk cache's key includes those values, so the next process sees the new ones.

A kernel whose ``unroll`` loops were expanded (``numbakern.unroll``) is typed and run as its author wrote it, loops
rolled, as ``translate`` types it: numba types the expansion of a tensor-core kernel for 3-12 s and the loops for
about one, and both compute the same (the expansion's tests; the library's C, from the rolled typing, verifies bit
for bit against the expanded Numba kernel on a GPU). Where numba rejects the rolled loops (a counter that must be a
literal), the expansion, which is what a GPU compiles, is typed and run, and its verdict stands. The profiler asks
for the expansion (``rolled=False``): its operation counts and sampled loops are those of the GPU's code.
"""

from __future__ import annotations

import linecache
import os
import time
import weakref

import numpy as np

from ..frontend import typer
from ..unroll import rolled_function
from . import typed, typedcache
from .adapters import adapter_of, cuda_modules
from .errors import TypingError

#: kernel object -> {(argtypes, rolled): outcome}
_memo: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def forget() -> None:
    """Forget every typing held in memory: the per-kernel-object memo, the rewritten code and the front end's facts
    (the disk caches stay: with a fresh ``NUMBAKERN_CACHE_DIR`` the next launch of each kernel types it again)."""
    from ..frontend import client

    _memo.clear()
    typedcache.forget()
    client.forget()


class Rejected:
    """numba-cuda rejects the kernel: the message a ``TypingError`` carries."""

    def __init__(self, message: str):
        self.message = message


def type_launch(kernel, args, arg_names, rolled: bool = True) -> tuple[typed.TypedKernel | None, tuple]:
    """The typed kernel for this launch (None: run the kernel as written) and the argument types it was typed
    for; raises ``TypingError`` if numba-cuda rejects it. ``rolled``: an expanded kernel's loops as written (the
    module doc says when not)."""
    argtypes = argument_types(kernel, args, arg_names)
    declared, specialized = adapter_of(kernel).declared_signatures(kernel)
    if declared and specialized:
        argtypes = _the_signature(kernel, declared[0], argtypes, arg_names)
    elif declared:
        argtypes = _matching_signature(kernel, declared, argtypes)
    per_kernel = _memo.get(kernel)
    if per_kernel is None:
        per_kernel = _memo[kernel] = {}
    outcome = per_kernel.get((argtypes, rolled), _MISSING)
    if outcome is _MISSING:
        outcome = per_kernel[argtypes, rolled] = _type(kernel, argtypes, arg_names, rolled)
    if isinstance(outcome, Rejected):
        raise TypingError(outcome.message)
    return outcome, argtypes


def _the_signature(kernel, sig: tuple, actual: tuple, arg_names) -> tuple:
    """A kernel declared with one signature: numba-cuda launches it without checking the arguments' types, passing
    an array's memory as the declared element type (a uint32 array read as int32 is the same bits). Memory of
    another element size or rank cannot be read that way: that is refused here rather than read as garbage."""
    from numba.cuda import types

    if len(sig) != len(actual):
        raise TypingError(f"kernel '{kernel.fn.__name__}' was declared for {len(sig)} arguments, launched with "
                          f"{len(actual)}")
    def same_size(a, b) -> bool:
        from numba.cuda.np.numpy_support import as_dtype

        try:
            return a == b or as_dtype(a).itemsize == as_dtype(b).itemsize
        except Exception:  # noqa: BLE001 - no numpy equivalent: only the same type will do
            return False

    for name, want, have in zip(arg_names, sig, actual):
        if isinstance(want, types.Array) != isinstance(have, types.Array) or isinstance(want, types.Array) and (
                want.ndim != have.ndim or not same_size(want.dtype, have.dtype)):
            raise TypingError(
                f"kernel '{kernel.fn.__name__}': argument '{name}' is {have} but the kernel was declared for {want}: "
                "numba-cuda would pass its memory as that type without a check (wrong elements on the GPU)")
    return tuple(sig)


def _matching_signature(kernel, declared: list, actual: tuple) -> tuple:
    """The declared signature numba-cuda's dispatcher launches for these argument types: its own selection (the C
    dispatcher's ``resolve``) -- the conversions each signature needs are registered as its
    ``_search_new_conversions`` does, then its type manager picks the unique best match (exact, then promotions,
    then safe, then unsafe conversions, counted per argument); none, or a tie, is refused as numba-cuda refuses it."""
    from numba.cuda.typeconv.rules import default_type_manager

    if not actual:
        return tuple(declared[0])  # numba-cuda: a nullary kernel matches its first overload
    context = _conversion_context()
    candidates = [tuple(sig) for sig in declared if len(sig) == len(actual)]
    for sig in candidates:
        context.install_possible_conversions(actual, sig)
    shown = ", ".join(map(str, actual))
    declared_text = "; ".join("(" + ", ".join(map(str, s)) + ")" for s in declared)
    if candidates:
        try:
            return candidates[default_type_manager.select_overload(actual, candidates, True, False)]
        except TypeError as e:
            if "mbiguous" in str(e):
                raise TypingError(f"kernel '{kernel.fn.__name__}': ambiguous overloading for argument type(s) "
                                  f"{shown}: more than one of {declared_text} fits as well (numba-cuda refuses "
                                  "the launch the same way)") from None
            if "no compatible" not in str(e).lower() and "no matching" not in str(e).lower():
                raise
    raise TypingError(f"kernel '{kernel.fn.__name__}': no matching definition for argument type(s) {shown}: it was "
                      f"declared for {declared_text} (numba-cuda refuses the launch the same way)")


def _conversion_context():
    """A typing context for numba's conversion rules between types (the CUDA target's own is not available in
    simulator mode; the rules are the same generic ones)."""
    global _context
    if _context is None:
        from numba.cuda.typing.context import BaseContext

        _context = BaseContext()
    return _context


_context = None


def argument_types(kernel, args, arg_names) -> tuple:
    """Numba's types for the arguments, as numba-cuda's dispatcher types them (``typeof`` for an argument)."""
    typeof_module = typer.module("typing.typeof")
    typeof, Purpose = typeof_module.typeof, typeof_module.Purpose

    types = []
    for name, arg in zip(arg_names, args):
        value = adapter_of(kernel).typing_value(arg)
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


def typing_request(kernel, argtypes: tuple, fn=None):
    """The front end's request for ``kernel`` (its function ``fn``: by default the one it launches, an expanded
    kernel's expansion) and a launch's argument types (``type_launch``'s): its facts, and what else is asked of the
    helper about the kernel (the profiler's compile), are keyed by it."""
    from ..frontend import build_request
    from ..frontend.request import CONFIG, config_settings

    # numba-cuda's run-time configuration (numba-cuda-mlir keeps its own elsewhere, and none of it is sent)
    settings = config_settings(typer.module("core.config")) if not typer.is_mlir() else {}
    return build_request(fn or kernel.fn, {CONFIG: settings} if settings else {}, argtypes,
                         adapter_of(kernel).recognize)


def _type(kernel, argtypes: tuple, arg_names, rolled: bool):
    written = rolled_function(kernel.fn)
    if rolled and written is not kernel.fn:
        try:
            outcome = _type_function(kernel, written, argtypes, arg_names)
        except typed.RebuildError:
            outcome = None
        if outcome is not None and not isinstance(outcome, Rejected):
            return outcome
    return _type_function(kernel, kernel.fn, argtypes, arg_names)


def _type_function(kernel, fn, argtypes: tuple, arg_names):
    from ..frontend import client

    request = typing_request(kernel, argtypes, fn)
    key = request.key
    compiled = typedcache.load(key)
    if compiled is None:
        facts = client.facts(request)
        if not facts.get("ok") and facts["error"].get("kind") == "HelperError":
            # the helper could not read the request: numbakern's failure, not a verdict on the kernel
            raise RuntimeError(f"numbakern's typing helper could not type kernel '{fn.__name__}': "
                               f"{facts['error']['reason']} (NUMBAKERN_SIM_TYPING=0 runs kernels untyped)")
        if not facts.get("ok"):
            return Rejected(_rejection(fn.__name__, argtypes, arg_names, facts["error"]))
        if facts.get("facts_error"):
            # numba compiles the kernel, but numbakern cannot run it with numba's types: never run it with others
            raise typed.RebuildError(
                f"numbakern cannot run kernel '{fn.__name__}' with Numba's types: "
                f"{facts['facts_error'].strip().splitlines()[-1]}")
        start = time.perf_counter()
        compiled = typed.compile_kernel(facts, fn, request.devices)
        typedcache.stats["rewrite_seconds"] += time.perf_counter() - start
        typedcache.store(key, compiled)
    return typed.bind(compiled, fn, request.devices, _is_cuda_module)


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
    return (f"{typer.name()} cannot compile kernel '{name}' for these arguments ({shown}); on a GPU this launch fails "
            f"the same way.{where}\n  {error.get('kind', 'Error')}: {reason}{hint}")


def _is_cuda_module(value) -> bool:
    return any(value is module for module in cuda_modules())


_MISSING = object()
