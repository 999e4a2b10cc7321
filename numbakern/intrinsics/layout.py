"""Which matrix element each lane's fragment register holds, as the PTX ISA documents it.

The tables follow the PTX ISA's sections "Matrix Fragments for mma.m16n8k16 with floating point type" and "Matrix
Fragments for mma.m16n8k8" (``.tf32``), with its names: for lane ``laneid`` of the warp,

    groupID           = laneid >> 2      (0..7)
    threadID_in_group = laneid % 4       (0..3)

**mma.m16n8k16, .bf16 / .f16 operands, .f32 accumulators.** A is 16x16 (row-major), B is 16x8 (column-major),
C and D are 16x8. A lane holds A in four 32-bit registers ``a0..a3`` with two 16-bit elements each (the elements
the ISA numbers a0..a7; the lower-numbered one of a pair in the lower 16 bits), B in ``b0, b1`` (elements b0..b3),
C and D in four float32 registers ``c0..c3``::

    A element ai (i = 0..7, in register a[i // 2]):
        row = groupID            for i < 2 or 4 <= i < 6,   groupID + 8 otherwise
        col = threadID_in_group * 2 + (i & 1)        for i < 4
              threadID_in_group * 2 + (i & 1) + 8    for i >= 4
    B element bi (i = 0..3, in register b[i // 2]):
        row = threadID_in_group * 2 + (i & 1)        for i < 2
              threadID_in_group * 2 + (i & 1) + 8    for i >= 2
        col = groupID
    C/D element ci (i = 0..3, register c[i]):
        row = groupID for i < 2,   groupID + 8 for i >= 2
        col = threadID_in_group * 2 + (i & 1)

    So, with g = groupID and t = threadID_in_group:
        register   holds A elements                       register   holds B elements
        a0         (g,   2t), (g,   2t+1)                 b0         (2t,   g), (2t+1, g)
        a1         (g+8, 2t), (g+8, 2t+1)                 b1         (2t+8, g), (2t+9, g)
        a2         (g,   2t+8), (g,   2t+9)
        a3         (g+8, 2t+8), (g+8, 2t+9)               c0 (g, 2t)  c1 (g, 2t+1)  c2 (g+8, 2t)  c3 (g+8, 2t+1)

**mma.m16n8k8, .tf32 operands, .f32 accumulators.** A is 16x8, B is 8x8, C and D 16x8; every register holds one
element (a tf32 value in a 32-bit register)::

    A register ai (i = 0..3):  row = groupID for a0 and a2, groupID + 8 for a1 and a3
                               col = threadID_in_group for a0 and a1, threadID_in_group + 4 for a2 and a3
    B register bi (i = 0, 1):  row = threadID_in_group for b0, threadID_in_group + 4 for b1;   col = groupID
    C/D: as for m16n8k16.

**ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16** loads one, two or four 8x8 matrices of 16-bit elements.
Lanes 8*j .. 8*j+7 give the addresses of matrix j's rows 0..7 (each row 16 contiguous bytes, 16-byte aligned);
``.x1`` uses the addresses of lanes 0-7, ``.x2`` of lanes 0-15, ``.x4`` of all 32. Lane ``laneid`` receives, in its
register j, row ``groupID`` and columns ``2*threadID_in_group``, ``2*threadID_in_group + 1`` of matrix j (the
lower column in the lower half): exactly an mma fragment register. With ``.trans`` it receives the matrix
transposed: elements (row ``2*threadID_in_group``, col ``groupID``) and (row ``2*threadID_in_group + 1``, col
``groupID``) of matrix j as stored.

Each function below returns, for one lane, the ``(row, col)`` of every element its registers hold, in register
order (for packed registers: low half first). The simulator gathers a warp's fragments with them, and the tests
check them against the formulas above.
"""

from __future__ import annotations

from dataclasses import dataclass

WARP = 32


def group_id(lane: int) -> int:
    """The PTX ISA's ``groupID = laneid >> 2`` (0..7): the row of a lane's first A and C elements."""
    return lane >> 2


def thread_id_in_group(lane: int) -> int:
    """The PTX ISA's ``threadID_in_group = laneid % 4`` (0..3): which column pair of A and C a lane holds."""
    return lane % 4


@dataclass(frozen=True)
class MmaShape:
    """One ``mma.sync`` variant: its matrix sizes and how many registers of each operand a lane holds."""

    name: str  # e.g. "m16n8k16.bf16"
    ptx: str  # the whole instruction, e.g. "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
    m: int
    n: int
    k: int
    operand: str  # "bf16", "f16" or "tf32": the A and B element format
    a_regs: int
    b_regs: int
    c_regs: int = 4

    @property
    def packed(self) -> bool:
        """Two 16-bit elements per A/B register (bf16, f16) rather than one tf32 element."""
        return self.operand in ("bf16", "f16")


M16N8K16_BF16 = MmaShape("m16n8k16.bf16", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                         16, 8, 16, "bf16", 4, 2)
M16N8K16_F16 = MmaShape("m16n8k16.f16", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
                        16, 8, 16, "f16", 4, 2)
M16N8K8_TF32 = MmaShape("m16n8k8.tf32", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
                        16, 8, 8, "tf32", 4, 2)
SHAPES = {s.name: s for s in (M16N8K16_BF16, M16N8K16_F16, M16N8K8_TF32)}


def a_elements(shape: MmaShape, lane: int) -> list[tuple[int, int]]:
    """``(row, col)`` of each A element the lane holds: 8 for m16n8k16 (a0..a7), 4 for m16n8k8 (a0..a3)."""
    g, t = group_id(lane), thread_id_in_group(lane)
    if shape.k == 16:
        return [(g if (i < 2 or 4 <= i < 6) else g + 8, t * 2 + (i & 1) + (8 if i >= 4 else 0)) for i in range(8)]
    return [(g + (8 if i in (1, 3) else 0), t + (4 if i >= 2 else 0)) for i in range(4)]


def b_elements(shape: MmaShape, lane: int) -> list[tuple[int, int]]:
    """``(row, col)`` of each B element the lane holds: 4 for m16n8k16 (b0..b3), 2 for m16n8k8 (b0, b1)."""
    g, t = group_id(lane), thread_id_in_group(lane)
    if shape.k == 16:
        return [(t * 2 + (i & 1) + (8 if i >= 2 else 0), g) for i in range(4)]
    return [(t + (4 if i == 1 else 0), g) for i in range(2)]


def c_elements(shape: MmaShape, lane: int) -> list[tuple[int, int]]:
    """``(row, col)`` of each C/D element (register c0..c3) the lane holds."""
    g, t = group_id(lane), thread_id_in_group(lane)
    return [(g + (8 if i >= 2 else 0), t * 2 + (i & 1)) for i in range(4)]


def ldmatrix_address_lanes(count: int) -> range:
    """The lanes whose row addresses an ``ldmatrix .x{count}`` uses: 8 per matrix, from lane 0."""
    if count not in (1, 2, 4):
        raise ValueError(f"ldmatrix loads 1, 2 or 4 matrices, not {count}")
    return range(8 * count)


def ldmatrix_elements(lane: int, trans: bool) -> list[tuple[int, int]]:
    """``(row, col)`` within an 8x8 matrix (row = the address lane's row) of the two elements a lane's register
    receives, low half first."""
    g, t = group_id(lane), thread_id_in_group(lane)
    if trans:
        return [(2 * t, g), (2 * t + 1, g)]
    return [(g, 2 * t), (g, 2 * t + 1)]


__all__ = [
    "M16N8K16_BF16", "M16N8K16_F16", "M16N8K8_TF32", "MmaShape", "SHAPES", "WARP", "a_elements", "b_elements",
    "c_elements", "group_id", "ldmatrix_address_lanes", "ldmatrix_elements", "thread_id_in_group",
]
