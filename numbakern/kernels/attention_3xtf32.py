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

On a Hopper GPU (compute capability 9.0) it takes the warpgroup path instead where that pays (``wgmma_pays``;
``kernel="wgmma"`` asks for it, as ``matmul_3xtf32`` does): ``tf32x3.split_tf32_parts`` of Q and K and
``split_tf32_keys_t`` of V into kept buffers, then ``attention_wgmma(tf32x3=True)`` (``attention_hopper``
registers it). The same path runs in the simulator when asked for by name.
"""

from __future__ import annotations

import numpy as np

from .. import mode
from ..specialize import specialize
from .attention import head_dim_config, register_attention, run_attention
from .attention_tc import flash_kernel
from .config import on_hopper


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


KERNELS = ("auto", "wgmma", "mma")
#: ``"auto"`` takes the Hopper path from this much work (batch*heads * lq * lk * d multiply-adds of each product):
#: its three split launches cost host time that small attentions do not win back. Provisional, not yet measured:
#: the benchmark's smallest size at d = 128 (64 x 1024^2) is 2^33; the crossover is for a GPU run to find
WGMMA_MIN_WORK = 2**33


def attention_3xtf32(q, k, v, *, causal: bool = False, scale: float | None = None, out=None, kernel: str = "auto"):
    """``attention.attention`` (the same arguments and result) with both products on the tensor cores (3xTF32).
    ``kernel``: one of ``KERNELS`` (``"auto"``: ``"wgmma"`` on a Hopper GPU where it pays, ``wgmma_pays``, else
    ``"mma"``, the ``mma.sync`` kernel)."""
    if kernel not in KERNELS:
        raise ValueError(f"attention_3xtf32: argument 'kernel' must be one of {KERNELS}, got {kernel!r}")

    def launch(q3, k3, v3, out3, scale32):
        bh, lq, d = q3.shape
        if kernel == "mma" or (kernel == "auto" and not (wgmma_pays(bh, lq, k3.shape[1], d) and on_hopper(q3))):
            return False
        if not mode.in_simulator() and not on_hopper(q3):
            raise ValueError("attention_3xtf32: kernel='wgmma' needs a GPU of compute capability 9.0 holding the "
                             "arguments (wgmma, TMA: sm_90a)")
        _wgmma(q3, k3, v3, out3, scale32, causal)
        return True

    return run_attention(q, k, v, causal, scale, out, np.float32, config_for, flash_attention_3xtf32, launch)


def wgmma_pays(bh: int, lq: int, lk: int, d: int) -> bool:
    """Whether ``"auto"`` takes the Hopper path (``WGMMA_MIN_WORK``)."""
    return bh * lq * lk * d >= WGMMA_MIN_WORK


def _wgmma(q, k, v, out, scale, causal):
    """The Hopper path on (bh, seq, d) kernel arguments: the split parts into kept buffers, then the kernel."""
    from ..tensormap import device_address, launch_arguments
    from . import scratch
    from .attention_hopper import attention_wgmma_launch, tf32x3_config
    from .attention_wgmma import flash_attention_wgmma
    from .matmul_hopper import PLACEHOLDER
    from .tf32x3 import keys_t_launch, padded_keys, split_launch, split_tf32_keys_t, split_tf32_parts

    bh, lq, d = q.shape
    lk = k.shape[1]
    q_parts = scratch.buffer("attention_3xtf32_q", (2 * bh, lq, d), np.float32, q)
    k_parts = scratch.buffer("attention_3xtf32_k", (2 * bh, lk, d), np.float32, q)
    v_parts = scratch.buffer("attention_3xtf32_v", (2 * bh, d, padded_keys(lk)), np.float32, q)
    for src, parts in ((q, q_parts), (k, k_parts)):  # (as matrices of bh * seq rows: the parts' heads in order)
        rows = src.shape[0] * src.shape[1]
        cfg = split_launch(rows, d)
        split_tf32_parts[cfg.grid, cfg.block](src.reshape(rows, d), parts.reshape(2, rows, d))
    cfg = keys_t_launch(bh, lk, d)
    split_tf32_keys_t[cfg.grid, cfg.block](v, v_parts)
    config = tf32x3_config(d, causal)
    kernel = flash_attention_wgmma(**config)
    cfg = attention_wgmma_launch(config, bh, lq)
    arrays, upload, key = [q_parts, k_parts, v_parts, out], None, None
    if not mode.in_simulator():  # (numba's device arrays: the tensor maps and the compile take their types)
        from numba import cuda

        arrays, upload = [cuda.as_cuda_array(x) for x in arrays], cuda.to_device
        # the tensor maps of the kept buffers, made (and the kernel's shared-memory limit raised) once per set of
        # buffers: a call's host time counts where the attention is small
        key = (cuda.get_current_device().id, tuple(sorted(config.items())),
               *((device_address(x), tuple(x.shape)) for x in arrays[:3]))
    maps = _MAPS.get(key)
    if maps is None:
        args = launch_arguments(kernel, ("q", "k", "v", "out", "scale", "tmap_q", "tmap_k", "tmap_v"),
                                [*arrays, scale, *(PLACEHOLDER.copy() for _ in range(3))], cfg.shared_bytes, upload)
        maps = args[5:]
        if key is not None:
            _MAPS[key] = maps
    kernel[cfg.grid, cfg.block, 0, cfg.shared_bytes](*arrays, scale, *maps)


#: the Hopper path's uploaded tensor maps, by configuration and buffers (``_wgmma``)
_MAPS: dict = {}


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
