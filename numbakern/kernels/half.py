"""16-bit inputs, bf16 held as uint16 bit patterns (``numbakern.launch.BFLOAT16``) or float16: random ones for the
registry's cases, and their float64 values for the references."""

from __future__ import annotations

import numpy as np

from ..mma import formats
from ..registry import random_array


def to16(x, f16: bool) -> np.ndarray:
    """float32 ``x`` rounded to float16 (kept finite) or to bf16 bit patterns."""
    return np.clip(x, -60000.0, 60000.0).astype(np.float16) if f16 else formats.f32_to_bf16_bits(x)


def random16(rng, shape, dist: str, f16: bool) -> np.ndarray:
    """A random array of float16 values or bf16 bit patterns (float32 draws rounded), never all zeros."""
    return to16(random_array(rng, shape, np.float32, dist), f16)


def values(x) -> np.ndarray:
    """The float64 values of bf16 bit patterns (uint16) or of float16 or float32 values."""
    x = np.asarray(x)
    return (formats.bf16_bits_to_f32(x) if x.dtype == np.uint16 else x).astype(np.float64)
