"""The simulator's versions of the tensor-core intrinsics (``numbakern.mma`` picks them in simulator mode).

Each lane reads its own fragment registers (its ``cuda.local.array`` elements, through the simulator's array
proxies: an element it never wrote is an ``UninitializedReadError`` at the kernel's line) or, for ``ldmatrix``, the
shared-memory row its address names (checked for alignment and bounds, and seen by the race and initialisation
checkers), then waits at a warp collective. When all 32 lanes of the warp are there, at the same line,
``numbakern.sim.tensorcore`` computes the instruction from everyone's registers and each lane writes its own part
of the result back into its registers.

The scalar helpers (packing, conversions) are plain functions on canonical values (``numbakern.sim.numerics``):
Python ints for the integer types, ``np.float32`` for float32.
"""

from __future__ import annotations

import sys

import numpy as np

from ..sim.intrinsics import active_launch, stands_for
from . import formats
from .layout import SHAPES

FULL_MASK = 0xFFFFFFFF
ROW_BYTES = 16  # one ldmatrix row: eight 16-bit elements


def _scheduler():
    launch = active_launch()
    if launch is None:
        raise RuntimeError(
            "numbakern.mma: tensor-core intrinsics run only inside a kernel launched on numbakern's simulator engine "
            "(not from host code, and not on the stock simulator: NUMBAKERN_SIM_ENGINE=stock)")
    return launch.scheduler


def _warp_op(kind: str, operand, frame):
    from ..sim.errors import site_of

    return _scheduler().warp_collective(site_of(frame), kind, FULL_MASK, operand)


def _registers(what: str, regs, at: int, count: int) -> list:
    """``regs[at:at + count]``, each element read through the array (so the checkers see every read)."""
    at = int(at)
    return [regs[at + i] for i in range(count)]


def _mma(shape_name: str, d, d_at, a, a_at, b, b_at, c, c_at, frame):
    shape = SHAPES[shape_name]
    a_regs = _registers("a", a, a_at, shape.a_regs)
    b_regs = _registers("b", b, b_at, shape.b_regs)
    c_regs = _registers("c", c, c_at, shape.c_regs)
    if shape.packed:
        a_regs = [int(x) & 0xFFFFFFFF for x in a_regs]
        b_regs = [int(x) & 0xFFFFFFFF for x in b_regs]
    else:
        a_regs = [np.float32(x) for x in a_regs]
        b_regs = [np.float32(x) for x in b_regs]
    result = _warp_op(f"mma.{shape_name}", (a_regs, b_regs, [np.float32(x) for x in c_regs]), frame)
    d_at = int(d_at)
    for i, value in enumerate(result):
        d[d_at + i] = np.float32(value)


def mma_m16n8k16_bf16(d, d_at, a, a_at, b, b_at, c, c_at):
    _mma("m16n8k16.bf16", d, d_at, a, a_at, b, b_at, c, c_at, sys._getframe(1))


def mma_m16n8k16_f16(d, d_at, a, a_at, b, b_at, c, c_at):
    _mma("m16n8k16.f16", d, d_at, a, a_at, b, b_at, c, c_at, sys._getframe(1))


def mma_m16n8k8_tf32(d, d_at, a, a_at, b, b_at, c, c_at):
    _mma("m16n8k8.tf32", d, d_at, a, a_at, b, b_at, c, c_at, sys._getframe(1))


def _ldmatrix(count: int, trans: bool, regs, at, smem, index, frame):
    lane = _scheduler().module.laneid
    row = None
    if lane < 8 * count:  # only these lanes' addresses are used
        row = _read_row(smem, index, frame)
    kind = f"ldmatrix.x{count}{'.trans' if trans else ''}"
    result = _warp_op(kind, row, frame)
    at = int(at)
    as_float = np.dtype(regs.dtype) == np.float32  # 32-bit data (tf32 operands): the registers' bits as float32
    for j, value in enumerate(result):
        regs[at + j] = np.uint32(value).view(np.float32) if as_float else value


def _read_row(smem, index, frame) -> list[int]:
    """The 16 bytes at ``&smem[index]`` as eight 16-bit patterns (the lane's row of an ldmatrix)."""
    from ..sim.errors import MisalignedAccessError, OutOfBoundsError, describe_site, site_of

    idx = tuple(int(i) for i in index) if isinstance(index, tuple) else (int(index),)
    shape = tuple(int(s) for s in smem.shape)
    itemsize = int(smem.dtype.itemsize)
    if len(idx) != len(shape) or itemsize not in (2, 4):
        raise TypeError(f"ldmatrix: the index must have one integer per dimension of a shared array of 16- or "
                        f"32-bit elements, got index {idx} into shape {shape} of {smem.dtype}")
    flat = 0
    for i, n in zip(idx, shape):
        flat = flat * n + i
    per_row = ROW_BYTES // itemsize
    where = describe_site(site_of(frame))
    if (flat * itemsize) % ROW_BYTES:
        raise MisalignedAccessError(
            f"ldmatrix: the row address of element {idx} of a shared array of shape {shape} ({smem.dtype}) is at "
            f"byte offset {flat * itemsize}, not a multiple of 16, at {where} (every row address of ldmatrix must "
            "be 16-byte aligned)")
    total = int(np.prod(shape))
    if not all(0 <= i < n for i, n in zip(idx, shape)) or flat + per_row > total:
        raise OutOfBoundsError(
            f"ldmatrix: the 16-byte row at element {idx} of a shared array of shape {shape} ({smem.dtype}) reaches "
            f"past its end, at {where}")
    values = []
    dtype = np.dtype(smem.dtype)
    bits = np.dtype(f"u{itemsize}")
    for q in range(per_row):
        element = np.unravel_index(flat + q, shape)
        v = smem[tuple(int(e) for e in element) if len(shape) > 1 else int(element[0])]
        # the element's bits, whatever its type (float16 values, bf16 patterns in uint16, float32 or uint32 words)
        values.append(int(np.asarray(v, dtype=dtype).view(bits)))
    if itemsize == 4:  # a 32-bit array: two 16-bit elements per word, the lower address in the lower half
        values = [half for v in values for half in (v & 0xFFFF, (v >> 16) & 0xFFFF)]
    return [v & 0xFFFF for v in values]


def _ldmatrix_function(count: int, trans: bool):
    def ldmatrix(regs, at, smem, index):
        _ldmatrix(count, trans, regs, at, smem, index, sys._getframe(1))

    ldmatrix.__name__ = ldmatrix.__qualname__ = f"ldmatrix_x{count}{'_trans' if trans else ''}"
    return ldmatrix


ldmatrix_x1 = _ldmatrix_function(1, False)
ldmatrix_x2 = _ldmatrix_function(2, False)
ldmatrix_x4 = _ldmatrix_function(4, False)
ldmatrix_x1_trans = _ldmatrix_function(1, True)
ldmatrix_x2_trans = _ldmatrix_function(2, True)
ldmatrix_x4_trans = _ldmatrix_function(4, True)


# -- scalar helpers: canonical values in, canonical values out ---------------------------------------------------

def pack_bf16x2(lo, hi) -> int:
    return int(formats.pack_b16x2(formats.f32_to_bf16_bits(np.float32(lo)), formats.f32_to_bf16_bits(np.float32(hi))))


def pack_f16x2(lo, hi) -> int:
    return int(formats.pack_b16x2(formats.f32_to_f16_bits(np.float32(lo)), formats.f32_to_f16_bits(np.float32(hi))))


def pack_b16x2(lo, hi) -> int:
    return (int(lo) & 0xFFFF) | ((int(hi) & 0xFFFF) << 16)


def unpack_bf16x2(packed) -> tuple:
    p = int(packed)
    return formats.bf16_bits_to_f32(p & 0xFFFF), formats.bf16_bits_to_f32((p >> 16) & 0xFFFF)


def unpack_f16x2(packed) -> tuple:
    p = int(packed)
    return formats.f16_bits_to_f32(p & 0xFFFF), formats.f16_bits_to_f32((p >> 16) & 0xFFFF)


def unpack_b16x2(packed) -> tuple:
    p = int(packed)
    return p & 0xFFFF, (p >> 16) & 0xFFFF


def f32_to_bf16(x) -> int:
    return int(formats.f32_to_bf16_bits(np.float32(x)))


def bf16_to_f32(bits) -> np.float32:
    return formats.bf16_bits_to_f32(int(bits) & 0xFFFF)


def f32_to_f16(x) -> int:
    return int(formats.f32_to_f16_bits(np.float32(x)))


def f16_to_f32(bits) -> np.float32:
    return formats.f16_bits_to_f32(int(bits) & 0xFFFF)


def f32_to_tf32(x) -> np.float32:
    return formats.f32_to_tf32(np.float32(x))


def split_tf32(x) -> tuple:
    return formats.split_tf32(np.float32(x))


for _name in (
    "mma_m16n8k16_bf16", "mma_m16n8k16_f16", "mma_m16n8k8_tf32",
    "ldmatrix_x1", "ldmatrix_x2", "ldmatrix_x4", "ldmatrix_x1_trans", "ldmatrix_x2_trans", "ldmatrix_x4_trans",
    "pack_bf16x2", "pack_f16x2", "pack_b16x2", "unpack_bf16x2", "unpack_f16x2", "unpack_b16x2",
    "f32_to_bf16", "bf16_to_f32", "f32_to_f16", "f16_to_f32", "f32_to_tf32", "split_tf32",
):
    # the front end compiles numbakern.mma's intrinsic where a kernel calls one of these, and the checkers report
    # this module's reads and writes at the kernel's line
    stands_for("numbakern.mma", _name, __file__)(globals()[_name])
