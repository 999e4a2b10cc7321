"""The registered Hopper matmuls (``numbakern.kernels.matmul_hopper``) on their simulator cases: the real kernel,
tensor maps made at launch, against the float64 reference."""

from __future__ import annotations

import pytest

import numbakern
from numbakern.kernels.matmul_hopper import TEST_SIZES

pytestmark = pytest.mark.sim

NAMES = ("matmul_wgmma_bf16", "matmul_wgmma_f16", "matmul_wgmma_f16_out16")


@pytest.mark.parametrize("name", NAMES)
def test_registered_wgmma_matmuls_compute_their_references(name, rng):
    spec = numbakern.get(name)
    assert spec.test_sizes == TEST_SIZES
    for size in spec.test_sizes:
        case = spec.make_case(size, rng, "normal")
        checked = spec.check(case, numbakern.run_case(spec, case))
        assert checked[2].ok, (size, checked[2])
