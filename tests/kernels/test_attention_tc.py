"""Attention on the tensor cores (``numbakern.kernels.attention_tc``: bf16/f16 in, fp32 out) against a float64
softmax(q k^T scale) v of the 16-bit inputs' own values, computed here with numpy; in the simulator with every
checker on (the spec's small tiles and the GPU's tiles), and on a GPU against torch's flash attention.

The tolerance, per output element (i, :) of a row with float64 weights p_ij:
    u * sum_j p_ij |v_j|                  the probabilities are rounded to the 16-bit format before P @ V
                                          (u = 2^-8 for bf16, 2^-11 for f16: round to nearest)
  + 2^-16 * (1 + S_i) * sum_j p_ij |v_j|  fp32 arithmetic: the scores' tensor-core sums (about d * 2^-24 relative
                                          to S_i = |scale| * max_j |q_i|.|k_j|), exp, the rescaling and the division
  + 2^-25 * sum_j |v_j|                   f16 only: probabilities under 2^-14 are subnormal (absolute error 2^-25)
A kernel that skipped the 16-bit rounding would be well inside it; one that rounded anything else to 16 bits (the
scores, the accumulators) or mixed rows and keys up is not (``test_the_tolerance_catches_a_wrong_mask``).
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from numbakern import get, run_case, sim
from numbakern.kernels import attention_tc as at
from numbakern.kernels.attention import attention_launch
from numbakern.mma import formats

U = {"bf16": 2.0**-8, "f16": 2.0**-11}


def _values(x: np.ndarray) -> np.ndarray:
    """float64 values of bf16 bit patterns (the top half of a float32) or of float16 values."""
    if x.dtype == np.float16:
        return x.astype(np.float64)
    return (x.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def _inputs(rng, fmt, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    return x.astype(np.float16) if fmt == "f16" else formats.f32_to_bf16_bits(x)


def _expected_and_tolerance(q, k, v, scale, causal, fmt):
    q64, k64, v64 = (_values(x) for x in (q, k, v))
    s = np.einsum("...id,...jd->...ij", q64, k64) * scale
    visible = np.ones(s.shape[-2:], bool)
    if causal:
        visible = np.tril(visible)  # key j visible to query i when j <= i (top-left aligned)
    s = np.where(visible, s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    expected = p @ v64
    weighted = p @ np.abs(v64)
    score_mag = abs(scale) * (np.abs(q64) @ np.swapaxes(np.abs(k64), -1, -2)).max(axis=-1, keepdims=True)
    tol = (U[fmt] + 2.0**-16 * (1.0 + score_mag)) * weighted
    if fmt == "f16":
        tol += 2.0**-25 * (visible.astype(np.float64) @ np.abs(v64))
    return expected, tol


def _run(fmt, causal, q, k, v, **kw):
    return (at.attention_f16 if fmt == "f16" else at.attention_bf16)(q, k, v, causal=causal, **kw)


#: (format, head dim, causal, (batch, heads, lq, lk)): batch x heads > 1, sequence lengths that the simulator's
#: tiles (32 query rows, 16 keys) do not divide, lq < lk, lq > lk, causal over several query blocks. Small: the
#: simulator spends about 0.1-0.2 s on 16 query rows x 16 keys at d = 64 (all mma), twice that at d = 128.
CASES = [
    ("bf16", 64, False, (1, 2, 20, 37)),
    ("bf16", 64, True, (2, 1, 29, 29)),
    ("bf16", 128, False, (2, 1, 20, 29)),
    ("bf16", 128, True, (1, 2, 21, 21)),
    ("f16", 64, False, (1, 1, 129, 20)),
    ("f16", 64, True, (1, 2, 37, 37)),
    ("f16", 128, False, (2, 1, 20, 21)),
    ("f16", 128, True, (1, 2, 29, 70)),
]


@pytest.mark.sim
@pytest.mark.parametrize("fmt, d, causal, shape", CASES, ids=lambda x: "x".join(map(str, x)) if isinstance(x, tuple)
                         else str(x))
def test_attention_matches_float64_in_the_simulator(fmt, d, causal, shape, rng):
    b, h, lq, lk = shape
    q = _inputs(rng, fmt, (b, h, lq, d))
    k = _inputs(rng, fmt, (b, h, lk, d))
    v = _inputs(rng, fmt, (b, h, lk, d))
    out = _run(fmt, causal, q, k, v)
    assert out.dtype == np.float32 and out.shape == (b, h, lq, d)
    expected, tol = _expected_and_tolerance(q, k, v, 1.0 / math.sqrt(d), causal, fmt)
    err = np.abs(out - expected)
    assert np.isfinite(out).all() and (err <= tol).all(), f"worst error / tolerance {(err / tol).max():.3g}"


@pytest.mark.sim
@pytest.mark.parametrize("fmt, d, lk", [("bf16", 128, 40), ("f16", 64, 70)])
def test_the_gpus_tile_configuration_in_the_simulator(fmt, d, lk, rng):
    """The registered kernels run ``CONFIGS`` on a GPU (d = 64: 8 warps x 64 keys, d = 128: 4 warps x 64 keys):
    the same code at those tiles, with every checker on; one partial key block at d = 128, two at d = 64 (the
    simulator types these large kernels in about 20 s the first time, then keeps them on disk)."""
    config = {"f16": fmt == "f16", "d": d, "causal": False, **at.CONFIGS[d]}
    lq = 20
    q, k, v = (_inputs(rng, fmt, (1, n, d)) for n in (lq, lk, lk))
    out = np.full((1, lq, d), np.nan, np.float32)
    cfg = attention_launch(config, 1, lq)
    at.flash_attention_tc(**config)[cfg.grid, cfg.block](q, k, v, out, np.float32(0.1))
    expected, tol = _expected_and_tolerance(q, k, v, 0.1, False, fmt)
    err = np.abs(out - expected)
    assert (err <= tol).all(), f"worst error / tolerance {(err / tol).max():.3g}"


@pytest.mark.sim
def test_the_checkers_stay_quiet_in_shuffled_thread_orders(rng):
    """Races (K and V buffers refilled while other warps may still read them), uninitialised fragments, ldmatrix
    alignment and bounds, divergent mma and barriers: every checker on, threads in two shuffled orders."""
    q, k, v = (_inputs(rng, "bf16", (2, n, 64)) for n in (37, 29, 29))
    expected, tol = _expected_and_tolerance(q, k, v, 0.125, True, "bf16")
    for seed in (1, 2):
        with sim.checks("all"), sim.shuffled(seed):
            assert sim.config.current().checks == frozenset(sim.config.CHECK_NAMES)
            out = at.attention_bf16(q, k, v, causal=True)
        assert (np.abs(out - expected) <= tol).all()


@pytest.mark.sim
def test_the_tolerance_catches_a_wrong_mask(rng):
    """The non-causal result is far outside the causal tolerance (and a one-element error of 4 u of the row's
    weighted |v| fails the registered spec's check): the tests can fail."""
    q, k, v = (_inputs(rng, "f16", (1, n, 64)) for n in (20, 20, 20))
    out = at.attention_f16(q, k, v, causal=False)
    expected, tol = _expected_and_tolerance(q, k, v, 0.125, True, "f16")
    assert (np.abs(out - expected) > tol).mean() > 0.5

    spec = get("attention_bf16_d64")
    case = spec.make_case({"bh": 2, "lq": 20, "lk": 29}, rng, "normal")
    outputs = run_case(spec, case)
    (result,) = spec.check(case, outputs).values()
    assert result.ok, result
    q, k, v, _, scale = case.args
    _, tol = _expected_and_tolerance(q, k, v, float(scale), False, "bf16")
    outputs[3][1, 7, 5] += 4 * tol[1, 7, 5]
    (result,) = spec.check(case, outputs).values()
    assert not result.ok and result.first_mismatches[0][0] == (1, 7, 5)


@pytest.mark.sim
def test_torch_cpu_tensors_3d_arrays_scale_and_out(rng):
    torch = pytest.importorskip("torch")
    q, k, v = (torch.from_numpy(rng.standard_normal((3, n, 128)).astype(np.float32)).to(torch.bfloat16)
               for n in (13, 21, 21))
    out = torch.full((3, 13, 128), float("nan"))
    assert at.attention_bf16(q, k, v, scale=0.3, out=out) is out
    bits = [x.view(torch.int16).numpy().view(np.uint16) for x in (q, k, v)]
    expected, tol = _expected_and_tolerance(*bits, 0.3, False, "bf16")
    assert (np.abs(out.numpy() - expected) <= tol).all()


def test_bad_arguments_are_named():
    z16 = np.zeros((1, 4, 64), np.uint16)
    with pytest.raises(TypeError, match=r"argument 'k' must have dtype bfloat16, got float32"):
        at.attention_bf16(z16, np.zeros((1, 4, 64), np.float32), z16)
    with pytest.raises(TypeError, match=r"argument 'q' must have dtype float16, got uint16"):
        at.attention_f16(z16, z16, z16)
    with pytest.raises(ValueError, match=r"head dim 32 is not supported"):
        at.attention_bf16(*(np.zeros((1, 4, 32), np.uint16),) * 3)
    with pytest.raises(ValueError, match=r"arguments 'k' and 'v' must have the same shape"):
        at.attention_bf16(z16, z16, np.zeros((1, 5, 64), np.uint16))
    with pytest.raises(ValueError, match=r"argument 'out' must have shape \(1, 4, 64\)"):
        at.attention_bf16(z16, z16, z16, out=np.zeros((1, 4, 32), np.float32))
    with pytest.raises(ValueError, match=r"bn=24 must be a multiple of 16"):
        at.flash_attention_tc(d=64, bm=64, bn=24)
    with pytest.raises(ValueError, match=r"need 65536 bytes"):
        at.flash_attention_tc(d=128, bm=128, bn=64)


def test_specs_are_registered_with_their_peer():
    from numbakern import all_specs

    names = {s.name for s in all_specs()}
    for name, f16, d, causal in at.VARIANTS:
        assert name in names
        spec = get(name)
        assert spec.family == "attention" and spec.constants["d"] == d and spec.constants["causal"] == causal
        assert spec.constants["f16"] == f16 and spec.baseline is not None and spec.bench_sizes
        assert spec.signatures[0].startswith("void(float16" if f16 else "void(uint16")
        q = spec.make_case(spec.test_sizes[0], np.random.default_rng(1), "large").args[0]
        assert q.dtype == (np.float16 if f16 else np.uint16) and np.isfinite(_values(q)).all()
    assert len(at.VARIANTS) == 8


@pytest.mark.parametrize("name", ["attention_bf16_d64_causal", "attention_f16_d128"])
def test_the_benchmark_baseline_computes_the_same_thing(name, rng):
    """The spec's torch peer (SDPA as torch dispatches it by default; on CPU tensors its CPU kernel) on CPU tensors
    of a case: the reference within the kernel's tolerance plus the rounding of torch's 16-bit output."""
    torch = pytest.importorskip("torch")
    spec = get(name)
    case = spec.make_case({"bh": 2, "lq": 21, "lk": 21}, rng, "normal")
    tensors = [torch.from_numpy(a.copy()) if isinstance(a, np.ndarray) else a for a in case.args]
    run, label = spec.baseline(*tensors)
    assert "default dispatch" in label
    got = run().double().numpy()[0]
    q, k, v, _, scale = case.args
    fmt = "f16" if spec.constants["f16"] else "bf16"
    expected, tol = _expected_and_tolerance(q, k, v, float(scale), spec.constants["causal"], fmt)
    assert (np.abs(got - expected) <= tol + U[fmt] * np.abs(expected)).all()


# ---------------------------------------------------------------------------------------------------------------
# on a GPU (pytest --gpu)

@pytest.mark.gpu
@pytest.mark.parametrize("fmt", ["bf16", "f16"])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(2, 8, 1000, 1000), (1, 4, 4096, 4096), (3, 2, 129, 200)],
                         ids=lambda s: "x".join(map(str, s)))
def test_attention_matches_float64_and_torch_flash_on_the_gpu(fmt, d, causal, shape, cuda_torch, rng):
    """The registered configuration at realistic sizes: within the tolerance of a float64 reference (on the GPU, in
    torch), and no further from torch's flash attention than that plus its 16-bit output's rounding."""
    torch = cuda_torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    b, h, lq, lk = shape
    dt = torch.float16 if fmt == "f16" else torch.bfloat16
    gen = torch.Generator(device="cuda").manual_seed(int(rng.integers(2**31)))
    q, k, v = (torch.randn(b, h, n, d, device="cuda", generator=gen).to(dt) for n in (lq, lk, lk))
    scale = 1.0 / math.sqrt(d)
    start = time.perf_counter()
    out = (at.attention_f16 if fmt == "f16" else at.attention_bf16)(q, k, v, causal=causal)
    torch.cuda.synchronize()
    print(f"first call {time.perf_counter() - start:.2f} s")
    assert out.dtype == torch.float32 and out.device == q.device
    q64, k64, v64 = (x.double() for x in (q, k, v))
    s = q64 @ k64.transpose(-1, -2) * scale
    visible = torch.ones(lq, lk, dtype=torch.bool, device="cuda")
    if causal:
        visible = visible.tril()
    s = s.masked_fill(~visible, float("-inf"))
    p = torch.softmax(s, dim=-1)
    expected = p @ v64
    weighted = p @ v64.abs()
    score_mag = scale * (q64.abs() @ k64.abs().transpose(-1, -2)).amax(dim=-1, keepdim=True)
    tol = (U[fmt] + 2.0**-16 * (1 + score_mag)) * weighted
    if fmt == "f16":
        tol += 2.0**-25 * (visible.double() @ v64.abs())
    err = (out.double() - expected).abs()
    assert bool((err <= tol).all()), f"worst error / tolerance {(err / tol).max().item():.3g}"
    if causal and lq != lk:  # (is_causal's alignment for lq != lk has differed between torch's backends)
        return
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        flash = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale).double()
    flash_err = (flash - expected).abs()
    print(f"max error vs float64: numbakern {err.max().item():.2e}, torch flash {flash_err.max().item():.2e}")
    assert bool(((out.double() - flash).abs() <= tol + U[fmt] * flash.abs() + flash_err).all())
