"""Every launch is typed by numba-cuda's own front end first: a kernel a GPU would not compile is a TypingError
before any thread runs, with numba's reason and the kernel's own line; the answers are cached on disk."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from numbakern import sim
from numbakern.frontend import client
from numbakern.sim import kerneltypes, typedcache

SEED = 20261123
TILE = 8
TILE_HALO = TILE + 2  # a module constant: numba sizes shared arrays from constants, not expressions
SCALE = 2


@pytest.fixture
def rng():
    return np.random.default_rng(SEED)


def _poisoned(n):
    return np.full(n, -7.0, np.float32)


# -- planted kernels numba-cuda rejects ------------------------------------------------------------------------------


@cuda.jit
def blur_with_a_list(x, out):
    i = cuda.grid(1)
    w = [0.25, 0.5, 0.25]  # DEFECT: a Python list needs NRT, which CUDA kernels do not have
    if 0 < i < x.shape[0] - 1:
        out[i] = w[0] * x[i - 1] + w[1] * x[i] + w[2] * x[i + 1]


@cuda.jit
def blur_with_constants(x, out):
    i = cuda.grid(1)
    if 0 < i < x.shape[0] - 1:
        out[i] = 0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1]


def test_a_python_list_is_a_typing_error_before_any_thread_runs(rng):
    x, out = rng.random(32).astype(np.float32) + 0.5, _poisoned(32)
    with pytest.raises(sim.TypingError) as info:
        blur_with_a_list[1, 32](x, out)
    msg = str(info.value)
    assert "kernel 'blur_with_a_list'" in msg and "NRT required but not enabled" in msg
    assert "test_typing.py:" in msg and "w = [0.25, 0.5, 0.25]" in msg
    assert isinstance(info.value, sim.SimulationError)
    assert (out == -7.0).all(), "no thread may run"
    blur_with_constants[1, 32](x, out)  # its twin compiles and computes
    ref = 0.25 * x[:-2].astype(np.float64) + 0.5 * x[1:-1] + 0.25 * x[2:]
    np.testing.assert_allclose(out[1:-1], ref, rtol=1e-6, err_msg=f"seed {SEED}")


@cuda.jit
def halo_tile_expression(x, out):
    tile = cuda.shared.array((TILE + 2, TILE + 2), dtype=np.float32)  # DEFECT: a shape that is an expression
    t = cuda.threadIdx.x
    tile[t, 0] = x[t]
    out[t] = tile[t, 0]


@cuda.jit
def halo_tile_constant(x, out):
    tile = cuda.shared.array((TILE_HALO, TILE_HALO), dtype=np.float32)
    t = cuda.threadIdx.x
    tile[t, 0] = x[t]
    cuda.syncthreads()
    out[t] = tile[t, 0]


def test_a_shared_shape_expression_is_a_typing_error(rng):
    x, out = rng.random(TILE).astype(np.float32) + 0.5, _poisoned(TILE)
    with pytest.raises(sim.TypingError) as info:
        halo_tile_expression[1, TILE](x, out)
    msg = str(info.value)
    assert "No implementation of function" in msg and ">>> array(UniTuple(int64 x 2)" in msg
    assert "tile = cuda.shared.array((TILE + 2, TILE + 2), dtype=np.float32)" in msg
    assert (out == -7.0).all()
    halo_tile_constant[1, TILE](x, out)
    np.testing.assert_array_equal(out, x)


@cuda.jit
def float_index(x, out):
    out[0] = x[1.5]  # DEFECT: arrays take integer indices


def test_numbas_specific_reason_is_kept_and_the_dump_is_not(rng):
    with pytest.raises(sim.TypingError) as info:
        float_index[1, 1](rng.random(4).astype(np.float32), _poisoned(1))
    msg = str(info.value)
    assert "Unsupported array index type float64" in msg and "out[0] = x[1.5]" in msg
    assert "candidate implementations" not in msg and len(msg.splitlines()) <= 8


@cuda.jit
def copy(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i]


def test_a_read_only_output_is_refused_at_launch_naming_it(rng):
    x, out = rng.random(8).astype(np.float32), _poisoned(8)
    out.flags.writeable = False
    with pytest.raises(sim.TypingError, match=r"argument 'out' is a read-only array"):
        copy[1, 8](x, out)
    assert (out == -7.0).all()


def test_a_read_only_input_is_fine(rng):
    x, out = rng.random(8).astype(np.float32), _poisoned(8)
    x.flags.writeable = False
    copy[1, 8](x, out)
    np.testing.assert_array_equal(out, x)


def test_an_argument_numba_cannot_pass_is_named():
    with pytest.raises(sim.TypingError, match=r"(?s)kernel .copy.*test_typing.py:.*Unknown attribute .shape."):
        copy[1, 2]([1.0, 2.0], np.zeros(2, np.float32))
    with pytest.raises(sim.TypingError, match=r"argument 'x' \(builtins.object\) cannot be passed"):
        copy[1, 2](object(), np.zeros(2, np.float32))


def test_without_the_front_end_the_list_kernel_runs_as_python(rng):
    x, out = rng.random(32).astype(np.float32) + 0.5, _poisoned(32)
    with sim.typing(False):
        blur_with_a_list[1, 32](x, out)
    assert (out[1:-1] != -7.0).all()


# -- the cache -------------------------------------------------------------------------------------------------------


@cuda.jit
def scaled(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * SCALE


def _forget_in_memory():
    kerneltypes.forget()


def test_typing_answers_are_cached_on_disk(tmp_path, monkeypatch, rng):
    monkeypatch.setenv("NUMBAKERN_CACHE_DIR", str(tmp_path))
    x, out = rng.random(16).astype(np.float32), _poisoned(16)
    _forget_in_memory()
    before, code_before = dict(client.stats), dict(typedcache.stats)
    scaled[1, 16](x, out)
    assert client.stats["helper"] == before["helper"] + 1
    assert len(list((tmp_path / "frontend").glob("*.json"))) == 1  # numba's facts
    assert len(list((tmp_path / "frontend").glob("*.code"))) == 1  # the kernel rewritten with them
    _forget_in_memory()  # as a new process would start
    scaled[1, 16](x, out)
    assert client.stats == before | {"helper": before["helper"] + 1, "helper_seconds": client.stats["helper_seconds"]}
    assert typedcache.stats["disk"] == code_before["disk"] + 1, "the rewritten kernel is read back, not rewritten"
    scaled[1, 16](x, out)  # the same kernel, arguments and constants: not even a lookup
    assert typedcache.stats["disk"] == code_before["disk"] + 1 and typedcache.stats["memory"] == code_before["memory"]
    np.testing.assert_array_equal(out, x * SCALE)


def test_module_constants_are_frozen_at_the_first_launch_as_numba_does(tmp_path, monkeypatch, rng):
    monkeypatch.setenv("NUMBAKERN_CACHE_DIR", str(tmp_path))
    _forget_in_memory()
    x, out = rng.random(16).astype(np.float32), _poisoned(16)
    kernel = cuda.jit(scaled.fn)  # a kernel object of its own
    kernel[1, 16](x, out)
    monkeypatch.setitem(globals(), "SCALE", 3)
    kernel[1, 16](x, out)  # numba compiled SCALE = 2 in: the same kernel object keeps computing with it
    np.testing.assert_array_equal(out, x * 2)
    fresh = cuda.jit(kernel.fn)  # a new kernel (or a new process) is typed with the value of now
    fresh[1, 16](x, out)
    np.testing.assert_array_equal(out, x * 3)
    monkeypatch.setitem(globals(), "SCALE", 2.5)  # now a float: float32 * float64 is float64 in Numba
    cuda.jit(kernel.fn)[1, 16](x, out)
    np.testing.assert_array_equal(out, (x.astype(np.float64) * 2.5).astype(np.float32))
    assert len(list((tmp_path / "frontend").glob("*.json"))) == 3, "each value is its own cache entry"


WEIGHTS = np.array([1.0, 2.0, 3.0], np.float32)


@cuda.jit
def weighted(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * WEIGHTS[i % 3]


def test_global_arrays_are_constants_copied_at_the_first_launch(rng):
    x, out = rng.random(9).astype(np.float32), _poisoned(9)
    kernel = cuda.jit(weighted.fn)
    kernel[1, 9](x, out)
    WEIGHTS[:] = [5.0, 5.0, 5.0]
    try:
        kernel[1, 9](x, out)
    finally:
        WEIGHTS[:] = [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(out, x * np.tile(np.float32([1.0, 2.0, 3.0]), 3))


def test_argument_types_are_part_of_the_key(rng):
    out64 = np.full(8, -7.0)
    copy[1, 8](rng.random(8).astype(np.float32), _poisoned(8))
    copy[1, 8](rng.random(8), out64)  # float64 arrays: another typing, another answer
    assert (out64 != -7.0).all()



@cuda.jit(device=True)
def twice(v):
    return v * 2


@cuda.jit
def doubled(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = twice(x[i])


def test_a_kernels_code_read_back_from_disk_has_the_key_of_the_code_compiled_here(tmp_path, monkeypatch, rng):
    """unroll keeps the code it expands in numbakern's cache (marshal): a process that reads it back must find the
    typing that the process which compiled it stored. The read-back code has a file name string of its own, where
    compiled code shares its module's with the device functions it calls; the key is made of the content, not of
    which objects are shared (before, each pytest-xdist worker typed every unrolled library kernel again)."""
    import types

    monkeypatch.setenv("NUMBAKERN_CACHE_DIR", str(tmp_path))
    _forget_in_memory()
    fn = doubled.fn
    assert fn.__code__.co_filename is twice.fn.__code__.co_filename  # one compile of this module: one string
    # the code as marshal reads it back: equal, with a file name string of its own
    filename = (fn.__code__.co_filename + "/")[:-1]
    read_back = types.FunctionType(fn.__code__.replace(co_filename=filename), fn.__globals__, fn.__name__)
    assert read_back.__code__.co_filename is not fn.__code__.co_filename
    x = rng.random(16).astype(np.float32)
    argtypes = kerneltypes.argument_types(doubled, (x, _poisoned(16)), ("x", "out"))
    key = kerneltypes.typing_request(doubled, argtypes).key
    assert kerneltypes.typing_request(cuda.jit(read_back), argtypes).key == key
    before = client.stats["helper"]
    for kernel in (doubled, cuda.jit(read_back)):
        out = _poisoned(16)
        kernel[1, 16](x, out)
        np.testing.assert_array_equal(out, x * 2)
    assert client.stats["helper"] == before + 1, "typed once: the read-back kernel's launch finds its facts"


# -- signatures given to cuda.jit ----------------------------------------------------------------------------------


def count_leading_zeros(out, x):
    out[0] = cuda.clz(x)


def test_a_declared_signature_types_the_launch_and_converts_scalars():
    kernel = cuda.jit("void(int32[:], int32)")(count_leading_zeros)
    out = np.zeros(1, np.int32)
    kernel[1, 1](out, 0x00100000)  # a Python int, passed as the declared int32: clz counts 32 bits
    assert out[0] == 11
    untyped = cuda.jit(count_leading_zeros)  # typed from the arguments: a Python int is int64
    untyped[1, 1](out, 0x00100000)
    assert out[0] == 43


def subtract_one(a):
    i = cuda.threadIdx.x
    a[i] -= 1


def test_one_declared_signature_reads_an_arrays_memory_as_declared_like_numba_cuda(rng):
    # numba-cuda launches a kernel declared with one signature without checking the arguments: a uint32 array
    # passed for int32[:] is the same bits read as int32
    a = rng.integers(0, 2**32, 8, dtype=np.uint32)
    a[0] = 0
    expected = (a.view(np.int32) - 1).view(np.uint32)
    cuda.jit("void(int32[:])")(subtract_one)[1, 8](a)
    np.testing.assert_array_equal(a, expected, err_msg=f"seed {SEED}")
    with pytest.raises(sim.TypingError, match=r"argument 'a' is array\(float64, 1d, C\) but the kernel was declared"):
        cuda.jit("void(int32[:])")(subtract_one)[1, 8](np.zeros(8))


def test_a_list_of_signatures_picks_the_one_the_arguments_fit():
    kernel = cuda.jit(["void(int32[:])", "void(float64[:])"])(subtract_one)
    ints, floats = np.arange(4, dtype=np.int32), np.arange(4, dtype=np.float64)
    kernel[1, 4](ints)
    kernel[1, 4](floats)
    np.testing.assert_array_equal(ints, np.arange(4) - 1)
    np.testing.assert_array_equal(floats, np.arange(4) - 1.0)
    with pytest.raises(sim.TypingError, match="no matching definition for argument type"):
        kernel[1, 4](np.zeros(4, np.float32))


# -- a list of signatures: numba-cuda's dispatcher launches the best match ----------------------------------------

#: (declared signatures, the launch's arguments): exact matches, promotions, safe and unsafe conversions, ties
SIGNATURE_CASES = [
    (["void(float64[::1], float32, float32)", "void(float64[::1], float64, float64)"], "(np.zeros(1), 1, 2**-25)"),
    (["void(float64[::1], float64, float64)", "void(float64[::1], float32, float32)"], "(np.zeros(1), 1, 2**-25)"),
    (["void(float64[::1], float32, float32)", "void(float64[::1], float64, float64)"],
     "(np.zeros(1), np.float32(1), np.float32(3))"),
    (["void(float64[::1], int32)", "void(float64[::1], float32)"], "(np.zeros(1), 3)"),
    (["void(float64[::1], int64)", "void(float64[::1], float64)"], "(np.zeros(1), np.int32(3))"),
    (["void(float64[::1], float64)", "void(float64[::1], int64)"], "(np.zeros(1), np.int32(3))"),
    (["void(float64[::1], int16)", "void(float64[::1], uint64)"], "(np.zeros(1), np.uint8(3))"),
    (["void(float64[::1], int8, float64)", "void(float64[::1], int64, float32)"],
     "(np.zeros(1), np.int8(1), np.float32(0.5))"),
    (["void(float32[::1], float64)", "void(float64[::1], float64)"], "(np.zeros(2, np.float32), 2.5)"),
    (["void(float64[:], float64)", "void(float64[::1], float64)"], "(np.zeros(3), 2.5)"),
    (["void(int32[:], int32)", "void(float64[:], float64)"], "(np.zeros(4, np.float32), 1)"),
    (["void(float64[::1], complex64)", "void(float64[::1], float32)"], "(np.zeros(1), 1.5)"),
    (["void(float64[::1], boolean)", "void(float64[::1], int32)"], "(np.zeros(1), True)"),
]


def _numba_cudas_choices() -> list:
    """numba-cuda's real dispatcher's choice for each case, asked in a process with the real CUDA target."""
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBAKERN")}
    env["NUMBA_ENABLE_CUDASIM"] = "0"  # (-P below: this folder's numba_cuda/ must not shadow the package)
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "real_dispatcher_choice.py")
    out = subprocess.run([sys.executable, "-P", script], input=json.dumps(SIGNATURE_CASES), capture_output=True,
                         text=True, env=env, timeout=300, check=True)
    return json.loads(out.stdout)


def _numbakerns_choice(signatures, args):
    kernel = cuda.jit(signatures)(subtract_one)
    declared, _ = kernel._numbakern_signatures
    names = [f"a{i}" for i in range(len(args))]
    actual = kerneltypes.argument_types(kernel, args, names)
    try:
        return declared.index(kerneltypes._matching_signature(kernel, declared, actual))
    except sim.TypingError as e:
        return "ambiguous" if "ambiguous" in str(e) else "none"


def test_a_list_of_signatures_launches_the_one_numba_cudas_dispatcher_chooses():
    expected = _numba_cudas_choices()
    got = [_numbakerns_choice(sigs, eval(args, {"np": np})) for sigs, args in SIGNATURE_CASES]  # noqa: S307
    assert got == expected, [(c, g, e) for c, g, e in zip(SIGNATURE_CASES, got, expected) if g != e]
    # the cases cover each outcome: a later signature beating an earlier one that fits, a tie, no match
    assert {0, 1, "ambiguous", "none"} <= set(expected)


def add_two(r, a, b):
    r[0] = a + b


def test_a_list_of_signatures_computes_with_the_best_match_not_the_first_that_fits():
    # float32 fits 1 and 2**-25 (unsafe conversions) but float64 is numba-cuda's choice (safe ones): 1 + 2**-25
    # rounded to float32 would be 1.0
    kernel = cuda.jit(["void(float64[::1], float32, float32)", "void(float64[::1], float64, float64)"])(add_two)
    r = np.zeros(1)
    kernel[1, 1](r, 1, 2**-25)
    assert r[0] == 1 + 2**-25
    kernel[1, 1](r, np.float32(1), np.float32(2**-25))  # float32 arguments: the float32 signature, rounded
    assert r[0] == 1.0


# -- what a kernel reaches: dispatchers through closures and globals, @overload functions, recursion ----------------


def _times(x, k):
    return x * k


times = cuda.jit(_times)  # a kernel's dispatcher, not a device function: numba-cuda compiles it as one when called


@cuda.jit
def calls_a_global_dispatcher(out, x):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = times(x[i], np.int32(3))


def _wrap_in_kernel(fn):
    jitted = cuda.jit(fn)

    @cuda.jit
    def kernel(out, x):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = jitted(x[i])

    return kernel


def test_a_dispatcher_reached_through_a_global_or_a_closure_is_typed_as_a_device_function(rng):
    x = rng.integers(-2**31, 2**31, 37, dtype=np.int64).astype(np.int32)
    out = np.zeros(37, np.int64)
    calls_a_global_dispatcher[2, 32](out, x)
    np.testing.assert_array_equal(out, x.astype(np.int64) * 3)  # int32 * int32 is int64: no wrap
    def square_plus_one(v):
        return v * v + 1

    _wrap_in_kernel(square_plus_one)[2, 32](out, x)
    np.testing.assert_array_equal(out, x.astype(np.int64) ** 2 + 1)


def test_an_overloaded_function_made_in_a_function_is_typed_with_its_overload(rng):
    from numba.cuda.extending import overload

    def triple(v):  # the simulator runs the Python function, the GPU the overload's implementation
        return v * 3

    @overload(triple)
    def _triple(v):
        def impl(v):
            return v * 3

        return impl

    @cuda.jit
    def kernel(out, x):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = triple(x[i])

    x = rng.standard_normal(37)
    out = np.zeros(37)
    kernel[2, 32](out, x)  # numba-cuda types it with the overload (it cannot compile the Python function alone)
    np.testing.assert_array_equal(out, x * 3)


def _fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


fib = cuda.jit(device=True)(_fib)


@cuda.jit
def fibonacci(out, n):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = fib(n[i])


def test_a_recursive_device_function_types_and_runs(rng):
    n = rng.integers(0, 15, 37)
    out = np.zeros(37, np.int64)
    fibonacci[2, 32](out, n)
    expected = [0, 1]
    while len(expected) < 16:
        expected.append(expected[-1] + expected[-2])
    np.testing.assert_array_equal(out, np.array(expected)[n], err_msg=f"seed {SEED}")


def test_a_namedtuple_argument_of_a_class_made_in_a_function():
    from collections import namedtuple

    Point = namedtuple("Point", ("x", "y", "r"))

    @cuda.jit
    def kernel(r1, r2, p):
        r1[0] = p.x * p.y
        r2[0] = p.r

    r1, r2 = np.zeros(1, np.int64), np.zeros(1)
    kernel[1, 1](r1, r2, Point(3, 2**31 - 1, 2.5))
    assert r1[0] == 3 * (2**31 - 1) and r2[0] == 2.5
