"""Which of the library's kernels the quick tier (``pytest -m "not slow"``) runs in the tests that run every kernel
(tests/numbakern/test_kernels.py, tests/sim/test_engine.py); the whole suite runs all of them.

numba types a tensor-core kernel for seconds (a wgmma matmul 10-17 s, a wgmma attention 4-5 s), and a first run
of the suite types each variant once, in whichever test reaches it first: the per-test times that mark the slow
tests (tests/durations.json) show only that one test's share. So the quick tier runs one variant of each
tensor-core kernel factory, and one causal one of each attention factory (``QUICK``): the same kernel code as the
factory's other variants, which differ in the element type or the head size. The other variants are slow.
"""

from __future__ import annotations

import pytest

from numbakern import get
from numbakern.specialize import factory_of

#: the variants of the tensor-core factories that the quick tier runs
QUICK = ("attention_f16_d64", "attention_f16_d64_causal", "attention_3xtf32_d64", "attention_3xtf32_d64_causal",
         "attention_wgmma_f16_d64", "attention_wgmma_f16_d64_causal", "matmul_f16", "matmul_wgmma_f16")


def slow_variant(spec) -> bool:
    """True for a kernel that another variant of its tensor-core factory stands for in the quick tier."""
    factory = factory_of(spec.kernel)
    return factory is not None and spec.name not in QUICK and any(factory_of(get(n).kernel) is factory for n in QUICK)


def marks(spec) -> list:
    """The marks of a test of ``spec`` in a test that runs every kernel: ``slow`` for a variant ``QUICK`` stands
    for."""
    return [pytest.mark.slow] if slow_variant(spec) else []
