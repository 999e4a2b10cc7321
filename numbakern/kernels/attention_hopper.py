"""The Hopper attentions in the registry: ``flash_attention_wgmma`` (``numbakern/kernels/attention_wgmma.py``) in
its measured configuration (``CONFIGS``) for bf16 and f16 inputs, head dims 64 and 128, with and without the causal
mask: ``attention_wgmma_{bf16,f16}_d{64,128}[_causal]``, beside the ``mma.sync`` attentions of ``attention_tc``
(the same inputs, reference, error bound and sizes: ``attention.register_attention``).

The kernel takes the tensor maps of q, k and v as arguments (3-D: a box never reads into the next (batch, head));
a case holds placeholders for them and every launch makes them from the arrays it launches with
(``numbakern.tensormap.launch_arguments``; the translated C's launcher makes its own).
"""

from __future__ import annotations

from ..launch import LaunchConfig, cdiv
from .attention import TEST_SIZES, register_attention
from .attention_tc import _bound
from .attention_wgmma import CONFIGS, SIGNATURES, flash_attention_wgmma, shared_bytes
from .matmul_hopper import PLACEHOLDER


def attention_wgmma_launch(config: dict, batch_heads: int, lq: int) -> LaunchConfig:
    """One block per ``64 * consumers`` query rows of one (batch, head): grid (query blocks, batch*heads), a
    producer warpgroup and the consumer warpgroups, the shared memory of ``shared_bytes``."""
    consumers = config["consumers"]
    shared = shared_bytes(config["d"], config["bn"], config["stages"], consumers)
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

__all__ = ["attention_wgmma_launch"]
