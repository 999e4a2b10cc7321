"""Integer value ranges, the one place that knows them: the bounds the GPU gives CUDA's built-in values, and
interval arithmetic on exact integers (Python ints: no wraparound here; a caller checks a result against its type).

The simulator's typed rewrite (``numbakern.sim.typed``) tracks the bounds of every integer it computes with these,
to know where Numba's wraparound cannot happen; the translator's value ranges (``translate.codegen.valueflow``)
prove indices non-negative and arithmetic free of overflow with them. An unknown bound is ``None`` in
``lower``/``upper`` below (``-inf``/``+inf``), while the simulator's own tuples use ``-(2**200)``/``2**200``.
"""

from __future__ import annotations

import ast

#: integer attributes with known ranges (the values a GPU allows)
ATTRIBUTE_BOUNDS = {
    ("threadIdx", "x"): (0, 1023), ("threadIdx", "y"): (0, 1023), ("threadIdx", "z"): (0, 63),
    ("blockDim", "x"): (1, 1024), ("blockDim", "y"): (1, 1024), ("blockDim", "z"): (1, 64),
    ("blockIdx", "x"): (0, 2**31 - 1), ("blockIdx", "y"): (0, 65534), ("blockIdx", "z"): (0, 65534),
    ("gridDim", "x"): (1, 2**31 - 1), ("gridDim", "y"): (1, 65535), ("gridDim", "z"): (1, 65535),
}
NAME_BOUNDS = {"laneid": (0, 31), "warpsize": (32, 32)}
#: an array extent or size: at most 2**48 elements (the GPU's virtual address space)
EXTENT_BOUNDS = (0, 2**48)
#: a global thread index (cuda.grid) and the grid's size (cuda.gridsize)
GRID_BOUNDS = (0, (2**31 - 1) * 1024 + 1023)

UNBOUNDED = 2**200


def ring_bounds(kind, llo, lhi, rlo, rhi) -> tuple[int, int]:
    """Bounds of ``left op right`` for + - * & | ^ << of operands in [llo, lhi] and [rlo, rhi] (exact)."""
    if kind is ast.Add:
        return llo + rlo, lhi + rhi
    if kind is ast.Sub:
        return llo - rhi, lhi - rlo
    if kind is ast.Mult:
        products = (llo * rlo, llo * rhi, lhi * rlo, lhi * rhi)
        return min(products), max(products)
    if kind is ast.BitAnd and (llo >= 0 or rlo >= 0):
        return 0, min(x for x in (lhi if llo >= 0 else None, rhi if rlo >= 0 else None) if x is not None)
    if kind is ast.LShift and rlo >= 0 and rhi < 128:
        products = (llo << rlo, llo << rhi, lhi << rlo, lhi << rhi)
        return min(products), max(products)
    if kind in (ast.BitOr, ast.BitXor) and llo >= 0 and rlo >= 0:
        return 0, (1 << max(lhi, rhi).bit_length()) - 1
    return -UNBOUNDED, UNBOUNDED


def quotient_bounds(kind, llo, lhi, rlo, rhi) -> tuple[int | None, int | None]:
    """Bounds of Python's ``left // right``, ``left % right`` and ``left >> right`` (floor semantics)."""
    m = max(abs(llo), abs(lhi))
    if kind is ast.FloorDiv:
        if rlo > 0 or rhi < 0:  # a divisor of one sign: floor division is monotonic in both operands
            corners = (llo // rlo, llo // rhi, lhi // rlo, lhi // rhi)
            return min(corners), max(corners)
        return -m - 1, m + 1
    if kind is ast.Mod:
        if rlo > 0:
            return 0, rhi - 1
        if rhi < 0:
            return rlo + 1, 0
        r = max(abs(rlo), abs(rhi))
        return -r, r
    if kind is ast.RShift:
        return min(llo, 0), max(lhi, 0)
    return None, None


# -- intervals with unknown ends (None) ------------------------------------------------------------------------
def add(a: tuple, b: tuple) -> tuple:
    return (None if a[0] is None or b[0] is None else a[0] + b[0],
            None if a[1] is None or b[1] is None else a[1] + b[1])


def scale(k: int, a: tuple) -> tuple:
    if k == 0:
        return 0, 0
    lo, hi = (None if a[0] is None else k * a[0]), (None if a[1] is None else k * a[1])
    return (lo, hi) if k > 0 else (hi, lo)


def mul(a: tuple, b: tuple) -> tuple:
    """The product of two intervals whose ends may be unknown (None)."""
    if a == (0, 0) or b == (0, 0):
        return 0, 0
    if a[0] is not None and a[0] >= 0 and b[0] is not None and b[0] >= 0:  # both non-negative: monotonic
        hi = None if a[1] is None or b[1] is None else a[1] * b[1]
        return a[0] * b[0], hi
    if None in a or None in b:
        if a[0] is not None and a[0] >= 0 and b[1] is not None and b[1] <= 0:
            return (None if a[1] is None or b[0] is None else a[1] * b[0]), a[0] * b[1]
        if b[0] is not None and b[0] >= 0 and a[1] is not None and a[1] <= 0:
            return mul(b, a)
        return None, None
    products = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
    return min(products), max(products)
