"""Types from Numba, not guesses.

``type_kernel`` runs Numba's own front end (``numba.cuda.compiler.compile_cuda`` at a fixed compute capability,
which needs no GPU) on the kernel's Python function and returns a ``TypedFunction``: the argument types, the
type of every Python variable (Numba's SSA versions ``p``, ``p.1``, ... merged into one C declaration) and the
typing context, which the code generator asks for the type of every operator, call and attribute
(``resolve(...)``), so the C computes exactly what Numba computes.

Where one Python name takes different types in different places: integer versions are declared with the widest
integer type (every value of the narrower ones fits, and Numba widens integer arithmetic to 64 bits anyway);
any other mix (int and float, float32 and float64, array and scalar) is reported as a ``TranslationError`` at
the name's first assignment, asking for separate names.
"""

from __future__ import annotations

import contextlib
import logging
import types as pytypes
from dataclasses import dataclass, field

from numba.cuda import dispatcher, types, utils
from numba.cuda.compiler import compile_cuda
from numba.cuda.core import sigutils
from numba.cuda.descriptor import cuda_target

from .cnames import is_int, is_signed, scalar_key

#: the compute capability the front end types for (typing does not depend on it for the supported constructs)
TYPING_CC = (9, 0)

_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}


@dataclass(frozen=True)
class TypedFunction:
    pyfunc: pytypes.FunctionType
    argtypes: tuple[types.Type, ...]
    return_type: types.Type
    var_types: dict[str, types.Type]                # Python name -> numba type (merged over SSA versions)
    conflicts: dict[str, list[str]] = field(default_factory=dict)  # name -> the differing types, as text


def parse_signature(sig: str):
    """A numba signature string ``"void(float32[:, ::1], int64)"`` -> (return type, argument types)."""
    args, ret = sigutils.normalize_signature(sig)
    return (ret if ret is not None else types.void), tuple(args)


def typing_context():
    return cuda_target.typing_context


@contextlib.contextmanager
def cuda_typing(cc=TYPING_CC):
    """Numba's CUDA target active and the current-device lookup answered without a driver: typing a call to a
    ``@cuda.jit(device=True)`` function makes numba ask the device for its compute capability."""
    class _FakeDevice:
        compute_capability = cc

    saved = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: _FakeDevice()
    try:
        with utils.numba_target_override():
            yield
    finally:
        dispatcher.get_current_device = saved


def type_function(pyfunc, argtypes: tuple, return_type=types.void) -> TypedFunction:
    """Run numba's front end on ``pyfunc`` for ``argtypes``; raises numba's TypingError if numba rejects it."""
    with cuda_typing(), _numba_front_end_debug_logging_off():
        cres = compile_cuda(pyfunc, return_type, argtypes, cc=TYPING_CC)
    typemap = cres.fndesc.typemap
    restype = cres.signature.return_type
    versions: dict[str, list] = {}
    for key, t in typemap.items():
        if key.startswith("$") or key.startswith("arg."):
            continue
        versions.setdefault(key.split(".")[0], []).append(t)
    merged, conflicts = {}, {}
    for name, ts in sorted(versions.items()):
        t = _merge(ts)
        if t is None:
            conflicts[name] = sorted({str(x.literal_type if isinstance(x, types.Literal) else x) for x in ts})
            merged[name] = ts[0]
        else:
            merged[name] = t
    return TypedFunction(pyfunc, tuple(argtypes), restype, merged, conflicts)


@contextlib.contextmanager
def _numba_front_end_debug_logging_off():
    # numba-cuda 0.30's _lazy_pformat passes numba core's `lazy_func` keyword on to pprint.pformat, so its front end
    # raises TypeError whenever DEBUG logging is enabled for it (e.g. a root logger at DEBUG): keep it at INFO here.
    logger = logging.getLogger("numba.cuda.core")
    level = logger.level
    logger.setLevel(max(level, logging.INFO))
    try:
        yield
    finally:
        logger.setLevel(level)


def _merge(ts: list):
    uniq = []
    for t in ts:
        if isinstance(t, types.Literal):
            t = t.literal_type
        if t not in uniq:
            uniq.append(t)
    if len(uniq) == 1:
        return uniq[0]
    keys = [scalar_key(t) for t in uniq]
    if all(is_int(k) for k in keys):
        signed = [k for k in keys if is_signed(k)]
        unsigned = [k for k in keys if not is_signed(k)]
        widest = max(keys, key=lambda k: _INT_BITS[k])
        if not unsigned:
            return types.int64 if widest == "int64" else getattr(types, widest)
        if not signed:
            return getattr(types, widest)
        ws, wu = max(_INT_BITS[k] for k in signed), max(_INT_BITS[k] for k in unsigned)
        if ws > wu:
            return getattr(types, f"int{ws}")
    return None


def resolve_call(ctx, fn, argtypes, kws=None):
    """numba's signature for calling ``fn`` (a Python object or numba function type) with ``argtypes``."""
    fnty = fn if isinstance(fn, types.Type) else ctx.resolve_value_type(fn)
    with cuda_typing():
        return ctx.resolve_function_type(fnty, tuple(argtypes), dict(kws or {}))
