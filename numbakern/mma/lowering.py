"""The tensor-core intrinsics on a GPU: numba-cuda ``@intrinsic``s that emit the PTX instructions as inline PTX.

Typing (the argument checks) and code generation live together per intrinsic, as ``numbakern.vector_io`` and
``numbakern.async_copy`` do. Fragment registers are elements of 1-D ``cuda.local.array``s read and written with
scalar loads and stores: once the kernel's loops over fragments are unrolled (constant offsets), LLVM keeps them
in registers.

The mma and ldmatrix calls are ``volatile`` inline PTX (LLVM neither drops, duplicates nor moves them into a
branch, where part of the warp would skip them); ldmatrix also clobbers memory, so it stays after the
``cuda.syncthreads()`` that publishes the tile it reads.
"""

from __future__ import annotations

from .layout import M16N8K8_TF32, M16N8K16_BF16, M16N8K16_F16


def make_intrinsics() -> dict:
    from llvmlite import ir
    from numba.core.errors import TypingError
    from numba.cuda import cgutils, types
    from numba.cuda.extending import intrinsic

    from ..vector_io import element_pointer

    i16, i32, f32, f16 = ir.IntType(16), ir.IntType(32), ir.FloatType(), ir.HalfType()

    def c32(v):
        return ir.Constant(i32, v)

    def check_regs(what, name, t, dtypes):
        if not isinstance(t, types.Array) or t.ndim != 1 or t.dtype not in dtypes:
            want = " or ".join(str(d) for d in dtypes)
            raise TypingError(f"{what}: {name} must be a 1-D {want} array (a cuda.local.array of fragment "
                              f"registers), got {t}")

    def check_offset(what, name, t):
        if not isinstance(t, types.Integer):
            raise TypingError(f"{what}: {name} (the first register's index) must be an integer, got {t}")

    def reg_pointer(context, builder, aryty, ary, at_ty, at_v, q):
        arr = context.make_array(aryty)(context, builder, ary)
        at_i = context.cast(builder, at_v, at_ty, types.intp)
        return cgutils.get_item_pointer(context, builder, aryty, arr, [builder.add(at_i, ir.Constant(at_i.type, q))],
                                        wraparound=False)

    def load_regs(context, builder, aryty, ary, at_ty, at_v, count, as_bits):
        out = []
        for q in range(count):
            v = builder.load(reg_pointer(context, builder, aryty, ary, at_ty, at_v, q))
            out.append(builder.bitcast(v, i32) if as_bits and v.type == f32 else v)
        return out

    # -- mma.sync --------------------------------------------------------------------------------------------------

    def mma_intrinsic(name, shape):
        operand_types = (types.uint32,) if shape.packed else (types.float32,)
        ret = ir.LiteralStructType([f32] * 4)
        a_ops = ",".join(f"${4 + i}" for i in range(shape.a_regs))
        b_ops = ",".join(f"${4 + shape.a_regs + i}" for i in range(shape.b_regs))
        c_first = 4 + shape.a_regs + shape.b_regs
        c_ops = ",".join(f"${c_first + i}" for i in range(4))
        asm = ir.InlineAsm(
            ir.FunctionType(ret, [i32] * (shape.a_regs + shape.b_regs) + [f32] * 4),
            f"{shape.ptx} {{$0,$1,$2,$3}}, {{{a_ops}}}, {{{b_ops}}}, {{{c_ops}}};",
            ",".join(["=f"] * 4 + ["r"] * (shape.a_regs + shape.b_regs) + ["f"] * 4), side_effect=True)

        def mma(typingctx, d, d_at, a, a_at, b, b_at, c, c_at):
            check_regs(name, "d", d, (types.float32,))
            check_regs(name, "a", a, operand_types)
            check_regs(name, "b", b, operand_types)
            check_regs(name, "c", c, (types.float32,))
            for arg, t in (("d_at", d_at), ("a_at", a_at), ("b_at", b_at), ("c_at", c_at)):
                check_offset(name, arg, t)

            def codegen(context, builder, sig, args):
                d_v, d_at_v, a_v, a_at_v, b_v, b_at_v, c_v, c_at_v = args
                regs = (load_regs(context, builder, a, a_v, a_at, a_at_v, shape.a_regs, True)
                        + load_regs(context, builder, b, b_v, b_at, b_at_v, shape.b_regs, True)
                        + load_regs(context, builder, c, c_v, c_at, c_at_v, 4, False))
                out = builder.call(asm, regs)
                for q in range(4):
                    builder.store(builder.extract_value(out, q),
                                  reg_pointer(context, builder, d, d_v, d_at, d_at_v, q))
                return context.get_dummy_value()

            return types.void(d, d_at, a, a_at, b, b_at, c, c_at), codegen

        mma.__name__ = mma.__qualname__ = name
        return intrinsic(mma)

    # -- ldmatrix --------------------------------------------------------------------------------------------------

    def ldmatrix_intrinsic(count, trans):
        name = f"ldmatrix_x{count}{'_trans' if trans else ''}"
        outs = ",".join(f"${i}" for i in range(count))
        ret = ir.LiteralStructType([i32] * count) if count > 1 else i32
        asm = ir.InlineAsm(
            ir.FunctionType(ret, [i32]),
            f"ldmatrix.sync.aligned.m8n8.x{count}{'.trans' if trans else ''}.shared.b16 {{{outs}}}, [${count}];",
            ",".join(["=r"] * count + ["r", "~{memory}"]), side_effect=True)

        def ldmatrix(typingctx, regs, at, smem, index):
            # float32 registers: 32-bit data (tf32 operands) whose bits the instruction moves
            check_regs(name, "regs", regs, (types.uint32, types.float32))
            check_offset(name, "at", at)
            if not isinstance(smem, types.Array) or smem.layout != "C" or \
                    getattr(smem.dtype, "bitwidth", 0) not in (16, 32):
                raise TypingError(f"{name}: smem must be a C-contiguous shared array of 16- or 32-bit elements "
                                  f"(uint16 bit patterns of bf16, float16, uint32), got {smem}")
            n = len(index) if isinstance(index, types.BaseTuple) else 1
            idx = list(index) if isinstance(index, types.BaseTuple) else [index]
            if n != smem.ndim or not all(isinstance(i, types.Integer) for i in idx):
                raise TypingError(f"{name}: the index into smem must be {smem.ndim} integer(s), got {index}")

            def codegen(context, builder, sig, args):
                regs_v, at_v, smem_v, index_v = args
                _, ptr = element_pointer(context, builder, smem, smem_v, index, index_v)
                # the generic pointer back in the shared state space, as the 32-bit address ldmatrix takes
                saddr = builder.ptrtoint(builder.addrspacecast(ptr, ir.PointerType(ptr.type.pointee, 3)), i32)
                out = builder.call(asm, [saddr])
                values = [out] if count == 1 else [builder.extract_value(out, j) for j in range(count)]
                for j, v in enumerate(values):
                    if regs.dtype == types.float32:
                        v = builder.bitcast(v, f32)
                    builder.store(v, reg_pointer(context, builder, regs, regs_v, at, at_v, j))
                return context.get_dummy_value()

            return types.void(regs, at, smem, index), codegen

        ldmatrix.__name__ = ldmatrix.__qualname__ = name
        return intrinsic(ldmatrix)

    # -- packing and conversions -----------------------------------------------------------------------------------

    def check_float(what, name, t):
        if not isinstance(t, types.Float):
            raise TypingError(f"{what}: {name} must be a float, got {t}")

    def check_int(what, name, t):
        if not isinstance(t, types.Integer):
            raise TypingError(f"{what}: {name} must be an integer (16-bit pattern), got {t}")

    def as_f32(context, builder, v, t):
        return context.cast(builder, v, t, types.float32)

    def as_i32(context, builder, v, t):
        return context.cast(builder, v, t, types.uint32)

    def asm_call(builder, ret_type, arg_types, text, constraints, args):
        return builder.call(ir.InlineAsm(ir.FunctionType(ret_type, arg_types), text, constraints), args)

    def pack_cvt(name, cvt):
        def pack(typingctx, lo, hi):
            check_float(name, "lo", lo)
            check_float(name, "hi", hi)

            def codegen(context, builder, sig, args):
                lo_v, hi_v = as_f32(context, builder, args[0], lo), as_f32(context, builder, args[1], hi)
                # cvt.rn.bf16x2.f32 d, a, b puts a in the upper half and b in the lower
                return asm_call(builder, i32, [f32, f32], f"{cvt} $0, $1, $2;", "=r,f,f", [hi_v, lo_v])

            return types.uint32(lo, hi), codegen

        pack.__name__ = pack.__qualname__ = name
        return intrinsic(pack)

    @intrinsic
    def pack_b16x2(typingctx, lo, hi):
        check_int("pack_b16x2", "lo", lo)
        check_int("pack_b16x2", "hi", hi)

        def codegen(context, builder, sig, args):
            mask = c32(0xFFFF)
            lo_v = builder.and_(as_i32(context, builder, args[0], lo), mask)
            hi_v = builder.and_(as_i32(context, builder, args[1], hi), mask)
            return builder.or_(lo_v, builder.shl(hi_v, c32(16)))

        return types.uint32(lo, hi), codegen

    def unpack_intrinsic(name, half_to_f32):
        def unpack(typingctx, packed):
            check_int(name, "packed", packed)
            ret = types.UniTuple(types.float32, 2)

            def codegen(context, builder, sig, args):
                p = as_i32(context, builder, args[0], packed)
                lo = half_to_f32(builder, builder.trunc(p, i16))
                hi = half_to_f32(builder, builder.trunc(builder.lshr(p, c32(16)), i16))
                return context.make_tuple(builder, ret, [lo, hi])

            return ret(packed), codegen

        unpack.__name__ = unpack.__qualname__ = name
        return intrinsic(unpack)

    def bf16_bits_to_f32(builder, bits16):
        return builder.bitcast(builder.shl(builder.zext(bits16, i32), c32(16)), f32)

    def f16_bits_to_f32(builder, bits16):
        return builder.fpext(builder.bitcast(bits16, f16), f32)

    @intrinsic
    def unpack_b16x2(typingctx, packed):
        check_int("unpack_b16x2", "packed", packed)
        ret = types.UniTuple(types.uint16, 2)

        def codegen(context, builder, sig, args):
            p = as_i32(context, builder, args[0], packed)
            lo, hi = builder.trunc(p, i16), builder.trunc(builder.lshr(p, c32(16)), i16)
            return context.make_tuple(builder, ret, [lo, hi])

        return ret(packed), codegen

    @intrinsic
    def f32_to_bf16(typingctx, x):
        check_float("f32_to_bf16", "x", x)

        def codegen(context, builder, sig, args):
            return asm_call(builder, i16, [f32], "cvt.rn.bf16.f32 $0, $1;", "=h,f",
                            [as_f32(context, builder, args[0], x)])

        return types.uint16(x), codegen

    @intrinsic
    def f32_to_f16(typingctx, x):
        check_float("f32_to_f16", "x", x)

        def codegen(context, builder, sig, args):
            return asm_call(builder, i16, [f32], "cvt.rn.f16.f32 $0, $1;", "=h,f",
                            [as_f32(context, builder, args[0], x)])

        return types.uint16(x), codegen

    def widen_intrinsic(name, to_f32):
        def widen(typingctx, bits):
            check_int(name, "bits", bits)

            def codegen(context, builder, sig, args):
                return to_f32(builder, builder.trunc(as_i32(context, builder, args[0], bits), i16))

            return types.float32(bits), codegen

        widen.__name__ = widen.__qualname__ = name
        return intrinsic(widen)

    def tf32_of(builder, v):
        bits = asm_call(builder, i32, [f32], "cvt.rna.tf32.f32 $0, $1;", "=r,f", [v])
        return builder.bitcast(bits, f32)

    @intrinsic
    def f32_to_tf32(typingctx, x):
        check_float("f32_to_tf32", "x", x)

        def codegen(context, builder, sig, args):
            return tf32_of(builder, as_f32(context, builder, args[0], x))

        return types.float32(x), codegen

    @intrinsic
    def split_tf32(typingctx, x):
        check_float("split_tf32", "x", x)
        ret = types.UniTuple(types.float32, 2)

        def codegen(context, builder, sig, args):
            v = as_f32(context, builder, args[0], x)
            big = tf32_of(builder, v)
            small = tf32_of(builder, builder.fsub(v, big))
            return context.make_tuple(builder, ret, [big, small])

        return ret(x), codegen

    out = {
        "mma_m16n8k16_bf16": mma_intrinsic("mma_m16n8k16_bf16", M16N8K16_BF16),
        "mma_m16n8k16_f16": mma_intrinsic("mma_m16n8k16_f16", M16N8K16_F16),
        "mma_m16n8k8_tf32": mma_intrinsic("mma_m16n8k8_tf32", M16N8K8_TF32),
        "pack_bf16x2": pack_cvt("pack_bf16x2", "cvt.rn.bf16x2.f32"),
        "pack_f16x2": pack_cvt("pack_f16x2", "cvt.rn.f16x2.f32"),
        "pack_b16x2": pack_b16x2,
        "unpack_bf16x2": unpack_intrinsic("unpack_bf16x2", bf16_bits_to_f32),
        "unpack_f16x2": unpack_intrinsic("unpack_f16x2", f16_bits_to_f32),
        "unpack_b16x2": unpack_b16x2,
        "f32_to_bf16": f32_to_bf16,
        "bf16_to_f32": widen_intrinsic("bf16_to_f32", bf16_bits_to_f32),
        "f32_to_f16": f32_to_f16,
        "f16_to_f32": widen_intrinsic("f16_to_f32", f16_bits_to_f32),
        "f32_to_tf32": f32_to_tf32,
        "split_tf32": split_tf32,
    }
    for count in (1, 2, 4):
        for trans in (False, True):
            out[f"ldmatrix_x{count}{'_trans' if trans else ''}"] = ldmatrix_intrinsic(count, trans)
    return out
