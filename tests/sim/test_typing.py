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
    kerneltypes._memo.clear()
    client._memory.clear()
    typedcache._memory.clear()


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
