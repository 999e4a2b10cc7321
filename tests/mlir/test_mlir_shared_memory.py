"""numba-cuda-mlir's dynamic shared array over its static ones: the kernels it hits are found from their source, and
the simulator says so once at such a kernel's launch on an affected version (docs/frontends.md)."""

import warnings

import numpy as np
import pytest

from numbakern import sim
from numbakern.frontend import mlir_shared_memory as msm

cuda = pytest.importorskip("numba_cuda_mlir.cuda")

NOTHING = 0  # a module constant naming the dynamic array's size


@cuda.jit(device=True)
def scratch_sum(v):
    scratch = cuda.shared.array(8, np.float32)  # a static array, in a device function
    t = cuda.threadIdx.x
    if t < 8:
        scratch[t] = v
    cuda.syncthreads()
    return scratch[0] + scratch[7]


@cuda.jit
def mixes_through_a_device_function(out, x):
    dynamic = cuda.shared.array(NOTHING, np.float32)
    t = cuda.threadIdx.x
    dynamic[t] = x[t]
    cuda.syncthreads()
    out[t] = dynamic[x.shape[0] - 1 - t] + scratch_sum(x[t])


@cuda.jit
def dynamic_only(out, x):
    dynamic = cuda.shared.array(0, dtype=np.float32)
    t = cuda.threadIdx.x
    dynamic[t] = x[t]
    cuda.syncthreads()
    out[t] = dynamic[x.shape[0] - 1 - t]


@cuda.jit
def static_only(out, x):
    tile = cuda.shared.array(shape=(2, 32), dtype=np.float32)
    t = cuda.threadIdx.x
    tile[0, t] = x[t]
    cuda.syncthreads()
    out[t] = tile[0, 31 - t]


def test_the_static_and_dynamic_arrays_are_found_in_the_kernel_and_its_device_functions():
    static, dynamic = msm.shared_arrays(mixes_through_a_device_function.py_func)
    assert [s.rsplit(":", 1)[1] for s in static] == [str(scratch_sum.py_func.__code__.co_firstlineno + 2)]
    assert len(dynamic) == 1 and dynamic[0].endswith(str(mixes_through_a_device_function.py_func.__code__
                                                         .co_firstlineno + 2))
    assert msm.mixes_static_and_dynamic(mixes_through_a_device_function.py_func)
    assert msm.shared_arrays(dynamic_only.py_func)[0] == [] and len(msm.shared_arrays(dynamic_only.py_func)[1]) == 1
    assert len(msm.shared_arrays(static_only.py_func)[0]) == 1 and msm.shared_arrays(static_only.py_func)[1] == []
    assert not msm.mixes_static_and_dynamic(dynamic_only.py_func)
    assert not msm.mixes_static_and_dynamic(static_only.py_func)


@pytest.mark.parametrize("version, fixed_in, affected", [
    ("0.6.0", None, True), ("0.4.0", None, True), (None, None, False),
    ("0.6.0", (0, 7), True), ("0.7.0", (0, 7), False), ("0.7.0rc1", (0, 7), False), ("1.0", (0, 7), False),
])
def test_which_versions_are_affected(version, fixed_in, affected, monkeypatch):
    monkeypatch.setattr(msm, "FIXED_IN", fixed_in)
    assert msm.affected(version) is affected


def _launch(kernel, n, rng):
    x = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    kernel[1, n, 0, n * 4](out, x)
    return x, out


def test_the_simulator_warns_once_at_a_mixing_kernels_launch_and_keeps_the_arrays_apart(rng, monkeypatch):
    monkeypatch.setattr(msm, "installed_version", lambda: "0.6.0")
    with pytest.warns(msm.MixedSharedMemoryWarning, match="mixes_through_a_device_function.*static shared memory.*"
                                                         "dynamic shared memory.*0.6.0") as caught:
        x, out = _launch(mixes_through_a_device_function, 32, rng)
        _launch(mixes_through_a_device_function, 32, rng)
    assert sum(issubclass(w.category, msm.MixedSharedMemoryWarning) for w in caught) == 1
    # the simulator computes what the kernel means (x[t] of thread 0 and of thread 7 in the scratch array)
    np.testing.assert_allclose(out, x[::-1].astype(np.float64) + x[0] + x[7], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kernel", [dynamic_only, static_only], ids=["dynamic only", "static only"])
def test_no_warning_for_one_kind_of_shared_memory(kernel, rng, monkeypatch):
    monkeypatch.setattr(msm, "installed_version", lambda: "0.6.0")
    with warnings.catch_warnings():
        warnings.simplefilter("error", msm.MixedSharedMemoryWarning)
        x, out = _launch(kernel, 32, rng)
    np.testing.assert_array_equal(out, x[::-1])


def test_no_warning_on_a_fixed_version(rng, monkeypatch):
    monkeypatch.setattr(msm, "installed_version", lambda: "0.9.1")
    monkeypatch.setattr(msm, "FIXED_IN", (0, 7))
    fresh = cuda.jit(_copy(mixes_through_a_device_function.py_func))
    with warnings.catch_warnings(), sim.checks("all"):
        warnings.simplefilter("error", msm.MixedSharedMemoryWarning)
        _launch(fresh, 32, rng)


def _copy(fn):
    """The same kernel function as a new object (the warning is said once per function)."""
    import types

    return types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
