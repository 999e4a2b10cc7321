"""16-byte loads and stores for float32 kernels: ``vload4`` and ``vstore4``.

numba-cuda 0.30 has no way to say "these four consecutive floats are one 16-byte access": four loads
``m[r, c]``..``m[r, c + 3]`` stay four ``ld.global.f32`` because LLVM cannot prove the array's data pointer is
16-byte aligned (``docs/performance.md``). These two helpers are that missing spelling::

    vload4(m, (r, c), regs, i)      # regs[i:i + 4] = m[r, c:c + 4]   one ld.global.v4.f32 (or ld.shared.v4)
    vstore4(out, (r, c), regs, i)   # out[r, c:c + 4] = regs[i:i + 4]  one st.global.v4.f32 (or st.shared.v4)

``regs`` is a 1-D ``cuda.local.array`` (registers); the other array is global or shared memory, any number of
dimensions, C-contiguous, float32. The caller guarantees that the element addressed by the index tuple is
16-byte aligned: the array's data pointer is, its last extent (the row stride) is a multiple of 4 elements, and
the last index is a multiple of 4. A misaligned access is a CUDA "misaligned address" error on the GPU and a
``MisalignedAccessError`` in numbakern's simulator; it is never a silent wrong result.

How each backend sees them:

Both are declared once in ``numbakern.intrinsics.memory`` (their typing rule and what they touch):

- **GPU (numba):** one ``load <4 x float>, align 16`` / ``store`` on the element's address (no wraparound, no bounds
  check, like ``cuda.ldg``), moving the four lanes in and out of ``regs`` with scalar accesses so that the register
  array stays in registers (``numbakern.intrinsics.numba_cuda``).
- **Simulator:** four element reads and writes through the simulator's array proxies, so the race, bounds and
  initialisation checkers see every element, plus an alignment check of the element's address as compiled
  (``numbakern.sim.memory_ops``).
- **GPU (numba-cuda-mlir):** the same objects, typed and lowered by numba-cuda-mlir (``numbakern.mlir_lowering``):
  one ``llvm.load``/``llvm.store`` of a ``vector<4xf32>`` with ``alignment = 16``.
- **translate:** ``const float4 v = *reinterpret_cast<const float4 *>(&m[...]);`` and the matching store
  (``translate/codegen/builtins.py``).
"""

from __future__ import annotations

from .intrinsics.memory import VLOAD4, VSTORE4, WIDTH

vload4, vstore4 = VLOAD4.function, VSTORE4.function

__all__ = ["vload4", "vstore4", "WIDTH"]
