"""The kernel's codegen options reach the C (``translate.options``): ``__launch_bounds__``/``__maxnreg__`` on
the kernel, fast-math build flags in the header, the manifest's ``build`` and the NVRTC compile; numba's fast
float32 intrinsics; integer arithmetic in numba's result types; numba's float atomic max/min."""

import os

from translate.api import translate_kernel
from translate.codegen import helpers

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(HERE, "option_kernels.py")
F32 = "void(float32[::1], float32[::1])"
NVCC_FAST = ["-ftz=true", "-prec-div=false", "-prec-sqrt=false", "-fmad=true"]
NVRTC_FAST = ["--ftz=true", "--prec-div=false", "--prec-sqrt=false", "--fmad=true"]


def tr(name, sig=F32, **kw):
    r = translate_kernel(f"{KERNELS}:{name}", signature=sig, write=False, **kw)
    assert r.compile["ok"], r.compile["log"]
    return r


def test_fastmath_and_launch_bounds():
    r = tr("fast_math")
    assert "__global__ void __launch_bounds__(128, 2) fast_math(" in r.code
    assert "//   nvcc:  " + " ".join(NVCC_FAST) in r.code
    assert "//   NVRTC: " + " ".join(NVRTC_FAST) in r.code
    assert r.entry["build"] == {"fastmath": True, "nvcc_flags": NVCC_FAST, "nvrtc_options": NVRTC_FAST}
    assert r.entry["launchers"][0]["launch_bounds"] == [128, 2]
    # numba's fastmath lowering of float32 math (numba_cuda mathimpl)
    for frag in ["__fdividef(v, 3.0f)", "__sinf(v)", "__expf(v)", "nk_fast_tanhf(v)", "sqrtf(v)",
                 "tanh.approx.f32"]:
        assert frag in r.code, frag


def test_no_options_no_flags():
    r = tr("plain_math")
    assert "__launch_bounds__" not in r.code and "BUILD FLAGS" not in r.code
    assert "v / 3.0f" in r.code and "sinf(v)" in r.code and "__sinf" not in r.code
    assert r.entry["build"] == {"fastmath": False, "nvcc_flags": [], "nvrtc_options": []}
    assert "launch_bounds" not in r.entry["launchers"][0]


def test_max_registers():
    r = tr("capped")
    assert "__global__ void __maxnreg__(40) capped(" in r.code
    assert r.entry["launchers"][0]["max_registers"] == 40
    r = tr("bounded_and_capped")  # CUDA takes one of the two attributes: the cap becomes a flag
    assert "__global__ void __launch_bounds__(64) bounded_and_capped(" in r.code
    assert "__maxnreg__" not in r.code
    assert r.entry["build"]["nvcc_flags"] == ["-maxrregcount=40"]
    assert r.entry["build"]["nvrtc_options"] == ["--maxrregcount=40"]


def test_launch_bounds_per_instantiation():
    r = tr("tiles", constants={"tw": [8, 16]})
    assert "template <> constexpr int nk_max_threads<8> = 64;" in r.code
    assert "template <> constexpr int nk_max_threads<16> = 256;" in r.code
    assert "__global__ void __launch_bounds__(nk_max_threads<tw>) tiles(" in r.code
    assert [l["launch_bounds"] for l in r.entry["launchers"]] == [[64], [256]]
    r = tr("tiles", constants={"tw": [16]})
    assert "__global__ void __launch_bounds__(256) tiles(" in r.code


def test_registered_fast_kernels_carry_their_options():
    for name in ("matmul_tiled_fast", "matmul_flagship"):
        r = translate_kernel(name, write=False)
        assert "__launch_bounds__(" in r.code
        assert r.entry["build"]["nvcc_flags"] == NVCC_FAST
        assert r.entry["launchers"][0]["launch_bounds"]


def test_integer_arithmetic_in_numbas_result_type():
    r = tr("mixed_index", "void(float32[::1], float32[::1], int64)")
    assert "int64_t j = r + i * 2;" in r.code       # not (uint64_t)r + ...: numba's typemap says int64
    assert "out[nxt] = x[0];" in r.code              # xor of non-negatives is non-negative


def test_float_atomic_minmax_follow_numba():
    text = helpers.HELPERS["nk_atomic_fminmax"]
    assert "if (val != val || first != first) return first;" in text  # NaN: no store, as numba
    assert "while (cur < val)" in text and "while (cur > val)" in text
    assert text.count("return first;") == 8  # numba returns the value it first read
