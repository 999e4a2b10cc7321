"""The simulator's tensor-core instructions against the device (``pytest --gpu`` on a GPU of compute capability
8.0 or newer; skipped in simulator mode).

mma: bit for bit on inputs where the accumulation order cannot matter (small integers and few-bit fractions:
every partial sum is exact in float32, so any order and any internal width give the same bits). ldmatrix: its
registers equal the numpy model of its addressing."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from numbakern.mma import formats, layout
from numbakern.sim import tensorcore
from tests.mma import kernels
from tests.mma.test_ldmatrix_and_checks import _addresses, ldmatrix_model

pytestmark = pytest.mark.gpu

LANES = 32


def _exact_values(rng, shape) -> np.ndarray:
    """Integers -8..8 in steps of 1/4: products have at most 12 significant bits, sums of 16 stay far below 2**24."""
    return (rng.integers(-32, 33, shape) / 4).astype(np.float32)


def _run(kernel, *args):
    device = [cuda.to_device(a) for a in args]
    kernel[1, LANES](*device)
    cuda.synchronize()
    return device[-1].copy_to_host()


@pytest.mark.parametrize("name", ["m16n8k16.bf16", "m16n8k16.f16", "m16n8k8.tf32"])
def test_mma_bit_for_bit_with_the_simulator(name, rng):
    shape = layout.SHAPES[name]
    if shape.packed:
        to_bits = formats.f32_to_bf16_bits if shape.operand == "bf16" else formats.f32_to_f16_bits
        a = formats.pack_b16x2(to_bits(_exact_values(rng, (LANES, 4))), to_bits(_exact_values(rng, (LANES, 4))))
        b = formats.pack_b16x2(to_bits(_exact_values(rng, (LANES, 2))), to_bits(_exact_values(rng, (LANES, 2))))
    else:
        a, b = _exact_values(rng, (LANES, 4)), _exact_values(rng, (LANES, 2))
    c = _exact_values(rng, (LANES, 4)) * 16
    kernel = {"m16n8k16.bf16": kernels.mma_bf16_registers, "m16n8k16.f16": kernels.mma_f16_registers,
              "m16n8k8.tf32": kernels.mma_tf32_registers}[name]
    device = _run(kernel, a, b, c, np.zeros((LANES, 4), np.float32))
    simulated = tensorcore.mma(shape, a, b, c)
    np.testing.assert_array_equal(device.view(np.uint32), simulated.astype(np.float32).view(np.uint32))
    assert np.count_nonzero(device) > LANES


@pytest.mark.parametrize("trans", [False, True], ids=["plain", "trans"])
@pytest.mark.parametrize("count", [1, 2, 4])
def test_ldmatrix_on_the_device_matches_the_model(count, trans, rng):
    src = rng.integers(1, 2**16, (16, 24), dtype=np.uint16)
    rows, cols = _addresses(rng, count)
    rows[8 * count:], cols[8 * count:] = 0, 0  # unused on the device too, but kept in bounds there
    out = _run(kernels.ldmatrix_kernels[(count, trans)], src, rows, cols, np.zeros((LANES, count), np.uint32))
    np.testing.assert_array_equal(out, ldmatrix_model(src, rows, cols, count, trans))
