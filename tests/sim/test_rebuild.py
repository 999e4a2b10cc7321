"""The Python the front end rebuilds from numba's typed IR computes what the kernel's own Python computes, whatever
its control flow: for-else, break and continue, an early return from a loop, a while loop left by break, nested
loops left together, tuple swaps, short-circuit conditions, iteration over an array and enumerate. Each kernel runs
on one thread over all its data, so the reference is the same function run by CPython on the same inputs (float64
and small ints: Python's arithmetic and Numba's agree there). The fallback for a graph the structurer cannot
express, a loop over the blocks, is checked the same way."""

from __future__ import annotations

import ast

import numpy as np
import pytest
from numba import cuda

from numbakern.frontend import client
from numbakern.sim import typed

SEED = 20261127
FUNCTIONS = "tests.sim.rebuild_functions"


def control_flow(x, out):
    n = x.shape[0]
    total = 0.0
    for i in range(n):
        if x[i] < 0:
            continue
        if x[i] > 100:
            break
        total += x[i]
    else:
        total += 1000.0
    out[0] = total
    a, b = 0, 1
    k = 0
    while k < n:
        a, b = b, a + b  # a swap: both read before either is written
        k += 1
        if a > 1000:
            break
    out[1] = a
    out[2] = b
    found = -1
    for i in range(n):
        for j in range(i + 1, n):
            if x[i] + x[j] > 150:
                found = i * n + j
                break
        if found >= 0:
            break
    out[3] = found
    m = -1.0
    for v in x:
        m = m if m > v else v
    out[4] = m
    c = 0
    for i, v in enumerate(x):
        if 0 < v < 50 and i % 2 == 0 or v > 90:
            c += 1
    out[5] = c


def first_negative(x, out):
    for i in range(x.shape[0]):
        if x[i] < 0:
            out[0] = i
            return
    out[0] = -1.0


SIGNATURE = "void(float64[::1], float64[::1])"


def _inputs(rng, n):
    """Values that take every path: negatives, values over 100, none of them zero."""
    x = rng.uniform(-20, 120, n)
    x[x == 0] = 1.5
    return x


@pytest.mark.parametrize("function", [control_flow, first_negative])
@pytest.mark.parametrize("n", [1, 7, 33])
def test_the_rebuilt_kernel_computes_what_its_python_computes(function, n):
    rng = np.random.default_rng(SEED + n)
    kernel = cuda.jit(function)
    for _ in range(4):
        x = _inputs(rng, n)
        got, expected = np.full(6, -7.0), np.full(6, -7.0)
        kernel[1, 1](x, got)
        function(x, expected)
        np.testing.assert_array_equal(got, expected, err_msg=f"{function.__name__}, seed {SEED + n}")


@pytest.mark.parametrize("function", [control_flow, first_negative])
def test_the_rebuilt_python_is_structured(function):
    text = client.call(f"{FUNCTIONS}:rebuilt", module=__name__, name=function.__name__, signature=SIGNATURE,
                       blocks=False)
    assert "_nk_block" not in text and "for " in text, text
    assert not any(typed._is_dispatch_loop(n) for n in ast.walk(ast.parse(text)) if isinstance(n, ast.While))


@pytest.mark.parametrize("function", [control_flow, first_negative])
def test_a_loop_over_the_blocks_computes_the_same(function):
    text = client.call(f"{FUNCTIONS}:rebuilt", module=__name__, name=function.__name__, signature=SIGNATURE,
                       blocks=True)
    assert "_nk_block" in text, text
    # its loop is no loop of the kernel's: the rewrite tells no one of its passes (``typed.LOOP_HOOK``)
    assert any(typed._is_dispatch_loop(n) for n in ast.walk(ast.parse(text)) if isinstance(n, ast.While))
    namespace = dict(globals()) | typed.Helpers().values
    exec(compile(text, f"<rebuilt {function.__name__}>", "exec"), namespace)  # noqa: S102 - the helper's rebuild
    rebuilt = namespace[function.__name__]
    rng = np.random.default_rng(SEED)
    for n in (1, 7, 33):
        for _ in range(4):
            x = _inputs(rng, n)
            got, expected = np.full(6, -7.0), np.full(6, -7.0)
            rebuilt(x, got)
            function(x, expected)
            np.testing.assert_array_equal(got, expected, err_msg=f"{function.__name__}, n {n}, seed {SEED}")


def test_a_kernel_raises_the_exception_class_it_names():
    class Overflowed(Exception):  # a class of the test's own, not importable by name
        pass

    @cuda.jit
    def guarded(x):
        i = cuda.grid(1)
        if i < x.shape[0] and x[i] > 10:
            raise Overflowed("too big")

    guarded[1, 4](np.array([1.5, 2.5, 3.5]))
    with pytest.raises(Overflowed, match="too big"):
        guarded[1, 4](np.array([1.5, 20.5, 3.5]))


def test_a_value_nothing_reads_is_still_computed():
    @cuda.jit
    def reads_past_the_shape(x):
        t = cuda.threadIdx.x
        if t == 2:
            x.shape[-t]  # read for what it raises: a 1-d shape has no element -2

    reads_past_the_shape[1, 2](np.ones(3))
    with pytest.raises(IndexError, match="tuple index out of range"):
        reads_past_the_shape[1, 3](np.ones(3))
