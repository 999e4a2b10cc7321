"""Kernels that define a function inside them and pass it on (numba's ``make_function``, made a ``cuda.jit``
function of its own by numba-cuda where it escapes): to a device function, to an ``@overload``'d function, with
the values of locals it closes over, its defaults and keyword arguments, from a function the kernel calls directly
and from inside a device function. Each result is compared with a numpy reference in Numba's types (int32 inputs
give int64 results, float32 stays float32). A device function that calls it by name runs its typed Python; called
from Python (an ``@overload``'d function's Python, a call with ``*args``) it runs as Python: the last test shows
the difference."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda
from numba.cuda.extending import overload

BLOCK = 32
N = 77  # not a multiple of the block


def _launch(kernel, *args):
    kernel[(N + BLOCK - 1) // BLOCK, BLOCK](*args)


@cuda.jit(device=True)
def apply(func, v):
    return func(v)


@cuda.jit(device=True)
def apply_kw(func, a, b):
    return func(a, b, scale=5)  # overrides one default, keeps the other


@cuda.jit(device=True)
def apply_star(func, *args):
    return func(*args)  # a call with *args: the rewritten device function calls the value it is given


@pytest.fixture
def ints(rng):
    # large enough that int32 arithmetic would wrap: Numba's int32 * int64 is int64
    a = rng.integers(2**30, 2**31 - 1, N, dtype=np.int32)
    a[::2] *= -1
    return a


@cuda.jit
def escapes_to_device_function(a, out):
    i = cuda.grid(1)
    k = 7  # a constant local: numba bakes it into the nested function's closure

    def triple_plus_k(v):
        return v * 3 + k

    if i < a.shape[0]:
        out[i] = apply(triple_plus_k, a[i])


def test_a_nested_function_passed_to_a_device_function(ints):
    out = np.zeros(N, np.int64)
    _launch(escapes_to_device_function, ints, out)
    np.testing.assert_array_equal(out, ints.astype(np.int64) * 3 + 7)


def twice(func, v):
    return func(func(v))


@overload(twice)
def _twice(func, v):
    return lambda func, v: func(func(v))


@cuda.jit
def escapes_to_overload(a, out):
    i = cuda.grid(1)
    offset = 1000

    def add_offset(v):
        return v + offset

    if i < a.shape[0]:
        out[i] = twice(add_offset, a[i])


def test_a_nested_function_passed_to_an_overloaded_function(ints):
    out = np.zeros(N, np.int64)
    _launch(escapes_to_overload, ints, out)
    np.testing.assert_array_equal(out, ints.astype(np.int64) + 2000)


@cuda.jit
def with_defaults(a, b, out):
    i = cuda.grid(1)
    bias = 11

    def combine(x, y, scale=3, shift=-2):
        return x * scale + y + shift + bias

    if i < a.shape[0]:
        out[i, 0] = combine(a[i], b[i])  # called directly: numba inlines it
        out[i, 1] = apply_kw(combine, a[i], b[i])


def test_defaults_and_keyword_arguments_of_a_nested_function(ints, rng):
    b = rng.integers(-2**31, 2**31 - 1, N, dtype=np.int32)
    out = np.zeros((N, 2), np.int64)
    _launch(with_defaults, ints, b, out)
    a64, b64 = ints.astype(np.int64), b.astype(np.int64)
    np.testing.assert_array_equal(out[:, 0], a64 * 3 + b64 - 2 + 11)
    np.testing.assert_array_equal(out[:, 1], a64 * 5 + b64 - 2 + 11)


@cuda.jit
def float32_square(x, out):
    i = cuda.grid(1)

    def square_plus_one(v):
        return v * v + np.float32(1.0)

    if i < x.shape[0]:
        out[i] = apply(square_plus_one, x[i])


def test_a_nested_function_of_float32(rng):
    x = rng.uniform(-3, 3, N).astype(np.float32)
    out = np.zeros(N, np.float32)
    _launch(float32_square, x, out)
    np.testing.assert_array_equal(out, x * x + np.float32(1.0))  # float32 throughout: Numba's float32 * float32


@cuda.jit
def reads_the_thread_index(out):
    i = cuda.grid(1)

    def lane(v):
        return v * 100 + cuda.threadIdx.x

    if i < out.shape[0]:
        out[i, 0] = apply(lane, i)
        out[i, 1] = apply_star(lane, i)  # (as Python: test_a_nested_function_called_with_star_arguments_…)


def test_a_nested_function_reads_cuda_of_the_launch():
    out = np.zeros((N, 2), np.int64)
    _launch(reads_the_thread_index, out)
    i = np.arange(N, dtype=np.int64)
    np.testing.assert_array_equal(out[:, 0], i * 100 + i % BLOCK)
    np.testing.assert_array_equal(out[:, 1], i * 100 + i % BLOCK)


@cuda.jit
def defined_in_an_inlined_function(a, out):
    i = cuda.grid(1)

    def outer(v):
        def times_five(w):  # (a value it closed over would have two definitions once numba inlines outer)
            return w * 5

        return apply(times_five, v)

    if i < a.shape[0]:
        out[i] = outer(a[i]) - 1


def test_a_function_defined_inside_a_function_the_kernel_defines(ints):
    out = np.zeros(N, np.int64)
    _launch(defined_in_an_inlined_function, ints, out)
    np.testing.assert_array_equal(out, ints.astype(np.int64) * 5 - 1)


def device_defining(v):
    def negate_plus(w):
        return -w + 3

    return apply(negate_plus, v)


device_defining_jit = cuda.jit(device=True)(device_defining)


@cuda.jit
def calls_a_device_function_that_defines_one(a, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i] = device_defining_jit(a[i])


def test_a_device_function_that_defines_a_function(ints):
    out = np.zeros(N, np.int64)
    _launch(calls_a_device_function_that_defines_one, ints, out)
    np.testing.assert_array_equal(out, -ints.astype(np.int64) + 3)


@cuda.jit
def two_lambdas_on_one_line(a, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i] = apply(lambda v: v + 1, a[i]) * 1000 + apply(lambda v: v * 2, a[i])  # one name, one line


def test_lambdas_of_one_line_are_told_apart(ints):
    out = np.zeros(N, np.int64)
    _launch(two_lambdas_on_one_line, ints, out)
    v = ints.astype(np.int64)
    np.testing.assert_array_equal(out, (v + 1) * 1000 + v * 2)



OFFSET = 40


@cuda.jit
def reads_a_module_constant(a, out):
    i = cuda.grid(1)

    def plus_offset(v):
        return v + OFFSET

    if i < a.shape[0]:
        out[i] = apply(plus_offset, a[i])


def test_a_nested_function_reads_module_constants_frozen_at_the_first_launch(ints):
    global OFFSET
    out = np.zeros(N, np.int64)
    _launch(reads_a_module_constant, ints, out)
    np.testing.assert_array_equal(out, ints.astype(np.int64) + 40)
    OFFSET = 50  # numba compiled the kernel at its first launch, with 40: a later launch still adds 40
    try:
        out[:] = 0
        _launch(reads_a_module_constant, ints, out)
    finally:
        OFFSET = 40
    np.testing.assert_array_equal(out, ints.astype(np.int64) + 40)



@cuda.jit
def float32_times_float64_literal(x, out):
    i = cuda.grid(1)

    def tenth(v):
        return v * 0.1  # Numba: float32 * float64 is float64

    if i < x.shape[0]:
        out[i] = apply(tenth, x[i])


def test_a_nested_function_a_device_function_calls_computes_with_numbas_types(rng):
    x = rng.uniform(1, 2, N).astype(np.float32)
    out = np.zeros(N, np.float64)
    _launch(float32_times_float64_literal, x, out)
    np.testing.assert_array_equal(out, x.astype(np.float64) * 0.1)


# -- the gap: called from Python, a nested function computes as Python (docs/simulator.md) -------------------------


@cuda.jit
def float32_times_float64_literal_through_star(x, out):
    i = cuda.grid(1)

    def tenth(v):
        return v * 0.1

    if i < x.shape[0]:
        out[i] = apply_star(tenth, x[i])


def test_a_nested_function_called_with_star_arguments_computes_with_pythons_arithmetic(rng):
    x = rng.uniform(1, 2, N).astype(np.float32)
    out = np.zeros(N, np.float64)
    _launch(float32_times_float64_literal_through_star, x, out)
    numba = x.astype(np.float64) * 0.1
    python = (x * np.float32(0.1)).astype(np.float64)  # numpy keeps a float32 times a Python float in float32
    np.testing.assert_array_equal(out, python)
    assert not np.array_equal(out, numba)
