"""Tensor cores from Numba kernels: warp-level ``mma.sync`` and ``ldmatrix``, and the packing and conversion
helpers around them.

Fragments are ``cuda.local.array``s, one element per 32-bit register, laid out as the PTX ISA lays them out
(``numbakern.mma.layout`` has the tables: ``a0..a3``, ``b0, b1``, ``c0..c3``, ``groupID = laneid >> 2``,
``threadID_in_group = laneid % 4``). Each operand is an array and the index of its first register, so one local
array can hold many fragments::

    a = cuda.local.array(4, np.uint32)     # A of m16n8k16: 8 bf16 (or f16) values, two per register
    b = cuda.local.array(2, np.uint32)     # B: 4 values
    acc = cuda.local.array(4, np.float32)  # C and D: 4 float32 values

    mma_m16n8k16_bf16(acc, 0, a, 0, b, 0, acc, 0)   # d = a @ b + c, here in place: acc += A @ B
    mma_m16n8k16_f16(d, d_at, a, a_at, b, b_at, c, c_at)
    mma_m16n8k8_tf32(d, d_at, a, a_at, b, b_at, c, c_at)   # a, b: float32 arrays holding tf32 values

    ldmatrix_x4(a, 0, tile, (row, col))    # four 8x8 b16 matrices from shared memory into a[0:4]
    ldmatrix_x2_trans(b, 0, tile, (row, col))   # two, transposed (a row-major B tile -> B fragments)

Every lane of the warp must execute each mma and ldmatrix, together, at the same line (``.sync.aligned``). The
ldmatrix ``index`` is the element of the shared array (16-bit elements such as uint16 bf16 patterns or float16,
or 32-bit ones) where this lane's row starts: lanes 0-7 name the rows of matrix 0, 8-15 of matrix 1, ... (``.x1``
uses lanes 0-7's addresses, ``.x2`` lanes 0-15's); every used row address must be 16-byte aligned. The registers
are a uint32 array, or a float32 one for 32-bit data (tf32 operands: a row of 4 floats, lane ``l`` of a matrix
getting row ``l // 4``, float ``l % 4``, which is the m16n8k8 tf32 A fragment's layout).

Scalars (inside kernels; on the host use ``numbakern.mma.formats``, the same roundings on numpy arrays)::

    pack_bf16x2(lo, hi) -> uint32      two float32 rounded to bf16 (nearest even), lo in the low half
    pack_f16x2(lo, hi) -> uint32       the same to f16
    pack_b16x2(lo, hi) -> uint32       two 16-bit patterns as they are
    unpack_bf16x2(r) / unpack_f16x2(r) -> (float32, float32);   unpack_b16x2(r) -> (uint16, uint16)
    f32_to_bf16(x) / f32_to_f16(x) -> uint16 bits;   bf16_to_f32(bits) / f16_to_f32(bits) -> float32
    f32_to_tf32(x) -> float32          cvt.rna.tf32.f32: nearest, ties away from zero, low 13 bits zero
    split_tf32(x) -> (big, small)      3xTF32: big = tf32(x), small = tf32(x - big)

bf16 has no numpy dtype: kernels hold bf16 data as ``uint16`` bit patterns (see docs/tensor-cores.md).

Each function is declared once, with its PTX, typing rule and fragment layout, in
``numbakern.intrinsics.tensorcore``; ``docs/mma-api.md`` lists them with their documentation. How each backend sees
them:

- **GPU (numba-cuda):** the PTX as inline assembly (``numbakern.intrinsics.numba_cuda``):
  ``mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32``, ``ldmatrix.sync.aligned.m8n8.x4.shared.b16``,
  ``cvt.rn.bf16x2.f32``, ``cvt.rna.tf32.f32``, ... They need compute capability 8.0 or newer.
- **GPU (numba-cuda-mlir):** the same functions, typed and lowered by numba-cuda-mlir (``numbakern.mlir_lowering``):
  the same PTX, as inline PTX.
- **Simulator:** ``numbakern.sim.tensorcore``: each lane's registers as the PTX ISA lays them out, the product
  computed from all 32 lanes' fragments together (exact products and sum, rounded once to float32), with the
  divergence, alignment, bounds and uninitialised-register checks.
- **translate:** each becomes the same PTX in a small inline helper, or the CUDA headers' conversion that gives the
  same bits (``translate/codegen/mma.py``).
"""

from __future__ import annotations

from ..intrinsics import formats, layout
from ..intrinsics.tensorcore import NAMES, OPS

(
    mma_m16n8k16_bf16, mma_m16n8k16_f16, mma_m16n8k8_tf32, ldmatrix_x1, ldmatrix_x2, ldmatrix_x4,
    ldmatrix_x1_trans, ldmatrix_x2_trans, ldmatrix_x4_trans, pack_bf16x2, pack_f16x2, pack_b16x2, unpack_bf16x2,
    unpack_f16x2, unpack_b16x2, f32_to_bf16, bf16_to_f32, f32_to_f16, f16_to_f32, f32_to_tf32, split_tf32,
) = (op.function for op in OPS)

__all__ = [*NAMES, "formats", "layout"]
