"""The warp-level tensor-core instructions, once all 32 lanes have arrived: ``mma.sync`` and ``ldmatrix``.

The scheduler hands these functions the warp's lanes (in lane order) and what each lane brought (its fragment
registers, or the shared-memory row its address names) and gives each lane back its part of the result, laid out
as the PTX ISA lays out fragments (``numbakern.mma.layout``).

**Rounding model of mma.** ``D[i, j] = round_f32(C[i, j] + sum_k A[i, k] * B[k, j])``: every product is exact, the
k products and C are added exactly, and the sum is rounded once to float32, to nearest with ties to even. The
hardware's internal order and width of the additions are not documented (measurements show products kept exact
and the sum aligned to the largest term with truncation); the model is the one result that depends on no order,
it is bit-identical to the GPU wherever the exact sum is a float32 (small integers, the GPU test), and elsewhere it
differs from the GPU by at most a few units in the last place of the largest term, never more than sequential
float32 additions would. A float64 sum is not enough to be exact (bf16 products span 2**-266 .. 2**256), so each
element is summed with ``math.fsum`` (correctly rounded to float64) and a float64 result that falls exactly on a
float32 rounding boundary is settled by the sign of the float64 rounding error. Infinities and NaNs propagate as
in IEEE arithmetic; a NaN result is the canonical 0x7FFFFFFF.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

from ..mma import formats
from ..mma.layout import SHAPES, MmaShape, a_elements, b_elements, c_elements, ldmatrix_elements

WARP = 32
_NAN32 = np.uint32(0x7FFFFFFF).view(np.float32)
_F32_MAX = float(np.finfo(np.float32).max)
_F32_TOP = 2.0**128  # where the float32 range ends: the rounding boundary past FLT_MAX is its midpoint with this


@cache
def _positions(shape: MmaShape):
    """Per operand, the (lane, element) -> (row, col) maps as index arrays: ``rows[lane, e], cols[lane, e]``."""
    a = np.array([a_elements(shape, lane) for lane in range(WARP)])
    b = np.array([b_elements(shape, lane) for lane in range(WARP)])
    c = np.array([c_elements(shape, lane) for lane in range(WARP)])
    return a, b, c


def _values(shape: MmaShape, regs: np.ndarray) -> np.ndarray:
    """A or B register contents (one row per lane) as the float64 values of their elements, in element order."""
    if shape.packed:
        bits = regs.astype(np.uint32)
        halves = np.stack([bits & 0xFFFF, bits >> 16], axis=-1).reshape(bits.shape[0], -1)
        to_f32 = formats.bf16_bits_to_f32 if shape.operand == "bf16" else formats.f16_bits_to_f32
        return np.asarray(to_f32(halves), dtype=np.float64)
    return np.asarray(formats.tf32_operand(regs.astype(np.float32)), dtype=np.float64)


def gather(shape: MmaShape, a_regs, b_regs, c_regs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The warp's A (m x k), B (k x n) and C (m x n) as float64, from every lane's registers (lane-ordered rows)."""
    with np.errstate(invalid="ignore"):  # a signalling NaN among the registers is a value like any other
        return _gather(shape, a_regs, b_regs, c_regs)


def _gather(shape: MmaShape, a_regs, b_regs, c_regs):
    pa, pb, pc = _positions(shape)
    a = np.empty((shape.m, shape.k))
    b = np.empty((shape.k, shape.n))
    c = np.empty((shape.m, shape.n))
    a[pa[..., 0], pa[..., 1]] = _values(shape, np.asarray(a_regs))
    b[pb[..., 0], pb[..., 1]] = _values(shape, np.asarray(b_regs))
    c[pc[..., 0], pc[..., 1]] = np.asarray(c_regs, dtype=np.float32).astype(np.float64)
    return a, b, c


def exact_dot_f32(terms) -> np.float32:
    """The float32 nearest (ties to even) to the exact sum of ``terms`` (float64 values, each exact)."""
    terms = list(terms)
    try:
        s = math.fsum(terms)
    except (OverflowError, ValueError):  # infinities of both signs, or an intermediate past float64's range
        s = sum(terms)
    if math.isnan(s):
        return _NAN32
    with np.errstate(over="ignore"):
        f = np.float32(s)
    value = _as_float(f)
    if value == s or math.isinf(s):
        return f
    # s lies between two float32s: only when it is exactly their midpoint can the part of the exact sum that
    # float64 rounded away decide which way float32 rounds
    toward = np.float32(math.inf) if value < s else np.float32(-math.inf)
    other = np.nextafter(f, toward) if not math.isinf(f) else np.float32(math.copysign(_F32_MAX, s))
    if s != (value + _as_float(other)) / 2:
        return f
    rest = math.fsum(terms + [-s])
    if rest == 0:
        return f  # a true tie: numpy rounded it to even
    return max(f, other) if rest > 0 else min(f, other)


def _as_float(f: np.float32) -> float:
    """A float32's value, with the infinities standing for the boundary past the largest float32 (2**128)."""
    return math.copysign(_F32_TOP, f) if math.isinf(f) else float(f)


def mma(shape: MmaShape, a_regs, b_regs, c_regs) -> np.ndarray:
    """``D = A @ B + C`` with the rounding model above; D as the lanes' registers (32 x 4 float32)."""
    a, b, c = gather(shape, a_regs, b_regs, c_regs)
    with np.errstate(invalid="ignore"):  # inf * 0
        products = a[:, None, :] * b.T[None, :, :]  # (m, n, k): exact in float64
    d = np.empty((shape.m, shape.n), np.float32)
    if np.isfinite(products).all() and np.isfinite(c).all():
        for i in range(shape.m):
            for j in range(shape.n):
                d[i, j] = exact_dot_f32([*products[i, j].tolist(), float(c[i, j])])
    else:
        with np.errstate(invalid="ignore", over="ignore"):
            total = products.sum(axis=2) + c
            d[...] = np.where(np.isnan(total), _NAN32, total.astype(np.float32))
    _, _, pc = _positions(shape)
    return d[pc[..., 0], pc[..., 1]]


def mma_collective(shape_name: str):
    """The scheduler's completion function for one mma variant: operands are ``(a_regs, b_regs, c_regs)``."""
    shape = SHAPES[shape_name]

    def complete(lanes, operands) -> list:
        a = [op[0] for op in operands]
        b = [op[1] for op in operands]
        c = [op[2] for op in operands]
        d = mma(shape, a, b, c)
        return [tuple(d[t.lane]) for t in lanes]

    return complete


def ldmatrix(rows_by_lane, count: int, trans: bool) -> list[tuple[int, ...]]:
    """Each lane's ``count`` registers, from the rows the address lanes read (``rows_by_lane[lane]``: eight 16-bit
    patterns, or None for a lane whose address is not used)."""
    out = []
    for lane in range(WARP):
        regs = []
        for j in range(count):
            (r0, c0), (r1, c1) = ldmatrix_elements(lane, trans)
            lo = rows_by_lane[8 * j + r0][c0]
            hi = rows_by_lane[8 * j + r1][c1]
            regs.append((int(lo) & 0xFFFF) | ((int(hi) & 0xFFFF) << 16))
        out.append(tuple(regs))
    return out


def ldmatrix_collective(count: int, trans: bool):
    def complete(lanes, operands) -> list:
        rows = [None] * WARP
        for t, row in zip(lanes, operands):
            rows[t.lane] = row
        regs = ldmatrix(rows, count, trans)
        return [regs[t.lane] for t in lanes]

    return complete


#: scheduler kind -> completion function; every one of them needs the whole warp, converged, at one instruction
COLLECTIVES = {
    **{f"mma.{name}": mma_collective(name) for name in SHAPES},
    **{f"ldmatrix.x{n}{'.trans' if trans else ''}": ldmatrix_collective(n, trans)
       for n in (1, 2, 4) for trans in (False, True)},
}
