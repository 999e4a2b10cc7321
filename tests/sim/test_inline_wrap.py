"""The rewriter wraps signed integers inline (``typed._inline_signed_wrap``: a conditional expression binding its
operand with ``:=``) instead of calling ``numerics.WRAP``. Checked against numpy's fixed-width arithmetic (which
wraps as the GPU does) on values at and past the edges of each type, and in kernels where several wraps share
one expression."""

from __future__ import annotations

import ast

import numpy as np
import pytest
from numba import cuda, int8, int16, int32, int64

from numbakern.sim import numerics, typed

SEED = 20261126
SIGNED = ("int8", "int16", "int32", "int64")


def _edges(t: numerics.Num, rng) -> list[int]:
    lo, hi, span = t.lo, t.hi, 1 << t.bits
    values = [lo - 1, lo, lo + 1, -1, 0, 1, hi - 1, hi, hi + 1, lo - span, hi + span, 3 * span + 5, -(2**130) + 7]
    values += [int(v) for v in rng.integers(-(2**62), 2**62, 20)] + [int(v) * span + 1 for v in rng.integers(-9, 9, 5)]
    return values


@pytest.mark.parametrize("name", SIGNED)
def test_the_inline_wrap_is_numerics_wrap(name):
    t = numerics.NUMS[name]
    expr = typed._inline_signed_wrap(ast.Name("v", ast.Load()), t)
    fn = ast.Expression(ast.Lambda(ast.arguments([], [ast.arg("v")], None, [], [], None, []), expr))
    wrap = eval(compile(ast.fix_missing_locations(fn), "<wrap>", "eval"))  # noqa: S307 - the expression built above
    for v in _edges(t, np.random.default_rng(SEED)):
        expected = int(np.array(v % (1 << t.bits), dtype=np.uint64).astype(getattr(np, name)))
        assert wrap(v) == expected == numerics.WRAP[name](v), v


@cuda.jit
def wrapping(a, b, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        x, y = a[i], b[i]
        out[i, 0] = x + y  # int64 + int64 wraps
        out[i, 1] = (x + y) * y - (x - y) * x  # several wraps in one expression, one nested in another
        out[i, 2] = int32(x + y) + int32(x - y)  # wrapped to int32, then added exactly (int32 + int32 is int64)
        out[i, 3] = int16(x * y) * int8(y)
        out[i, 4] = int64(x * 3) - int64(y * 5)


def test_kernels_wrap_as_numpys_fixed_width_arithmetic():
    rng = np.random.default_rng(SEED)
    near = np.array([2**63 - 1, 2**63 - 2, -(2**63), -(2**63) + 1, 2**31 - 1, -(2**31), 2**15, 127, -128, 0],
                    dtype=np.int64)
    n = 37  # not a multiple of the block
    a = np.concatenate([near, rng.integers(-(2**63), 2**63 - 1, n - near.size, dtype=np.int64)])
    b = np.concatenate([near[::-1], rng.integers(-(2**63), 2**63 - 1, n - near.size, dtype=np.int64)])
    out = np.zeros((n, 5), np.int64)
    wrapping[2, 32](a, b, out)
    with np.errstate(over="ignore"):
        expected = np.stack([
            a + b,
            (a + b) * b - (a - b) * a,
            (a + b).astype(np.int32).astype(np.int64) + (a - b).astype(np.int32).astype(np.int64),
            (a * b).astype(np.int16).astype(np.int64) * b.astype(np.int8).astype(np.int64),
            a * 3 - b * 5,
        ], axis=1)
    np.testing.assert_array_equal(out, expected)
    assert (out[:, 0] != a.astype(object) + b.astype(object)).any(), "no value wrapped: the test cannot fail"
