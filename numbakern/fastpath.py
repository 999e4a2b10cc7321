"""Authoring helpers that make Numba's fast path the easy one (see ``docs/performance.md``).

What costs Numba kernels time against the same CUDA C, and the helper that removes it:

- **Negative-index wraparound.** Numba indexes arrays the Python way: a signed index ``i`` becomes
  ``i < 0 ? i + shape : i``, a compare and a select on 64-bit values at every subscript that LLVM cannot prove
  non-negative (anything computed from thread indices and run-time values). An *unsigned* index has no negative
  case, so ``x[u32(i), u32(j)]`` compiles to plain address arithmetic. ``u32`` is ``np.uint32``: a cast the
  translator, the simulator and numba all understand. Cast at the subscript, not before arithmetic: numba
  promotes ``uint32 op uint32`` to uint64, and ``uint64 op int64`` to float64.
- **Run-time tile sizes.** A tile width passed as an argument cannot size static shared arrays or unroll loops;
  bake it in with ``numbakern.specialize`` (the Numba form of ``template<int tw>``).
- **Codegen options.** ``fast_jit`` is ``cuda.jit`` with ``fastmath=True`` (FMA contraction, approximate division
  and square root; the flagship matmul is plain multiply-add, so only contraction matters) and with
  ``launch_bounds`` from the block size you launch with, so that the register allocator knows the block size
  the way ``__launch_bounds__`` tells nvcc. The simulator takes the same options (and refuses a launch of more
  threads than ``launch_bounds``, as a GPU does).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

#: the index cast: unsigned, so numba emits no wraparound select (use it at subscripts: ``a[u32(r), u32(c)]``)
u32 = np.uint32

#: the jit options the registered fast kernels use
FAST_OPTIONS: dict[str, Any] = {"fastmath": True}


def jit_options(*, threads: int | None = None, min_blocks: int | None = None, max_registers: int | None = None,
                fastmath: bool = True, lineinfo: bool = False) -> dict[str, Any]:
    """``cuda.jit`` keyword arguments for a fast kernel launched with ``threads`` threads per block.

    ``threads`` (and ``min_blocks``, blocks per multiprocessor) become ``launch_bounds``; ``max_registers`` caps
    the registers per thread (prefer ``launch_bounds``: it lets the compiler pick the cap).
    """
    opts: dict[str, Any] = {"fastmath": bool(fastmath)}
    if threads is not None:
        if not 1 <= int(threads) <= 1024:
            raise ValueError(f"jit_options: threads must be 1..1024, got {threads}")
        opts["launch_bounds"] = (int(threads),) if min_blocks is None else (int(threads), int(min_blocks))
    elif min_blocks is not None:
        raise ValueError("jit_options: min_blocks needs threads")
    if max_registers is not None:
        opts["max_registers"] = int(max_registers)
    if lineinfo:
        opts["lineinfo"] = True
    return opts


def fast_jit(func: Callable | None = None, **options: Any):
    """``cuda.jit`` with the fast defaults: ``@fast_jit`` or ``@fast_jit(threads=256)`` (see ``jit_options``)."""
    from numba import cuda

    def wrap(f: Callable):
        return cuda.jit(**jit_options(**options))(f)

    return wrap(func) if func is not None else wrap
