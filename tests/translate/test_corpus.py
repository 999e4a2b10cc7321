"""The coverage corpus (numba-cuda's documentation examples and cudapy test kernels, as written): every kernel is
translated and NVRTC-compiled, or refused with a located error in under two seconds; at least 90% translate; and
the corpus files hold the kernels exactly as numba-cuda wrote them. GPU verification: test_corpus_gpu.py."""

from __future__ import annotations

import ast
import os
import re
import textwrap

import pytest

from translate.api import translate_kernel
from translate.errors import CompileError, TranslationError

from .corpus.index import ENTRIES
from .corpus.spec import KERNELS


def _outcome(entry) -> tuple[bool, str]:
    """``(translated, why not)`` of one corpus kernel; raises on what is never acceptable."""
    import time

    t0 = time.perf_counter()
    try:
        r = translate_kernel(entry.target, signature=entry.signature, write=False)
    except CompileError as e:  # NVRTC rejected the C: never acceptable
        pytest.fail(f"{entry.id}: the generated C does not compile:\n{e.message[:2000]}")
    except TranslationError as e:
        seconds = time.perf_counter() - t0
        assert e.line > 0 and e.source_line and os.path.exists(e.filename), f"unlocated: {e}"
        assert f":{e.line}:{e.col + 1}: error:" in str(e) and "^" in str(e)
        assert seconds < 2.0, f"{entry.id}: the refusal took {seconds:.1f} s"
        return False, str(e)
    assert r.compile["ok"]
    assert f'extern "C" cudaError_t launch_{entry.kernel}' in r.code
    return True, ""


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_corpus_kernel_translates_or_is_refused_with_a_location(entry, run_store):
    run_store.record("corpus", entry.id, _outcome(entry)[0])


def test_corpus_share_translated(run_records):
    """The share over every kernel, gathered from the per-kernel tests wherever they ran (pytest-xdist's workers);
    a kernel whose test did not run in this run (a selection) is translated here."""
    done = run_records.records("corpus")
    translated = [done[e.id] if e.id in done else _outcome(e)[0] for e in ENTRIES]
    ok = sum(translated)
    assert ok >= 0.9 * len(ENTRIES), f"{ok} of {len(ENTRIES)} corpus kernels translate"


_SOURCE = re.compile(r"numba-cuda ([\d.]+), (numba_cuda/numba/cuda/tests/\S+)")


@pytest.mark.parametrize("name", sorted(f for f in os.listdir(KERNELS) if f.endswith(".py")))
def test_corpus_file_holds_the_kernels_as_written(name):
    """Every function of a corpus file is, character for character (up to its indentation), a function of the
    numba-cuda file its header names, in the installed numba-cuda of that version."""
    import numba.cuda
    import numba_cuda

    with open(os.path.join(KERNELS, name)) as f:
        text = f.read()
    assert text.startswith("# SPDX-FileCopyrightText: Copyright (c) 2025 NVIDIA CORPORATION & AFFILIATES.")
    assert "# SPDX-License-Identifier: BSD-2-Clause" in text
    version, rel = _SOURCE.search(text).groups()
    if numba_cuda.__version__ != version:
        pytest.skip(f"the corpus was copied from numba-cuda {version}, {numba_cuda.__version__} is installed")
    origin = os.path.join(os.path.dirname(numba.cuda.__file__), rel.split("numba/cuda/", 1)[1])
    with open(origin) as f:
        original = f.read()
    theirs: dict = {}
    for node in ast.walk(ast.parse(original)):
        if isinstance(node, ast.FunctionDef):
            theirs.setdefault(node.name, []).append(_segment(original, node))
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef):
            assert _segment(text, node) in theirs.get(node.name, []), f"{name}: {node.name} is not as written in {rel}"


def _segment(text: str, node) -> str:
    lines = text.splitlines()
    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
    return textwrap.dedent("\n".join(lines[start - 1:node.end_lineno]))
