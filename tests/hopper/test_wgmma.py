"""wgmma in the simulator against float64 references of its operands: A and B placed in shared memory by the
ISA's canonical layouts (``tests/hopper/canonical.py``), A in registers by the ISA's fragment layout, C and D per
thread likewise; every operand type, both B majors, every swizzle."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.hopper import canonical, gpu_cases, kernels

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
def _run(name, n, trans_b, a_swizzle, b_swizzle, rng, integers=False, scale_d=1):
    args, a, b, c = gpu_cases.wgmma_operands(rng, name, n, trans_b, a_swizzle, b_swizzle, integers)
    image, descs, a_in, c_in, out = args
    kernels.wgmma_from_image(name, n, trans_b)[1, 128, 0, image.nbytes + 2048](image, descs, a_in, c_in, out, scale_d)
    d = np.zeros((64, n), np.float32)
    for t in range(128):
        for i, (r, col) in enumerate(canonical.d_positions(t, n)):
            d[r, col] = out[t, i]
    return a, b, c if scale_d else np.zeros((64, n)), d


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
