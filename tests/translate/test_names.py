"""One C-name allocator for everything a generated file declares: no user name can shadow or collide with a C,
C++ or CUDA keyword, an alternative token, a built-in, the launcher's parameters or a generated name; and a name
that collides with nothing keeps its Python spelling."""

import keyword

import pytest

from translate import cnames
from translate.api import translate_kernel
from translate.cnames import Namespace, is_free

#: every reserved C identifier a Python program can use as a name
PYTHON_NAMES = sorted(n for n in cnames.RESERVED if n.isidentifier() and not keyword.iskeyword(n))


def _write(tmp_path, text):
    path = tmp_path / "names_kernels.py"
    path.write_text("import math\nimport numpy as np\nfrom numba import cuda\n\n\n" + text)
    return str(path)


def test_namespace_keeps_free_names_and_suffixes_the_rest():
    ns = Namespace()
    assert ns.claim("acc") == "acc"
    assert ns.claim("float") == "float_"
    assert ns.claim("acc") == "acc_"           # a second claim of a taken name
    assert ns.claim("nk_wrap") == "nk_wrap_"   # the generated helpers' prefix
    assert ns.claim("x__y") == "x_u_y"         # C reserves double underscores
    assert all(not is_free(n) for n in cnames.KEYWORDS)


@pytest.mark.parametrize("chunk", range(4))
def test_every_reserved_name_as_argument_and_local(tmp_path, chunk):
    names = PYTHON_NAMES[chunk::4]
    params = ", ".join(names)
    body = "\n".join(f"    {n}_local = {n} + {k}" for k, n in enumerate(names))
    total = " + ".join(f"{n}_local" for n in names)
    locals_ = "\n".join(f"    {n} = out[0] + {k}" for k, n in enumerate(names[:40]))
    path = _write(tmp_path, f"@cuda.jit\ndef as_args(out, {params}):\n{body}\n    out[0] = {total}\n\n\n"
                            f"@cuda.jit\ndef as_locals(out):\n{locals_}\n    out[1] = {' + '.join(names[:40])}\n")
    sig = "void(int64[::1], " + ", ".join("int64" for _ in names) + ")"
    r = translate_kernel(f"{path}:as_args", signature=sig, write=False)
    assert r.compile["ok"], r.compile["log"]
    launcher = r.code[r.code.index('extern "C"'):]
    for n in names:
        c = n + "_" if not n.startswith("_") else "v" + n  # C reserves _Capital names: _Bool -> v_Bool
        assert f"int64_t {c}" in r.code, n
        assert f"{c}," in launcher or f"{c})" in launcher, n  # the launcher passes the same C name on
    r = translate_kernel(f"{path}:as_locals", signature="void(int64[::1])", write=False)
    assert r.compile["ok"], r.compile["log"]


def test_arrays_named_like_keywords_get_their_extents_renamed_with_them(tmp_path):
    path = _write(tmp_path, "@cuda.jit\ndef k(float, new, int, xor):\n    i = cuda.grid(1)\n"
                            "    if i < float.shape[0]:\n        float[i] = new[i, 0] + int[i] * xor.shape[0]\n")
    r = translate_kernel(f"{path}:k", signature="void(float32[::1], float32[:, ::1], int32[:], float64[::1])",
                         write=False)
    assert r.compile["ok"], r.compile["log"]
    for frag in ["float* float_, int64_t float_shape0", "const float* new_, int64_t new_shape0, int64_t new_shape1",
                 "const int32_t* int_, int64_t int_shape0, int64_t int_stride0",
                 "float_[i] = (double)new_[i * new_shape1] + int_[i * int_stride0] * xor_shape0;"]:
        assert frag in r.code, frag


@pytest.mark.parametrize("name", ["main", "switch", "threadIdx", "float", "xor", "grid_x", "printf", "INT64_MIN",
                                  "std", "nk_wrap"])
def test_kernel_named_like_a_reserved_name(tmp_path, name):
    path = _write(tmp_path, f"@cuda.jit\ndef {name}(out):\n    out[cuda.grid(1)] = 1\n")
    r = translate_kernel(f"{path}:{name}", signature="void(int32[::1])", write=False)
    assert r.compile["ok"], r.compile["log"]
    assert f"__global__ void {name}_(" in r.code
    assert f'extern "C" cudaError_t launch_{name}(' in r.code      # the ABI symbol keeps the Python name
    assert f"    {name}_<<<dim3(grid_x" in r.code


def test_locals_named_like_generated_names(tmp_path):
    """Locals spelled like the names the translator generates keep working: the generated ones adapt."""
    path = _write(tmp_path, """@cuda.jit(device=True)
def pair(a):
    ret_0 = a + 1
    return ret_0, a


@cuda.jit
def k(x, y):
    x_shape0 = 2
    x_stride0 = 3
    i_stop = 4
    pair_0 = 5
    modf_frac = 6.5
    a_new = 7
    a = 1
    b = 2
    for i in range(x.shape[0] - i_stop):
        a, b = b, a
    lo, hi = pair(a)
    t = pair(b)
    f = math.modf(y[0])
    x[0] = x_shape0 + x_stride0 + i_stop + pair_0 + a_new + a + b + lo + hi + t[0] + t[1]
    y[0] = modf_frac + f[0] + f[1]
""")
    r = translate_kernel(f"{path}:k", signature="void(int64[:], float64[::1])", write=False)
    assert r.compile["ok"], r.compile["log"]
    code = r.code
    for frag in ["int64_t* x, int64_t x_shape0, int64_t x_stride0,", "int64_t x_shape0_ = 2;",
                 "int64_t x_stride0_ = 3;", "int64_t i_stop = 4;", "int64_t pair_0 = 5;", "int64_t a_new = 7;",
                 "const int64_t a_new_ = b;", "a = a_new_;", "pair(a, &lo, &hi);", "int64_t pair_0_;",
                 "double modf_frac = 6.5;", "const double modf_frac_ = modf(y[0], &modf_int);",
                 "x[0] = x_shape0_ + x_stride0_ + i_stop + pair_0 + a_new + a + b + lo + hi + t_0 + t_1;",
                 "*ret_0_ = ret_0;"]:
        assert frag in code, f"{frag}\n--- got ---\n{code}"
