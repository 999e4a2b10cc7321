"""``CExpr``: a generated C expression with its Numba type and its C type, and the cast rules.

The C type matters because C's promotions differ from Numba's: ``threadIdx.x`` is ``unsigned int`` in C and
``int32`` in Numba, ``int32 * int32`` is 32-bit in C and ``int64`` in Numba. ``arith_casts`` inserts the fewest
casts that make C compute in the type Numba computes in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..cnames import c_arith, c_name, is_complex, is_int, is_signed

# C precedence: higher binds tighter
PRIMARY, UNARY, MUL, ADD, SHIFT, REL, EQ, BAND, BXOR, BOR, LAND, LOR, COND = 16, 15, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3

BINARY_PREC = {"*": MUL, "/": MUL, "%": MUL, "+": ADD, "-": ADD, "<<": SHIFT, ">>": SHIFT, "<": REL, "<=": REL,
               ">": REL, ">=": REL, "==": EQ, "!=": EQ, "&": BAND, "^": BXOR, "|": BOR, "&&": LAND, "||": LOR}


@dataclass
class CExpr:
    code: str
    key: str | None          # C type of the expression, as a scalar key ('uint32' for threadIdx.x)
    nbt: Any                 # Numba's type of the Python expression
    prec: int = PRIMARY
    nonneg: bool = False     # provably >= 0 (integers)
    pure: bool = True        # no side effects: may be evaluated twice or not at all
    deps: frozenset = frozenset()  # integer parameters the non-negativity proof assumed >= 0
    literal: Any = None      # the Python value for literals
    infix: tuple | None = field(default=None, repr=False)  # (left code, op, right code) for compound assignment
    present: str | None = None  # an Optional value: the C condition that it is there (not None)


@dataclass
class TupleVal:
    items: list
    fields: tuple = ()  # a namedtuple's field names (``p.x`` is the item of field ``x``)


@dataclass
class RangeVal:
    """``range(start, stop, step)`` as a value (``odd = range(1, n, 2)``): its bounds, in the type it counts in."""
    start: CExpr
    stop: CExpr
    step: CExpr


@dataclass
class Static:
    """A compile-time Python object: a module, a CUDA stub, a function, a device function."""
    obj: Any


def paren(e: CExpr, prec: int) -> str:
    return e.code if e.prec >= prec else f"({e.code})"


def cast(e: CExpr, key: str | None, nbt=None) -> CExpr:
    if e.key == key:
        return e
    if key is None:
        raise ValueError(f"{e.code} converted to no C type")
    if e.literal is not None and not isinstance(e.literal, bool):
        if isinstance(e.literal, int) and key in C_INT_KEYS and _fits(e.literal, key):
            # an integer literal converted: the literal cast once (never `(uint64_t)(uint32_t)11`)
            return CExpr(f"({c_name(key)}){e.literal}" if e.literal >= 0 else f"({c_name(key)})({e.literal})", key,
                         nbt or e.nbt, UNARY, e.literal >= 0 or key.startswith("u"), literal=e.literal)
        if key == "float32" and isinstance(e.literal, (int, float)):
            return CExpr(float_literal(float(e.literal), f32=True), key, nbt or e.nbt, literal=e.literal,
                         nonneg=e.nonneg)
        if key == "float64" and isinstance(e.literal, (int, float)):
            return CExpr(float_literal(float(e.literal)), key, nbt or e.nbt, literal=e.literal, nonneg=e.nonneg)
    if is_complex(key):
        return _to_complex(e, key, nbt)
    # an unsigned value is never negative: numba does not wrap an unsigned index around, and neither does the C
    unsigned = key.startswith("uint")
    return CExpr(f"({c_name(key)}){paren(e, UNARY)}", key, nbt or e.nbt, UNARY, e.nonneg or unsigned, e.pure, e.deps)


C_INT_KEYS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def _fits(v: int, key: str) -> bool:
    bits = int(key.lstrip("uint"))
    lo, hi = (0, 2 ** bits) if key.startswith("u") else (-(2 ** (bits - 1)), 2 ** (bits - 1))
    return lo <= v < hi


def _to_complex(e: CExpr, key: str, nbt) -> CExpr:
    """A number as a cuComplex value: real -> (x, 0), complex64 <-> complex128 elementwise (as numba converts)."""
    if isinstance(e.literal, complex) or (e.literal is not None and not isinstance(e.literal, bool)):
        f32 = key == "complex64"
        z = complex(e.literal)
        maker = "make_cuFloatComplex" if f32 else "make_cuDoubleComplex"
        return CExpr(f"{maker}({float_literal(z.real, f32)}, {float_literal(z.imag, f32)})", key, nbt or e.nbt,
                     PRIMARY, literal=e.literal)
    if e.key == "complex64" and key == "complex128":
        return CExpr(f"cuComplexFloatToDouble({e.code})", key, nbt or e.nbt, PRIMARY, pure=e.pure)
    if e.key == "complex128" and key == "complex64":
        return CExpr(f"cuComplexDoubleToFloat({e.code})", key, nbt or e.nbt, PRIMARY, pure=e.pure)
    part = "float32" if key == "complex64" else "float64"
    real = cast(e, part)
    zero = float_literal(0.0, f32=part == "float32")
    maker = "make_cuFloatComplex" if key == "complex64" else "make_cuDoubleComplex"
    return CExpr(f"{maker}({real.code}, {zero})", key, nbt or e.nbt, PRIMARY, pure=e.pure)


#: infinities and NaN by their bits: NVRTC has no INFINITY/NAN macros (no host headers), and these are what numba
#: stores for math.inf, -math.inf and math.nan
NONFINITE = {("inf", True): "__int_as_float(0x7f800000)", ("-inf", True): "__int_as_float(0xff800000)",
             ("nan", True): "__int_as_float(0x7fc00000)",
             ("inf", False): "__longlong_as_double(0x7ff0000000000000LL)",
             ("-inf", False): "__longlong_as_double(0xfff0000000000000ULL)",
             ("nan", False): "__longlong_as_double(0x7ff8000000000000LL)"}


def float_literal(v: float, f32: bool = False) -> str:
    text = repr(float(v))
    if text in ("inf", "-inf", "nan"):
        return NONFINITE[(text, f32)]
    if "e" not in text and "." not in text:
        text += ".0"
    return text + ("f" if f32 else "")


def arith_casts(left: CExpr, right: CExpr, target: str | None) -> tuple[CExpr, CExpr]:
    """Cast operands (left first) until C's usual arithmetic conversions give ``target``."""
    if left.key is None or right.key is None:
        return left, right
    if c_arith(left.key, right.key) == target:
        return left, right
    if left.literal is not None and right.literal is None:
        right = cast(right, target)
        if c_arith(left.key, right.key) == target:
            return left, right
    left = cast(left, target)
    if c_arith(left.key, right.key) != target:
        right = cast(right, target)
    return left, right


def compare_casts(left: CExpr, right: CExpr, target: str | None) -> tuple[CExpr, CExpr]:
    """Casts for a comparison Numba performs in ``target``: none where C's comparison gives the same answer."""
    if left.key is None or right.key is None:
        return left, right
    c = c_arith(left.key, right.key)
    if c == target:
        return left, right
    if is_int(left.key) and is_int(right.key):
        if (left.nonneg and right.nonneg and not (left.deps or right.deps)) or is_signed(c):
            return left, right  # value-preserving: no operand changes sign or is truncated
    return arith_casts(left, right, target)
