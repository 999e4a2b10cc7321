"""``vload4`` / ``vstore4`` on numba-cuda-mlir: one ``llvm.load`` / ``llvm.store`` of a ``vector<4xf32>`` with
``alignment = 16`` at the element's address (``ld.global.v4.f32``, ``ld.shared.v4.f32``...), the four lanes moved
in and out of the register array with scalar ``memref`` accesses, as the numba-cuda lowering does."""

from __future__ import annotations

from .support import (
    T,
    arith,
    check_array,
    check_index,
    check_integer,
    define,
    element_pointer,
    llvm,
    load_register,
    signature,
    store_register,
    types,
)

WIDTH = 4


def _typer(what: str):
    def typer(arr, index, regs, at):
        check_array(what, "the array", arr, (types.float32,), layout="C")
        check_array(what, "regs (a 1-D cuda.local.array)", regs, (types.float32,), ndim=1)
        check_index(what, "the array", index, arr.ndim)
        check_integer(what, "the register offset", at)
        return signature(types.void, arr, index, regs, at)

    return typer


def _lane(q: int):
    return arith.constant(T.i32(), q)


def _lower_vload4(builder, args):
    arr, index, regs, at = args
    vec = llvm.load(T.vector(WIDTH, T.f32()), element_pointer(builder, arr, index, T.f32()), alignment=16)
    for q in range(WIDTH):
        store_register(builder, regs, at, q, llvm.extractelement(vec, _lane(q)))


def _lower_vstore4(builder, args):
    arr, index, regs, at = args
    vec = llvm.mlir_undef(T.vector(WIDTH, T.f32()))
    for q in range(WIDTH):
        vec = llvm.insertelement(vec, load_register(builder, regs, at, q), _lane(q))
    llvm.store(vec, element_pointer(builder, arr, index, T.f32()), alignment=16)


def register(vload4, vstore4) -> None:
    define(vload4, _typer("vload4"), _lower_vload4)
    define(vstore4, _typer("vstore4"), _lower_vstore4)
