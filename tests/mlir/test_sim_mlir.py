"""numba-cuda-mlir kernels on numbakern's engine: results against numpy, the checkers, dynamic shared memory."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from numbakern import sim
from numbakern.frontend.choice import numba_cuda_installed

ROOT = Path(__file__).resolve().parents[2]

cuda = pytest.importorskip("numba_cuda_mlir.cuda")

BLOCK = 128


@cuda.jit(device=True)
def axpb(a, x, b):
    return a * x + b


@cuda.jit
def staged_axpb(out, x, a, b, n):
    """Each block stages its slice of x in shared memory, then applies a device function to it."""
    tile = cuda.shared.array(BLOCK, np.float32)
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    tile[t] = x[i] if i < n else np.float32(0)
    cuda.syncthreads()
    if i < n:
        out[i] = axpb(a, tile[t], b)


@pytest.mark.parametrize("n", [1, 127, 1000, 4099])
def test_shared_memory_and_device_function_match_numpy(n, rng):
    x = rng.standard_normal(n).astype(np.float32)
    a, b = np.float32(rng.standard_normal()), np.float32(rng.standard_normal())
    out = np.full(n, np.nan, np.float32)
    staged_axpb[(n + BLOCK - 1) // BLOCK, BLOCK](out, x, a, b, n)
    expected = np.float64(a) * x.astype(np.float64) + np.float64(b)
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


def test_device_arrays_round_trip(rng):
    n = 777
    x = rng.standard_normal(n).astype(np.float32)
    d_x = cuda.to_device(x)
    d_out = cuda.device_array(n, np.float32)
    staged_axpb[(n + BLOCK - 1) // BLOCK, BLOCK](d_out, d_x, np.float32(2), np.float32(-1), n)
    cuda.synchronize()
    np.testing.assert_allclose(d_out.copy_to_host(), 2.0 * x.astype(np.float64) - 1.0, rtol=1e-6, atol=1e-6)
    assert d_x.shape == (n,) and d_x.dtype == np.float32


@cuda.jit
def neighbour_without_barrier(out):
    s = cuda.shared.array(64, np.float32)
    t = cuda.threadIdx.x
    s[t] = t
    out[t] = s[(t + 1) % 64]


def test_missing_barrier_is_a_race():
    with sim.checks("all"), pytest.raises(sim.RaceError, match="neighbour_without_barrier"):
        neighbour_without_barrier[1, 64](np.zeros(64, np.float32))


@cuda.jit
def copy_one_more(out, x):
    i = cuda.grid(1)
    if i <= x.shape[0]:  # off by one: reads x[n]
        out[i % out.shape[0]] = x[i]


def test_out_of_bounds_read_is_reported(rng):
    x = rng.standard_normal(100).astype(np.float32)
    with sim.checks("all"), pytest.raises(sim.OutOfBoundsError, match="'x'"):
        copy_one_more[1, 128](np.zeros(100, np.float32), x)


@cuda.jit
def copy(out, x):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[i]


def test_reading_an_unwritten_device_array_is_reported():
    never_written = cuda.device_array(64, np.float32)
    with sim.checks("all"), pytest.raises(sim.UninitializedReadError):
        copy[1, 64](np.zeros(64, np.float32), never_written)


@cuda.jit
def dynamic_and_static(out, x, n):
    """Static and dynamic shared arrays side by side: float32 stores to the dynamic one, read back after a
    barrier, and the static one keeps its own values (the two must not overlap)."""
    static = cuda.shared.array(32, np.float32)
    dynamic = cuda.shared.array(0, np.float32)
    t = cuda.threadIdx.x
    if t < 32:
        static[t] = np.float32(-1)
    j = t
    while j < n:
        dynamic[j] = x[j]
        j += cuda.blockDim.x
    cuda.syncthreads()
    j = t
    while j < n:
        out[j] = dynamic[n - 1 - j] + static[j % 32]
        j += cuda.blockDim.x


@pytest.mark.parametrize("n", [100, 16384 + 77])  # the second needs more than 48 KB of dynamic shared memory
def test_dynamic_shared_float32_stores_beside_a_static_array(n, rng):
    x = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    with sim.checks("all"):
        dynamic_and_static[1, 128, 0, n * 4](out, x, n)
    np.testing.assert_allclose(out, x[::-1].astype(np.float64) - 1.0, rtol=1e-6, atol=1e-6)


def test_too_little_dynamic_shared_memory_is_out_of_bounds(rng):
    x = rng.standard_normal(100).astype(np.float32)
    with sim.checks("all"), pytest.raises(sim.OutOfBoundsError):
        dynamic_and_static[1, 128, 0, 99 * 4](np.zeros(100, np.float32), x, 100)


def _script(body: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_ENABLE_CUDASIM", "PYTEST_VERSION",
                                                          "NUMBAKERN_SIM_CHECKS")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(body)], env=env, capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


SCRIPT = """
    import sys
    import numpy as np
    from numba_cuda_mlir import cuda

    @cuda.jit                       # decorated before numbakern is imported: numba-cuda-mlir's own dispatcher
    def twice(out, x):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = x[i] * 2

    import numbakern

    x = np.arange(1, 301, dtype=np.float32)
    out = np.zeros_like(x)
    twice[3, 128](out, x)
    assert np.array_equal(out, 2 * x), out
    print("numba imported:", "numba" in sys.modules, "cudasim imported:", "numba.cuda.simulator" in sys.modules)
"""


def test_a_script_just_works_without_a_gpu():
    result = _script(SCRIPT)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "numbakern: no CUDA GPU here" in result.stderr


@pytest.mark.skipif(numba_cuda_installed(), reason="numba-cuda is installed here; the mlir-only CI job runs this")
def test_the_mlir_only_path_imports_no_numba():
    result = _script(SCRIPT)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "numba imported: False cudasim imported: False" in result.stdout


@pytest.mark.skipif(not numba_cuda_installed(), reason="needs numba-cuda beside numba-cuda-mlir")
def test_choosing_numba_cuda_mlir_for_a_gpu_imports_no_numba():
    # the GPU path with both front ends installed (scripts/mlir_gpu.py on the GPU machine): NUMBA_ENABLE_CUDASIM=0
    # takes it on a machine without a GPU too, up to the first launch
    body = """
        import sys
        import numbakern
        from numbakern.kernels import elementwise
        print("numba modules:", sorted(m for m in sys.modules if m == "numba" or m.startswith("numba.")))
    """
    env_body = "import os; os.environ['NUMBA_ENABLE_CUDASIM'] = '0'; os.environ['NUMBAKERN_FRONTEND'] = " \
               "'numba-cuda-mlir'\n" + textwrap.dedent(body)
    result = _script(env_body)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "numba modules: []" in result.stdout, result.stdout


def test_a_kernel_that_closes_over_its_own_cuda_import(rng):
    def make():
        import numba_cuda_mlir.cuda as local_cuda

        @local_cuda.jit
        def add_one(out, x):
            i = local_cuda.grid(1)
            if i < x.shape[0]:
                out[i] = x[i] + np.float32(1)

        return add_one

    x = rng.standard_normal(300).astype(np.float32)
    out = np.zeros_like(x)
    make()[3, 128](out, x)
    np.testing.assert_allclose(out, x.astype(np.float64) + 1.0, rtol=1e-6, atol=1e-6)


TYPING_PROBE = """
    import sys
    from numba_cuda_mlir import types
    from numba_cuda_mlir.descriptor import mlir_target
    from numba_cuda_mlir.lowering_utilities import context as mlir_ctx
    from numba_cuda_mlir.mlir_compiler import MLIRTypeInference, get_compiler_class
    from numba_cuda_mlir.numba_cuda.core.compiler_machinery import FunctionPass, PassManager, register_pass
    from numba_cuda_mlir.numba_cuda.core.target_extension import target_override
    from numba_cuda_mlir.numba_cuda.flags import CUDAFlags

    @register_pass(mutates_CFG=False, analysis_only=True)
    class KeepTyping(FunctionPass):
        _name = "keep_typing"

        def __init__(self):
            FunctionPass.__init__(self)

        def run_pass(self, state):
            state.cr = state.typemap
            return False

    base = get_compiler_class({"chip": "sm_90"})

    class TypingOnly(base):  # numba-cuda-mlir's own passes up to its type inference, nothing after
        def define_pipelines(self):
            pm = PassManager("typing only")
            for impl, desc in base.define_pipelines(self)[0].passes:
                pm.passes.append((impl, desc))
                if impl is MLIRTypeInference:
                    break
            pm.add_pass(KeepTyping, "the typing is the result")
            pm.finalize()
            return [pm]

    def product(out, a, b):
        if a < out.size:
            out[0] = a * b

    mlir_target.ensure_initialized()  # numba-cuda-mlir's typing registries (`bool`, `len`, operators...)
    flags = CUDAFlags()
    flags.no_compile = flags.no_cpython_wrapper = flags.no_cfunc_wrapper = True
    with target_override("numba_cuda_mlir"), mlir_ctx.get_context():
        typemap = TypingOnly(mlir_target.typing_context, mlir_target.target_context, None,
                             (types.int64[::1], types.int32, types.int32), types.void, flags, {}).compile_extra(product)
    print("TYPED", sorted(str(t) for name, t in typemap.items() if "binop_mul" in name),
          "numba imported:", "numba" in sys.modules)
"""


def test_numba_cuda_mlir_types_a_kernel_without_a_driver():
    """numba-cuda-mlir's own front end types a kernel on a machine without a GPU (docs/frontends.md): its compiler's
    passes up to its type inference, after its typing registries are loaded (``mlir_target.ensure_initialized()``;
    an earlier probe through ``compiler._compile_only`` skipped that and saw "Untyped global name 'bool'"). What
    asks the driver is the compute capability its dispatcher resolves for a compile, and NVRTC its lowering asks
    for the toolkit version; typing needs neither. int32 * int32 is int64, as numba-cuda types it."""
    from numbakern import mode

    if mode.gpu_available():
        pytest.skip("a GPU is present: the driver answers")
    result = _script(TYPING_PROBE)
    assert "TYPED ['int64']" in result.stdout, result.stdout + result.stderr[-3000:]
    if not numba_cuda_installed():
        assert "numba imported: False" in result.stdout


@cuda.jit
def reverse_in_block(out, x):
    """The shared array's dtype spelled as the front end's own type (``cuda.float32``) rather than numpy's."""
    s = cuda.shared.array(64, cuda.float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    out[t] = s[63 - t]


def test_the_front_ends_own_dtype_spelling(rng):
    x = rng.standard_normal(64).astype(np.float32)
    out = np.zeros_like(x)
    with sim.checks("all"):
        reverse_in_block[1, 64](out, x)
    np.testing.assert_array_equal(out, x[::-1])
