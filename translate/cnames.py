"""Numba types -> C type names, and the C rules (integer promotion, usual arithmetic conversions) the code
generator uses to decide where a cast keeps Numba's meaning."""

from __future__ import annotations

from numba.cuda import types

#: numba scalar type name -> C type
C_NAMES = {
    "bool": "bool", "boolean": "bool",
    "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
    "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
    "float32": "float", "float64": "double",
}

_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}


def scalar_key(t) -> str | None:
    """The scalar kind of a numba type ('int64', 'float32', 'bool', ...), literals as their value type."""
    if isinstance(t, types.Literal):
        t = t.literal_type
    if isinstance(t, types.Boolean):
        return "bool"
    if isinstance(t, (types.Integer, types.Float)):
        return str(t)
    return None


def c_name(key: str) -> str:
    return C_NAMES[key]


def is_int(key: str | None) -> bool:
    return key in _INT_BITS


def is_float(key: str | None) -> bool:
    return key in ("float32", "float64")


def is_signed(key: str) -> bool:
    return key.startswith("int")


def _promote_int(key: str) -> str:
    if key == "bool" or (key in _INT_BITS and _INT_BITS[key] < 32):
        return "int32"
    return key


def c_arith(a: str, b: str) -> str:
    """C's usual arithmetic conversions for operand types ``a`` and ``b`` (as scalar keys)."""
    if "float64" in (a, b):
        return "float64"
    if "float32" in (a, b):
        return "float32"
    a, b = _promote_int(a), _promote_int(b)
    if a == b:
        return a
    sa, sb = is_signed(a), is_signed(b)
    if sa == sb:
        return a if _INT_BITS[a] >= _INT_BITS[b] else b
    s, u = (a, b) if sa else (b, a)
    if _INT_BITS[u] >= _INT_BITS[s]:
        return u
    return s  # the signed type is wider: it represents every value of the unsigned one


def numba_type(key: str):
    return {"bool": types.boolean}.get(key) or getattr(types, key)
