"""numba-cuda-mlir kernels in the simulator compute with the front end's types: numba-cuda's where it is installed,
numba-cuda-mlir's own where it is the only front end (``numbakern.frontend.mlir_typing``: its compiler's passes up
to lowering, no driver). Each kernel below computes something different with Python's (or numpy's) arithmetic than
with Numba's; the reference is numpy in the wider type Numba computes in, on fresh random inputs at sizes that are
no multiple of the block."""

import warnings

import numpy as np
import pytest

from numbakern import sim
from numbakern.frontend import typer
from numbakern.frontend.choice import numba_cuda_installed

cuda = pytest.importorskip("numba_cuda_mlir.cuda")

BLOCK = 128
SIZES = [1, 37, 1000]
#: a module constant of this file that an inlined device function from elsewhere must not read (see ``scaled``)
SCALE = np.int32(1000)


def launch(kernel, n, *args):
    with sim.checks("all"):
        kernel[(n + BLOCK - 1) // BLOCK, BLOCK](*args)


def random_int32(rng, n):
    return rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)


def test_the_typer_here():
    assert typer.name() == ("numba-cuda" if numba_cuda_installed() else "numba-cuda-mlir")


@cuda.jit
def times_int32_max(out, x):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] * np.int32(2147483647)


@pytest.mark.parametrize("n", SIZES)
def test_int32_times_int32_is_int64(n, rng):
    x = random_int32(rng, n)
    x[0] = 2  # 2 * 2147483647 = 4294967294 in int64; -2 in int32
    out = np.zeros(n, np.int64)
    launch(times_int32_max, n, out, x)
    np.testing.assert_array_equal(out, x.astype(np.int64) * np.int64(2147483647))
    assert out[0] == 4294967294


@cuda.jit
def difference(out, a, b):
    i = cuda.grid(1)
    if i < a.size:
        out[i] = a[i] - b[i]


@pytest.mark.parametrize("n", SIZES)
def test_uint32_minus_uint32_wraps_as_uint64(n, rng):
    a = rng.integers(1, 2**32, n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(1, 2**32, n, dtype=np.uint64).astype(np.uint32)
    a[0], b[0] = min(a[0], b[0]) - 1, max(a[0], b[0])  # at least one a < b: wraps at 64 bits, not at 32
    out = np.zeros(n, np.uint64)
    launch(difference, n, out, a, b)
    np.testing.assert_array_equal(out, a.astype(np.uint64) - b.astype(np.uint64))
    assert out[0] > np.uint64(2**32)


@cuda.jit
def plus_a_tenth(out, x):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] + 0.1


@pytest.mark.parametrize("n", SIZES)
def test_float32_plus_a_python_float_is_float64(n, rng):
    x = (rng.standard_normal(n) * 100).astype(np.float32)
    out = np.zeros(n, np.float64)
    launch(plus_a_tenth, n, out, x)
    expected = x.astype(np.float64) + 0.1
    np.testing.assert_array_equal(out, expected)
    assert not np.array_equal(out, (x + np.float32(0.1)).astype(np.float64))  # numpy's float32 sum differs


@cuda.jit
def floor_division(q, r, fr, a, b, x, y):
    i = cuda.grid(1)
    if i < a.size:
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]
        fr[i] = x[i] % y[i]


@pytest.mark.parametrize("n", SIZES)
def test_floor_division_and_modulo(n, rng):
    a = random_int32(rng, n)
    b = rng.integers(1, 1000, n).astype(np.int32) * rng.choice(np.array([-1, 1], np.int32), n)
    a[0], b[0] = -7, 2  # floor: -4 and 1 (C's truncation: -3 and -1)
    x = rng.standard_normal(n) * 10
    y = rng.uniform(0.5, 3.0, n) * rng.choice([-1.0, 1.0], n)
    q, r, fr = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n)
    launch(floor_division, n, q, r, fr, a, b, x, y)
    np.testing.assert_array_equal(q, a.astype(np.int64) // b.astype(np.int64))
    np.testing.assert_array_equal(r, a.astype(np.int64) % b.astype(np.int64))
    np.testing.assert_allclose(fr, np.mod(x, y), rtol=1e-15, atol=1e-13)  # the divisor's sign, as Python's %
    assert (q[0], r[0]) == (-4, 1)


def test_a_rejected_kernel_is_a_typing_error():
    @cuda.jit
    def rejected(out):
        out[0] = "text"

    with pytest.raises(sim.TypingError, match=f"{typer.name()} cannot compile kernel 'rejected'"):
        rejected[1, 1](np.zeros(1, np.float32))


def test_no_launch_runs_with_pythons_arithmetic(rng):
    @cuda.jit
    def fresh(out, x):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = x[i] * np.int32(3)

    x = random_int32(rng, 300)
    out = np.zeros(300, np.int64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        launch(fresh, 300, out, x)
    assert not [w for w in caught if "arithmetic" in str(w.message)], [str(w.message) for w in caught]
    np.testing.assert_array_equal(out, x.astype(np.int64) * 3)


# A device function defined where the kernel's module is not: numba-cuda-mlir inlines small device functions into the
# kernel before typing, and the inlined body reads its own module's SCALE, not the kernel module's.
_elsewhere = {"np": np, "SCALE": np.int32(65536)}
exec("def scaled(v):\n    return v * SCALE\n", _elsewhere)  # noqa: S102
scaled = cuda.jit(device=True)(_elsewhere["scaled"])


@cuda.jit
def call_scaled(out, x):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = scaled(x[i])


@pytest.mark.parametrize("n", SIZES)
def test_a_device_function_reads_its_own_globals(n, rng):
    x = random_int32(rng, n)
    out = np.zeros(n, np.int64)
    launch(call_scaled, n, out, x)
    np.testing.assert_array_equal(out, x.astype(np.int64) * 65536)  # int32 * int32: int64, no wrap


@cuda.jit(device=True)
def long_mix(v):
    """More statements than numba-cuda-mlir inlines (64): typed as a call, with its own facts."""
    a = v * np.int32(3)
    b = a + v
    c = b * np.int32(5)
    d = c - a
    e = d * np.int32(7)
    f = e + b
    g = f * np.int32(11)
    h = g - c
    k = h * np.int32(13)
    m = k + d
    p = m * np.int32(17)
    q = p - e
    s = q * np.int32(19)
    t = s + f
    u = t - g
    w = u + h
    y = w - k
    z = y + m
    z1 = z * np.int32(23)
    z2 = z1 - y
    z3 = z2 + w
    z4 = z3 - u
    z5 = z4 * np.int32(29)
    z6 = z5 + t
    z7 = z6 - s
    z8 = z7 + q
    return z8 - p + q - s + t


@cuda.jit
def call_long_mix(out, x):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = long_mix(x[i])


def long_mix_reference(v):
    v = v.astype(object)  # Python ints: no wrap at all (the int64 results here stay far below 2**63)
    a = v * 3
    b = a + v
    c = b * 5
    d = c - a
    e = d * 7
    f = e + b
    g = f * 11
    h = g - c
    k = h * 13
    m = k + d
    p = m * 17
    q = p - e
    s = q * 19
    t = s + f
    u = t - g
    w = u + h
    y = w - k
    z = y + m
    z1 = z * 23
    z2 = z1 - y
    z3 = z2 + w
    z4 = z3 - u
    z5 = z4 * 29
    z6 = z5 + t
    z7 = z6 - s
    z8 = z7 + q
    return (z8 - p + q - s + t).astype(np.int64)


@pytest.mark.parametrize("n", SIZES)
def test_a_device_function_typed_as_a_call(n, rng):
    x = rng.integers(-(2**16), 2**16, n).astype(np.int32)
    out = np.zeros(n, np.int64)
    launch(call_long_mix, n, out, x)
    np.testing.assert_array_equal(out, long_mix_reference(x))


def test_device_functions_inlined_or_called_as_numba_cuda_mlir_compiles_them():
    """The typing facts show which path each device function took: numba-cuda-mlir inlines ``scaled`` (no facts of
    its own) and calls ``long_mix`` (facts of its own); numba-cuda calls both."""
    from numbakern.frontend import build_request, client
    from numbakern.sim import mlirsim

    types = typer.module("types")
    argtypes = (types.int64[::1], types.int32[::1])
    functions = {}
    for kernel in (call_scaled, call_long_mix):
        facts = client.facts(build_request(kernel.fn, {}, argtypes, mlirsim.recognize))
        assert facts["ok"], facts
        functions[kernel.fn.__name__] = [f["label"] for f in facts["functions"] if f is not None]
    inlined = ["kernel"] if typer.is_mlir() else ["kernel", "device:0"]
    assert functions == {"call_scaled": inlined, "call_long_mix": ["kernel", "device:0"]}


@cuda.jit
def sum_across_blocks(x, partial, total):
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    if t == 0:
        s = 0.0
        for j in range(cuda.blockIdx.x * BLOCK, min(x.size, (cuda.blockIdx.x + 1) * BLOCK)):
            s += x[j]
        partial[cuda.blockIdx.x] = s
    cuda.cg.this_grid().sync()
    if i == 0:
        s = 0.0
        for b in range(cuda.gridDim.x):
            s += partial[b]  # written by other blocks before the grid barrier
        total[0] = s


def test_a_grid_barrier_makes_the_launch_cooperative(rng):
    """numba-cuda-mlir records a cooperative launch in its lowering; typed only, the grid group's type says it."""
    blocks = 5
    x = rng.random(blocks * BLOCK - 9)
    partial, total = np.full(blocks, np.nan), np.zeros(1)
    with sim.checks("all"):
        sum_across_blocks[blocks, BLOCK](x, partial, total)
    np.testing.assert_allclose(total[0], x.sum(), rtol=1e-12)


@pytest.mark.skipif(numba_cuda_installed(), reason="numba-cuda types the launch here")
def test_without_its_typing_stages_a_launch_runs_untyped_and_says_so(monkeypatch, rng):
    """The one case left untyped: a numba-cuda-mlir without the modules its typing is run from (another layout than
    0.6's). The launch still runs, with Python's arithmetic, and ``UntypedLaunchWarning`` names what is missing (CI
    makes that warning an error)."""
    from numbakern.frontend import mlir_typing
    from numbakern.sim.errors import UntypedLaunchWarning

    monkeypatch.setattr(mlir_typing, "missing_stages", lambda: "this numba-cuda-mlir has no numba_cuda_mlir.x")

    @cuda.jit
    def untyped(out, x):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = x[i] + np.float32(1)

    x = rng.standard_normal(200).astype(np.float32)
    out = np.zeros_like(x)
    with pytest.warns(UntypedLaunchWarning, match="runs with Python's arithmetic .* has no numba_cuda_mlir.x"):
        launch(untyped, 200, out, x)
    np.testing.assert_allclose(out, x.astype(np.float64) + 1.0, rtol=1e-6)
