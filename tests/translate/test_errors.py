"""Unsupported constructs fail with a located TranslationError: file:line:col, the line, a caret, a hint."""

import pytest

from translate.api import translate_kernel
from translate.errors import TranslationError

from .conftest import KERNELS


@pytest.mark.parametrize("kernel,sig,line_text,message", [
    ("bad_strings", "void(int64[::1])", 's = "hello"', "strings are not supported"),
    ("bad_loop_var", "void(int64[::1])", "out[0] = i", "loop variable"),
    ("bad_mixed_types", "void(float64[::1], int64)", "x = 1", "takes different types"),
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


def test_non_contiguous_layout_rejected():
    with pytest.raises(TranslationError, match="C-contiguous"):
        translate_kernel("vector_add", signature="void(float32[:], float32[:], float32[:])", write=False)


def test_failed_translation_writes_nothing(tmp_path):
    with pytest.raises(TranslationError):
        translate_kernel(f"{KERNELS}:bad_strings", signature="void(int64[::1])", out_dir=str(tmp_path))
    assert list(tmp_path.iterdir()) == []
