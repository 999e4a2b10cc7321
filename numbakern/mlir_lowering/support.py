"""What every numba-cuda-mlir lowering of a numbakern intrinsic needs: registering an object's typing and lowering
through numba-cuda-mlir's extension API, and reading its arguments (arrays, index tuples, fragment registers) as
MLIR values.

numba-cuda-mlir's documented extension point (its "low-level extension API") is a typing template registered on
``numba_cuda_mlir.extending.typing_registry`` for a global callable, and a lowering on
``numba_cuda_mlir.extending.lowering_registry`` that receives numba-cuda-mlir's MLIR builder and emits operations
of the MLIR dialects it ships (``numba_cuda_mlir._mlir.dialects``: ``llvm``, ``memref``, ``arith``, ``nvvm``).
Arrays arrive as ``memref`` values, index tuples as Python tuples of integers, scalars as MLIR scalars.
Everything here imports numba-cuda-mlir: only ``numbakern.mlir_lowering`` imports this module, once numba-cuda-mlir
is loaded.
"""

from __future__ import annotations

from collections.abc import Callable

from numba_cuda_mlir import extending, types
from numba_cuda_mlir._mlir import ir
from numba_cuda_mlir._mlir.dialects import arith, llvm, memref
from numba_cuda_mlir._mlir.extras import types as T
from numba_cuda_mlir.lowering_utilities import convert, memref_data_pointer, memref_to_llvm_ptr
from numba_cuda_mlir.numba_cuda.core.errors import TypingError
from numba_cuda_mlir.numba_cuda.typing.templates import AbstractTemplate, signature

__all__ = [
    "GLOBAL", "SHARED", "T", "TypingError", "arith", "array_pointer", "asm", "check_array", "check_index",
    "check_integer", "define", "element_pointer", "extending", "integer", "ir", "llvm",
    "load_register", "memref", "signature", "space_pointer", "store_register", "types",
]

#: NVVM address spaces
GLOBAL, SHARED = 1, 3


def define(obj, typer: Callable, lower: Callable, *, prefer_literal: bool = False) -> None:
    """numba-cuda-mlir types a call of ``obj`` with ``typer(*argument types) -> Signature`` (raising a
    ``TypingError`` that names the bad argument) and lowers it with ``lower(builder, args)`` (``args``: the call's
    Numba IR variables), whose return value, if any, is the call's result. ``prefer_literal``: arguments are typed
    as literals first (an instruction's immediate operand)."""
    name = getattr(obj, "__name__", str(obj))

    def generic(self, args, kws):
        if kws:
            raise TypingError(f"{name}: takes positional arguments only, got {', '.join(kws)}")
        return typer(*args)

    template = type(f"numbakern_{name}", (AbstractTemplate,),
                    {"key": obj, "generic": generic, "prefer_literal": prefer_literal})
    extending.typing_registry.register_global(obj, types.Function(template))

    def lowering(builder, target, args, kwargs):
        result = lower(builder, args)
        if result is not None:
            builder.store_var(target, result)

    extending.lowering_registry.lower(obj, types.VarArg(types.Any))(lowering)


# -- typing checks -------------------------------------------------------------------------------------------------


def check_array(what: str, name: str, t, dtypes=None, *, ndim: int | None = None, layout: str | None = None):
    if not isinstance(t, types.Array) or (dtypes is not None and t.dtype not in dtypes) \
            or (ndim is not None and t.ndim != ndim) or (layout is not None and t.layout != layout):
        want = " or ".join(str(d) for d in dtypes) if dtypes is not None else "an"
        shape = f"{ndim}-D " if ndim is not None else ""
        contiguous = "C-contiguous " if layout == "C" else ""
        raise TypingError(f"{what}: {name} must be a {contiguous}{shape}{want} array, got {t}")


def check_index(what: str, name: str, index, ndim: int, *, flat_ok: bool = False):
    """``index`` is ``ndim`` integers (or, with ``flat_ok``, one integer: a flat element offset)."""
    parts = list(index) if isinstance(index, types.BaseTuple) else [index]
    if not all(isinstance(p, types.Integer) for p in parts) or not (
            len(parts) == ndim or (flat_ok and not isinstance(index, types.BaseTuple))):
        raise TypingError(f"{what}: the index into {name} must be {ndim} integer(s) (one per dimension), got {index}")


def check_integer(what: str, name: str, t):
    if not isinstance(t, types.Integer):
        raise TypingError(f"{what}: {name} must be an integer, got {t}")


# -- lowering helpers ----------------------------------------------------------------------------------------------


def asm(result_type, operands: list, text: str, constraints: str):
    """One inline-PTX statement (``llvm.inline_asm`` with side effects: never dropped, duplicated or moved into a
    branch), ``$0``, ``$1``... naming the results then the operands, with LLVM's constraint letters."""
    return llvm.inline_asm(result_type, operands, text, constraints, has_side_effects=True)


def integer(builder, var, mlir_type):
    """An integer argument as ``mlir_type`` (sign- or zero-extended as its Numba type is signed or not)."""
    v = builder.load_var(var)
    signed = getattr(builder.get_numba_type(var), "signed", True)
    return convert(v, mlir_type, signed=signed)


def _indices(builder, var) -> list:
    idx = builder.load_var(var)
    return list(idx) if isinstance(idx, tuple) else [idx]


def element_pointer(builder, array_var, index_var, element_type):
    """The address of ``array[index]`` (no wraparound, no bounds check) in the array's own address space; one
    integer into a multi-dimensional array is a flat element offset."""
    return memref_to_llvm_ptr(builder.load_var(array_var), _indices(builder, index_var), element_type)


def space_pointer(builder, array_var, index_var, element_type, space: int):
    """``element_pointer`` in the address space ``space``: the generic address of the element cast there (a shared
    array handed to a device function may have lost its address space on the way; the generic address has not)."""
    ptr = element_pointer(builder, array_var, index_var, element_type)
    ptr_space = llvm.PointerType(ptr.type).address_space
    if ptr_space == space:
        return ptr
    generic = llvm.addrspacecast(llvm.PointerType.get(), ptr) if ptr_space else ptr
    return llvm.addrspacecast(llvm.PointerType.get(space), generic)


def array_pointer(builder, array_var, space: int):
    """The array's first element's address in ``space`` (the source an invalid copy names and never reads)."""
    return llvm.addrspacecast(llvm.PointerType.get(space), memref_data_pointer(builder.load_var(array_var)))


def _register_index(builder, at_var, q: int):
    if at_var is None:  # the fragment is the array's first registers
        return arith.constant(T.index(), q)
    at = integer(builder, at_var, T.index())
    return arith.addi(at, arith.constant(T.index(), q)) if q else at


def load_register(builder, regs_var, at_var, q: int):
    """``regs[at + q]`` of a fragment-register array (a ``cuda.local.array``; constant offsets keep it in
    registers)."""
    return memref.load(builder.load_var(regs_var), [_register_index(builder, at_var, q)])


def store_register(builder, regs_var, at_var, q: int, v) -> None:
    memref.store(v, builder.load_var(regs_var), [_register_index(builder, at_var, q)])
