"""Unsupported constructs fail with a located TranslationError: file:line:col, the line, a caret, a hint."""

import pytest

from translate.errors import TranslationError
from translate.pipeline import translate_kernel

from .conftest import KERNELS


@pytest.mark.parametrize("kernel,sig,line_text,message", [
    ("bad_strings", "void(int64[::1])", 's = "hello"', "strings are not supported"),
    ("bad_loop_var", "void(int64[::1])", "out[0] = i", "loop variable"),
    ("bad_while_else", "void(int64[::1])", "while", "while ... else is not supported"),
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
