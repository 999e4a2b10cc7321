"""The third corpus on a GPU: every translated kernel against its Numba kernel on the same random inputs (the Numba
kernel is the reference; every array argument is compared). Needs the local copies of its sources
(``NUMBAKERN_CORPUS2_MIRRORS``, corpus3/sources.py).

Run on the GPU machine:  NUMBAKERN_CORPUS2_MIRRORS=DIR pytest --gpu tests/translate/test_corpus3_gpu.py -m gpu -s
NUMBAKERN_CORPUS_RESULTS=path.json writes the verdicts (the format of corpus2/verified.json)."""

from __future__ import annotations

import pytest

from .corpus2 import sources
from .corpus3.index import ENTRIES

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    from .corpus import gpu

    return gpu.once_per_run(tmp_path_factory, "corpus3_gpu", lambda: gpu.verify_mirrored(
        tmp_path_factory, "corpus3_gpu", ENTRIES, sources, "third corpus"))


@pytest.mark.parametrize("entry_id", [e.id for e in ENTRIES])
def test_corpus3_kernel_matches_numba(entry_id, verdicts):
    from .corpus import gpu

    gpu.check_verdict(entry_id, verdicts)
