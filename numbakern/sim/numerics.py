"""Numba's scalar types in the simulator: which Python values stand for them, and the conversions between them.

A typed kernel (``typing``) keeps every value in the *canonical* form of its Numba type, so that Python's and
numpy's own arithmetic on those values computes what Numba computes:

- every integer type (``int8``..``uint64``): a Python ``int`` inside the type's range. Integer arithmetic on
  Python ints is exact, so ``+ - * & | ^ << ~`` may run unreduced (*raw*) and be reduced modulo 2**bits only
  where the value is looked at (a comparison, a division, a store, a call, an assignment): the same result as
  wrapping after every operation, because those operations commute with the reduction;
- ``float64``: a Python ``float`` or ``np.float64``; ``float32``/``float16``: ``np.float32``/``np.float16``;
- ``bool``: ``bool`` or ``np.bool_``.

The functions here are what the rewritten kernel calls where a value must be brought into canonical form.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np


@dataclass(frozen=True)
class Num:
    """A Numba scalar type: ``kind`` is ``i`` (signed), ``u`` (unsigned), ``f``, ``b`` (bool) or ``c``."""

    name: str
    kind: str
    bits: int

    @property
    def is_int(self) -> bool:
        return self.kind in "iu"

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def lo(self) -> int:
        return -(1 << (self.bits - 1)) if self.kind == "i" else 0

    @property
    def hi(self) -> int:
        return (1 << (self.bits - 1)) - 1 if self.kind == "i" else (1 << self.bits) - 1

    def holds(self, other: Num) -> bool:
        """Every value of ``other`` (an integer type) is a value of this one."""
        return other.is_int and self.is_int and self.lo <= other.lo and other.hi <= self.hi

    def __str__(self) -> str:
        return self.name


NUMS = {
    n.name: n
    for n in [Num(f"int{b}", "i", b) for b in (8, 16, 32, 64)]
    + [Num(f"uint{b}", "u", b) for b in (8, 16, 32, 64)]
    + [Num("float16", "f", 16), Num("float32", "f", 32), Num("float64", "f", 64)]
    + [Num("complex64", "c", 64), Num("complex128", "c", 128), Num("bool", "b", 1)]
}
INT64, UINT64, FLOAT64, FLOAT32, BOOL = (NUMS[n] for n in ("int64", "uint64", "float64", "float32", "bool"))


def num(description) -> Num | None:
    """The ``Num`` of a fact's type description (``{"t": "int32"}``), or None for anything not a number."""
    if not description:
        return None
    return NUMS.get(description.get("t"))


# -- integer reduction ---------------------------------------------------------------------------------------------


def _signed(bits: int):
    half, mask = 1 << (bits - 1), (1 << bits) - 1
    lo, hi = -half, half - 1

    def wrap(v):
        return v if lo <= v <= hi else ((v + half) & mask) - half

    wrap.__name__ = f"wrap_int{bits}"
    return wrap


def _unsigned(bits: int):
    mask = (1 << bits) - 1

    def wrap(v):
        return v & mask

    wrap.__name__ = f"wrap_uint{bits}"
    return wrap


#: Python int (any value) -> the canonical value of the type: two's-complement wrap-around
WRAP = {f"int{b}": _signed(b) for b in (8, 16, 32, 64)} | {f"uint{b}": _unsigned(b) for b in (8, 16, 32, 64)}


def _from_float(t: Num):
    lo, hi = t.lo, t.hi

    def convert(v):
        # what the GPU's cvt.rzi does for Numba's float-to-int casts: truncate, saturate, NaN to 0. Compared as a
        # Python float (exact for every float width): numpy would convert the bound to a float16 argument's type,
        # overflowing with a RuntimeWarning
        v = float(v)
        if v != v:
            return 0
        if v >= hi:
            return hi
        if v <= lo:
            return lo
        return int(v)

    convert.__name__ = f"float_to_{t.name}"
    return convert


FROM_FLOAT = {name: _from_float(NUMS[name]) for name in WRAP}


def _anything_to(t: Num):
    """For values whose form is not known statically (a name with several types, an unknown call's result)."""
    if t.is_int:
        wrap, from_float = WRAP[t.name], FROM_FLOAT[t.name]

        def convert(v):
            if isinstance(v, (float, np.floating)):
                return from_float(v)
            return wrap(int(v))
    elif t.name == "float64":
        convert = float
    elif t.name == "float32":
        convert = np.float32
    elif t.name == "float16":
        convert = np.float16
    elif t.name == "bool":
        convert = bool
    elif t.name == "complex64":  # complex(x, y) of two float32 is a complex64 in numba, a complex128 in Python
        convert = np.complex64
    elif t.name == "complex128":
        convert = complex
    else:
        return None
    return convert


TO = {name: f for name, f in ((n, _anything_to(t)) for n, t in NUMS.items()) if f is not None}


def _bit_operation(name: str, t: Num):
    """``cuda.popc/brev/clz/ffs`` on a canonical value of ``t``: on its ``t.bits``-bit pattern, as the GPU does
    (a negative int32 has 32 bits set, not Python's infinitely many)."""
    bits, mask = t.bits, (1 << t.bits) - 1
    wrap = WRAP[t.name]
    if name == "popc":
        def op(v):
            return bin(v & mask).count("1")
    elif name == "brev":
        def op(v):
            return wrap(int(format(v & mask, f"0{bits}b")[::-1], 2))
    elif name == "clz":
        def op(v):
            return bits - (v & mask).bit_length()
    else:  # ffs: the 1-based position of the lowest set bit, 0 if none
        def op(v):
            v &= mask
            return (v & -v).bit_length()
    op.__name__ = f"{name}_{t.name}"
    return op


BIT_OPERATIONS = {(name, t): _bit_operation(name, NUMS[t]) for name in ("popc", "brev", "clz", "ffs") for t in WRAP}


def round_ndigits(x, ndigits):
    """``round(x, ndigits)`` of a float as numba-cuda computes it (CPython's fallback algorithm, in float64)."""
    x, ndigits = float(x), int(ndigits)
    if math.isinf(x) or math.isnan(x):
        return x
    if ndigits >= 0:
        if ndigits > 22:
            pow1, pow2 = 10.0 ** (ndigits - 22), 1e22
        else:
            pow1, pow2 = 10.0**ndigits, 1.0
        y = (x * pow1) * pow2
        if math.isinf(y):
            return x
    else:
        pow1 = 10.0 ** (-ndigits)
        y = x / pow1
    z = float(round(y))
    if math.fabs(y - z) == 0.5:
        z = 2.0 * round(y / 2.0)  # halfway between two integers: to even
    return (z / pow2) / pow1 if ndigits >= 0 else z * pow1


def round_ndigits_float32(x, ndigits):
    return np.float32(round_ndigits(x, ndigits))


def float32(v):
    return np.float32(v)


def float16(v):
    return np.float16(v)


def fma(a, b, c):
    """``cuda.fma``: a fused multiply-add, rounded once as on the GPU."""
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    if isinstance(a, np.float32) and isinstance(b, np.float32) and isinstance(c, np.float32):
        return np.float32(_round_to_float32(exact))
    return float(exact)


def _round_to_float32(x: Fraction) -> float:
    """``x`` rounded to the nearest float32 (ties to even), returned as a float: a single rounding."""
    if x == 0:
        return 0.0
    with np.errstate(over="ignore"):
        near = float(np.float32(float(x)))  # within one float32 ulp of the answer
    if near in (float("inf"), float("-inf")):
        return near
    candidates = {near, float(np.nextafter(np.float32(near), np.float32(np.inf))),
                  float(np.nextafter(np.float32(near), np.float32(-np.inf)))}
    best = min(candidates, key=lambda c: (abs(Fraction(c) - x), int(np.float32(c).view(np.uint32)) & 1))
    return best
