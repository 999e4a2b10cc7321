"""The tensor-core intrinsics (``numbakern.mma``) on numba-cuda-mlir: the PTX instructions of the numba-cuda lowering
(``numbakern.mma.lowering``), emitted as inline PTX (``llvm.inline_asm``) with the same operands and constraints.

- ``mma_m16n8k16_bf16`` / ``_f16`` / ``mma_m16n8k8_tf32``: ``mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32``
  (...), the A, B and C registers read from the fragment arrays (tf32 operands as their 32-bit patterns), the four
  D values written back;
- ``ldmatrix_x{1,2,4}[_trans]``: ``ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16`` on the 32-bit shared address
  of the lane's row;
- the packing and conversion helpers: ``cvt.rn.bf16x2.f32``, ``cvt.rn.f16x2.f32``, ``cvt.rn.bf16.f32``,
  ``cvt.rn.f16.f32``, ``cvt.rna.tf32.f32`` as inline PTX; bit packing and widening as plain integer and float
  operations.

Inline PTX rather than the NVVM dialect's ``nvvm.mma.sync`` and ``nvvm.ldmatrix``: numba-cuda-mlir 0.6 turns its
MLIR for a GPU older than sm_100 into LLVM 7 NVVM IR with a translator that stops at NVVM operations outside a
fixed set ("unsupported NVVM op"); it translates ``llvm.inline_asm``. The mma and ldmatrix statements have side
effects (never dropped, duplicated, or moved into a branch where part of the warp would skip them); ldmatrix also
clobbers memory, so it stays after the ``cuda.syncthreads()`` that publishes its tile.
"""

from __future__ import annotations

from ..mma.layout import M16N8K8_TF32, M16N8K16_BF16, M16N8K16_F16
from .support import (
    SHARED,
    T,
    TypingError,
    arith,
    asm,
    check_index,
    define,
    integer,
    llvm,
    load_register,
    signature,
    space_pointer,
    store_register,
    types,
)


def _check_regs(what, name, t, dtypes):
    if not isinstance(t, types.Array) or t.ndim != 1 or t.dtype not in dtypes:
        want = " or ".join(str(d) for d in dtypes)
        raise TypingError(f"{what}: {name} must be a 1-D {want} array (a cuda.local.array of fragment registers), "
                          f"got {t}")


def _check_offset(what, name, t):
    if not isinstance(t, types.Integer):
        raise TypingError(f"{what}: {name} (the first register's index) must be an integer, got {t}")


def _check_float(what, name, t):
    if not isinstance(t, types.Float):
        raise TypingError(f"{what}: {name} must be a float, got {t}")


def _check_int(what, name, t):
    if not isinstance(t, types.Integer):
        raise TypingError(f"{what}: {name} must be an integer (16-bit pattern), got {t}")


def _struct(element, count):
    return llvm.StructType.get_literal([element] * count)


def _fields(result, element, count) -> list:
    return [llvm.extractvalue(element, result, [q]) for q in range(count)]


# -- mma.sync ----------------------------------------------------------------------------------------------------


def _mma(name, shape):
    operand_type = types.uint32 if shape.packed else types.float32
    a_ops = ",".join(f"${4 + i}" for i in range(shape.a_regs))
    b_ops = ",".join(f"${4 + shape.a_regs + i}" for i in range(shape.b_regs))
    c_first = 4 + shape.a_regs + shape.b_regs
    c_ops = ",".join(f"${c_first + i}" for i in range(4))
    text = f"{shape.ptx} {{$0,$1,$2,$3}}, {{{a_ops}}}, {{{b_ops}}}, {{{c_ops}}};"
    constraints = ",".join(["=f"] * 4 + ["r"] * (shape.a_regs + shape.b_regs) + ["f"] * 4)

    def typer(d, d_at, a, a_at, b, b_at, c, c_at):
        _check_regs(name, "d", d, (types.float32,))
        _check_regs(name, "a", a, (operand_type,))
        _check_regs(name, "b", b, (operand_type,))
        _check_regs(name, "c", c, (types.float32,))
        for arg, t in (("d_at", d_at), ("a_at", a_at), ("b_at", b_at), ("c_at", c_at)):
            _check_offset(name, arg, t)
        return signature(types.void, d, d_at, a, a_at, b, b_at, c, c_at)

    def bits(v):  # a tf32 operand is a float32 register; the instruction reads its 32 bits
        return llvm.bitcast(T.i32(), v) if v.type == T.f32() else v

    def lower(builder, args):
        d, d_at, a, a_at, b, b_at, c, c_at = args
        regs = ([bits(load_register(builder, a, a_at, q)) for q in range(shape.a_regs)]
                + [bits(load_register(builder, b, b_at, q)) for q in range(shape.b_regs)]
                + [load_register(builder, c, c_at, q) for q in range(4)])
        out = asm(_struct(T.f32(), 4), regs, text, constraints)
        for q, v in enumerate(_fields(out, T.f32(), 4)):
            store_register(builder, d, d_at, q, v)

    return typer, lower


# -- ldmatrix ----------------------------------------------------------------------------------------------------


def _ldmatrix(count: int, trans: bool):
    name = f"ldmatrix_x{count}{'_trans' if trans else ''}"
    outs = ",".join(f"${i}" for i in range(count))
    text = f"ldmatrix.sync.aligned.m8n8.x{count}{'.trans' if trans else ''}.shared.b16 {{{outs}}}, [${count}];"
    constraints = ",".join(["=r"] * count + ["r", "~{memory}"])

    def typer(regs, at, smem, index):
        # float32 registers: 32-bit data (tf32 operands) whose bits the instruction moves
        _check_regs(name, "regs", regs, (types.uint32, types.float32))
        _check_offset(name, "at", at)
        if not isinstance(smem, types.Array) or smem.layout != "C" or \
                getattr(smem.dtype, "bitwidth", 0) not in (16, 32):
            raise TypingError(f"{name}: smem must be a C-contiguous shared array of 16- or 32-bit elements "
                              f"(uint16 bit patterns of bf16, float16, uint32), got {smem}")
        check_index(name, "smem", index, smem.ndim)
        return signature(types.void, regs, at, smem, index)

    def lower(builder, args):
        regs, at, smem, index = args
        element = builder.get_mlir_type(builder.get_numba_type(smem).dtype)
        # the lane's row as the 32-bit shared address ldmatrix takes
        saddr = llvm.ptrtoint(T.i32(), space_pointer(builder, smem, index, element, SHARED))
        if count == 1:
            values = [asm(T.i32(), [saddr], text, constraints)]
        else:
            values = _fields(asm(_struct(T.i32(), count), [saddr], text, constraints), T.i32(), count)
        as_float = builder.get_numba_type(regs).dtype == types.float32
        for j, v in enumerate(values):
            store_register(builder, regs, at, j, arith.bitcast(T.f32(), v) if as_float else v)

    return name, typer, lower


# -- packing and conversions ---------------------------------------------------------------------------------------


def _f32(builder, var):
    return builder.mlir_convert(builder.load_var(var), T.f32())


def _u32(builder, var):
    """An integer argument as its low 32 bits (zero- or sign-extended as its type is unsigned or signed)."""
    return integer(builder, var, T.i32())


def _c32(v):
    return arith.constant(T.i32(), v)


def _pack_cvt(name, cvt):
    def typer(lo, hi):
        _check_float(name, "lo", lo)
        _check_float(name, "hi", hi)
        return signature(types.uint32, lo, hi)

    def lower(builder, args):
        # cvt.rn.bf16x2.f32 d, a, b puts a in the upper half and b in the lower
        return asm(T.i32(), [_f32(builder, args[1]), _f32(builder, args[0])], f"{cvt} $0, $1, $2;", "=r,f,f")

    return typer, lower


def _pack_b16x2():
    def typer(lo, hi):
        _check_int("pack_b16x2", "lo", lo)
        _check_int("pack_b16x2", "hi", hi)
        return signature(types.uint32, lo, hi)

    def lower(builder, args):
        mask = _c32(0xFFFF)
        lo = arith.andi(_u32(builder, args[0]), mask)
        hi = arith.andi(_u32(builder, args[1]), mask)
        return arith.ori(lo, arith.shli(hi, _c32(16)))

    return typer, lower


def _bf16_bits_to_f32(bits16):
    return arith.bitcast(T.f32(), arith.shli(arith.extui(T.i32(), bits16), _c32(16)))


def _f16_bits_to_f32(bits16):
    return arith.extf(T.f32(), arith.bitcast(T.f16(), bits16))


def _halves(builder, var):
    p = _u32(builder, var)
    return arith.trunci(T.i16(), p), arith.trunci(T.i16(), arith.shrui(p, _c32(16)))


def _unpack(name, to_f32):
    def typer(packed):
        _check_int(name, "packed", packed)
        return signature(types.UniTuple(types.float32, 2), packed)

    def lower(builder, args):
        lo, hi = _halves(builder, args[0])
        return to_f32(lo), to_f32(hi)

    return typer, lower


def _unpack_b16x2():
    def typer(packed):
        _check_int("unpack_b16x2", "packed", packed)
        return signature(types.UniTuple(types.uint16, 2), packed)

    def lower(builder, args):
        return _halves(builder, args[0])

    return typer, lower


def _narrow(name, cvt):
    def typer(x):
        _check_float(name, "x", x)
        return signature(types.uint16, x)

    def lower(builder, args):
        return asm(T.i16(), [_f32(builder, args[0])], f"{cvt} $0, $1;", "=h,f")

    return typer, lower


def _widen(name, to_f32):
    def typer(bits):
        _check_int(name, "bits", bits)
        return signature(types.float32, bits)

    def lower(builder, args):
        return to_f32(arith.trunci(T.i16(), _u32(builder, args[0])))

    return typer, lower


def _tf32_of(v):
    return arith.bitcast(T.f32(), asm(T.i32(), [v], "cvt.rna.tf32.f32 $0, $1;", "=r,f"))


def _f32_to_tf32():
    def typer(x):
        _check_float("f32_to_tf32", "x", x)
        return signature(types.float32, x)

    def lower(builder, args):
        return _tf32_of(_f32(builder, args[0]))

    return typer, lower


def _split_tf32():
    def typer(x):
        _check_float("split_tf32", "x", x)
        return signature(types.UniTuple(types.float32, 2), x)

    def lower(builder, args):
        v = _f32(builder, args[0])
        big = _tf32_of(v)
        return big, _tf32_of(arith.subf(v, big))

    return typer, lower


def rules() -> dict:
    """``name -> (typer, lowering)`` for every intrinsic of ``numbakern.mma``."""
    out = {
        "mma_m16n8k16_bf16": _mma("mma_m16n8k16_bf16", M16N8K16_BF16),
        "mma_m16n8k16_f16": _mma("mma_m16n8k16_f16", M16N8K16_F16),
        "mma_m16n8k8_tf32": _mma("mma_m16n8k8_tf32", M16N8K8_TF32),
        "pack_bf16x2": _pack_cvt("pack_bf16x2", "cvt.rn.bf16x2.f32"),
        "pack_f16x2": _pack_cvt("pack_f16x2", "cvt.rn.f16x2.f32"),
        "pack_b16x2": _pack_b16x2(),
        "unpack_bf16x2": _unpack("unpack_bf16x2", _bf16_bits_to_f32),
        "unpack_f16x2": _unpack("unpack_f16x2", _f16_bits_to_f32),
        "unpack_b16x2": _unpack_b16x2(),
        "f32_to_bf16": _narrow("f32_to_bf16", "cvt.rn.bf16.f32"),
        "bf16_to_f32": _widen("bf16_to_f32", _bf16_bits_to_f32),
        "f32_to_f16": _narrow("f32_to_f16", "cvt.rn.f16.f32"),
        "f16_to_f32": _widen("f16_to_f32", _f16_bits_to_f32),
        "f32_to_tf32": _f32_to_tf32(),
        "split_tf32": _split_tf32(),
    }
    for count in (1, 2, 4):
        for trans in (False, True):
            name, typer, lower = _ldmatrix(count, trans)
            out[name] = (typer, lower)
    return out


def register(**objects) -> None:
    """``objects``: ``numbakern.mma``'s intrinsics by name (all of them)."""
    table = rules()
    missing = set(table) - set(objects)
    if missing:
        raise ValueError(f"numbakern.mlir_lowering.mma: no object given for {', '.join(sorted(missing))}")
    for name, (typer, lower) in table.items():
        define(objects[name], typer, lower)
