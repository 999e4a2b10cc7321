"""``numbakern.kernels.attention``: the flash-attention kernel against torch's float64 attention (an independent
reference), in the simulator with every checker on (small tiles, sequence lengths no tile divides), on a GPU
with ``pytest --gpu``; the user-facing function's argument checks."""

import math

import numpy as np
import pytest

from numbakern import mode
from numbakern.kernels import attention as at
from numbakern.kernels.config import STATIC_SHARED_LIMIT

torch = pytest.importorskip("torch")


def _reference(q, k, v, causal, scale=None):
    """torch's own attention, in float64 on the CPU."""
    q, k, v = (torch.as_tensor(np.asarray(x.cpu() if hasattr(x, "cpu") else x), dtype=torch.float64) for x in (q, k, v))
    if causal:  # top-left aligned, as the kernel and torch's is_causal for lq == lk: key j visible to query i if j <= i
        lq, lk = q.shape[-2], k.shape[-2]
        mask = torch.ones(lq, lk, dtype=torch.bool).tril()
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)


def _check(out, q, k, v, causal, scale=None, seed=None):
    ref = _reference(q, k, v, causal, scale).numpy()
    got = np.asarray(out.cpu() if hasattr(out, "cpu") else out, dtype=np.float64)
    assert got.shape == ref.shape
    # an output is a convex combination of v's rows: its error is relative to the size of those rows
    tol = 2e-5 * (1.0 + np.abs(np.asarray(v.cpu() if hasattr(v, "cpu") else v, dtype=np.float64)).max())
    err = np.abs(got - ref).max()
    assert np.isfinite(got).all() and err <= tol, f"seed {seed}: max abs error {err:.3e} > {tol:.3e}"


def _qkv(rng, shape_q, lk, torch_tensors=False):
    *lead, lq, d = shape_q
    q = rng.standard_normal(shape_q).astype(np.float32)
    k = rng.standard_normal((*lead, lk, d)).astype(np.float32)
    v = rng.standard_normal((*lead, lk, d)).astype(np.float32)
    if torch_tensors:
        dev = "cpu" if mode.in_simulator() else "cuda"
        return tuple(torch.from_numpy(x).to(dev) for x in (q, k, v))
    return q, k, v


SIM_SHAPES = [((1, 2, 19, 64), 19), ((2, 1, 1, 64), 1), ((1, 1, 10, 64), 27), ((1, 1, 21, 128), 21)]


@pytest.mark.sim
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape, lk", SIM_SHAPES, ids=lambda x: "x".join(map(str, x)) if isinstance(x,
                                                                                                    tuple) else str(x))
def test_attention_matches_torch_in_the_simulator(shape, lk, causal):
    seed = int(np.random.SeedSequence().entropy % 2**32)
    q, k, v = _qkv(np.random.default_rng(seed), shape, lk)
    out = at.attention(q, k, v, causal=causal)
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    _check(out, q, k, v, causal, seed=seed)


@pytest.mark.sim
def test_cpu_tensors_3d_arrays_scale_and_out():
    seed = int(np.random.SeedSequence().entropy % 2**32)
    q, k, v = _qkv(np.random.default_rng(seed), (3, 13, 64), 13, torch_tensors=True)
    out = torch.full_like(q, float("nan"))
    assert at.attention(q, k, v, scale=0.3, out=out) is out
    _check(out, q, k, v, False, scale=0.3, seed=seed)


@pytest.mark.gpu
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(2, 3, 1000), (1, 2, 257), (1, 1, 1)], ids=lambda s: "x".join(map(str, s)))
def test_attention_matches_torch_on_the_gpu(shape, d, causal):
    seed = int(np.random.SeedSequence().entropy % 2**32)
    b, h, n = shape
    q, k, v = _qkv(np.random.default_rng(seed), (b, h, n, d), n, torch_tensors=True)
    out = at.attention(q, k, v, causal=causal)
    assert out.device == q.device
    _check(out, q, k, v, causal, seed=seed)


def _arrays(*shapes, dtype=np.float32):
    return [np.zeros(s, dtype) for s in shapes]


@pytest.mark.parametrize("args, kwargs, error, match", [
    (_arrays((1, 2, 8, 64), (1, 2, 8, 64), (1, 2, 8, 64), dtype=np.float64), {}, TypeError,
     "argument 'q' must have dtype float32"),
    (_arrays((2, 8, 64), (2, 8, 64), (2, 9, 64)), {}, ValueError, "'k' and 'v' must have the same shape"),
    (_arrays((2, 8, 64), (3, 8, 64), (3, 8, 64)), {}, ValueError, "must agree in batch, heads and head_dim"),
    (_arrays((8, 64), (8, 64), (8, 64)), {}, ValueError, "must have shape \\(batch, heads, seq, head_dim\\)"),
    (_arrays((2, 8, 48), (2, 8, 48), (2, 8, 48)), {}, ValueError, "head dim 48 is not supported"),
    (_arrays((2, 8, 64), (2, 0, 64), (2, 0, 64)), {}, ValueError, "at least one key"),
    (_arrays((2, 8, 64), (2, 8, 64), (2, 8, 64)), {"causal": 1}, TypeError, "'causal' must be True or False"),
    (_arrays((2, 8, 64), (2, 8, 64), (2, 8, 64)), {"scale": float("inf")}, ValueError, "'scale' must be a finite"),
    (_arrays((2, 8, 64), (2, 8, 64), (2, 8, 64)), {"out": np.zeros((2, 8, 32), np.float32)}, ValueError,
     "'out' must have shape"),
])
def test_bad_arguments_are_named(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        at.attention(*args, **kwargs)


def test_strided_input_is_refused():
    q = np.zeros((2, 8, 128), np.float32)[:, :, :64]
    k = v = np.zeros((2, 8, 64), np.float32)
    with pytest.raises(ValueError, match="'q'.*contiguous"):
        at.attention(q, k, v)


def test_every_configuration_fits_static_shared_memory():
    for d, cfg in at.CONFIGS.items():
        assert at.shared_bytes(d, cfg["bm"], cfg["bn"], cfg["kv_split"]) <= STATIC_SHARED_LIMIT
        assert at.attention_threads({"d": d, **cfg}) == cfg["bm"] * 2
    with pytest.raises(ValueError, match="48 KiB"):
        at.attention_threads({"d": 128, "bm": 64, "bn": 64, "kv_split": True})
    with pytest.raises(ValueError, match="multiple of 32"):
        at.attention_threads({"d": 40, "bm": 64, "bn": 32})


def test_work_counts_visible_pairs():
    full = at._work(64, False)({"bh": 2, "lq": 10, "lk": 10})
    causal = at._work(64, True)({"bh": 2, "lq": 10, "lk": 10})
    assert full.flops == 4 * 2 * 100 * 64 and causal.flops == 4 * 2 * 55 * 64
    assert at._work(64, True)({"bh": 1, "lq": 12, "lk": 10}).flops == 4 * (55 + 2 * 10) * 64
    assert math.isclose(at._work(64, True)({"bh": 1, "lq": 4, "lk": 10}).flops, 4 * 10 * 64)
