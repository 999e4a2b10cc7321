"""Which of the library's kernels the quick tier (``pytest -m "not slow"``) runs in the test that runs every kernel
(tests/numbakern/test_kernels.py); the whole suite runs all of them.

numba types a tensor-core or flash-attention kernel for a second or two and the simulator runs it for seconds, and a
first run of the suite types each variant once, in whichever test reaches it first: the per-test times that mark the
slow tests (tests/durations.json) show only that one test's share. So the quick tier runs the variants in ``QUICK``
of such kernel code, and the kernels made from the same code (the same Python function, specialized for another
element type or head size) are slow.
"""

from __future__ import annotations

import pytest

from numbakern import get
from numbakern.unroll import rolled_function

#: the variants the quick tier runs of the kernels that numba types for seconds: head size 64 (and its causal
#: twin) of each attention kernel, the f16 tensor-core matmuls
QUICK = ("attention_d64", "attention_d64_causal", "attention_f16_d64", "attention_f16_d64_causal",
         "attention_3xtf32_d64", "attention_wgmma_f16_d64", "attention_wgmma_f16_d64_causal", "matmul_f16",
         "matmul_wgmma_f16")


def _code(spec):
    kernel = spec.kernel
    return rolled_function(getattr(kernel, "py_func", None) or getattr(kernel, "fn", kernel)).__code__


def slow_variant(spec) -> bool:
    """True for a kernel made from the same code as one of ``QUICK``, which stands for it in the quick tier."""
    return spec.name not in QUICK and any(_code(get(name)) is _code(spec) for name in QUICK)


def marks(spec) -> list:
    """The marks of a test of ``spec`` in a test that runs every kernel: ``slow`` for a variant ``QUICK`` stands
    for."""
    return [pytest.mark.slow] if slow_variant(spec) else []
