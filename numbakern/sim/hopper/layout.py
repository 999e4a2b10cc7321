"""Where wgmma's operands lie: the matrix descriptors of shared-memory operands, and the register fragments of
register operands and accumulators, as the PTX ISA defines them ("Asynchronous Warpgroup Level Matrix Shared
Memory Layout", "Matrix Descriptor Format", "Register Fragments"). Pure functions of integers and numpy arrays:
the simulator gathers operands with them and the tests check them against the ISA's tables written out again.

**Matrix descriptor** (a 64-bit value)::

    bits  0-13  start address >> 4          bits 16-29  leading dimension byte offset (LBO) >> 4
    bits 32-45  stride dimension byte offset (SBO) >> 4
    bits 49-51  base offset (the simulator models 0: tiles that start on their swizzle pattern's boundary)
    bits 62-63  layout: 0 no swizzle ("interleave"), 1 the 128-byte swizzle, 2 64-byte, 3 32-byte

**An operand** is the ``mn × k`` matrix one wgmma reads (A: m = 64 rows; B: its n columns as rows), k being 32
bytes (16 16-bit or 8 tf32 elements). Its 16-byte pieces are found from the descriptor, in units of 16 bytes (T
elements, T = 16 / element bytes), ``W = swizzle / 16``:

- K-major (k contiguous; ``trans`` 0): element (i, j) at ``(i % 8) * R + (i // 8) * SBO + (j // T) * K2 + (j % T)``
  elements, where without a swizzle ``R = 16`` and ``K2 = LBO`` (8×16-byte core matrices), and with one
  ``R = swizzle`` (each of 8 rows a whole swizzled row) and ``K2 = 16`` (the two 16-byte pieces side by side; LBO
  unused);
- MN-major (mn contiguous; ``trans`` 1, 16-bit types only): without a swizzle ``(i // T) * SBO + (j % 8) * 16 +
  (j // 8) * LBO + (i % T)``; with one ``(i // T % W) * 16 + (i // T // W) * LBO + (j % 8) * swizzle + (j // 8) *
  SBO + (i % T)``: rows of ``swizzle`` bytes along mn, 8 of them per pattern, patterns SBO apart along k and
  ``W * T``-element panels LBO apart along mn.

The byte at ``start + offset`` then lies at ``swizzle_address(start + offset)`` (``numbakern.tensormap``).

**Register fragments** (thread ``t`` of the warpgroup: warp ``w = t // 32``, ``g = lane // 4``, ``q = lane % 4``):
A of m64nNk16 (.f16/.bf16) is four 32-bit registers with two elements each (lower column in the lower half): register
``r`` holds row ``16 w + g + 8 (r % 2)``, columns ``2 q + 8 (r // 2)`` and the next; A of m64nNk8 (.tf32) is four
registers of one element: register ``r`` holds row ``16 w + g + 8 (r % 2)``, column ``q + 4 (r // 2)``. The
float32 accumulators D (N / 2 registers): register ``i`` (``j = i // 4``, ``v = i % 4``) holds row ``16 w + g + 8 (v
// 2)``, column ``8 j + 2 q + v % 2``. Each warp's rows are exactly an ``mma.m16n8k16`` (``.m16n8k8``) fragment.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from ...tensormap import swizzle_address

WARPGROUP = 128
#: descriptor layout field -> swizzle bytes
LAYOUT_SWIZZLE = {0: 0, 1: 128, 2: 64, 3: 32}
SWIZZLE_LAYOUT = {v: k for k, v in LAYOUT_SWIZZLE.items()}
K_BYTES = 32  # one wgmma's k extent in bytes: 16 16-bit or 8 tf32 elements


@dataclass(frozen=True)
class MatrixDescriptor:
    start: int  # byte address in shared memory
    lbo: int  # leading dimension byte offset
    sbo: int  # stride dimension byte offset
    base_offset: int
    swizzle: int  # 0, 32, 64 or 128 bytes

    @classmethod
    def decode(cls, value: int) -> MatrixDescriptor:
        value = int(value) & 0xFFFFFFFFFFFFFFFF
        return cls(start=(value & 0x3FFF) << 4, lbo=((value >> 16) & 0x3FFF) << 4, sbo=((value >> 32) & 0x3FFF) << 4,
                   base_offset=(value >> 49) & 7, swizzle=LAYOUT_SWIZZLE[(value >> 62) & 3])

    def encode(self) -> int:
        return ((self.start >> 4) & 0x3FFF) | (((self.lbo >> 4) & 0x3FFF) << 16) | \
            (((self.sbo >> 4) & 0x3FFF) << 32) | ((self.base_offset & 7) << 49) | (SWIZZLE_LAYOUT[self.swizzle] << 62)

    def __str__(self) -> str:
        return (f"start {self.start:#x}, leading byte offset {self.lbo}, stride byte offset {self.sbo}, "
                f"{f'{self.swizzle}-byte swizzle' if self.swizzle else 'no swizzle'}"
                f"{f', base offset {self.base_offset}' if self.base_offset else ''}")


def operand_offsets(desc: MatrixDescriptor, rows: int, element_bytes: int, mn_major: bool) -> np.ndarray:
    """Byte offsets from ``desc.start`` (before the swizzle) of the ``rows × k`` operand's elements, shape
    ``(rows, k)`` with k = 32 bytes of elements; see the module's formulas."""
    k = K_BYTES // element_bytes
    per16 = 16 // element_bytes
    i = np.arange(rows)[:, None]
    j = np.arange(k)[None, :]
    s = desc.swizzle
    if not mn_major:
        row = 16 if s == 0 else s
        k2 = desc.lbo if s == 0 else 16
        return (i % 8) * row + (i // 8) * desc.sbo + (j // per16) * k2 + (j % per16) * element_bytes
    chunk = i // per16
    within = (i % per16) * element_bytes
    if s == 0:
        return chunk * desc.sbo + (j % 8) * 16 + (j // 8) * desc.lbo + within
    w = s // 16
    return (chunk % w) * 16 + (chunk // w) * desc.lbo + (j % 8) * s + (j // 8) * desc.sbo + within


def operand_addresses(desc: MatrixDescriptor, rows: int, element_bytes: int, mn_major: bool) -> np.ndarray:
    """Shared-memory byte addresses of the operand's elements (swizzle applied), shape ``(rows, k)``."""
    return swizzle_address(desc.start + operand_offsets(desc, rows, element_bytes, mn_major), desc.swizzle)


@cache
def a_fragment(tf32: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, cols)``, each shaped (128 threads, elements): the A element each thread's registers hold, in
    register order (16-bit: two per register, low half first: 8 elements; tf32: 4)."""
    t = np.arange(WARPGROUP)[:, None]
    w, lane = t // 32, t % 32
    g, q = lane // 4, lane % 4
    if tf32:
        r = np.arange(4)[None, :]
        return 16 * w + g + 8 * (r % 2), q + 4 * (r // 2)
    e = np.arange(8)[None, :]
    r, half = e // 2, e % 2
    return 16 * w + g + 8 * (r % 2), 2 * q + half + 8 * (r // 2)


@cache
def d_fragment(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, cols)``, each (128 threads, n / 2 registers): the D element each accumulator register holds."""
    t = np.arange(WARPGROUP)[:, None]
    w, lane = t // 32, t % 32
    g, q = lane // 4, lane % 4
    i = np.arange(n // 2)[None, :]
    j, v = i // 4, i % 4
    return 16 * w + g + 8 * (v // 2), 8 * j + 2 * q + v % 2


__all__ = ["K_BYTES", "LAYOUT_SWIZZLE", "MatrixDescriptor", "WARPGROUP", "a_fragment", "d_fragment",
           "operand_addresses", "operand_offsets"]
