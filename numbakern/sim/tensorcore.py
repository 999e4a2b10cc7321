"""The simulator's models of the tensor-core instructions (``numbakern.intrinsics.tensorcore``): ``mma.sync`` and
``ldmatrix``, and the packing and conversion helpers.

Each lane reads its own fragment registers (its ``cuda.local.array`` elements, through the simulator's array
proxies: an element it never wrote is an ``UninitializedReadError`` at the kernel's line) or, for ``ldmatrix``, the
shared-memory row its address names (checked for alignment and bounds, and seen by the race and initialisation
checkers), then waits at a warp collective. When all 32 lanes of the warp are there, at the same line, the
scheduler hands the completion functions below the warp's lanes (in lane order) and what each brought, and gives
each lane back its part of the result, laid out as the PTX ISA lays out fragments
(``numbakern.intrinsics.layout``). The scalar helpers are plain functions on canonical values (Python ints for the
integer types, ``np.float32`` for float32), with ``numbakern.intrinsics.formats``' roundings.

**Rounding model of mma.** ``D[i, j] = round_f32(C[i, j] + sum_k A[i, k] * B[k, j])``: every product is exact, the
k products and C are added exactly, and the sum is rounded once to float32, to nearest with ties to even. The
hardware's internal order and width of the additions are not documented (measurements show products kept exact
and the sum aligned to the largest term with truncation); the model is the one result that depends on no order,
it is bit-identical to the GPU wherever the exact sum is a float32 (small integers, the GPU test), and elsewhere it
differs from the GPU by at most a few units in the last place of the largest term, never more than sequential
float32 additions would. A float64 sum is not always exact (bf16 products span 2**-266 .. 2**256): the product is
taken in float64 with a bound on its error (``exact_matmul_f32``), and the elements whose float32 rounding the
bound leaves in doubt are summed one by one (``exact_dot_f32``) with ``math.fsum`` (correctly rounded to float64),
a float64 result exactly on a float32 rounding boundary settled by the sign of the float64 rounding error.
Infinities and NaNs propagate as in IEEE arithmetic; a NaN result is the canonical 0x7FFFFFFF. ``wgmma`` (the
Hopper simulator) computes with the same function.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

from ..intrinsics import formats
from ..intrinsics.layout import SHAPES, MmaShape, a_elements, b_elements, c_elements, ldmatrix_elements
from ..intrinsics.tensorcore import ROW_BYTES
from .errors import MisalignedAccessError, OutOfBoundsError, describe_site, site_of
from .memory_ops import misalignment

WARP = 32
FULL_MASK = 0xFFFFFFFF
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
    d = exact_matmul_f32(a, b, c)
    _, _, pc = _positions(shape)
    return d[pc[..., 0], pc[..., 1]]


def exact_matmul_f32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``round_f32(c + a @ b)`` with exact products and one rounding of each exact sum (float64 inputs, each value
    exact: 16-bit or tf32 operands, float32 accumulators): ``exact_dot_f32`` of every element, the float64 product
    standing in for it wherever an error bound shows both round alike (all but a few elements)."""
    k = a.shape[1]
    with np.errstate(all="ignore"):
        s = a @ b + c
        scale = np.abs(a) @ np.abs(b) + np.abs(c)
        # recursive float64 summation errs by at most (k + 1) u sum|terms|; twice that, plus the roundings of
        # s +- bound themselves, keeps the true sum inside [s - bound, s + bound]
        bound = scale * ((k + 8) * 2.0**-51)
        d = s.astype(np.float32)
        doubt = (np.asarray(s - bound, np.float32) != np.asarray(s + bound, np.float32)) | ~np.isfinite(scale)
        rows, cols = np.nonzero(doubt)
        if len(rows):
            # near a float32 rounding boundary (most often exactly on one), or an infinity or NaN among the terms
            terms = np.concatenate([a[rows] * b[:, cols].T, c[rows, cols][:, None]], axis=1)
            d[rows, cols] = [exact_dot_f32(t) for t in terms.tolist()]
    return d


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


# -- one lane's part -----------------------------------------------------------------------------------------------


def _scheduler(launch):
    if launch is None:
        raise RuntimeError(
            "numbakern.mma: tensor-core intrinsics run only inside a kernel launched on numbakern's simulator engine "
            "(not from host code, and not on the stock simulator: NUMBAKERN_SIM_ENGINE=stock)")
    return launch.scheduler


def mma_model(shape: MmaShape):
    kind = f"mma.{shape.name}"

    def model(launch, frame, d, d_at, a, a_at, b, b_at, c, c_at):
        scheduler = _scheduler(launch)
        a_at, b_at, c_at = int(a_at), int(b_at), int(c_at)
        a_regs = [a[i] for i in range(a_at, a_at + shape.a_regs)]  # each read through the array: checked
        b_regs = [b[i] for i in range(b_at, b_at + shape.b_regs)]
        c_regs = [np.float32(c[i]) for i in range(c_at, c_at + shape.c_regs)]
        if shape.packed:
            a_regs = [int(x) & 0xFFFFFFFF for x in a_regs]
            b_regs = [int(x) & 0xFFFFFFFF for x in b_regs]
        else:
            a_regs = [np.float32(x) for x in a_regs]
            b_regs = [np.float32(x) for x in b_regs]
        result = scheduler.warp_collective(site_of(frame), kind, FULL_MASK, (a_regs, b_regs, c_regs))
        d_at = int(d_at)
        for i, value in enumerate(result):
            d[d_at + i] = np.float32(value)

    return model


def ldmatrix_model(count: int, trans: bool):
    kind = f"ldmatrix.x{count}{'.trans' if trans else ''}"

    def model(launch, frame, regs, at, smem, index):
        scheduler = _scheduler(launch)
        # only the address lanes' rows are read
        row = _read_row(smem, index, frame) if scheduler.module.laneid < 8 * count else None
        result = scheduler.warp_collective(site_of(frame), kind, FULL_MASK, row)
        as_float = np.dtype(regs.dtype) == np.float32  # 32-bit data (tf32 operands): the registers' bits as float32
        for j, value in enumerate(result):
            regs[int(at) + j] = np.uint32(value).view(np.float32) if as_float else value

    return model


def _read_row(smem, index, frame) -> list[int]:
    """The 16 bytes at ``&smem[index]`` as eight 16-bit patterns (the lane's row of an ldmatrix)."""
    idx = tuple(int(i) for i in index) if isinstance(index, tuple) else (int(index),)
    shape = tuple(int(s) for s in smem.shape)
    itemsize = np.dtype(smem.dtype).itemsize
    if len(idx) != len(shape) or itemsize not in (2, 4):
        raise TypeError(f"ldmatrix: the index must have one integer per dimension of a shared array of 16- or "
                        f"32-bit elements, got index {idx} into shape {shape} of {smem.dtype}")
    flat = 0
    for i, n in zip(idx, shape):
        flat = flat * n + i
    per_row = ROW_BYTES // itemsize
    why = misalignment(smem, flat, ROW_BYTES)
    if why:
        raise MisalignedAccessError(
            f"ldmatrix: the row address of element {idx} of a shared array of shape {shape} ({smem.dtype}) {why}, "
            f"at {describe_site(site_of(frame))} (every row address of ldmatrix must be 16-byte aligned)")
    if not all(0 <= i < n for i, n in zip(idx, shape)) or flat + per_row > math.prod(shape):
        raise OutOfBoundsError(
            f"ldmatrix: the 16-byte row at element {idx} of a shared array of shape {shape} ({smem.dtype}) reaches "
            f"past its end, at {describe_site(site_of(frame))}")
    if idx[-1] + per_row <= shape[-1]:  # (the commonest case: the 16 bytes within one row of the array)
        head, last = idx[:-1], idx[-1]
        elements = [head + (last + q,) for q in range(per_row)] if head else range(last, last + per_row)
    else:
        elements = [tuple(int(i) for i in np.unravel_index(q, shape)) for q in range(flat, flat + per_row)]
    # each element read through the array (checked); their bits, whatever their type (float16 values, bf16
    # patterns in uint16, float32 or uint32 words)
    values = np.array([smem[e] for e in elements], dtype=smem.dtype).view(f"u{itemsize}").tolist()
    if itemsize == 4:  # a 32-bit array: two 16-bit elements per word, the lower address in the lower half
        values = [half for v in values for half in (v & 0xFFFF, (v >> 16) & 0xFFFF)]
    return [v & 0xFFFF for v in values]


def _halves(packed) -> tuple[int, int]:
    p = int(packed)
    return p & 0xFFFF, (p >> 16) & 0xFFFF


def _scalar(fn):
    return lambda launch, frame, *args: fn(*args)


#: the scalar helpers' models, by name: canonical values in, canonical values out
SCALARS = {
    "pack_bf16x2": _scalar(lambda lo, hi: int(formats.pack_b16x2(formats.f32_to_bf16_bits(np.float32(lo)),
                                                                 formats.f32_to_bf16_bits(np.float32(hi))))),
    "pack_f16x2": _scalar(lambda lo, hi: int(formats.pack_b16x2(formats.f32_to_f16_bits(np.float32(lo)),
                                                                formats.f32_to_f16_bits(np.float32(hi))))),
    "pack_b16x2": _scalar(lambda lo, hi: (int(lo) & 0xFFFF) | ((int(hi) & 0xFFFF) << 16)),
    "unpack_bf16x2": _scalar(lambda p: tuple(formats.bf16_bits_to_f32(h) for h in _halves(p))),
    "unpack_f16x2": _scalar(lambda p: tuple(formats.f16_bits_to_f32(h) for h in _halves(p))),
    "unpack_b16x2": _scalar(_halves),
    "f32_to_bf16": _scalar(lambda x: int(formats.f32_to_bf16_bits(np.float32(x)))),
    "bf16_to_f32": _scalar(lambda bits: formats.bf16_bits_to_f32(int(bits) & 0xFFFF)),
    "f32_to_f16": _scalar(lambda x: int(formats.f32_to_f16_bits(np.float32(x)))),
    "f16_to_f32": _scalar(lambda bits: formats.f16_bits_to_f32(int(bits) & 0xFFFF)),
    "f32_to_tf32": _scalar(lambda x: formats.f32_to_tf32(np.float32(x))),
    "split_tf32": _scalar(lambda x: formats.split_tf32(np.float32(x))),
}
