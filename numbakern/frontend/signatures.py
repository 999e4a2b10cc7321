"""Kernel signatures as numba reads them: ``"void(float32[:, ::1], int64)"`` to numba types and back.

``parse_signature`` is numba's own reading (``sigutils``), with names looked up as numba does and every refusal a
``SignatureError`` that says what is valid; ``signature_text`` and ``type_text`` write a signature the way a user
writes it (the manifest records it so).
"""

from __future__ import annotations

import difflib
import importlib

from numba.cuda import types
from numba.cuda.core import sigutils


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
