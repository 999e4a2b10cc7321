"""Kernels with eager signatures translate without a CUDA driver (the decorator's signature is the default), and
--signature errors say what is wrong and what is valid."""

import time

import pytest

from translate.api import translate_kernel
from translate.errors import TranslationError

EAGER = '''import numpy as np
from numba import cuda
from numba.cuda import float32, int32, void


@cuda.jit("float32(float32)", device=True)
def half(x):
    return x / 2


@cuda.jit("void(float32[::1], float64[::1])")
def eager(out, x):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = half(x[i])


def plain(out):
    out[cuda.grid(1)] = 1


compiled = cuda.jit(void(int32[:]))(plain)
'''


@pytest.fixture
def eager_module(tmp_path):
    path = tmp_path / "eager_kernels.py"
    path.write_text(EAGER)
    return str(path)


def test_eager_signature_is_the_default_and_needs_no_driver(eager_module):
    r = translate_kernel(f"{eager_module}:eager", write=False)
    assert r.entry["signature"] == "void(float32[::1], float64[::1])"
    # the device function's own signature: numba converts the float64 argument to float32 (and `half` is a CUDA
    # type's name, so its C name has a suffix)
    assert "__device__ float half_(float x)" in r.code
    assert "out[i] = half_((float)x[i]);" in r.code


def test_cuda_jit_of_a_signature_applied_to_a_function(eager_module):
    r = translate_kernel(f"{eager_module}:compiled", write=False)
    assert r.entry["signature"] == "void(int32[:])"
    assert "int32_t* out, int64_t out_shape0, int64_t out_stride0" in r.code


def test_plain_function_takes_a_signature(eager_module):
    r = translate_kernel(f"{eager_module}:plain", signature="void(int32[::1])", write=False)
    assert r.compile["ok"]


@pytest.mark.parametrize("sig,message", [
    ("void(flaot32[::1], float64[::1])", "unknown type 'flaot32' (did you mean float32?)"),
    ("void(float32[::1], float64[::1]", "is not valid syntax"),
    ("int32(float32[::1], float64[::1])", "returns int32, but a kernel returns nothing: write "
                                          "void(float32[::1], float64[::1])"),
    ("void(float32[::1])", "the signature has 1 argument(s), the kernel takes 2"),
    ("void(float32[::1], nosuchmodule.thing)", "unknown type 'nosuchmodule'"),
])
def test_signature_errors_name_the_option_and_what_is_valid(eager_module, sig, message):
    t0 = time.perf_counter()
    with pytest.raises(TranslationError) as e:
        translate_kernel(f"{eager_module}:eager", signature=sig, write=False)
    assert time.perf_counter() - t0 < 2.0
    text = str(e.value)
    assert message in text
    assert "eager_kernels.py:" in text and "^" in text
    if "argument(s)" not in message:
        assert "--signature" in text and "void(" in text


def test_signature_names_resolve_in_the_kernel_module_and_as_dotted_paths(tmp_path):
    path = tmp_path / "rng_kernel.py"
    path.write_text("from numba import cuda\nfrom numba.cuda.random import xoroshiro128p_type, "
                    "xoroshiro128p_uniform_float32\n\n\n@cuda.jit\ndef k(out, states):\n    i = cuda.grid(1)\n"
                    "    out[i] = xoroshiro128p_uniform_float32(states, i)\n")
    for sig in ("void(float32[::1], xoroshiro128p_type[::1])",
                "void(float32[::1], numba.cuda.random.xoroshiro128p_type[::1])"):
        r = translate_kernel(f"{path}:k", signature=sig, write=False)
        assert "nk_record_s0_s1* states, int64_t states_shape0" in r.code
        assert r.entry["launchers"][0]["params"][1]["record"] == {
            "itemsize": 16, "fields": [["s0", "uint64", 0], ["s1", "uint64", 8]]}


def test_complex_and_half_signatures(tmp_path):
    path = tmp_path / "types_kernel.py"
    path.write_text("from numba import cuda\n\n\n@cuda.jit\ndef k(c, h):\n    i = cuda.grid(1)\n"
                    "    c[i] = c[i + 1]\n    h[i] = h[i] + h[i]\n")
    r = translate_kernel(f"{path}:k", signature="void(complex64[::1], float16[::1])", write=False)
    assert r.compile["ok"]
    assert "cuFloatComplex* c" in r.code and "__half* h" in r.code
