"""Asynchronous 16-byte copies from global to shared memory (``cp.async``, compute capability 8.0 and up).

A copy that goes straight from global to shared memory, without passing through the thread's registers, and
completes in the background while the thread computes::

    copy_async4(a_s, (stage, r, c), mt, (gr, gc), valid)   # a_s[stage, r, c:c+4] = mt[gr, gc:gc+4], or zeros
    copy_async16(t_s, (stage, r, c), x, (gr, gc), valid)   # 16 bytes of any element type: 8 bf16/f16, 4 float32..
    copy_async(a_s, (stage, c, r), m, (gr, gc), valid)     # a_s[stage, c, r] = m[gr, gc], or 0: one float, any
                                                           # alignment (a transposing copy, element by element)
    async_commit()                                         # close the group of copies issued since the last one
    async_wait(n)                                          # all but this thread's n newest groups have landed
    async_wait_all()                                       # async_wait(0): every committed group has landed

The source index may also be one integer, the flat element offset into the (C-contiguous) source: a kernel that
keeps a running offset per thread (``off + i * row_step``) spends one add per copy instead of a row times row
length product; with ``u32`` offsets (sources of fewer than 2**32 elements) that add is 32-bit.

A multi-stage pipeline keeps ``stages - 1`` groups in flight: commit one group per tile (an empty one when there
is no tile left, so the count stays right) and ``async_wait(stages - 2)`` before using the oldest. ``n`` must be a
compile-time integer (it is an immediate of the instruction): a literal or a factory's constant, not an expression
in the kernel. Copies not yet committed belong to no group and are waited for by nothing.

``valid`` False zero-fills the four destination elements and reads nothing (``cp.async`` with a source size of 0),
so a tile's edge needs no separate path. As with ``numbakern.vector_io``, both addresses must be 16-byte aligned
(last extents and last indices multiples of 4, aligned data pointers). After ``async_wait_all`` the thread's own
copies are visible to it; other threads see them after a ``cuda.syncthreads()``.

How each backend sees them:

- **GPU (numba):** ``@intrinsic``s emitting ``cp.async.cg.shared.global [dst], [src], 16, n``,
  ``cp.async.commit_group`` and ``cp.async.wait_group N`` as inline PTX.
- **GPU (numba-cuda-mlir):** the same objects, typed and lowered by numba-cuda-mlir (``numbakern.mlir_lowering``)
  into the NVVM dialect's ``nvvm.cp.async.shared.global``, ``nvvm.cp.async.commit.group`` and
  ``nvvm.cp.async.wait.group``: the same PTX instructions.
- **Simulator:** each thread's copies are queued in groups (closed by ``async_commit``) and carried out when a wait
  releases their group, element by element through the simulator's array proxies, so reading a destination before
  waiting sees the old contents (and the checkers see every element). Copies a thread never waits for never land.
- **translate:** ``nk_copy_async4(&a_s[...], valid ? &mt[...] : mt, valid)``, ``nk_async_commit()``,
  ``nk_async_wait_all()`` and ``nk_async_wait<N>()``, small inline-PTX helpers (``translate/codegen/helpers.py``).
"""

from __future__ import annotations

import numpy as np

from . import mlir_lowering, mode
from .vector_io import _check_alignment, _index_tuple, element_pointer

#: the size of one cp.async copy of ``copy_async16`` (and ``copy_async4``: four float32)
BYTES = 16

# ---------------------------------------------------------------------------------------------------------------
# the simulator's versions

class _Pending:
    """This simulated thread's copies not yet landed: the open group and the committed ones, oldest first."""

    def __init__(self):
        self.open: list = []
        self.groups: list[list] = []


def _pending() -> _Pending:
    """numbakern's engine runs each thread in its own greenlet and the stock engine in its own OS thread (whose
    greenlet is its own too), so the queue lives on the greenlet and goes with it when the thread ends."""
    import greenlet

    g = greenlet.getcurrent()
    p = getattr(g, "_numbakern_async_copies", None)
    if p is None:
        p = g._numbakern_async_copies = _Pending()
    return p


def _source_index(src, src_index) -> tuple:
    """The element index of a copy's source: an index tuple, or a flat offset into a multi-dimensional array."""
    if isinstance(src_index, tuple) or len(src.shape) == 1:
        return _index_tuple(src_index)
    flat = int(src_index)
    if not 0 <= flat < int(np.prod(src.shape)):
        from .sim.errors import OutOfBoundsError

        raise OutOfBoundsError(f"copy_async: flat source offset {flat} outside an array of shape {tuple(src.shape)}")
    return tuple(int(i) for i in np.unravel_index(flat, tuple(src.shape)))


def _copy_width(what: str, dst, src) -> int:
    """Elements in one 16-byte copy between ``dst`` and ``src`` (the same element size on both sides)."""
    size = int(np.dtype(dst.dtype).itemsize)
    if int(np.dtype(src.dtype).itemsize) != size or BYTES % size:
        raise TypeError(f"{what}: the destination ({dst.dtype}) and the source ({src.dtype}) must have the same "
                        "element size, one that divides 16 bytes")
    return BYTES // size


def _py_copy_async16(dst, dst_index, src, src_index, valid, what="copy_async16"):
    width = _copy_width(what, dst, src)
    didx = _index_tuple(dst_index)
    _check_alignment(what, dst, didx, width)
    sidx = _source_index(src, src_index) if valid else ()
    if valid:
        _check_alignment(what, src, sidx, width)
    _pending().open.append((dst, didx, src, sidx, bool(valid), width))
    _observe(dst, didx, src, sidx if valid else None, BYTES if valid else 0)


def _py_copy_async4(dst, dst_index, src, src_index, valid):
    _py_copy_async16(dst, dst_index, src, src_index, valid, "copy_async4")


def _py_copy_async(dst, dst_index, src, src_index, valid):
    sidx = _source_index(src, src_index) if valid else ()
    didx = _index_tuple(dst_index)
    _pending().open.append((dst, didx, src, sidx, bool(valid), 1))
    size = int(np.dtype(dst.dtype).itemsize)
    _observe(dst, didx, src, sidx if valid else None, size if valid else 0, size)


def _observe(dst, didx, src, sidx, src_bytes, dst_bytes=BYTES):
    """Tell the profiler (if one runs) what this copy reads and writes: it is counted here, where it is issued, not
    where it lands."""
    from .sim import intrinsics

    intrinsics.observe("cp.async", ((src, sidx, src_bytes, "ld"), (dst, didx, dst_bytes, "st")))


def _py_async_commit():
    p = _pending()
    p.groups.append(p.open)
    p.open = []


def _py_async_wait(n):
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise ValueError(f"async_wait: n must be a non-negative int (groups left in flight), got {n!r}")
    from .sim import intrinsics

    p = _pending()
    with intrinsics.landing():  # the profiler counted these copies when they were issued
        while len(p.groups) > int(n):
            for dst, didx, src, sidx, valid, width in p.groups.pop(0):
                for q in range(width):
                    d = didx[:-1] + (didx[-1] + q,)
                    dst[d] = src[sidx[:-1] + (sidx[-1] + q,)] if valid else 0


def _py_async_wait_all():
    _py_async_wait(0)


# ---------------------------------------------------------------------------------------------------------------
# the GPU's


def _make_intrinsics():
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    def _check(what, name, t, index, any_dtype):
        dtype = getattr(t, "dtype", None)
        ok_dtype = dtype == types.float32 or (any_dtype and getattr(dtype, "bitwidth", 0) in (8, 16, 32, 64))
        if not isinstance(t, types.Array) or t.layout != "C" or not ok_dtype:
            want = "an element size that divides 16 bytes" if any_dtype else "float32"
            raise TypeError(f"{what}: {name} must be a C-contiguous array of {want}, got {t}")
        n = len(index) if isinstance(index, types.BaseTuple) else 1
        tys = list(index) if isinstance(index, types.BaseTuple) else [index]
        flat_ok = name == "the source" and not isinstance(index, types.BaseTuple)
        if (n != t.ndim and not flat_ok) or not all(isinstance(i, types.Integer) for i in tys):
            raise TypeError(f"{what}: the index into {name} must be {t.ndim} integer(s), got {index}")

    def source_pointer(context, builder, aryty, ary, index_ty, index):
        if aryty.ndim > 1 and not isinstance(index_ty, types.BaseTuple):  # a flat element offset
            arr = context.make_array(aryty)(context, builder, ary)
            off = context.cast(builder, index, index_ty, types.intp)
            return arr, builder.gep(arr.data, [off])
        return element_pointer(context, builder, aryty, ary, index_ty, index)

    i32, i64 = ir.IntType(32), ir.IntType(64)
    copy_asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), [i32, i64, i32]),
                            "cp.async.cg.shared.global [$0], [$1], 16, $2;", "r,l,r,~{memory}", side_effect=True)
    # 4 bytes: .ca (through L1) is the only cache mode for copies under 16 bytes
    copy1_asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), [i32, i64, i32]),
                             "cp.async.ca.shared.global [$0], [$1], 4, $2;", "r,l,r,~{memory}", side_effect=True)
    commit_asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), "cp.async.commit_group;", "~{memory}",
                              side_effect=True)
    wait_asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), "cp.async.wait_group 0;", "~{memory}",
                            side_effect=True)

    def copy_intrinsic(name, asm, nbytes_valid, any_dtype=False):
        def copy(typingctx, dst, dst_index, src, src_index, valid):
            _check(name, "the destination", dst, dst_index, any_dtype)
            _check(name, "the source", src, src_index, any_dtype)
            if any_dtype and dst.dtype.bitwidth != src.dtype.bitwidth:
                raise TypeError(f"{name}: the destination ({dst.dtype}) and the source ({src.dtype}) must have the "
                                "same element size")
            if not isinstance(valid, types.Boolean):
                raise TypeError(f"{name}: valid must be a bool, got {valid}")

            def codegen(context, builder, sig, args):
                dst_v, didx_v, src_v, sidx_v, valid_v = args
                _, dptr = element_pointer(context, builder, dst, dst_v, dst_index, didx_v)
                src_arr, sptr = source_pointer(context, builder, src, src_v, src_index, sidx_v)
                # the shared-memory address: the generic pointer back in the shared state space, as 32 bits
                shared = builder.addrspacecast(dptr, ir.PointerType(dptr.type.pointee, 3))
                saddr = builder.ptrtoint(shared, i32)
                # an invalid copy reads nothing (source size 0); point it at the array's start all the same
                gaddr = builder.select(valid_v, builder.ptrtoint(sptr, i64), builder.ptrtoint(src_arr.data, i64))
                nbytes = builder.select(valid_v, ir.Constant(i32, nbytes_valid), ir.Constant(i32, 0))
                builder.call(asm, [saddr, gaddr, nbytes])
                return context.get_dummy_value()

            return types.void(dst, dst_index, src, src_index, valid), codegen

        copy.__name__ = copy.__qualname__ = name
        return intrinsic(copy)

    copy_async16 = copy_intrinsic("copy_async16", copy_asm, BYTES, any_dtype=True)
    copy_async4 = copy_intrinsic("copy_async4", copy_asm, BYTES)
    copy_async = copy_intrinsic("copy_async", copy1_asm, 4)

    @intrinsic
    def async_commit(typingctx):
        def codegen(context, builder, sig, args):
            builder.call(commit_asm, [])
            return context.get_dummy_value()

        return types.void(), codegen

    @intrinsic
    def async_wait_all(typingctx):
        def codegen(context, builder, sig, args):
            builder.call(wait_asm, [])
            return context.get_dummy_value()

        return types.void(), codegen

    @intrinsic
    def async_wait(typingctx, n):
        from numba.core.errors import TypingError

        if not isinstance(n, types.IntegerLiteral) or n.literal_value < 0:
            # a TypingError (not TypeError): numba then retries with the argument's literal type, if it has one
            raise TypingError(f"async_wait: n must be a non-negative compile-time integer (a literal or a factory's "
                            f"constant; it is an immediate of cp.async.wait_group), got {n}")
        asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), f"cp.async.wait_group {n.literal_value};",
                           "~{memory}", side_effect=True)

        def codegen(context, builder, sig, args):
            builder.call(asm, [])
            return context.get_dummy_value()

        return types.void(n), codegen

    return copy_async16, copy_async4, copy_async, async_commit, async_wait_all, async_wait



def _numba_cuda_installed() -> bool:
    from .frontend.choice import numba_cuda_installed

    return numba_cuda_installed()

if mode.in_simulator() or not _numba_cuda_installed():
    # the simulator, or numba-cuda-mlir alone on a GPU (which types and lowers these same functions, below)
    copy_async16, copy_async4, copy_async, async_commit, async_wait_all, async_wait = (
        _py_copy_async16, _py_copy_async4, _py_copy_async, _py_async_commit, _py_async_wait_all, _py_async_wait)
else:
    copy_async16, copy_async4, copy_async, async_commit, async_wait_all, async_wait = _make_intrinsics()

# numba-cuda-mlir compiles calls of these same objects (numbakern.mlir_lowering.async_copy)
mlir_lowering.register("async_copy", copy_async16=copy_async16, copy_async4=copy_async4, copy_async=copy_async,
                       async_commit=async_commit, async_wait=async_wait, async_wait_all=async_wait_all)

__all__ = ["copy_async16", "copy_async4", "copy_async", "async_commit", "async_wait", "async_wait_all"]
