"""``cp.async`` on numba-cuda-mlir: ``cp.async.cg.shared.global [dst], [src], 16, n`` (``copy_async4``, and
``copy_async16`` for 16 bytes of any element type),
``cp.async.ca.shared.global [dst], [src], 4, n`` (``copy_async``; ``n``, the source size, is 0 for an invalid copy,
which then reads nothing and zero-fills), ``cp.async.commit_group`` and ``cp.async.wait_group N``, as inline PTX
(``llvm.inline_asm``, side effects and a memory clobber: the same instructions as the numba-cuda lowering).

Inline PTX rather than the NVVM dialect's ``nvvm.cp.async.*`` operations: numba-cuda-mlir 0.6 turns its MLIR for a
GPU older than sm_100 into LLVM 7 NVVM IR with a translator that knows a fixed set of NVVM operations and stops at
the others ("unsupported NVVM op: nvvm.cp.async.shared.global"); it translates ``llvm.inline_asm``.
"""

from __future__ import annotations

from .support import (
    GLOBAL,
    SHARED,
    T,
    TypingError,
    arith,
    array_pointer,
    asm,
    check_array,
    check_index,
    define,
    llvm,
    signature,
    space_pointer,
    types,
)


def _copy_typer(what: str, any_dtype: bool = False):
    def typer(dst, dst_index, src, src_index, valid):
        dtypes = None if any_dtype else (types.float32,)
        check_array(what, "the destination", dst, dtypes, layout="C")
        check_array(what, "the source", src, dtypes, layout="C")
        if any_dtype:  # copy_async16: 16 bytes of any element type, the same size on both sides
            sizes = {getattr(t.dtype, "bitwidth", 0) for t in (dst, src)}
            if len(sizes) != 1 or not sizes <= {8, 16, 32, 64}:
                raise TypingError(f"{what}: the destination ({dst.dtype}) and the source ({src.dtype}) must have "
                                  "the same element size, one that divides 16 bytes")
        check_index(what, "the destination", dst_index, dst.ndim)
        check_index(what, "the source", src_index, src.ndim, flat_ok=True)
        if not isinstance(valid, types.Boolean):
            raise TypingError(f"{what}: valid must be a bool, got {valid}")
        return signature(types.void, dst, dst_index, src, src_index, valid)

    return typer


def _copy_lowering(nbytes: int, cache: str):
    text = f"cp.async.{cache}.shared.global [$0], [$1], {nbytes}, $2;"

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


def _no_arguments(what: str):
    def typer(*args):
        if args:
            raise TypingError(f"{what}: takes no arguments, got {len(args)}")
        return signature(types.void)

    return typer


def _wait_typer(*args):
    if len(args) != 1:
        raise TypingError(f"async_wait: takes one argument, n (the groups left in flight), got {len(args)}")
    n = args[0]
    if not isinstance(n, types.IntegerLiteral) or n.literal_value < 0:
        raise TypingError(f"async_wait: n must be a non-negative compile-time integer (a literal or a factory's "
                          f"constant; it is an immediate of cp.async.wait_group), got {n}")
    return signature(types.void, n)


def _wait(n: int) -> None:
    asm(None, [], f"cp.async.wait_group {n};", "~{memory}")


def register(copy_async16, copy_async4, copy_async, async_commit, async_wait, async_wait_all) -> None:
    define(copy_async16, _copy_typer("copy_async16", any_dtype=True), _copy_lowering(16, "cg"))
    define(copy_async4, _copy_typer("copy_async4"), _copy_lowering(16, "cg"))
    # 4 bytes: .ca (through L1) is the only cache mode for copies under 16 bytes
    define(copy_async, _copy_typer("copy_async"), _copy_lowering(4, "ca"))
    define(async_commit, _no_arguments("async_commit"),
           lambda builder, args: asm(None, [], "cp.async.commit_group;", "~{memory}"))
    define(async_wait, _wait_typer, lambda builder, args: _wait(builder.get_numba_type(args[0]).literal_value),
           prefer_literal=True)
    define(async_wait_all, _no_arguments("async_wait_all"), lambda builder, args: _wait(0))
