"""The second corpus (kernels of public repositories, read at recorded commits from local copies: corpus2/sources.py):
every kernel is translated and NVRTC-compiled, or refused with a located error in under two seconds. Skips where
no local copies are found (``NUMBAKERN_CORPUS2_MIRRORS``). GPU verification: test_corpus2_gpu.py."""

from __future__ import annotations

import os
import time

import pytest

from translate.api import translate_kernel
from translate.errors import CompileError, TranslationError

from .corpus2 import sources
from .corpus2.index import ENTRIES


def _available(entry) -> bool:
    return sources.available(entry.source)


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_corpus2_kernel_translates_or_is_refused_with_a_location(entry):
    if not _available(entry):
        pytest.skip(f"no local copy of {sources.SOURCES[entry.source].repo} (${sources.MIRRORS_ENV})")
    target = entry.target
    t0 = time.perf_counter()
    try:
        r = translate_kernel(target, signature=entry.signature, write=False)
    except CompileError as e:  # NVRTC rejected the C: never acceptable
        pytest.fail(f"{entry.id}: the generated C does not compile:\n{e.message[:2000]}")
    except TranslationError as e:
        assert e.line > 0 and e.source_line and os.path.exists(e.filename), f"unlocated: {e}"
        assert f":{e.line}:{e.col + 1}: error:" in str(e) and "^" in str(e)
        assert time.perf_counter() - t0 < 2.0, f"{entry.id}: the refusal took too long"
        assert entry.note, f"{entry.id} is refused, and its entry does not say why that is right: {e}"
        return
    assert r.compile["ok"]
    assert f'extern "C" cudaError_t launch_{entry.kernel}' in r.code


def test_corpus2_records_where_each_kernel_comes_from():
    for entry in ENTRIES:
        source = sources.SOURCES[entry.source]
        assert len(source.commit) == 40 and source.license and source.repo.count("/") == 1
        assert entry.path.endswith(".py")


def test_extraction_takes_the_kernel_its_helpers_and_imports_and_nothing_else(tmp_path, monkeypatch):
    """On a made-up repository: the kernel, the device function and constant it reads, numba/numpy imports; not the
    script around them, another import, or an unrelated function."""
    import subprocess

    from .corpus2 import extract

    repo = tmp_path / "mirrors" / "someone+project"
    repo.mkdir(parents=True)
    (repo / "k.py").write_text(
        "import cupy\nimport numpy as np\nfrom numba import cuda\n\nTILE = 4\nOTHER = 5\n\n"
        "@cuda.jit(device=True)\ndef helper(x):\n    return x * TILE\n\n"
        "@cuda.jit\ndef kern(a):\n    i = cuda.grid(1)\n    a[i] = helper(a[i])\n\n"
        "def unrelated():\n    return OTHER\n\nkern[1, 1](np.zeros(1))\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git[:3] + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "k.py"], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "k"], check=True)
    commit = subprocess.run(git[:3] + ["rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    monkeypatch.setenv(sources.MIRRORS_ENV, str(tmp_path / "mirrors"))
    monkeypatch.setitem(sources.SOURCES, "made-up", sources.Source("someone/project", commit, "MIT", "a test"))
    text = extract.module_text("made-up", "k.py", ("kern",))
    assert "import numpy as np" in text and "from numba import cuda" in text and "TILE = 4" in text
    assert "def helper(x):" in text and "@cuda.jit(device=True)" in text and "def kern(a):" in text
    for absent in ("cupy", "OTHER", "unrelated", "kern[1, 1]"):
        assert absent not in text
