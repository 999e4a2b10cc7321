"""numbakern's declared instructions (``numbakern.intrinsics``) on numba-cuda-mlir: each typed by its Op's typing
rule and lowered to the same PTX as the numba-cuda lowering, as inline PTX (``llvm.inline_asm`` with side effects:
never dropped, duplicated, or moved into a branch where part of the warp would skip it).

- an instruction with a PTX template (``mma.sync``, ``ldmatrix``, the ``cvt`` conversions, ``cp.async``'s group
  instructions) becomes that template: fragment registers read from and written to their arrays (tf32 operands as
  their 32-bit patterns), shared-memory operands as 32-bit shared addresses;
- ``vload4`` / ``vstore4``: one ``llvm.load`` / ``llvm.store`` of a ``vector<4xf32>`` with ``alignment = 16``;
- ``copy_async*``: the template with the source address and size selected by ``valid`` (an invalid copy reads
  nothing from the array's start);
- bit packing and widening: plain integer and float operations;
- Hopper's (wgmma, TMA, mbarriers, ``numbakern.mma.hopper``): their templates, the tensor map as its array's 64-bit
  data pointer. They need ``sm_90a``; numba-cuda-mlir 0.6 compiles for the device's ``sm_90`` (no ``a``), where
  their PTX does not assemble (``ptxas``: "not supported on .target 'sm_90'").

Inline PTX rather than the NVVM dialect's ``nvvm.mma.sync``, ``nvvm.ldmatrix`` or ``nvvm.cp.async.*``:
numba-cuda-mlir 0.6 turns its MLIR for a GPU older than sm_100 into LLVM 7 NVVM IR with a translator that stops at
NVVM operations outside a fixed set ("unsupported NVVM op"); it translates ``llvm.inline_asm``.
"""

from __future__ import annotations

from ..intrinsics.op import Data, Element, Immediate, Op, Regs, Scalar, asm_type, on_declare
from ..intrinsics.tensorcore import F32_TO_TF32
from .support import (
    GLOBAL,
    SHARED,
    T,
    TypingError,
    arith,
    array_pointer,
    asm,
    define,
    element_pointer,
    extending,
    integer,
    llvm,
    load_register,
    signature,
    space_pointer,
    store_register,
    types,
)

#: the families of instructions numba-cuda-mlir compiles
FAMILIES = ("mma", "ldmatrix", "cvt", "vector", "copy", "hopper")
_MLIR = {"f32": T.f32, "b32": T.i32, "b16": T.i16, "b64": T.i64}


def register() -> None:
    """Every instruction declared now and later (a later one refreshes numba-cuda-mlir's registries itself)."""
    registered = []

    def each(op: Op) -> None:
        register_op(op)
        if registered:
            extending.refresh_registries()

    on_declare(each)
    registered.append(True)


def register_op(op: Op) -> None:
    """numba-cuda-mlir types a call of ``op.function`` with its typing rule and lowers it (families above)."""
    if op.family not in FAMILIES or op.function is None:
        return

    def typer(*args):
        return signature(op.typing(types, TypingError, args), *args)

    if op.name in LOWERING:
        lower = LOWERING[op.name]
    elif op.name.startswith("copy_async"):
        lower = _copy(op)
    else:
        lower = _lower_template(op)
    define(op.function, typer, lower, prefer_literal=any(isinstance(o, Immediate) for o in op.operands))


def _struct(element, count):
    return llvm.StructType.get_literal([element] * count)


def _fields(result, element, count) -> list:
    return [llvm.extractvalue(element, result, [q]) for q in range(count)]


def _bound_types(builder, op: Op, args) -> dict:
    return dict(zip(op.params, (builder.get_numba_type(a) for a in args)))


def _lower_template(op: Op):
    def lower(builder, args):
        values = dict(zip(op.params, args))
        tys = _bound_types(builder, op, args)
        outputs, inputs = op.asm_operands(tys)
        operand_values: dict[int, list] = {}
        for operand in op.operands:
            if isinstance(operand, Regs) and not operand.out:
                regs = [load_register(builder, values[operand.name], values.get(operand.at), q)
                        for q in range(op.register_count(operand, tys))]
                if operand.asm == "b32":  # a tf32 operand is a float32 register; the instruction reads its 32 bits
                    regs = [llvm.bitcast(T.i32(), v) if v.type == T.f32() else v for v in regs]
                operand_values[id(operand)] = regs
            elif isinstance(operand, Element):
                element = builder.get_mlir_type(tys[operand.name].dtype)
                ptr = space_pointer(builder, values[operand.name], values[operand.index], element, SHARED)
                operand_values[id(operand)] = [llvm.ptrtoint(T.i32(), ptr)]
            elif isinstance(operand, Data):  # (a tensor map) its array's data, as a 64-bit generic address
                generic = llvm.addrspacecast(llvm.PointerType.get(), array_pointer(builder, values[operand.name],
                                                                                   GLOBAL))
                operand_values[id(operand)] = [llvm.ptrtoint(T.i64(), generic)]
            elif isinstance(operand, Scalar):
                operand_values[id(operand)] = [builder.mlir_convert(builder.load_var(values[operand.name]),
                                                                    _MLIR[asm_type(operand)]())]
        out_types = [_MLIR[t]() for _, _, t in outputs]
        result_type = None if not outputs else out_types[0] if len(outputs) == 1 else _struct(out_types[0],
                                                                                               len(outputs))
        out = asm(result_type, op.asm_arguments(inputs, operand_values), op.ptx_text(tys), op.constraints(tys))
        results = [out] if len(outputs) == 1 else _fields(out, out_types[0], len(outputs)) if outputs else []
        result = None
        for (o, q, _), v in zip(outputs, results):
            if o is None:
                result = v
            else:
                if tys[o.name].dtype == types.float32 and v.type != T.f32():  # 32-bit data in float32 registers
                    v = arith.bitcast(T.f32(), v)
                store_register(builder, values[o.name], values.get(o.at), q, v)
        if result is not None and op.result == "float32" and result.type != T.f32():
            return arith.bitcast(T.f32(), result)
        if result is not None and op.result == "bool":
            return arith.cmpi(arith.CmpIPredicate.ne, result, arith.constant(result.type, 0))
        return result

    return lower


# -- the instructions without a template of their own ---------------------------------------------------------------


def _u32(builder, var):
    """An integer argument as its low 32 bits (zero- or sign-extended as its type is unsigned or signed)."""
    return integer(builder, var, T.i32())


def _c32(v):
    return arith.constant(T.i32(), v)


def _pack_b16x2(builder, args):
    mask = _c32(0xFFFF)
    lo = arith.andi(_u32(builder, args[0]), mask)
    hi = arith.andi(_u32(builder, args[1]), mask)
    return arith.ori(lo, arith.shli(hi, _c32(16)))


def _bf16_bits_to_f32(bits16):
    return arith.bitcast(T.f32(), arith.shli(arith.extui(T.i32(), bits16), _c32(16)))


def _f16_bits_to_f32(bits16):
    return arith.extf(T.f32(), arith.bitcast(T.f16(), bits16))


def _halves(builder, var):
    p = _u32(builder, var)
    return arith.trunci(T.i16(), p), arith.trunci(T.i16(), arith.shrui(p, _c32(16)))


def _unpack(to_f32):
    def lower(builder, args):
        lo, hi = _halves(builder, args[0])
        return (lo, hi) if to_f32 is None else (to_f32(lo), to_f32(hi))

    return lower


def _widen(to_f32):
    return lambda builder, args: to_f32(arith.trunci(T.i16(), _u32(builder, args[0])))


def _tf32_of(v):
    return arith.bitcast(T.f32(), asm(T.i32(), [v], F32_TO_TF32.ptx_text({}), "=r,f"))


def _split_tf32(builder, args):
    v = builder.mlir_convert(builder.load_var(args[0]), T.f32())
    big = _tf32_of(v)
    return big, _tf32_of(arith.subf(v, big))


def _vector(store: bool):
    def lower(builder, args):
        arr, index, regs, at = args
        if store:
            vec = llvm.mlir_undef(T.vector(4, T.f32()))
            for q in range(4):
                vec = llvm.insertelement(vec, load_register(builder, regs, at, q), arith.constant(T.i32(), q))
            llvm.store(vec, element_pointer(builder, arr, index, T.f32()), alignment=16)
        else:
            vec = llvm.load(T.vector(4, T.f32()), element_pointer(builder, arr, index, T.f32()), alignment=16)
            for q in range(4):
                store_register(builder, regs, at, q, llvm.extractelement(vec, arith.constant(T.i32(), q)))

    return lower


def _copy(op: Op):
    nbytes, text = op.shape, op.ptx_text({})

    def lower(builder, args):
        dst, dst_index, src, src_index, valid = args
        valid_v = builder.load_var(valid)
        d_elem = builder.get_mlir_type(builder.get_numba_type(dst).dtype)
        s_elem = builder.get_mlir_type(builder.get_numba_type(src).dtype)
        # the shared-memory address as the 32 bits cp.async takes
        saddr = llvm.ptrtoint(T.i32(), space_pointer(builder, dst, dst_index, d_elem, SHARED))
        # an invalid copy reads nothing (source size 0); it names the array's start all the same
        src_ptr = llvm.select(valid_v, space_pointer(builder, src, src_index, s_elem, GLOBAL),
                              array_pointer(builder, src, GLOBAL))
        size = arith.select(valid_v, arith.constant(T.i32(), nbytes), arith.constant(T.i32(), 0))
        asm(None, [saddr, llvm.ptrtoint(T.i64(), src_ptr), size], text, "r,l,r,~{memory}")

    return lower


def _async_wait(builder, args):
    from ..intrinsics.memory import ASYNC_WAIT

    n = builder.get_numba_type(args[0]).literal_value
    asm(None, [], ASYNC_WAIT.ptx_text({"n": n}), "~{memory}")


def _shared_address(builder, args):
    arr, index = args
    element = builder.get_mlir_type(builder.get_numba_type(arr).dtype)
    return llvm.ptrtoint(T.i32(), space_pointer(builder, arr, index, element, SHARED))


LOWERING = {
    "pack_b16x2": _pack_b16x2,
    "unpack_bf16x2": _unpack(_bf16_bits_to_f32), "unpack_f16x2": _unpack(_f16_bits_to_f32),
    "unpack_b16x2": _unpack(None),
    "bf16_to_f32": _widen(_bf16_bits_to_f32), "f16_to_f32": _widen(_f16_bits_to_f32),
    "split_tf32": _split_tf32,
    "vload4": _vector(False), "vstore4": _vector(True),
    "async_wait": _async_wait,
    "shared_address": _shared_address,
}
