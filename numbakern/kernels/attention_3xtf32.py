"""fp32 attention forward on the tensor cores, as accurate as fp32: ``out = softmax(scale * q @ k^T [+ mask]) @ v``
for float32 ``q``, ``k``, ``v``, with both products on 3xTF32 (``matmul_3xtf32``'s split) and the softmax in fp32.

The kernel is the 16-bit tensor-core attention's (``attention_tc.flash_kernel``: FlashAttention-2, one warp per 16
query rows, online softmax in base 2 in registers, ``cp.async`` tiles, V landing during the scores and the next K
during ``P @ V``) with 32-bit data and the m16n8k8 tf32 ``mma.sync``. What changes:

- **Fragments by plain shared loads, no ldmatrix.** Every tile is row-major with its 16-byte chunks XORed with the
  row mod 8 (``d`` a multiple of 32: rows of whole 8-chunk groups). A warp's A fragment of Q (``a0 = Q[g][t]``,
  ``a1 = Q[g + 8][t]``, ``a2 = Q[g][t + 4]``, ``a3 = Q[g + 8][t + 4]``, ``g = lane >> 2``, ``t = lane % 4``) and
  B fragment of K (``b0 = K[key g][t]``, ``b1 = K[key g][t + 4]``: a row-major K tile is K^T column-major) read
  eight rows at one chunk each, which the XOR spreads over eight chunks: 32 different banks, no conflict.
- **P stays in registers, with the keys of a k-step permuted.** A score tile's accumulators give lane (g, t) keys
  ``2t`` and ``2t + 1`` of rows g and g + 8; the tf32 A fragment wants keys ``t`` and ``t + 4``. Since ``P @ V``
  sums over keys, any order of them works if P and V agree: k-index ``t`` of a step stands for key ``2t`` and
  ``t + 4`` for key ``2t + 1``, so ``a0, a1, a2, a3 = c0, c2, c1, c3`` of the tile, and V's B fragment is
  ``b0 = V[key 2t][col g]``, ``b1 = V[key 2t + 1][col g]`` (ldmatrix could not transpose 32-bit data anyway). Those
  reads are four even rows at two chunks each: again eight chunks after the XOR, no conflict.
- **3xTF32** (``tf32x3``): each operand split into a big and a small tf32 part as it is loaded, three products
  per split operand. ``P @ V`` of each output tile and key block goes into a fresh partial sum (four
  registers) that is added to O with an ordinary float32 add: the tensor cores truncate when they add to a large
  running sum, and O runs over every key (``matmul_3xtf32`` explains the bias that accumulating there would add).
  ``Q K^T`` runs over the head dim only (at most 16 k-steps) and accumulates in the mma.

Q's fragments are read and split again in every key block (kept, the split Q of d = 128 would take 128 registers);
P is split once per key block, into its A-fragment order.
Shared memory holds a Q, a K and a V tile of float32 (``4 * d * (bm + 2 bn)`` bytes, 48 KiB of static shared memory
at most); the sequences' ends, the causal blocks and the mask are handled as the 16-bit kernel handles them.

``attention_3xtf32`` takes what the fp32 attention's ``attention`` takes (``numbakern.kernels.attention``: the same
shapes, checks and result); the registered kernels share its reference and tolerance, and the benchmark's peer is
torch's fp32 ``scaled_dot_product_attention``.
"""

from __future__ import annotations

import numpy as np

from ..specialize import specialize
from .attention import head_dim_config, register_attention, run_attention
from .attention_tc import flash_kernel


@specialize
def flash_attention_3xtf32(d: int = 64, causal: bool = False, bm: int = 64, bn: int = 64):
    """The kernel for one head dim and tile configuration: ``(q, k, v, out, scale)``, all float32, ``q``/``k``/``v``
    (batch*heads, seq, d), ``out`` (batch*heads, lq, d); launch with ``attention.attention_launch``. The tensor-core
    attention's kernel (``attention_tc.flash_kernel``) for float32 inputs."""
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
    """``softmax(scale * q @ k^T) @ v`` per (batch, head) in fp32, both products on the tensor cores (3xTF32);
    ``causal`` masks key j for query i when j > i. Arguments and result as ``numbakern.kernels.attention.attention``
    (float32, (batch, heads, seq, d) or (batch*heads, seq, d), d = 64 or 128, ``scale`` 1/sqrt(d) by default)."""
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
