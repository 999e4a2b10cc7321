"""Asynchronous 16-byte copies from global to shared memory (``cp.async``, compute capability 8.0 and up).

A copy that goes straight from global to shared memory, without passing through the thread's registers, and
completes in the background while the thread computes::

    copy_async4(a_s, (stage, r, c), mt, (gr, gc), valid)   # a_s[stage, r, c:c+4] = mt[gr, gc:gc+4], or zeros
    async_commit()                                         # close the group of copies issued so far
    async_wait_all()                                       # wait until every copy of this thread has landed

``valid`` False zero-fills the four destination elements and reads nothing (``cp.async`` with a source size of 0),
so a tile's edge needs no separate path. As with ``numbakern.vector_io``, both addresses must be 16-byte aligned
(last extents and last indices multiples of 4, aligned data pointers). After ``async_wait_all`` the thread's own
copies are visible to it; other threads see them after a ``cuda.syncthreads()``.

How each backend sees them:

- **GPU (numba):** ``@intrinsic``s emitting ``cp.async.cg.shared.global [dst], [src], 16, n``,
  ``cp.async.commit_group`` and ``cp.async.wait_group 0`` as inline PTX.
- **Simulator:** each thread's copies are queued and carried out at its ``async_wait_all()``, element by element
  through the simulator's array proxies, so reading a destination before waiting sees the old contents (and the
  checkers see every element). Copies a thread never waits for never land.
- **translate:** ``nk_copy_async4(&a_s[...], valid ? &mt[...] : mt, valid)``, ``nk_async_commit()`` and
  ``nk_async_wait_all()``, small inline-PTX helpers (``translate/codegen/helpers.py``).
"""

from __future__ import annotations

from . import mode
from .vector_io import WIDTH, _check_alignment, _index_tuple, element_pointer

# ---------------------------------------------------------------------------------------------------------------
# the simulator's versions

def _queue() -> list:
    """This simulated thread's copies not yet waited for. numbakern's engine runs each thread in its own greenlet and
    the stock engine in its own OS thread (whose greenlet is its own too), so the queue lives on the greenlet and
    goes with it when the thread ends."""
    import greenlet

    g = greenlet.getcurrent()
    q = getattr(g, "_numbakern_async_copies", None)
    if q is None:
        q = g._numbakern_async_copies = []
    return q


def _py_copy_async4(dst, dst_index, src, src_index, valid):
    didx, sidx = _index_tuple(dst_index), _index_tuple(src_index)
    _check_alignment("copy_async4", dst, didx)
    if valid:
        _check_alignment("copy_async4", src, sidx)
    _queue().append((dst, didx, src, sidx, bool(valid)))


def _py_async_commit():
    pass


def _py_async_wait_all():
    q = _queue()
    copies, q[:] = list(q), []
    for dst, didx, src, sidx, valid in copies:
        for q in range(WIDTH):
            d = didx[:-1] + (didx[-1] + q,)
            dst[d] = src[sidx[:-1] + (sidx[-1] + q,)] if valid else 0.0


# ---------------------------------------------------------------------------------------------------------------
# the GPU's


def _make_intrinsics():
    from llvmlite import ir
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    def _check(name, t, index):
        if not isinstance(t, types.Array) or t.dtype != types.float32 or t.layout != "C":
            raise TypeError(f"copy_async4: {name} must be a C-contiguous float32 array, got {t}")
        n = len(index) if isinstance(index, types.BaseTuple) else 1
        tys = list(index) if isinstance(index, types.BaseTuple) else [index]
        if n != t.ndim or not all(isinstance(i, types.Integer) for i in tys):
            raise TypeError(f"copy_async4: the index into {name} must be {t.ndim} integer(s), got {index}")

    i32, i64 = ir.IntType(32), ir.IntType(64)
    copy_asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), [i32, i64, i32]),
                            "cp.async.cg.shared.global [$0], [$1], 16, $2;", "r,l,r,~{memory}", side_effect=True)
    commit_asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), "cp.async.commit_group;", "~{memory}",
                              side_effect=True)
    wait_asm = ir.InlineAsm(ir.FunctionType(ir.VoidType(), []), "cp.async.wait_group 0;", "~{memory}",
                            side_effect=True)

    @intrinsic
    def copy_async4(typingctx, dst, dst_index, src, src_index, valid):
        _check("the destination", dst, dst_index)
        _check("the source", src, src_index)
        if not isinstance(valid, types.Boolean):
            raise TypeError(f"copy_async4: valid must be a bool, got {valid}")

        def codegen(context, builder, sig, args):
            dst_v, didx_v, src_v, sidx_v, valid_v = args
            _, dptr = element_pointer(context, builder, dst, dst_v, dst_index, didx_v)
            src_arr, sptr = element_pointer(context, builder, src, src_v, src_index, sidx_v)
            # the shared-memory address: the generic pointer back in the shared state space, as 32 bits
            shared = builder.addrspacecast(dptr, ir.PointerType(dptr.type.pointee, 3))
            saddr = builder.ptrtoint(shared, i32)
            # an invalid copy reads nothing (source size 0); point it at the array's start all the same
            gaddr = builder.select(valid_v, builder.ptrtoint(sptr, i64), builder.ptrtoint(src_arr.data, i64))
            nbytes = builder.select(valid_v, ir.Constant(i32, 16), ir.Constant(i32, 0))
            builder.call(copy_asm, [saddr, gaddr, nbytes])
            return context.get_dummy_value()

        return types.void(dst, dst_index, src, src_index, valid), codegen

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

    return copy_async4, async_commit, async_wait_all


if mode.in_simulator():
    copy_async4, async_commit, async_wait_all = _py_copy_async4, _py_async_commit, _py_async_wait_all
else:
    copy_async4, async_commit, async_wait_all = _make_intrinsics()

__all__ = ["copy_async4", "async_commit", "async_wait_all"]
