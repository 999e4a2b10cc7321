"""Golden tests (HIPIFY style): each construct's kernel (construct_kernels.py) next to the C fragments it must
produce. Translation runs through ``translate.api.translate_kernel`` (in a helper process when the test
session runs the CUDA simulator)."""

import pytest

from translate.api import translate_kernel

from .conftest import KERNELS

CASES = {
    "indices": ("void(int64[::1])", [
        "int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;",
        "int64_t j = (int64_t)blockIdx.y * blockDim.y + threadIdx.y;",
        "int64_t n = (int64_t)blockDim.x * gridDim.x;",
        "out[0] = threadIdx.x + (int64_t)blockIdx.y * blockDim.z + gridDim.x + i + j + n;",
    ]),
    "arith": ("void(float32[::1], float64[::1], int64)", [
        "int64_t q = nk_floordiv(n, (int64_t)3);",          # n may be negative: Python floor semantics
        "int64_t r = nk_floormod(n, (int64_t)4);",
        "int64_t s = i / 2;",                               # i >= 0 and 2 > 0: plain C division
        "double f = (double)a[i] / 2;",                     # float32 / int64 -> float64, as numba
        "double g = (double)n / 2;",
        # numba-cuda lowers max of two floats to libdevice fmax (a NaN operand is ignored), not Python's compare
        "-n + nk_ipow(n, (int64_t)2) + llabs(n) + nk_min(i, n) + fmax(f, 1.0)",
        "if (y == 0 || (x == INT64_MIN && y == -1)) return 0;",  # numba: x // 0 == 0
    ]),
    "math_casts": ("void(float32[::1], float64[::1])", [
        "double x = sqrtf(a[i]) + exp((double)a[i]) + ceilf(a[i]);",
        "double y = (int64_t)x + (double)i + (float)SCALE;",
        "constexpr double SCALE = 2.5;",
        "out[i] = (0 <= i && i < out_shape0 && !(x > 3 || x < -3)) ? y : 0.0;",
    ]),
    "loops": ("void(int64[::1], int64)", [
        "for (int64_t i = 0; i < n; i++) {",
        "continue;",
        "for (int64_t j = 10; j > 0; j -= 2) {",
        "while (true) {",
        "break;",
        "return;",
        "__device__ int64_t clamp(int64_t x, int64_t lo, int64_t hi)",
        "} else if (x > hi) {",
        "out[1] = clamp(acc, (int64_t)0, (int64_t)5);",
    ]),
    "shared_local": ("void(float32[::1])", [
        "__shared__ float tile[N_ITEMS][N_ITEMS];",
        "int32_t buf[N_ITEMS];",
        "extern __shared__ float dyn[];",
        "float *lo = dyn;",
        "float *hi = dyn + N_ITEMS;",
        "buf[tx % N_ITEMS] = tx;",
        "tile[tx % N_ITEMS][0] = buf[0];",
        "int32_t c = __syncthreads_count(tx);",
        "int32_t a = __syncthreads_and(tx);",
        "int32_t o = __syncthreads_or(tx);",
    ]),
    "atomics_warp": ("void(float32[::1], int32[::1], uint32[::1])", [
        "atomicAdd(&fo[0], 1.0f);",
        "atomicSub(&io[0], 1);",
        "atomicMax(&io[1], tx);",
        "nk_atomic_min(&fo[1], 2.0f);",
        "atomicExch(&io[2], 7);",
        "atomicCAS(&io[3], 0, 1);",
        "float v = __shfl_down_sync(0xffffffffu, fo[tx], 1);",
        "__shfl_xor_sync(0xffffffffu, v, 2) + __shfl_up_sync(0xffffffffu, v, 1) + __shfl_sync(0xffffffffu, v, 0)",
        "__ballot_sync(0xffffffffu, (double)w > 0)",
        "__syncwarp(0xffffffffu);",
    ]),
    "negative_index": ("void(float32[::1], float32[::1])", [
        "out[i] = x[nk_wrap((int64_t)i - 1, x_shape0)] + x[nk_wrap(-1, x_shape0)];",
    ]),
    "retyped": ("void(float64[::1], int64)", [      # one C variable per type numba gives the name
        "int64_t x;",
        "double x_f64;",
        "x = 1;",
        "x_f64 = (double)x;",                            # numba's conversion where the versions merge
        "x_f64 = 2.5;",
        "out[0] = x_f64;",
    ]),
    "swap_unpack": ("void(int64[::1])", [
        "const int64_t a_new = b;",
        "const int64_t b_new = a;",
        "a = a_new;",
        "b = b_new;",
    ]),
    "vector_io": ("void(float32[:, ::1], float32[:, ::1])", [
        "const float* src, int64_t src_shape0, int64_t src_shape1,",   # vload4 only reads its array
        "__shared__ __align__(16) float tile[2][16];",
        "int64_t par = r & 1;",
        "const float4 nk_v = *reinterpret_cast<const float4 *>(&src[t * src_shape1 + 4]);",
        "regs[0] = nk_v.x; regs[1] = nk_v.y; regs[2] = nk_v.z; regs[3] = nk_v.w;",
        "regs[4] = nk_v.x; regs[5] = nk_v.y; regs[6] = nk_v.z; regs[7] = nk_v.w;",
        # (an index of a shared array: t * 4 of an int32 t cannot overflow, C's int arithmetic is numba's value)
        "*reinterpret_cast<float4 *>(&tile[par][t * 4]) = make_float4(regs[4], regs[5], regs[6], regs[7]);",
        "*reinterpret_cast<float4 *>(&out[t * out_shape1]) = make_float4(regs[0], regs[1], regs[2], regs[3]);",
        "out[t * out_shape1 + 4] = tile[par][0];",
    ]),
    "async_tile": ("void(float32[:, ::1], float32[::1])", [
        "const float* src, int64_t src_shape0, int64_t src_shape1,",   # copy_async4 only reads its source
        "nk_copy_async4(&tile[t][0], src, t * src_shape1, t < src_shape0);",  # the helper selects the address
        "nk_async_commit();",
        "nk_async_wait_all();",
        'asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"',
        "#pragma unroll\n    for (int64_t q = 0; q < N_ITEMS; q++) {",          # a constant trip count
        "    }\n    for (int64_t r = 0; r < src_shape0; r++) {",                  # a run-time one: left to nvcc
    ]),
    # numba-cuda's formats: %lld / %llu of 64-bit values, %f of the double, True/False, tuples in parentheses; a
    # literal % is %%, a character outside ASCII its UTF-8 bytes as octal escapes
    "printing": ("void(float32[::1], int32[::1])", [
        'printf("x[ %lld ] = %f %s (%lld, %lld) 100%% \\303\\251\\n", (long long)i, (double)x[i], '
        'flags[i] > 0 ? "True" : "False", (long long)i, (long long)threadIdx.x);',
    ]),
    # an array only a device function reads stays const in the kernel and the launcher; parentheses where a reader
    # (and C's -Wparentheses) wants them around the operands of shifts and bitwise operators
    "const_through_call": ("void(float64[:, ::1], float64[::1])", [
        "const double* m, int64_t m_shape0, int64_t m_shape1,",
        "__device__ double row_sum(const double* m, int64_t m_shape0, int64_t m_shape1, int64_t r)",
        "(r + 128) >> 8", "(r & 3) | 8",
    ]),
}


@pytest.mark.parametrize("kernel", sorted(CASES))
def test_construct(kernel):
    sig, fragments = CASES[kernel]
    r = translate_kernel(f"{KERNELS}:{kernel}", signature=sig, write=False)
    assert r.compile["ok"], r.compile["log"]
    for frag in fragments:
        assert frag in r.code, f"missing in {kernel}.cu:\n  {frag}\n--- got ---\n{r.code}"
    assert f'extern "C" cudaError_t launch_{kernel}(' in r.code


def test_helpers_only_when_used():
    r = translate_kernel(f"{KERNELS}:indices", signature="void(int64[::1])", write=False)
    assert "nk_floordiv" not in r.code and "nk_wrap" not in r.code


def test_lecture_kernel_reads_like_the_lecture():
    r = translate_kernel("matmul_tiled", write=False)
    for frag in [
        "extern __shared__ float shar[];",
        "float *ms = shar;",
        "float *ns = shar + tw * tw;",
        "for (int32_t ph = 0; ph < (int32_t)ceil((double)k / tw); ph++) {",
        "ms[tr * tw + tc] = (r < h && idx + tc < k) ? m[r * m_shape1 + tc + idx] : 0.0;",
        "__syncthreads();",
        "p += ms[tr * tw + i] * ns[tw * i + tc];",
        "if (tw < 0) return cudaErrorInvalidValue;",
    ]:
        assert frag in r.code, frag
    assert "nk_wrap" not in r.code


def test_specialized_kernel_is_a_template_with_instantiations():
    r = translate_kernel("matmul_tiled_static", constants={"tw": [8, 16]}, write=False)
    assert "template <int tw>" in r.code
    assert "__shared__ float ms[tw][tw];" in r.code
    assert "template __global__ void matmul_tiled_static<8>(" in r.code
    assert "template __global__ void matmul_tiled_static<16>(" in r.code
    symbols = [l["symbol"] for l in r.entry["launchers"]]
    assert symbols == ["launch_matmul_tiled_static_tw8", "launch_matmul_tiled_static_tw16"]


def test_constant_branches_are_pruned_like_numba():
    r = translate_kernel(f"{KERNELS}:vector_io", signature="void(float32[:, ::1], float32[:, ::1])", write=False)
    assert "lost" not in r.code and "if (WIDE)" not in r.code  # numba leaves the dead branch untyped
    assert "nk_wrap" not in r.code


def test_vector_access_used_as_a_value_is_a_located_error(tmp_path):
    from translate.errors import TranslationError

    src = tmp_path / "k.py"
    src.write_text(
        "import numpy as np\nfrom numba import cuda\nfrom numbakern.vector_io import vload4\n\n"
        "@cuda.jit\ndef k(a, out):\n    regs = cuda.local.array(4, np.float32)\n"
        "    x = vload4(a, (0, 0), regs, 0)\n    out[0, 0] = regs[0]\n")
    with pytest.raises(TranslationError) as e:
        translate_kernel(f"{src}:k", signature="void(float32[:, ::1], float32[:, ::1])", write=False)
    assert "k.py:8" in str(e.value)


def test_derived_constants_that_differ_between_instantiations_are_refused():
    from translate.errors import TranslationError

    with pytest.raises(TranslationError, match="derived by the factory"):
        translate_kernel("matmul_flagship_vec", constants={"bk": [16, 8]}, write=False)
    # a constant branch taken by some instantiations only: numba typed one side of it for the first
    with pytest.raises(TranslationError, match="different values in the instantiations"):
        translate_kernel("attention_bf16_d64", constants={"causal": [False, True]}, write=False)
    # a parameter whose change leaves every derived constant and branch alone instantiates fine
    r = translate_kernel("matmul_flagship_vec", constants={"group": [4, 8]}, write=False)
    assert r.compile["ok"], r.compile["log"]
    assert "matmul_flagship_vec<16, 128, 128, 4, 8, 8, 1>(" in r.code
    assert "matmul_flagship_vec<16, 128, 128, 8, 8, 8, 1>(" in r.code


def test_internal_errors_are_located(tmp_path):
    """A failure inside code generation (planted: a builtin's handler raising AttributeError, as a deleted method
    once did) reaches the user of the command as one located error that says it is numbakern's bug and names the
    original exception, never as a bare `name: AttributeError`."""
    import subprocess
    import sys

    plant = (
        "import builtins, sys\n"
        "from translate.codegen import builtins as table\n"
        "def broken(tr, obj, node):\n"
        "    return tr._print(node)\n"   # an attribute the translator does not have
        "table.TABLE[builtins.print] = broken\n"
        "from translate.cli import main\n"
        f"sys.exit(main(['{KERNELS}:printing', '--signature', 'void(float32[::1], int32[::1])', "
        f"'--out', '{tmp_path}']))\n")
    env = {**__import__("os").environ, "NUMBA_ENABLE_CUDASIM": "0"}  # translate in this process: the plant holds
    p = subprocess.run([sys.executable, "-c", plant], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode != 0
    err = p.stderr
    assert "construct_kernels.py:" in err and "error: internal error of the code generator" in err, err
    assert "AttributeError" in err and "this is a numbakern bug, please report it" in err, err
    assert "print(" in err and "^" in err, err             # the kernel's line, a caret under the call
    assert "printing: AttributeError" not in err, err


def test_builtins_table_is_checked_at_import():
    """Two providers claiming one builtin, a handler of the wrong shape or a family without a predicate stop the
    import (checked in a process with numba's CUDA target: the table names its functions)."""
    import os
    import subprocess
    import sys

    code = """
import types, pytest
from translate.codegen import builtins as table
def good(tr, obj, node):
    return None
one, two = types.ModuleType("one"), types.ModuleType("two")
one.BUILTINS, two.BUILTINS = {print: good}, {print: good}
with pytest.raises(ImportError, match="also claimed"):
    table.build([one, two])
two.BUILTINS = {len: lambda tr, node: None}
with pytest.raises(ImportError, match="must take"):
    table.build([one, two])
two.BUILTINS, two.FAMILIES = {}, (("nothing", None, good),)
with pytest.raises(ImportError, match="not .what, predicate, handler."):
    table.build([one, two])
assert table.handler_for(print) is not None and table.handler_for(abs) is not None and table.FAMILIES
print("ok")
"""
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stderr
