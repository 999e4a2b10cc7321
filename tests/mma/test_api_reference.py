"""The API reference (docs/mma-api.md) is generated from the instructions' declarations and is up to date, and every
public name of numbakern.mma, its formats and layout, vector_io, async_copy and mma.hopper has documentation of its
own (issue 41: ``help(ldmatrix_x4)`` showed ``(regs, at, smem, index)`` and nothing else)."""

from __future__ import annotations

import inspect

import pytest

from numbakern import async_copy, mma, vector_io
from numbakern.intrinsics import reference
from numbakern.mma import hopper


def test_the_reference_page_is_up_to_date():
    assert reference.DOC.read_text(encoding="utf-8") == reference.render(), \
        "docs/mma-api.md is out of date: python -m numbakern.intrinsics.reference"


@pytest.mark.parametrize("module", [mma, mma.formats, mma.layout, vector_io, async_copy, hopper],
                         ids=lambda m: m.__name__)
def test_every_public_function_has_a_docstring_of_its_own(module):
    functions = [name for name in module.__all__ if inspect.isfunction(getattr(module, name))]
    assert functions
    for name in functions:
        fn = getattr(module, name)
        doc = inspect.getdoc(fn) or ""
        assert len(doc.split()) >= 5, f"{module.__name__}.{name} has no real docstring: {doc!r}"


def test_help_shows_an_intrinsics_parameters_and_what_it_does():
    assert str(inspect.signature(mma.ldmatrix_x4)) == "(regs, at, smem, index)"
    assert "16-byte aligned" in mma.ldmatrix_x4.__doc__ and "alignment=16" in mma.ldmatrix_x4.__doc__
    text = reference.render()
    for name in mma.__all__:
        if inspect.isfunction(getattr(mma, name)):
            assert f"### `{name}(" in text, name


def test_the_writer_rewrites_only_a_stale_page(tmp_path):
    page = tmp_path / "mma-api.md"
    assert reference.write(page) and page.read_text(encoding="utf-8") == reference.render()
    assert not reference.write(page)
    page.write_text("stale", encoding="utf-8")
    assert reference.write(page)
