"""The second corpus on a GPU: every translated kernel against its Numba kernel on the same random inputs (the Numba
kernel is the reference; every array argument is compared). Needs the local copies of its sources
(``NUMBAKERN_CORPUS2_MIRRORS``, corpus2/sources.py).

Run on the GPU machine:  NUMBAKERN_CORPUS2_MIRRORS=DIR pytest --gpu tests/translate/test_corpus2_gpu.py -m gpu -s
NUMBAKERN_CORPUS_RESULTS=path.json writes the verdicts for `python -m tests.translate.corpus2.report --verified
path.json --write-docs`."""

from __future__ import annotations

import pytest

from .corpus2 import sources
from .corpus2.index import ENTRIES

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    from .corpus import gpu

    return gpu.once_per_run(tmp_path_factory, "corpus2_gpu", lambda: gpu.verify_mirrored(
        tmp_path_factory, "corpus2_gpu", ENTRIES, sources, "second corpus"))


@pytest.mark.parametrize("entry_id", [e.id for e in ENTRIES])
def test_corpus2_kernel_matches_numba(entry_id, verdicts):
    from .corpus import gpu

    gpu.check_verdict(entry_id, verdicts)
