"""fp32 attention forward on the tensor cores, as accurate as fp32: ``out = softmax(scale * q @ k^T [+ mask]) @ v``
for float32 ``q``, ``k``, ``v``, both products on 3xTF32 (``tf32x3``) and the softmax in fp32.

The kernel is ``attention_tc``'s ``flash_kernel`` (that module says how it runs) with 32-bit data and the m16n8k8 tf32
``mma.sync``. What changes:

- **Fragments by plain shared loads, no ldmatrix** (it cannot transpose 32-bit data). The tiles' 16-byte chunks are
  XORed with the row mod 8 (``d`` a multiple of 32), so a warp's eight rows of one chunk fall in 32 different banks.
- **P stays in registers, with the keys of a k-step permuted.** The tf32 A fragment wants keys ``t`` and ``t + 4``
  where a score tile gives lane (g, t) keys ``2t`` and ``2t + 1``; ``P @ V`` sums over keys, so k-index ``t`` stands
  for key ``2t`` and ``t + 4`` for key ``2t + 1`` in P and V alike (the kernel's comments give the registers).
- **3xTF32**: each operand split as it is loaded. ``P @ V`` of each output tile and key block goes into a fresh
  partial sum added to O in float32 (``matmul_3xtf32`` says why: the tensor cores truncate against a large running
  sum); ``Q K^T`` runs over the head dim only and accumulates in the mma. Q is read and split again in every key
  block (kept, the split Q of d = 128 would take 128 registers).

``attention_3xtf32`` takes what ``attention.attention`` takes and returns the same; the registered kernels share its
reference and tolerance.
"""

from __future__ import annotations

import numpy as np

from ..specialize import specialize
from .attention import head_dim_config, register_attention, run_attention
from .attention_tc import flash_kernel


@specialize
def flash_attention_3xtf32(d: int = 64, causal: bool = False, bm: int = 64, bn: int = 64):
    """The kernel for one head dim and tile configuration: ``(q, k, v, out, scale)``, all float32 (batch*heads, seq,
    d); launch with ``attention.attention_launch``."""
    return flash_kernel(False, d, causal, bm, bn, False, 1, True)


#: tile configurations per head dim (32 KiB of shared memory each): d = 64: 64 rows (4 warps) x 32 keys; d = 128:
#: 32 rows (2 warps) x 16 keys. Chosen offline by ptxas -v (sm_90) on numba's PTX: 64 keys at d = 64 spill (372 bytes),
#: 32 do not (254 registers). At d = 128 (non-causal, numba-cuda 0.30.4) this tile spills 268 bytes, 64 x 16 spills
#: 132, 64 x 8 80 and 32 x 8 none. Not yet tuned on a GPU.
CONFIGS = {64: {"bm": 64, "bn": 32}, 128: {"bm": 32, "bn": 16}}
#: the simulator's: two warps, 8 or 16 keys a block, which the test sequence lengths do not divide
SIM_CONFIGS = {64: {"bm": 32, "bn": 16}, 128: {"bm": 32, "bn": 8}}


def config_for(d: int, causal: bool) -> dict:
    """The configuration the registered kernels run for this head dim (the simulator's small one under the
    simulator)."""
    return {"d": d, "causal": bool(causal), **head_dim_config("attention_3xtf32", CONFIGS, SIM_CONFIGS, d)}


def attention_3xtf32(q, k, v, *, causal: bool = False, scale: float | None = None, out=None):
    """``attention.attention`` (the same arguments and result) with both products on the tensor cores (3xTF32)."""
    return run_attention(q, k, v, causal, scale, out, np.float32, config_for, flash_attention_3xtf32)


#: the registered variants: (name, head dim, causal)
VARIANTS = tuple((f"attention_3xtf32_d{d}{'_causal' if causal else ''}", d, causal)
                 for d in (64, 128) for causal in (False, True))

for _name, _d, _causal in VARIANTS:
    _config = config_for(_d, _causal)
    register_attention(
        _name, flash_attention_3xtf32(**_config), _config, config_for,
        f"flash attention forward, fp32 on the tensor cores (3xTF32), head dim {_d}{', causal' if _causal else ''}: "
        "S = Q K^T and O += P V by mma.sync m16n8k8 tf32, three products per split operand, P reused from the "
        "accumulators with its keys permuted")
