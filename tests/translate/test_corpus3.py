"""The third corpus (kernels of scientific codes, read at recorded commits from local copies: corpus3/sources.py):
every kernel that numba-cuda compiles is translated and NVRTC-compiled -- none is refused. Skips where no local
copies are found (``NUMBAKERN_CORPUS2_MIRRORS``). GPU verification: test_corpus3_gpu.py."""

from __future__ import annotations

import pytest

from translate.api import translate_kernel
from translate.errors import CompileError

from .corpus2 import sources
from .corpus3 import sources as sources3
from .corpus3.index import ENTRIES

#: the rotated-box kernels inline a long chain of device functions: about half a minute each here
SLOW = {"second/nms_gpu:rotate_iou_kernel", "second/nms_gpu:rotate_nms_kernel"}


def entry_params():
    return [pytest.param(e, id=e.id, marks=[pytest.mark.slow] if e.id in SLOW else []) for e in ENTRIES]


@pytest.mark.parametrize("entry", entry_params())
def test_corpus3_kernel_translates(entry):
    if not sources.available(entry.source):
        pytest.skip(f"no local copy of {sources.SOURCES[entry.source].repo} (${sources.MIRRORS_ENV})")
    try:
        r = translate_kernel(entry.target, signature=entry.signature, write=False)
    except CompileError as e:  # NVRTC rejected the C: never acceptable
        pytest.fail(f"{entry.id}: the generated C does not compile:\n{e.message[:2000]}")
    assert r.compile["ok"]
    assert f'extern "C" cudaError_t launch_{entry.kernel}' in r.code


def test_corpus3_records_where_each_kernel_comes_from():
    assert len(sources3.SOURCES) >= 8 and len(ENTRIES) >= 30
    assert {e.source for e in ENTRIES} == set(sources3.SOURCES)
    assert not set(sources3.SOURCES) & {"numba-examples", "cusignal", "stumpy", "sgkit", "bric-a-brac",
                                        "enccs-hpda", "enccs-gpu", "lbm-gpu"}
    for entry in ENTRIES:
        source = sources.SOURCES[entry.source]
        assert len(source.commit) == 40 and source.license and source.repo.count("/") == 1
        assert entry.path.endswith(".py")
    assert len({e.id for e in ENTRIES}) == len(ENTRIES)
