"""The numba-cuda emitters: every declared instruction typed by its Op's typing rule and lowered to LLVM, through
numba-cuda's own intrinsic machinery (the template an ``@intrinsic`` gets, keyed by the Op's function).

An instruction with a PTX template becomes one inline-PTX call (``asm_codegen``): fragment registers read and
written with scalar loads and stores of their ``cuda.local.array`` elements (once a kernel's loops over fragments
are unrolled the offsets are constants and LLVM keeps them in registers), shared-memory operands as 32-bit
shared-window addresses, scalars converted to the operand's type. The few without one (bit packing, 16-byte
vector accesses, the cp.async address selection) have their codegen here, by name.

``attach`` (``import numbakern.intrinsics``) registers the instructions once numba-cuda's CUDA target is loaded
(``numba.cuda.target``): in the simulator, or with numba-cuda-mlir alone, it never is, and this module imports
nothing of numba.
"""

from __future__ import annotations

from .op import Data, Element, Immediate, Op, Regs, Scalar, on_declare, signature_of, when_imported

#: the module whose import means numba-cuda's real CUDA target is in this process
TARGET = "numba.cuda.target"


def attach() -> None:
    """Register every declared instruction with numba-cuda once its CUDA target is loaded."""
    when_imported(TARGET, lambda: on_declare(register))


def register(op: Op) -> None:
    """numba-cuda types a call of ``op.function`` with the Op's typing rule and lowers it with its codegen."""
    if op.stub is not None:  # numba-cuda's own instruction
        return
    from numba.core.errors import TypingError
    from numba.cuda import types
    from numba.cuda.typing.templates import infer, infer_global, make_intrinsic_template

    lower = CODEGEN.get(op.name, asm_codegen)

    def defn(typingctx, *args):
        result = op.typing(types, TypingError, args)
        return result(*args), lower(op, op.bind(args))

    defn.__signature__ = signature_of(op, ("typingctx",))
    defn.__name__ = defn.__qualname__ = op.name
    template = make_intrinsic_template(op.function, defn, op.name)
    infer(template)
    infer_global(op.function, types.Function(template))


# -- LLVM of the operands ------------------------------------------------------------------------------------------


def element_pointer(context, builder, aryty, ary, index_ty, index):
    """The array struct and the address of ``ary[index]`` (an integer or a tuple of integers, one per dimension;
    one integer into a multi-dimensional array is a flat element offset), no wraparound, no bounds check."""
    from numba.cuda import cgutils, types

    arr = context.make_array(aryty)(context, builder, ary)
    if aryty.ndim > 1 and not isinstance(index_ty, types.BaseTuple):
        return arr, builder.gep(arr.data, [context.cast(builder, index, index_ty, types.intp)])
    if isinstance(index_ty, types.BaseTuple):
        raw, tys = cgutils.unpack_tuple(builder, index, len(index_ty)), list(index_ty)
    else:
        raw, tys = [index], [index_ty]
    inds = [context.cast(builder, v, t, types.intp) for v, t in zip(raw, tys)]
    return arr, cgutils.get_item_pointer(context, builder, aryty, arr, inds, wraparound=False)


def shared_address(builder, ptr):
    """A generic pointer to shared memory as the 32-bit shared-window address the instructions take."""
    from llvmlite import ir

    return builder.ptrtoint(builder.addrspacecast(ptr, ir.PointerType(ptr.type.pointee, 3)), ir.IntType(32))


def register_pointer(context, builder, aryty, ary, at_ty, at_v, q: int):
    """The address of fragment register ``regs[at + q]`` (``at`` None: ``regs[q]``)."""
    from llvmlite import ir
    from numba.cuda import cgutils, types

    arr = context.make_array(aryty)(context, builder, ary)
    if at_ty is None:
        index = ir.Constant(ir.IntType(64), q)
    else:
        at_i = context.cast(builder, at_v, at_ty, types.intp)
        index = builder.add(at_i, ir.Constant(at_i.type, q))
    return cgutils.get_item_pointer(context, builder, aryty, arr, [index], wraparound=False)


_LLVM = {"f32": lambda ir: ir.FloatType(), "b32": lambda ir: ir.IntType(32), "b16": lambda ir: ir.IntType(16),
         "b64": lambda ir: ir.IntType(64)}


def inline_asm(op: Op, bound_types: dict, ret, arg_types: list):
    """The Op's instruction as LLVM inline asm: its text with ``$n`` operands and its constraints."""
    from llvmlite import ir

    return ir.InlineAsm(ir.FunctionType(ret, arg_types), op.ptx_text(bound_types), op.constraints(bound_types),
                        side_effect=op.volatile)


def asm_codegen(op: Op, bound_types: dict):
    """The codegen of an instruction that is its PTX template: operands evaluated in parameter order, passed in the
    template's numbering; written registers stored back, the result converted to the call's type."""
    from llvmlite import ir
    from numba.cuda import types

    outputs, inputs = op.asm_operands(bound_types)
    ret_types = [_LLVM[t](ir) for _, _, t in outputs]
    ret = ir.VoidType() if not ret_types else ret_types[0] if len(ret_types) == 1 else ir.LiteralStructType(ret_types)
    asm = inline_asm(op, bound_types, ret, [_LLVM[t](ir) for _, _, t in inputs])

    def codegen(context, builder, sig, args):
        values = dict(zip(op.params, args))
        tys = bound_types
        operand_values: dict[int, list] = {}
        pointers: dict[int, list] = {}
        for operand in sorted(op.operands, key=lambda o: op.params.index(o.name)):  # in the call's order
            if isinstance(operand, Immediate):
                continue
            v = values[operand.name]
            if isinstance(operand, Regs):
                if operand.out and not operand.tied:
                    continue
                at_ty, at_v = (tys[operand.at], values[operand.at]) if operand.at else (None, None)
                n = op.register_count(operand, tys)
                if operand.tied:  # an accumulator: its addresses first, then its values
                    ptrs = pointers[id(operand)] = [register_pointer(context, builder, tys[operand.name], v, at_ty,
                                                                     at_v, q) for q in range(n)]
                    loaded = [builder.load(p) for p in ptrs]
                else:
                    loaded = [builder.load(register_pointer(context, builder, tys[operand.name], v, at_ty, at_v, q))
                              for q in range(n)]
                if operand.asm == "b32":  # tf32 operands: a float32 register whose bits the instruction reads
                    loaded = [builder.bitcast(x, ir.IntType(32)) if x.type == ir.FloatType() else x for x in loaded]
                operand_values[id(operand)] = loaded
            elif isinstance(operand, Element):
                _, ptr = element_pointer(context, builder, tys[operand.name], v, tys[operand.index],
                                         values[operand.index])
                operand_values[id(operand)] = [shared_address(builder, ptr) if operand.space == "shared"
                                               else builder.ptrtoint(ptr, ir.IntType(64))]
            elif isinstance(operand, Data):
                data = context.make_array(tys[operand.name])(context, builder, v).data
                operand_values[id(operand)] = [builder.ptrtoint(data, ir.IntType(64))]
            elif isinstance(operand, Scalar):
                operand_values[id(operand)] = [context.cast(builder, v, tys[operand.name],
                                                            getattr(types, operand.cast))]
        out = builder.call(asm, op.asm_arguments(inputs, operand_values))
        results = [out] if len(outputs) == 1 else [builder.extract_value(out, i) for i in range(len(outputs))]
        result = None
        for (o, q, _), v in zip(outputs, results):
            if o is None:
                result = v
                continue
            regs = tys[o.name]
            if regs.dtype == types.float32 and v.type != ir.FloatType():  # 32-bit data kept in float32 registers
                v = builder.bitcast(v, ir.FloatType())
            if o.tied:
                builder.store(v, pointers[id(o)][q])
            else:
                at_ty, at_v = (tys[o.at], values[o.at]) if o.at else (None, None)
                builder.store(v, register_pointer(context, builder, regs, values[o.name], at_ty, at_v, q))
        if result is None:
            return context.get_dummy_value()
        if op.result == "bool":
            return builder.icmp_unsigned("!=", result, ir.Constant(result.type, 0))
        if op.result == "float32" and result.type != ir.FloatType():
            return builder.bitcast(result, ir.FloatType())
        return result

    return codegen


# -- the instructions without a template of their own ---------------------------------------------------------------


def _as(context, builder, v, t, name):
    from numba.cuda import types

    return context.cast(builder, v, t, getattr(types, name))


def _pack_b16x2(op, tys):
    from llvmlite import ir

    def codegen(context, builder, sig, args):
        mask = ir.Constant(ir.IntType(32), 0xFFFF)
        lo = builder.and_(_as(context, builder, args[0], tys["lo"], "uint32"), mask)
        hi = builder.and_(_as(context, builder, args[1], tys["hi"], "uint32"), mask)
        return builder.or_(lo, builder.shl(hi, ir.Constant(ir.IntType(32), 16)))

    return codegen


def _bf16_to_f32(builder, bits16):
    from llvmlite import ir

    i32 = ir.IntType(32)
    return builder.bitcast(builder.shl(builder.zext(bits16, i32), ir.Constant(i32, 16)), ir.FloatType())


def _f16_to_f32(builder, bits16):
    from llvmlite import ir

    return builder.fpext(builder.bitcast(bits16, ir.HalfType()), ir.FloatType())


def _unpack(widen):
    def factory(op, tys):
        from llvmlite import ir

        i16, i32 = ir.IntType(16), ir.IntType(32)

        def codegen(context, builder, sig, args):
            p = _as(context, builder, args[0], tys["packed"], "uint32")
            halves = []
            for shift in (0, 16):  # each half widened before the next is cut out
                half = builder.trunc(builder.lshr(p, ir.Constant(i32, 16)) if shift else p, i16)
                halves.append(widen(builder, half) if widen is not None else half)
            return context.make_tuple(builder, sig.return_type, halves)

        return codegen

    return factory


def _widen(widen):
    def factory(op, tys):
        from llvmlite import ir

        def codegen(context, builder, sig, args):
            return widen(builder, builder.trunc(_as(context, builder, args[0], tys["bits"], "uint32"), ir.IntType(16)))

        return codegen

    return factory


def _split_tf32(op, tys):
    from llvmlite import ir

    from .tensorcore import F32_TO_TF32

    f32, i32 = ir.FloatType(), ir.IntType(32)

    def tf32(builder, v):
        asm = inline_asm(F32_TO_TF32, {"x": None}, i32, [f32])
        return builder.bitcast(builder.call(asm, [v]), f32)

    def codegen(context, builder, sig, args):
        v = _as(context, builder, args[0], tys["x"], "float32")
        big = tf32(builder, v)
        small = tf32(builder, builder.fsub(v, big))
        return context.make_tuple(builder, sig.return_type, [big, small])

    return codegen


def _vector(store: bool):
    def factory(op, tys):
        from llvmlite import ir
        from numba.cuda import cgutils, types

        vec_t = ir.VectorType(ir.FloatType(), 4)
        mem_ty, index_ty, regs_ty, at_ty = (tys[p] for p in op.params)

        def codegen(context, builder, sig, args):
            mem_v, index_v, regs_v, at_v = args
            _, ptr = element_pointer(context, builder, mem_ty, mem_v, index_ty, index_v)
            if not store:
                vec = builder.load(builder.bitcast(ptr, vec_t.as_pointer()), align=16)
            regs_arr = context.make_array(regs_ty)(context, builder, regs_v)
            at_i = context.cast(builder, at_v, at_ty, types.intp)
            vec_out = ir.Constant(vec_t, ir.Undefined)
            for q in range(4):
                slot = cgutils.get_item_pointer(context, builder, regs_ty, regs_arr,
                                                [builder.add(at_i, ir.Constant(at_i.type, q))], wraparound=False)
                if store:
                    vec_out = builder.insert_element(vec_out, builder.load(slot), ir.Constant(ir.IntType(32), q))
                else:
                    builder.store(builder.extract_element(vec, ir.Constant(ir.IntType(32), q)), slot)
            if store:
                builder.store(vec_out, builder.bitcast(ptr, vec_t.as_pointer()), align=16)
            return context.get_dummy_value()

        return codegen

    return factory


def _copy(op, tys):
    """cp.async: ``valid`` False copies nothing (source size 0) from the array's start."""
    from llvmlite import ir

    i32, i64 = ir.IntType(32), ir.IntType(64)
    asm = inline_asm(op, tys, ir.VoidType(), [i32, i64, i32])
    nbytes_valid = op.shape

    def codegen(context, builder, sig, args):
        dst_v, didx_v, src_v, sidx_v, valid_v = args
        _, dptr = element_pointer(context, builder, tys["dst"], dst_v, tys["dst_index"], didx_v)
        src_arr, sptr = element_pointer(context, builder, tys["src"], src_v, tys["src_index"], sidx_v)
        saddr = shared_address(builder, dptr)
        gaddr = builder.select(valid_v, builder.ptrtoint(sptr, i64), builder.ptrtoint(src_arr.data, i64))
        nbytes = builder.select(valid_v, ir.Constant(i32, nbytes_valid), ir.Constant(i32, 0))
        builder.call(asm, [saddr, gaddr, nbytes])
        return context.get_dummy_value()

    return codegen


def _shared_address(op, tys):
    def codegen(context, builder, sig, args):
        _, ptr = element_pointer(context, builder, tys["arr"], args[0], tys["index"], args[1])
        return shared_address(builder, ptr)

    return codegen


CODEGEN = {
    "pack_b16x2": _pack_b16x2,
    "unpack_bf16x2": _unpack(_bf16_to_f32), "unpack_f16x2": _unpack(_f16_to_f32), "unpack_b16x2": _unpack(None),
    "bf16_to_f32": _widen(_bf16_to_f32), "f16_to_f32": _widen(_f16_to_f32),
    "split_tf32": _split_tf32,
    "vload4": _vector(False), "vstore4": _vector(True),
    "copy_async16": _copy, "copy_async4": _copy, "copy_async": _copy,
    "shared_address": _shared_address,
}
