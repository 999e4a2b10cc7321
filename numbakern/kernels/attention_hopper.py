"""The Hopper attentions in the registry: ``flash_attention_wgmma`` (``numbakern/kernels/attention_wgmma.py``) in
its measured configuration (``CONFIGS``) for bf16 and f16 inputs, head dims 64 and 128, with and without the causal
mask: ``attention_wgmma_{bf16,f16}_d{64,128}[_causal]``, beside the ``mma.sync`` attentions of ``attention_tc``
(same inputs, reference, error bound and sizes).

The kernel takes the tensor maps of q, k and v as arguments (3-D: a box never reads into the next (batch, head));
a case holds placeholders for them and every launch makes them from the arrays it launches with
(``numbakern.tensormap.launch_arguments``; the translated C's launcher makes its own).
"""

from __future__ import annotations

import math

import numpy as np

from ..launch import LaunchConfig, cdiv
from ..registry import Case, KernelSpec, register
from .attention_tc import BENCH_SIZES, VERIFY_SIZES, _expected, _inputs, _scale, _sdpa_flash, _work
from .attention_wgmma import CONFIGS, SIGNATURES, flash_attention_wgmma, shared_bytes
from .matmul_hopper import PLACEHOLDER

#: the simulator's sizes: a single query and key, and sequence lengths no block size divides with lq != lk
TEST_SIZES = ({"bh": 1, "lq": 1, "lk": 1}, {"bh": 2, "lq": 20, "lk": 29})


def attention_wgmma_launch(config: dict, batch_heads: int, lq: int) -> LaunchConfig:
    """One block per ``64 * consumers`` query rows of one (batch, head): grid (query blocks, batch*heads), a
    producer warpgroup and the consumer warpgroups, the shared memory of ``shared_bytes``."""
    consumers = config["consumers"]
    shared = shared_bytes(config["d"], config["bn"], config["stages"], consumers)
    return LaunchConfig((max(1, cdiv(lq, 64 * consumers)), max(1, batch_heads), 1), (128 * (consumers + 1), 1, 1),
                        shared)


def _case_maker(config: dict):
    f16, d = config["f16"], config["d"]

    def make_case(size, rng, dist="uniform"):
        bh, lq, lk = size["bh"], size["lq"], size["lk"]
        q = _inputs(rng, (bh, lq, d), dist, f16, "q")
        k = _inputs(rng, (bh, lk, d), dist, f16, "k")
        v = _inputs(rng, (bh, lk, d), dist, f16, "v")
        out = np.full((bh, lq, d), np.nan, dtype=np.float32)
        scale = np.float32(1.0 / math.sqrt(d))
        maps = [PLACEHOLDER.copy() for _ in range(3)]
        return Case((q, k, v, out, scale, *maps), attention_wgmma_launch(config, bh, lq), dict(size))

    return make_case


def _without_maps(fn):
    return lambda q, k, v, out, scale, *maps: fn(q, k, v, out, scale)


for _fmt in ("bf16", "f16"):
    for (_d, _causal), _tuned in CONFIGS.items():
        _f16 = _fmt == "f16"
        _config = {"f16": _f16, "d": _d, "causal": _causal, **_tuned}
        register(KernelSpec(
            name=f"attention_wgmma_{_fmt}_d{_d}{'_causal' if _causal else ''}",
            family="attention",
            kernel=flash_attention_wgmma(**_config),
            signatures=(SIGNATURES[_f16],),
            make_case=_case_maker(_config),
            reference=_without_maps(_expected(_causal)),
            error_scale=_without_maps(_scale(_f16, _causal)),
            outputs=(3,),
            test_sizes=TEST_SIZES,
            verify_sizes=VERIFY_SIZES,
            bench_sizes=BENCH_SIZES,
            constants=dict(_config),
            work=_work(_d, _causal),
            baseline=_without_maps(_sdpa_flash(_causal)),
            rtol=1.0,
            description=f"flash attention forward on Hopper, {_fmt} in, fp32 out, head dim {_d}"
                        f"{', causal' if _causal else ''}: FlashAttention-3's design, a TMA producer warpgroup "
                        "filling a K/V ring guarded by mbarriers, consumer warpgroups computing S = Q K^T and "
                        "O += P V by wgmma with P from registers, the softmax of one key block overlapped with "
                        "P V of the previous",
        ))

__all__ = ["TEST_SIZES", "attention_wgmma_launch"]
