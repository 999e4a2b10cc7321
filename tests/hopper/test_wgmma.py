"""wgmma in the simulator against float64 references of its operands: A and B placed in shared memory by the
ISA's canonical layouts (``tests/hopper/canonical.py``), A in registers by the ISA's fragment layout, C and D per
thread likewise; every operand type, both B majors, every swizzle."""

from __future__ import annotations

import math

import numpy as np
import pytest

from numbakern.mma import formats
from tests.hopper import canonical, kernels

pytestmark = pytest.mark.sim

# (instruction, n, trans_b, A swizzle (None: registers), B swizzle)
CASES = [
    ("wgmma_m64n64k16_bf16", 64, 0, 128, 128),
    ("wgmma_m64n32k16_f16", 32, 1, 32, 64),
    ("wgmma_m64n16k16_bf16", 16, 1, 0, 0),
    ("wgmma_m64n64k16_bf16_rs", 64, 1, None, 128),  # FlashAttention-3's P @ V: P in registers, V n-major
    ("wgmma_m64n24k16_f16_rs", 24, 0, None, 32),
    ("wgmma_m64n32k8_tf32", 32, 0, 128, 64),
    ("wgmma_m64n16k8_tf32_rs", 16, 0, None, 0),
]
A_AT, B_AT = 0, 16384  # where the operands lie in the image (bytes from its 1024-aligned start)


def _values(rng, shape, operand: str, integers: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Random operand values: (bits as the hardware reads them, float64 values)."""
    x = rng.integers(-8, 9, shape).astype(np.float32) if integers else rng.standard_normal(shape).astype(np.float32)
    if operand == "bf16":
        bits = formats.f32_to_bf16_bits(x)
        return bits.astype(np.uint32), formats.bf16_bits_to_f32(bits).astype(np.float64)
    if operand == "f16":
        bits = formats.f32_to_f16_bits(x)
        return bits.astype(np.uint32), formats.f16_bits_to_f32(bits).astype(np.float64)
    t = formats.f32_to_tf32(x)
    return t.view(np.uint32), t.astype(np.float64)


def _place(image, at, bits, eb, swizzle, mn_major):
    """The operand (mn × k) at ``at`` of the image; returns its descriptor's (lbo, sbo)."""
    view = image[at:]
    if mn_major:
        per_row = max(swizzle, 16) // eb
        lbo = 8 * max(swizzle, 16) * 2 if swizzle else 512
        sbo = 8 * swizzle if swizzle else 128
        canonical.mn_major(view, bits, eb, swizzle, sbo, lbo)
        assert bits.shape[0] % per_row == 0
    else:
        lbo, sbo = 256, (8 * swizzle if swizzle else 512)
        canonical.k_major(view, bits, eb, swizzle, sbo, lbo)
    return lbo, sbo


def _run(name, n, trans_b, a_swizzle, b_swizzle, rng, integers=False, scale_d=1):
    operand = name.split("_")[2]
    eb = 4 if operand == "tf32" else 2
    k = 32 // eb
    a_bits, a = _values(rng, (64, k), operand, integers)
    b_bits, b = _values(rng, (k, n), operand, integers)
    c = (rng.integers(-64, 65, (64, n)) if integers else rng.standard_normal((64, n))).astype(np.float32)
    image = np.zeros(32768, np.uint8)
    descs = np.zeros(2, np.uint64)
    if a_swizzle is not None:
        lbo, sbo = _place(image, A_AT, a_bits, eb, a_swizzle, False)
        descs[0] = canonical.descriptor(A_AT, lbo, sbo, a_swizzle)
    lbo, sbo = _place(image, B_AT, b_bits.T, eb, b_swizzle, bool(trans_b))
    descs[1] = canonical.descriptor(B_AT, lbo, sbo, b_swizzle)
    tf32 = operand == "tf32"
    a_in = np.zeros((128, 4), np.float32 if tf32 else np.uint32)
    for t in range(128):
        held = [a_bits[r, col] for r, col in canonical.a_positions(t, tf32)]
        if tf32:
            a_in[t] = np.array(held, np.uint32).view(np.float32)
        else:
            a_in[t] = [held[2 * i] | (held[2 * i + 1] << 16) for i in range(4)]
    c_in = np.array([[c[r, col] for r, col in canonical.d_positions(t, n)] for t in range(128)], np.float32)
    out = np.zeros((128, n // 2), np.float32)
    kernels.wgmma_from_image(name, n, trans_b)[1, 128, 0, image.size + 2048](image.view(np.uint32), descs, a_in,
                                                                           c_in, out, scale_d)
    d = np.zeros((64, n), np.float32)
    for t in range(128):
        for i, (r, col) in enumerate(canonical.d_positions(t, n)):
            d[r, col] = out[t, i]
    return a, b, c.astype(np.float64) if scale_d else np.zeros((64, n)), d


@pytest.mark.parametrize("name, n, trans_b, a_swizzle, b_swizzle", CASES)
def test_wgmma_rounds_the_exact_product_sum_once(name, n, trans_b, a_swizzle, b_swizzle, rng):
    """D = C + A @ B with every product exact and the sum rounded once to the nearest float32: each element within
    half a unit in the last place of the exact sum (which math.fsum gives to float64's precision)."""
    a, b, c, d = _run(name, n, trans_b, a_swizzle, b_swizzle, rng)
    exact = np.array([[math.fsum([*(a[i] * b[:, j]), c[i, j]]) for j in range(n)] for i in range(64)])
    ulp = np.spacing(np.abs(d)).astype(np.float64)
    assert (np.abs(d.astype(np.float64) - exact) <= 0.5 * ulp * (1 + 1e-9)).all()


@pytest.mark.parametrize("name, n, trans_b, a_swizzle, b_swizzle", CASES[:4:3] + CASES[5:6])
def test_wgmma_of_small_integers_is_exact_and_scale_d_zero_ignores_c(name, n, trans_b, a_swizzle, b_swizzle, rng):
    a, b, c, d = _run(name, n, trans_b, a_swizzle, b_swizzle, rng, integers=True)
    np.testing.assert_array_equal(d, (a @ b + c).astype(np.float32))
    a, b, zero, d = _run(name, n, trans_b, a_swizzle, b_swizzle, rng, integers=True, scale_d=0)
    np.testing.assert_array_equal(d, (a @ b).astype(np.float32))
