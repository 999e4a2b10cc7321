"""Unsupported constructs fail with a located TranslationError: file:line:col, the line, a caret, a hint."""

import pytest

from translate.api import translate_kernel
from translate.errors import TranslationError

from .conftest import KERNELS


@pytest.mark.parametrize("kernel,sig,line_text,message", [
    ("bad_strings", "void(int64[::1])", 's = "hello"', "strings are not supported"),
    ("bad_loop_var", "void(int64[::1])", "out[0] = i", "loop variable"),
    ("bad_unpacked_loop_var", "void(int64[::1], int64[::1])", "out[0] = a", "loop variable"),
    ("bad_sum_complex", "void(complex64[::1], float64[::1])", "out[0] = z.sum().real",
     ".sum() is supported on arrays of real numbers"),
    ("bad_held_range", "void(int64[::1], int64[::1])", "r = range(2, 7)",
     "a range held in a variable is made once"),
    ("bad_inner_default", "void(int64[::1], int64[::1])", "def scaled(v, k=2):", "without defaults"),
    ("bad_raise_in_device", "void(int64[::1], int64[::1])", 'raise ValueError("negative")',
     "raise in a device function"),
    # numba-cuda's KeyError for a ufunc its CUDA target has no loop for, at the call, with math's namesake
    ("bad_np_sqrt", "void(float32[::1], float32[::1])", "np.sqrt(x[i])", "no CUDA loop for np.sqrt"),
])
def test_located_error(kernel, sig, line_text, message):
    with pytest.raises(TranslationError) as info:
        translate_kernel(f"{KERNELS}:{kernel}", signature=sig, write=False)
    e = info.value
    text = str(e)
    assert message in text
    assert e.filename.endswith("construct_kernels.py")
    assert f"construct_kernels.py:{e.line}:{e.col + 1}: error:" in text
    assert line_text in e.source_line
    assert "^" in text and "supported instead:" in text


def test_a_kernel_that_raises_with_debug_is_refused():
    """With debug=True numba reports a kernel's exception to the host; the C can only end the thread."""
    with pytest.raises(TranslationError, match="compiled with debug=True, numba reports the kernel's exceptions"):
        translate_kernel(f"{KERNELS}:bad_debug_raise", signature="void(int64[::1], int64[::1])", write=False)


def test_any_layout_passes_strides():
    """A signature without ::1 (numba's layout A) gets the strides in the launcher ABI; C-contiguous keeps the
    pointer + extents fast path."""
    r = translate_kernel("vector_add", signature="void(float32[:], float32[:], float32[::1])", write=False)
    assert "const float* a, int64_t a_shape0, int64_t a_stride0," in r.code
    assert "float* out, int64_t out_shape0)" in r.code
    assert "a[i * a_stride0]" in r.code and "out[i] =" in r.code
    params = r.entry["launchers"][0]["params"]
    assert params[0]["layout"] == "A" and "layout" not in params[2]


def test_failed_translation_writes_nothing(tmp_path):
    with pytest.raises(TranslationError):
        translate_kernel(f"{KERNELS}:bad_strings", signature="void(int64[::1])", out_dir=str(tmp_path))
    assert list(tmp_path.iterdir()) == []


def _module(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _refusal(target, sig):
    import time

    t0 = time.perf_counter()
    with pytest.raises(TranslationError) as info:
        translate_kernel(target, signature=sig, write=False)
    assert time.perf_counter() - t0 < 2.0, "a refusal takes under two seconds"
    return info.value


def test_recursive_device_function_is_found_before_numba_types_it(tmp_path):
    path = _module(tmp_path, "rec.py", "from numba import cuda\n\n\n@cuda.jit(device=True)\ndef fib(n):\n"
                   "    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n\n\n"
                   "@cuda.jit\ndef k(out):\n    out[0] = fib(10)\n")
    e = _refusal(f"{path}:k", "void(int64[::1])")
    assert "'fib' is recursive (fib -> fib)" in e.message and e.line == 8 and "write the recursion as a loop" in str(e)


def test_numba_typing_error_is_summarised_and_located(tmp_path):
    path = _module(tmp_path, "typ.py", "from numba import cuda\n\n\n@cuda.jit\ndef k(out):\n    out[0] = out.foo\n")
    e = _refusal(f"{path}:k", "void(float32[::1])")
    assert e.message.startswith("numba cannot type the kernel for void(float32[::1]): Unknown attribute 'foo'")
    assert "\n" not in e.message and e.line == 6 and "out.foo" in e.source_line


def test_what_only_numbas_lowering_rejects_is_numbas_error(tmp_path):
    """The translator's typing stops before lowering; a kernel numba types and then refuses to lower (a list needs
    NRT, which CUDA kernels do not have) is numba's refusal all the same, not an unsupported construct; a device
    function's list too."""
    path = _module(tmp_path, "lst.py", "from numba import cuda\n\n\n@cuda.jit(device=True)\ndef pair(x):\n"
                   "    return [x[0], x[1]]\n\n\n@cuda.jit\ndef k(x, out):\n    w = [x[0], x[1]]\n"
                   "    out[0] = w[0] + w[1]\n\n\n@cuda.jit\ndef d(x, out):\n    out[0] = pair(x)[0]\n")
    # the device function is lowered when the kernel's typing compiles it (numba's dispatcher): a typing error
    for kernel, line, what in (("k", 10, "compile"), ("d", 16, "type")):
        e = _refusal(f"{path}:{kernel}", "void(float32[::1], float32[::1])")
        assert e.message == f"numba cannot {what} the kernel for void(float32[::1], float32[::1]): NRT required but " \
                            "not enabled"
        assert e.line == line and "numba itself rejects this" in str(e)


def test_module_that_fails_to_import_is_located(tmp_path):
    path = _module(tmp_path, "imp.py",
                   "from numba import cuda\nSCALE = 1 / 0\n\n\n@cuda.jit\ndef k(x):\n    x[0] = SCALE\n")
    e = _refusal(f"{path}:k", "void(int32[::1])")
    assert "ZeroDivisionError" in e.message and e.line == 2
    path = _module(tmp_path, "std.py", "import json\nfrom numba import cuda\nCFG = json.loads('{')\n\n\n"
                                       "@cuda.jit\ndef k(x):\n    x[0] = CFG\n")
    e = _refusal(f"{path}:k", "void(int32[::1])")   # raised inside the standard library: located at the user's line
    assert "JSONDecodeError" in e.message and e.filename == str(path) and e.line == 3
    path = _module(tmp_path, "syn.py", "def k(:\n    pass\n")
    e = _refusal(f"{path}:k", "void(int32[::1])")
    assert "is not valid Python" in e.message and e.line == 1


def test_kernel_without_source_is_located_where_it_is_bound(tmp_path):
    """A kernel made by exec() has no source: without argument types nothing can rebuild its Python from numba's
    IR, and the refusal is located where the module binds it; a wrong signature too."""
    path = _module(tmp_path, "gen.py", "from numba import cuda\n\nns = {}\nexec('def k(x):\\n    x[0] = 1\\n', ns)\n"
                   "made = ns['k']\n")
    e = _refusal(f"{path}:made", None)
    assert "no Python source file" in e.message and "--signature" in e.message
    assert e.line == 5 and "made" in e.source_line
    e = _refusal(f"{path}:made", "void(int32[::1], int32)")
    assert "2 argument(s), the kernel takes 1" in e.message and e.line == 5
    e = _refusal(f"{path}:made", "void(int32)")
    assert "numba cannot type the kernel" in e.message and e.line == 5


def test_numbas_terminal_colours_are_left_out_of_the_summary():
    from translate.codegen.diagnose import typing_failure

    coloured = Exception("Failed in cuda mode pipeline\n\x1b[1m\x1b[1mUnknown attribute 'foo' of type array(float32, "
                         "1d, C)\x1b[0m\n\x1b[1mFile \"k.py\", line 6:\x1b[0m")
    summary, path, line = typing_failure(coloured)
    assert summary == "Unknown attribute 'foo' of type array(float32, 1d, C)" and line == 6
