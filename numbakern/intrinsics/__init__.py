"""numbakern's GPU instructions, each declared once (``op.Op``), with the emitters of every backend attached to it.

One module per family holds the declarations: ``tensorcore`` (``mma.sync``, ``ldmatrix`` and the conversions around
them, ``numbakern.mma``), ``memory`` (16-byte vector accesses, ``numbakern.vector_io``; ``cp.async``,
``numbakern.async_copy``), ``hopper`` (wgmma, TMA, mbarriers: ``numbakern.mma.hopper``), ``warp`` (numba-cuda's
warp shuffles, votes and match, and its atomics, as the other backends see them); ``layout`` and ``formats`` are
the fragment layouts and number formats they share. The public modules re-export the instructions' functions.

Emitters, one place per backend: ``numba_cuda`` (LLVM inline PTX, registered once numba-cuda's CUDA target is
loaded), ``numbakern.mlir_lowering`` (numba-cuda-mlir), ``translate/codegen`` (C), ``numbakern/sim`` (the
simulator's models), and ``Op.accesses`` for a profiler. Nothing here imports a backend, and nothing is chosen at
import: a process registers what its compilers and simulator need when they load.
"""

from __future__ import annotations

from . import numba_cuda
from .op import OPS, Op, op_of

numba_cuda.attach()

__all__ = ["OPS", "Op", "op_of"]
