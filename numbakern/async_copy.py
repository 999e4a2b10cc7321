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

Each is declared once in ``numbakern.intrinsics.memory`` (PTX, typing rule, what it touches). How each backend sees
them:

- **GPU (numba):** ``cp.async.cg.shared.global [dst], [src], 16, n``, ``cp.async.commit_group`` and
  ``cp.async.wait_group N`` as inline PTX (``numbakern.intrinsics.numba_cuda``).
- **GPU (numba-cuda-mlir):** the same objects, typed and lowered by numba-cuda-mlir (``numbakern.mlir_lowering``)
  as the same inline PTX.
- **Simulator:** each thread's copies are queued in groups (closed by ``async_commit``) and carried out when a wait
  releases their group, element by element through the simulator's array proxies, so reading a destination before
  waiting sees the old contents (and the checkers see every element). Copies a thread never waits for never land
  (``numbakern.sim.memory_ops``).
- **translate:** ``nk_copy_async4(&a_s[...], mt, offset, valid)``, ``nk_async_commit()``, ``nk_async_wait_all()``
  and ``nk_async_wait<N>()``, small inline-PTX helpers of the same PTX (``translate/codegen/vectors.py``).
"""

from __future__ import annotations

from .intrinsics.memory import ASYNC_COMMIT, ASYNC_WAIT, ASYNC_WAIT_ALL, BYTES, COPY_ASYNC, COPY_ASYNC4, COPY_ASYNC16

copy_async16, copy_async4, copy_async = COPY_ASYNC16.function, COPY_ASYNC4.function, COPY_ASYNC.function
async_commit, async_wait, async_wait_all = ASYNC_COMMIT.function, ASYNC_WAIT.function, ASYNC_WAIT_ALL.function

__all__ = ["BYTES", "copy_async16", "copy_async4", "copy_async", "async_commit", "async_wait", "async_wait_all"]
