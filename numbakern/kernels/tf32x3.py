"""The 3xTF32 product on the tf32 tensor cores (CUTLASS's ``OpMultiplyAddFastF32``), as a device function the
fp32-accurate kernels (``matmul_3xtf32``, ``attention_3xtf32``) share.

Each float32 ``x`` is split into ``big = tf32(x)`` and ``small = tf32(x - big)`` (``numbakern.mma.split_tf32``;
``big + small`` holds 21 of float32's 24 significant bits), and a product ``a * b`` is ``a_small * b_big +
a_big * b_small + a_big * b_big``, the small terms first; ``a_small * b_small`` (about 2**-22 of the product) is
dropped.
"""

from __future__ import annotations

from numba import cuda

from ..mma import mma_m16n8k8_tf32


@cuda.jit(device=True, forceinline=True, fastmath=True)
def mma_3xtf32(d, d_at, a_big, a_small, a_at, b_big, b_small, b_at, c, c_at):
    """``d = a @ b + c`` for one m16n8k8 tile from the split A and B fragments (registers ``a_at``, ``b_at`` on):
    three tf32 ``mma.sync``, the first adding to ``c``, the others to ``d``."""
    mma_m16n8k8_tf32(d, d_at, a_small, a_at, b_big, b_at, c, c_at)
    mma_m16n8k8_tf32(d, d_at, a_big, a_at, b_small, b_at, d, d_at)
    mma_m16n8k8_tf32(d, d_at, a_big, a_at, b_big, b_at, d, d_at)
