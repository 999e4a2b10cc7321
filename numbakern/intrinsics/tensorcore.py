"""The tensor-core instructions of ``numbakern.mma``, declared: ``mma.sync``, ``ldmatrix``, and the conversions that
pack and unpack their 16-bit and tf32 operands.

Fragments are ``cuda.local.array``s, one element per 32-bit register, laid out as the PTX ISA lays them out
(``numbakern.intrinsics.layout``); each fragment operand is an array and the index of its first register. Every
lane of the warp must execute each mma and ldmatrix, together, at the same line (``.sync.aligned``).
"""

from __future__ import annotations

from .layout import SHAPES, ldmatrix_address_lanes
from .op import Element, Op, Regs, Scalar, declare

MODULE = "numbakern.mma"
#: one ldmatrix row: eight 16-bit elements
ROW_BYTES = 16

_BF16_HINT = (" (bf16 data goes to kernels as uint16 bit patterns: pass numbakern.to_kernel_arg(tensor) or "
              "array.view(np.uint16), not bfloat16 values)")

# -- mma.sync ------------------------------------------------------------------------------------------------------

_MMA_DOC = """``d[d_at:d_at + 4] = A @ B + C`` for the warp's {m}x{n}x{k} tile: {operand} operands, float32
accumulators.

Each lane passes its fragment registers: ``a[a_at:a_at + {a_regs}]`` and ``b[b_at:b_at + {b_regs}]``
({regs}), and ``c[c_at:c_at + 4]`` (float32), laid out as the PTX ISA's fragment tables
(``numbakern.mma.layout``: ``a_elements``, ``b_elements``, ``c_elements``); ``d`` may be ``c`` (accumulate in
place). All 32 lanes of the warp must call it together, at the same line. In the simulator the product is exact
and rounded once to float32.
"""


def _mma(shape) -> Op:
    operand = "float32" if not shape.packed else "uint32"
    regs = ("uint32 registers, two 16-bit values each, the lower-indexed in the low half" if shape.packed
            else "float32 registers holding tf32 values: round with f32_to_tf32 or split_tf32")
    name = f"mma_{shape.name.replace('.', '_')}"
    return declare(Op(
        name, MODULE, _MMA_DOC.format(regs=regs, **vars(shape)),
        params=("d", "d_at", "a", "a_at", "b", "b_at", "c", "c_at"),
        operands=(Regs("d", ("float32",), 4, at="d_at", out=True, asm="f32"),
                  Regs("a", (operand,), shape.a_regs, at="a_at"),
                  Regs("b", (operand,), shape.b_regs, at="b_at"),
                  Regs("c", ("float32",), 4, at="c_at", asm="f32")),
        ptx=shape.ptx + " {$d}, {$a}, {$b}, {$c};", volatile=True, sync="warp", family="mma", instruction="mma",
        shape=shape))


MMA = {shape.name: _mma(shape) for shape in SHAPES.values()}

# -- ldmatrix ------------------------------------------------------------------------------------------------------

_LDMATRIX_DOC = """Load {count} 8x8 matri{ces} of 16-bit elements from shared memory into
``regs[at:at + {count}]``{transposed}.

``index`` is the element of the shared array ``smem`` (16-bit elements such as uint16 bf16 patterns or float16,
or 32-bit ones) where this lane's row starts: lanes 8j..8j+7 name the rows of matrix j{lanes}.
Register j of lane ``l`` receives row ``l // 4``, columns ``2 * (l % 4)`` and ``+1`` of matrix j{trans_note}:
exactly an mma fragment register. ``regs`` is uint32, or float32 for 32-bit data (tf32 operands). Every row
address must be 16-byte aligned, so the array needs ``alignment=16`` (or more) in ``cuda.shared.array``:
numba-cuda aligns a shared array only to its element size otherwise (a row padded by 8 16-bit elements keeps rows
16-byte apart, one padded by 4 does not). All 32 lanes must call it together, at the same line.
"""


def _ldmatrix_touches(count: int):
    def touches(args, lane):
        used = lane is None or lane in ldmatrix_address_lanes(count)
        return [("smem", args["index"] if used else None, ROW_BYTES if used else 0, "ld")]

    return touches


def _ldmatrix(count: int, trans: bool) -> Op:
    name = f"ldmatrix_x{count}{'_trans' if trans else ''}"
    doc = _LDMATRIX_DOC.format(
        count=count, ces="x" if count == 1 else "ces",
        transposed=", each transposed" if trans else "",
        lanes={1: " (only lanes 0-7's addresses are used)",
               2: " (only lanes 0-15's addresses are used)"}.get(count, ""),
        trans_note=" as transposed (element (2t, g) and (2t+1, g) as stored)" if trans else "")
    return declare(Op(
        name, MODULE, doc, params=("regs", "at", "smem", "index"),
        operands=(Regs("regs", ("uint32", "float32"), count, at="at", out=True),
                  Element("smem", "index", "shared", contiguous=True, bits=(16, 32),
                          want="a C-contiguous shared array of 16- or 32-bit elements (uint16 bit patterns of bf16, "
                               "float16, uint32)")),
        ptx=f"ldmatrix.sync.aligned.m8n8.x{count}{'.trans' if trans else ''}.shared.b16 {{$regs}}, [$smem];",
        volatile=True, clobbers_memory=True, sync="warp", family="ldmatrix", instruction="ldmatrix",
        shape=(count, trans), touches=_ldmatrix_touches(count)))


LDMATRIX = {op.name: op for op in (_ldmatrix(count, trans) for count in (1, 2, 4) for trans in (False, True))}

# -- packing and conversions ---------------------------------------------------------------------------------------


def _scalar(name: str, doc: str, params, operands, result, ptx=None, result_asm=None) -> Op:
    return declare(Op(name, MODULE, doc, params=params, operands=operands, result=result, ptx=ptx,
                      result_asm=result_asm, family="cvt", instruction="cvt"))


def _floats(*names):
    return tuple(Scalar(n, "float", "float32") for n in names)


def _bits(*names):
    return tuple(Scalar(n, "int", "uint32", hint=_BF16_HINT) for n in names)


PACK_BF16X2 = _scalar(
    "pack_bf16x2", "Two floats rounded to bf16 (nearest even) in one uint32 register, ``lo`` in bits 0-15 "
    "(``cvt.rn.bf16x2.f32``): an A or B fragment register of ``mma_m16n8k16_bf16``.",
    ("lo", "hi"), _floats("hi", "lo"), "uint32", "cvt.rn.bf16x2.f32 $result, $hi, $lo;", "b32")
PACK_F16X2 = _scalar(
    "pack_f16x2", "Two floats rounded to f16 (nearest even) in one uint32 register, ``lo`` in bits 0-15 "
    "(``cvt.rn.f16x2.f32``): an A or B fragment register of ``mma_m16n8k16_f16``.",
    ("lo", "hi"), _floats("hi", "lo"), "uint32", "cvt.rn.f16x2.f32 $result, $hi, $lo;", "b32")
PACK_B16X2 = _scalar(
    "pack_b16x2", "Two 16-bit patterns (integers: bf16 or f16 bits) in one uint32 register as they are, ``lo`` in "
    "bits 0-15.", ("lo", "hi"), _bits("lo", "hi"), "uint32")
UNPACK_BF16X2 = _scalar(
    "unpack_bf16x2", "The two bf16 values of a uint32 register as float32 ``(lo, hi)`` (exact).",
    ("packed",), _bits("packed"), ("float32", "float32"))
UNPACK_F16X2 = _scalar(
    "unpack_f16x2", "The two f16 values of a uint32 register as float32 ``(lo, hi)`` (exact).",
    ("packed",), _bits("packed"), ("float32", "float32"))
UNPACK_B16X2 = _scalar(
    "unpack_b16x2", "The two 16-bit patterns of a uint32 register as uint16 ``(lo, hi)``.",
    ("packed",), _bits("packed"), ("uint16", "uint16"))
F32_TO_BF16 = _scalar(
    "f32_to_bf16", "A float rounded to bf16 (nearest even; NaN becomes 0x7FFF), as its uint16 bits "
    "(``cvt.rn.bf16.f32``).", ("x",), _floats("x"), "uint16", "cvt.rn.bf16.f32 $result, $x;", "b16")
BF16_TO_F32 = _scalar(
    "bf16_to_f32", "The float32 value of bf16 bits (the low 16 bits of an integer; exact).",
    ("bits",), _bits("bits"), "float32")
F32_TO_F16 = _scalar(
    "f32_to_f16", "A float rounded to f16 (nearest even; NaN becomes 0x7FFF), as its uint16 bits "
    "(``cvt.rn.f16.f32``).", ("x",), _floats("x"), "uint16", "cvt.rn.f16.f32 $result, $x;", "b16")
F16_TO_F32 = _scalar(
    "f16_to_f32", "The float32 value of f16 bits (the low 16 bits of an integer; exact).",
    ("bits",), _bits("bits"), "float32")
F32_TO_TF32 = _scalar(
    "f32_to_tf32", "A float rounded to tf32, to nearest with ties away from zero (``cvt.rna.tf32.f32``): a float32 "
    "whose low 13 bits are zero, ready for ``mma_m16n8k8_tf32``.", ("x",), _floats("x"), "float32",
    "cvt.rna.tf32.f32 $result, $x;", "b32")
SPLIT_TF32 = _scalar(
    "split_tf32", "The 3xTF32 split of a float: ``(big, small)`` with ``big = f32_to_tf32(x)`` and "
    "``small = f32_to_tf32(x - big)``; ``a*b ~ big_a*big_b + big_a*small_b + small_a*big_b`` keeps float32's "
    "accuracy on tf32 tensor cores.", ("x",), _floats("x"), ("float32", "float32"))

#: numbakern.mma's instructions, in the order its API lists them
OPS = (*MMA.values(), *(LDMATRIX[f"ldmatrix_x{n}{t}"] for t in ("", "_trans") for n in (1, 2, 4)),
       PACK_BF16X2, PACK_F16X2, PACK_B16X2, UNPACK_BF16X2, UNPACK_F16X2, UNPACK_B16X2, F32_TO_BF16, BF16_TO_F32,
       F32_TO_F16, F16_TO_F32, F32_TO_TF32, SPLIT_TF32)
NAMES = tuple(op.name for op in OPS)

