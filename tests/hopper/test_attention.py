"""The Hopper flash attention (``numbakern.kernels.attention_wgmma``, registered by ``attention_hopper``) in the
simulator with every checker on, against a float64 reference: key blocks that wrap the K/V ring several times,
sequences no block divides, the causal mask, two consumer warpgroups taking turns; its tensor maps (3-D, a box one
(batch, head) deep); and its translation: the launcher encodes 3-D maps, NVRTC compiles it for sm_90a."""

from __future__ import annotations

import math

import numpy as np
import pytest

import numbakern
from numbakern.kernels import attention, attention_tc
from numbakern.kernels.attention_hopper import attention_wgmma_launch
from numbakern.kernels.attention_wgmma import CONFIGS, PANEL, flash_attention_wgmma
from numbakern.kernels.half import to16
from numbakern.kernels.matmul_hopper import PLACEHOLDER
from numbakern.tensormap import SimulatedTensorMap, device_address, launch_arguments, tensor_map, tensor_map_of

pytestmark = pytest.mark.sim

NAMES = tuple(f"attention_wgmma_{fmt}_d{d}{'_causal' if causal else ''}"
              for fmt in ("bf16", "f16") for d, causal in CONFIGS)


def test_every_variant_of_the_issue_is_registered_with_the_attentions_sizes():
    """bf16 and f16, d = 64 and 128, causal and not; the mma.sync attentions' verification and benchmark sizes."""
    for name in NAMES:
        spec = numbakern.get(name)
        assert spec.family == "attention" and spec.test_sizes == attention.TEST_SIZES[1:]
        assert spec.verify_sizes == attention.VERIFY_SIZES and spec.bench_sizes == attention.BENCH_SIZES


@pytest.mark.slow
@pytest.mark.parametrize("f16, d, causal, consumers", [(False, 64, False, 1), (True, 64, True, 1),
                                                       (False, 128, True, 2), (True, 128, False, 2)])
def test_small_configurations_agree_with_float64_with_every_checker_on(f16, d, causal, consumers, rng, monkeypatch):
    """64-key blocks through a 2-stage ring (lk = 150: three blocks, the ring wraps), lq = 70 over 64-row query
    blocks, two consumers taking turns (named barriers) where there are two; races, barriers, mbarrier phases and
    the async proxy checked throughout."""
    monkeypatch.setenv("NUMBAKERN_SIM_CHECKS", "all")
    config = {"f16": f16, "d": d, "causal": causal, "bn": 64, "stages": 2, "consumers": consumers}
    kernel = flash_attention_wgmma(**config)
    bh, lq, lk = 2, 70, 150
    q, k, v = (to16(rng.standard_normal((bh, n, d)).astype(np.float32), f16) for n in (lq, lk, lk))
    out = np.full((bh, lq, d), np.nan, np.float32)
    scale = np.float32(1 / math.sqrt(d))
    cfg = attention_wgmma_launch(config, bh, lq)
    args = launch_arguments(kernel, ("q", "k", "v", "out", "scale", "tmap_q", "tmap_k", "tmap_v"),
                            [q, k, v, out, scale, *(PLACEHOLDER.copy() for _ in range(3))], cfg.shared_bytes)
    kernel[cfg.grid, cfg.block, 0, cfg.shared_bytes](*args)
    expected = attention.reference(q, k, v, scale, causal)
    bound = attention_tc.error_bound(q, k, v, scale, causal, f16)
    assert np.isfinite(out).all()
    assert (np.abs(out - expected) <= bound).all(), float(np.max(np.abs(out - expected) / bound))


def test_the_tensor_map_of_a_batch_of_matrices_is_3d_one_matrix_deep(rng):
    """``tensor_map_of`` a (batch, rows, cols) array: the map ``tensor_map`` makes of its sizes and byte strides,
    innermost first, boxes of one matrix (so rows past a matrix's end are zeros, not the next one's); a 2-D array
    keeps its 2-D map; other ranks are refused naming the shape."""
    x = rng.integers(1, 2**15, (3, 40, 72)).astype(np.uint16)
    made = SimulatedTensorMap.decode(tensor_map_of(x, 16, PANEL))
    assert made == SimulatedTensorMap.decode(tensor_map(device_address(x), (72, 40, 3), (144, 40 * 144),
                                                        (PANEL, 16, 1), 2, 128))
    assert SimulatedTensorMap.decode(tensor_map_of(x[0], 16, PANEL)).dims == (72, 40)
    with pytest.raises(ValueError, match=r"2-D \(or 3-D, a batch of matrices\), got shape \(2, 3, 40, 72\)"):
        tensor_map_of(np.zeros((2, 3, 40, 72), np.uint16), 16, PANEL)


def test_the_translation_encodes_3d_maps_and_compiles_for_sm90a(tmp_path):
    from translate.api import translate_kernel

    r = translate_kernel("attention_wgmma_bf16_d128_causal", write=True, out_dir=str(tmp_path))
    assert r.compile["ok"] and r.compile["arch"] == "sm_90a", r.compile
    assert ("nk_encode_tensor_map(&tmap_k_map, k, k_shape0, k_shape1, k_shape2, k_shape1 * k_shape2 * sizeof(uint16_t)"
            ", k_shape2 * sizeof(uint16_t), 128, 64, sizeof(uint16_t), 128);") in r.code
    assert "nk_tma_load_3d(" in r.code and "nk_wgmma_m64n128k16_bf16_rs<1>(o_acc, &pf[kk * 4]," in r.code
