"""The 16- and 19-bit floating-point formats of the tensor cores, as bit patterns, on the host and in the simulator.

numpy has float16 but no bfloat16 and no tf32, so the simulator and the host hold them as bits:

- **bf16**: the top 16 bits of a float32 (1 sign, 8 exponent, 7 mantissa bits), held as ``uint16``;
- **f16**: IEEE binary16, held as ``uint16`` (its bits) or ``np.float16`` (its value);
- **tf32**: a float32 whose low 13 mantissa bits are zero (1 sign, 8 exponent, 10 mantissa bits), held as float32.

Every function takes scalars or arrays and rounds the way the PTX instruction it models does:

==============================  ====================================  =============================================
function                        PTX                                   rounding
==============================  ====================================  =============================================
``f32_to_bf16_bits``            ``cvt.rn.bf16.f32``                   nearest, ties to even; NaN -> 0x7FFF
``f32_to_f16_bits``             ``cvt.rn.f16.f32``                    nearest, ties to even; NaN -> 0x7FFF
``bf16_bits_to_f32``            (a 16-bit shift: exact)
``f16_bits_to_f32``             ``cvt.f32.f16`` (exact)
``f32_to_tf32``                 ``cvt.rna.tf32.f32``                  nearest, ties *away from zero*
``tf32_operand``                what ``mma .tf32`` reads of a b32     the low 13 bits ignored (truncation)
``split_tf32``                  3xTF32: ``big = tf32(x)``,            ``big + small`` carries 21 of float32's 24
                                ``small = tf32(x - big)``             significant bits
==============================  ====================================  =============================================
"""

from __future__ import annotations

import math

import numpy as np

#: what cvt.rn.{bf16,f16}.f32 gives for a NaN (the canonical NaN of each format)
BF16_NAN = 0x7FFF
F16_NAN = 0x7FFF
#: the mantissa bits tf32 drops from a float32
TF32_DROPPED_BITS = 13
_TF32_MASK = (0xFFFFFFFF << TF32_DROPPED_BITS) & 0xFFFFFFFF
#: a float32's exponent bits: all set in an infinity or a NaN
_F32_EXPONENT = 0x7F800000


def _f32_bits(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32).view(np.uint32)


def _scalar_or_array(result: np.ndarray, like):
    return result[()] if np.ndim(like) == 0 else result


def f32_to_bf16_bits(x):
    """float32 -> bf16 bits, rounded to nearest even (``cvt.rn.bf16.f32``); NaN becomes the canonical 0x7FFF."""
    bits = _f32_bits(x).astype(np.uint64)
    # round to nearest even on the 16 bits that go: add 0x7FFF plus the lowest kept bit, then drop them
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    return _scalar_or_array(np.where(nan, np.uint16(BF16_NAN), rounded).astype(np.uint16), x)


def bf16_bits_to_f32(bits):
    """bf16 bits -> float32 (exact: the bits become the top half of a float32)."""
    wide = (np.asarray(bits).astype(np.uint32) & 0xFFFF) << 16
    return _scalar_or_array(wide.astype(np.uint32).view(np.float32), bits)


def f32_to_f16_bits(x):
    """float32 -> IEEE half bits, rounded to nearest even (``cvt.rn.f16.f32``); NaN becomes 0x7FFF."""
    x32 = np.asarray(x, dtype=np.float32)
    with np.errstate(over="ignore"):
        half = x32.astype(np.float16).view(np.uint16)  # numpy's float32 -> float16 rounds to nearest even
    return _scalar_or_array(np.where(np.isnan(x32), np.uint16(F16_NAN), half).astype(np.uint16), x)


def f16_bits_to_f32(bits):
    """IEEE half bits -> float32 (exact)."""
    half = (np.asarray(bits).astype(np.uint32) & 0xFFFF).astype(np.uint16).view(np.float16)
    return _scalar_or_array(half.astype(np.float32), bits)


def f32_to_tf32(x):
    """float32 -> tf32 (a float32 with its low 13 bits zero), rounded to nearest with ties away from zero, as
    ``cvt.rna.tf32.f32`` does. Infinities and NaNs pass through; a value that rounds past the largest tf32 becomes
    infinity."""
    if type(x) is np.float32:  # the simulator's scalars: the same rounding on a Python int, no array made
        bits = int(x.view(np.uint32))
        return x if bits & _F32_EXPONENT == _F32_EXPONENT else np.uint32(_round_to_tf32(bits)).view(np.float32)
    x32 = np.asarray(x, dtype=np.float32)
    rounded = _round_to_tf32(x32.view(np.uint32).astype(np.uint64)).astype(np.uint32)
    special = ~np.isfinite(x32)
    out = np.where(special, x32.view(np.uint32), rounded).astype(np.uint32).view(np.float32)
    return _scalar_or_array(out, x)


def _round_to_tf32(bits):
    """The tf32 bits of finite float32 ``bits`` (an int, or an array wide enough for the carry): adding half of the
    dropped range to the magnitude bits rounds half away from zero (the sign bit is untouched: a carry out of the
    exponent lands on infinity, never on the sign)."""
    return (bits + (1 << (TF32_DROPPED_BITS - 1))) & _TF32_MASK


def tf32_operand(x):
    """What an ``mma`` with ``.tf32`` operands reads of a 32-bit register: its top 19 bits (the low 13 are
    ignored). Values made by ``f32_to_tf32`` pass unchanged."""
    bits = _f32_bits(x) & _TF32_MASK
    return _scalar_or_array(bits.astype(np.uint32).view(np.float32), x)


def split_tf32(x):
    """The 3xTF32 split of a float32: ``big = tf32(x)``, ``small = tf32(x - big)`` (the subtraction is exact in
    float32). ``a*b ~ big_a*big_b + big_a*small_b + small_a*big_b`` then keeps float32's accuracy."""
    if type(x) is np.float32 and math.isfinite(x):  # the simulator's scalars; x - big is exact in float64 too
        big = f32_to_tf32(x)
        return big, f32_to_tf32(np.float32(float(x) - float(big)))
    x32 = np.asarray(x, dtype=np.float32)
    big = np.asarray(f32_to_tf32(x32), dtype=np.float32)
    with np.errstate(invalid="ignore"):
        small = np.asarray(f32_to_tf32((x32 - big).astype(np.float32)), dtype=np.float32)
    return _scalar_or_array(big, x), _scalar_or_array(small, x)


def pack_b16x2(lo, hi):
    """Two 16-bit patterns in one 32-bit register: ``lo`` in bits 0-15, ``hi`` in bits 16-31 (the lower-indexed
    element of a fragment pair goes in the lower half, as the PTX ISA lays out ``.f16x2``/``.bf16x2``)."""
    packed = (np.asarray(lo).astype(np.uint32) & 0xFFFF) | ((np.asarray(hi).astype(np.uint32) & 0xFFFF) << 16)
    return _scalar_or_array(packed.astype(np.uint32), lo)


def unpack_b16x2(packed):
    """``(lo, hi)``: the two 16-bit patterns of a 32-bit register."""
    p = np.asarray(packed).astype(np.uint64) & 0xFFFFFFFF
    return (_scalar_or_array((p & 0xFFFF).astype(np.uint16), packed),
            _scalar_or_array((p >> 16).astype(np.uint16), packed))


__all__ = [
    "BF16_NAN", "F16_NAN", "TF32_DROPPED_BITS", "bf16_bits_to_f32", "f16_bits_to_f32", "f32_to_bf16_bits",
    "f32_to_f16_bits", "f32_to_tf32", "pack_b16x2", "split_tf32", "tf32_operand", "unpack_b16x2",
]
