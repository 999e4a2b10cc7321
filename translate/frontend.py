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
import difflib
import importlib
import logging
import types as pytypes
from dataclasses import dataclass, field
from typing import Any

from numba import cuda
from numba.cuda import dispatcher, stubs, types, utils
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
    #: for a name whose SSA versions have types that do not merge: where each type is stored and read (by source
    #: line) and where numba converts one version into another (the copies that its phi nodes become)
    retyped: dict[str, Versions] = field(default_factory=dict)
    #: locals numba types as a literal (a single assignment of a constant, e.g. ``N = 100``): name -> value
    literals: dict[str, Any] = field(default_factory=dict)


@dataclass
class Versions:
    """The SSA versions of one Python name, by source line (numba's IR has no columns)."""
    types: list                                      # the distinct types, in order of their first store
    stores: dict = field(default_factory=dict)       # line -> [type stored there], in IR order
    loads: dict = field(default_factory=dict)        # line -> [type read there]
    copies: dict = field(default_factory=dict)       # line -> [(from type, to type)] (phi copies), in IR order


class SignatureError(ValueError):
    """A ``--signature`` that is not a kernel signature numba and the translator accept (the message says why
    and what is valid)."""


SIGNATURE_HELP = ("a kernel signature is void(<argument types>), e.g. \"void(float32[:, ::1], int64)\"; types: "
                  "int8..int64, uint8..uint64, float16, float32, float64, complex64, complex128, boolean; arrays "
                  "T[::1] / T[:, ::1] (C order), T[::1, :] (Fortran order), T[:] / T[:, :] (any layout)")


def parse_signature(sig, namespace: dict | None = None):
    """A numba signature (``"void(float32[:, ::1], int64)"``, a ``Signature`` or a tuple of types) -> (return
    type, argument types). Names in a string are numba's types, then ``namespace`` (the kernel's module), then
    importable modules (``numba.cuda.random.xoroshiro128p_type``). Raises ``SignatureError``."""

    parsed = _evaluate(sig, namespace) if isinstance(sig, str) else sig
    try:
        args, ret = sigutils.normalize_signature(parsed)
    except TypeError as e:
        raise SignatureError(f"{_show(sig)} is not a signature ({e}); {SIGNATURE_HELP}") from None
    ret = ret if ret is not None else types.void
    if ret not in (types.void, types.none):
        raise SignatureError(f"{_show(sig)} returns {ret}, but a kernel returns nothing: write "
                             f"void({', '.join(type_text(a) for a in args)})")
    return ret, tuple(args)


def _show(sig) -> str:
    return f'--signature "{sig}"' if isinstance(sig, str) else f"the signature {signature_text(sig)}"


class _Names(dict):
    """Name lookup for a signature string: numba's types, the kernel's module, then importable modules."""

    def __init__(self, namespace):
        super().__init__()
        self.namespace = namespace or {}

    def __missing__(self, key):
        if key in types.__dict__:
            return types.__dict__[key]
        if key in self.namespace:
            return self.namespace[key]

        try:
            return importlib.import_module(key)
        except ImportError:
            raise KeyError(key) from None


#: type names from Python and C that numba spells otherwise (the closest spelling misleads: 'int' is not 'uint')
_SPELLED_IN_NUMBA = {"int": "int64 (Python's int) or int32", "float": "float64 (Python's float) or float32",
                     "long": "int64", "half": "float16", "unsigned": "uint32"}


def _evaluate(text: str, namespace):

    try:
        return eval(text, {"__builtins__": {}}, _Names(namespace))  # noqa: S307 - numba evaluates it the same way
    except NameError as e:
        name = getattr(e, "name", None) or str(e).split("'")[1]
        known = [k for k, v in types.__dict__.items() if isinstance(v, types.Type)]
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean {_SPELLED_IN_NUMBA.get(name) or close[0]}?)" if name in _SPELLED_IN_NUMBA or close \
            else ""
        raise SignatureError(f'--signature "{text}": unknown type \'{name}\'{hint}; {SIGNATURE_HELP}') from None
    except SyntaxError as e:
        raise SignatureError(f'--signature "{text}" is not valid syntax ({e.msg}); {SIGNATURE_HELP}') from None
    except Exception as e:  # noqa: BLE001 - anything else the expression does: the same message
        raise SignatureError(f'--signature "{text}": {type(e).__name__}: {e}; {SIGNATURE_HELP}') from None


def type_text(t) -> str:
    """A numba type in signature syntax: ``float32[:, ::1]``, ``int64``."""
    if isinstance(t, types.Array):
        dims = [":"] * t.ndim
        if t.layout == "C":
            dims[-1] = "::1"
        elif t.layout == "F":
            dims[0] = "::1"
        body = f"{type_text(t.dtype)}[{', '.join(dims)}]"
        return body if t.mutable else f"readonly({body})"
    return str(t)


def signature_text(sig) -> str:
    """The canonical text of a signature (a string is normalised only in its whitespace)."""
    if isinstance(sig, str):
        return " ".join(sig.split())

    args, ret = sigutils.normalize_signature(sig)
    ret = "void" if ret is None or ret in (types.void, types.none) else ret
    return f"{ret}({', '.join(type_text(a) for a in args)})"


def typing_context():
    return cuda_target.typing_context


@contextlib.contextmanager
def cuda_typing(cc=TYPING_CC):
    """Numba's CUDA target active and the current-device lookup answered without a driver: typing a call to a
    ``@cuda.jit(device=True)`` function makes numba ask the device for its compute capability."""
    class _FakeDevice:
        compute_capability = cc

    saved = getattr(dispatcher, "get_current_device", None)  # None under the simulator (NUMBA_ENABLE_CUDASIM)
    if saved is not None:
        dispatcher.get_current_device = lambda: _FakeDevice()
    try:
        with utils.numba_target_override():
            yield
    finally:
        if saved is not None:
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
            conflicts[name] = sorted({str(_unliteral(x)) for x in ts})
            merged[name] = ts[0]
        else:
            merged[name] = t
    retyped = _version_lines(cres.type_annotation.blocks, typemap, set(conflicts)) if conflicts else {}
    literals = {name: ts[0].literal_value for name, ts in versions.items()
                if len(ts) == 1 and isinstance(ts[0], types.Literal)
                and isinstance(ts[0].literal_value, (int, float, bool))}
    return TypedFunction(pyfunc, tuple(argtypes), restype, merged, conflicts, retyped, literals)


def _unliteral(t):
    return t.literal_type if isinstance(t, types.Literal) else t


def _version_lines(blocks, typemap, names: set) -> dict:
    """Where each SSA version of ``names`` is stored and read, by line, from numba's typed IR."""
    out = {n: Versions([]) for n in names}

    def base(var_name):
        return var_name.split(".")[0]

    for block in blocks.values():
        for inst in block.body:
            kind = type(inst).__name__
            if kind == "Del":
                continue
            line = inst.loc.line
            target = getattr(inst, "target", None) if kind == "Assign" else None
            if target is not None and base(target.name) in names:
                name = base(target.name)
                t = _unliteral(typemap[target.name])
                value = inst.value
                if type(value).__name__ == "Var" and base(value.name) == name:  # a phi copy
                    out[name].copies.setdefault(line, []).append((_unliteral(typemap[value.name]), t))
                    if t not in out[name].types:
                        out[name].types.append(t)
                    continue
                out[name].stores.setdefault(line, []).append(t)
                if t not in out[name].types:
                    out[name].types.append(t)
            for var in inst.list_vars():
                if target is not None and var is target:
                    continue
                name = base(var.name)
                if name in names and var.name in typemap:
                    out[name].loads.setdefault(line, []).append(_unliteral(typemap[var.name]))
    return out


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
    """One type for all SSA versions of a name, when there is one: integers of any width merge into the widest
    integer type that holds every value (numba widens integer arithmetic to 64 bits anyway), tuples elementwise.
    None when the versions need separate C variables."""
    uniq = []
    for t in ts:
        t = _unliteral(t)
        if t not in uniq:
            uniq.append(t)
    if len(uniq) == 1:
        return uniq[0]
    if all(isinstance(t, types.BaseTuple) for t in uniq) and len({len(t) for t in uniq}) == 1:
        items = [_merge([t[i] for t in uniq]) for i in range(len(uniq[0]))]
        return None if any(i is None for i in items) else types.BaseTuple.from_types(items)
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
    # a numba type called as a function (float32(x)) is typed as its class; other types are function types
    called_type = isinstance(fn, (types.Number, types.Boolean))
    fnty = fn if isinstance(fn, types.Type) and not called_type else static_type(ctx, fn)
    if fnty is None:
        raise TypeError(f"numba has no type for {fn!r}")
    with cuda_typing():
        return ctx.resolve_function_type(fnty, tuple(argtypes), dict(kws or {}))


def static_type(ctx, obj):
    """numba's type of a Python object used in a kernel: a function, a dtype, or a CUDA stub such as
    ``cuda.atomic.add`` or ``cuda.popc``, which numba types through the ``cuda`` module's attributes."""

    with cuda_typing():
        try:
            return ctx.resolve_value_type(obj)
        except Exception:  # noqa: BLE001 - stubs have no typeof: below
            pass
        if isinstance(obj, type) and issubclass(obj, stubs.Stub):
            ctx.refresh()
            t = ctx.resolve_value_type(cuda)
            for part in obj.__qualname__.split("."):
                t = ctx.resolve_getattr(t, part) if t is not None else None
            return t
    return None
