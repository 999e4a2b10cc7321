"""The Hopper attentions in the registry: ``flash_attention_wgmma`` (``numbakern/kernels/attention_wgmma.py``) in
its measured configuration (``CONFIGS``) for bf16 and f16 inputs, head dims 64 and 128, with and without the causal
mask: ``attention_wgmma_{bf16,f16}_d{64,128}[_causal]``, beside the ``mma.sync`` attentions of ``attention_tc``
(the same inputs, reference, error bound and sizes: ``attention.register_attention``).

The kernel takes the tensor maps of q, k and v as arguments (3-D: a box never reads into the next (batch, head));
a case holds placeholders for them and every launch makes them from the arrays it launches with
(``numbakern.tensormap.launch_arguments``; the translated C's launcher makes its own).

Its 3xTF32 mode (fp32-accurate on the tf32 tensor cores) is registered as ``attention_3xtf32_wgmma_d{64,128}[_causal]``
(``TF32X3_CONFIGS``), beside ``attention_3xtf32``'s ``mma.sync`` kernels: the same fp32 reference, error scale and
sizes, torch's fp32 SDPA as the peer. It takes the split parts (``tf32x3.split_heads``, ``split_keys_t``: its cases
make them on the host; ``attention_3xtf32(..., kernel="wgmma")`` on a GPU with the split kernels), and the reference,
the error scale and the baseline read the fp32 values the parts stand for.
"""

from __future__ import annotations

import numpy as np

from ..launch import LaunchConfig, cdiv
from ..registry import Case
from .attention import TEST_SIZES, _fp32_scale, attention_case, head_dim_config, reference, register_attention
from .attention_tc import _bound
from .attention_wgmma import CONFIGS, SIGNATURE_TF32X3, SIGNATURES, TF32X3_CONFIGS, flash_attention_wgmma, shared_bytes
from .matmul_hopper import PLACEHOLDER
from .tf32x3 import key_positions, split_heads, split_keys_t


def attention_wgmma_launch(config: dict, batch_heads: int, lq: int) -> LaunchConfig:
    """One block per ``64 * consumers`` query rows of one (batch, head): grid (query blocks, batch*heads), a
    producer warpgroup and the consumer warpgroups, the shared memory of ``shared_bytes``."""
    consumers = config["consumers"]
    shared = shared_bytes(config["d"], config["bn"], config["stages"], consumers, config.get("tf32x3", False))
    return LaunchConfig((max(1, cdiv(lq, 64 * consumers)), max(1, batch_heads), 1), (128 * (consumers + 1), 1, 1),
                        shared)


for _fmt in ("bf16", "f16"):
    for (_d, _causal), _tuned in CONFIGS.items():
        _f16 = _fmt == "f16"
        _config = {"f16": _f16, "d": _d, "causal": _causal, **_tuned}
        register_attention(
            f"attention_wgmma_{_fmt}_d{_d}{'_causal' if _causal else ''}", flash_attention_wgmma(**_config), _config,
            lambda d, causal, config=_config: config,
            f"flash attention forward on Hopper, {_fmt} in, fp32 out, head dim {_d}{', causal' if _causal else ''}: "
            "FlashAttention-3's design, a TMA producer warpgroup filling a K/V ring guarded by mbarriers, consumer "
            "warpgroups computing S = Q K^T and O += P V by wgmma with P from registers, the softmax of one key "
            "block overlapped with P V of the previous", f16=_f16, launch=attention_wgmma_launch,
            extra_args=(PLACEHOLDER,) * 3, signatures=(SIGNATURES[_f16],),
            # a single query and key, and sequences no block divides with lq != lk (the simulator's wgmma is slow)
            test_sizes=TEST_SIZES[1:], error_scale=_bound(_f16, _causal), rtol=1.0)



def tf32x3_config(d: int, causal: bool) -> dict:
    """The registered 3xTF32 configuration for head dim ``d``."""
    return {"d": d, "causal": bool(causal), "tf32x3": True,
            **head_dim_config("attention_3xtf32 (wgmma)", TF32X3_CONFIGS, TF32X3_CONFIGS, d)}


def _joined(q_parts, k_parts, v_parts):
    """float64 q, k, v (bh, seq, d) from the kernel's parts (big + small: the fp32 values to about 2**-22)."""
    bh = q_parts.shape[0] // 2
    q, k, vt = (x[:bh].astype(np.float64) + x[bh:] for x in (q_parts, k_parts, v_parts))
    return q, k, vt[:, :, key_positions(k.shape[1])].transpose(0, 2, 1)


def _tf32x3_spec(d: int, causal: bool) -> dict:
    """The registry's functions for the 3xTF32 kernel: ``attention_case``'s fp32 inputs split on the host, and the
    reference, error scale and torch baseline of the values the parts stand for."""
    fp32_case = attention_case(d, causal, tf32x3_config, None, attention_wgmma_launch, (PLACEHOLDER,) * 3)
    fp32_scale = _fp32_scale(causal)

    def make_case(size, rng, dist="uniform"):
        case = fp32_case(size, rng, dist)
        q, k, v = case.args[:3]
        return Case((split_heads(q), split_heads(k), split_keys_t(v), *case.args[3:]), case.launch, case.size)

    def expected(q_parts, k_parts, v_parts, out, scale, *maps):
        return {3: reference(*_joined(q_parts, k_parts, v_parts), scale, causal)}

    def error_scale(q_parts, k_parts, v_parts, out, scale, *maps):
        return fp32_scale(*_joined(q_parts, k_parts, v_parts), out, scale)

    def baseline(q_parts, k_parts, v_parts, out, scale, *maps):
        import torch
        import torch.nn.functional as F

        bh, lk = out.shape[0], k_parts.shape[1]
        positions = torch.from_numpy(key_positions(lk)).to(v_parts.device)
        # 4-D fp32 views (1, bh, seq, d), formed once here: torch's fused kernels refuse 3-D inputs
        q, k = ((x[:bh] + x[bh:])[None] for x in (q_parts, k_parts))
        v = (v_parts[:bh] + v_parts[bh:])[:, :, positions].transpose(1, 2).contiguous()[None]
        return (lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=float(scale)),
                "F.scaled_dot_product_attention fp32 of big + small, torch's default dispatch")

    return dict(make_case=make_case, reference=expected, error_scale=error_scale, baseline=baseline)


for _d in TF32X3_CONFIGS:
    for _causal in (False, True):
        _config = tf32x3_config(_d, _causal)
        register_attention(
            f"attention_3xtf32_wgmma_d{_d}{'_causal' if _causal else ''}", flash_attention_wgmma(**_config), _config,
            tf32x3_config,
            f"flash attention forward on Hopper, fp32-accurate on the tf32 tensor cores (3xTF32), head dim {_d}"
            f"{', causal' if _causal else ''}: attention_wgmma's design on the split parts of Q, K and V^T (TMA, "
            "mbarrier ring, wgmma m64nNk8 tf32 three products a k-step, P split in registers, a fresh accumulator "
            "per key block)", launch=attention_wgmma_launch, extra_args=(PLACEHOLDER,) * 3,
            signatures=(SIGNATURE_TF32X3,), test_sizes=TEST_SIZES[1:], **_tf32x3_spec(_d, _causal))

__all__ = ["attention_wgmma_launch", "tf32x3_config"]
