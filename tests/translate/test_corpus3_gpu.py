"""The third corpus on a GPU: every translated kernel against its Numba kernel on the same random inputs (the Numba
kernel is the reference; every array argument is compared). Needs the local copies of its sources
(``NUMBAKERN_CORPUS2_MIRRORS``, corpus3/sources.py).

Run on the GPU machine:  NUMBAKERN_CORPUS2_MIRRORS=DIR pytest --gpu tests/translate/test_corpus3_gpu.py -m gpu -s
NUMBAKERN_CORPUS_RESULTS=path.json writes the verdicts (the format of corpus2/verified.json)."""

from __future__ import annotations

import json
import os

import pytest

from .corpus2 import sources
from .corpus3.index import ENTRIES

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    from .corpus import gpu

    return gpu.once_per_run(tmp_path_factory, "corpus3_gpu", lambda: _verify(tmp_path_factory))


def _verify(tmp_path_factory):
    from translate.verify.driver import device_info

    from .corpus import gpu

    entries = [e for e in ENTRIES if sources.available(e.source)]
    if not entries:
        pytest.skip(f"no local copies of the third corpus's sources (${sources.MIRRORS_ENV})")
    work = str(tmp_path_factory.mktemp("corpus3_gpu"))
    info = device_info()
    prepared = gpu.prepare(entries, work, info["arch"])
    out = gpu.verify_all(entries, prepared, work)
    print("\n" + gpu.table(entries, out).replace("corpus on the GPU", "third corpus on the GPU"))
    path = os.environ.get("NUMBAKERN_CORPUS_RESULTS")
    if path:
        with open(path, "w") as f:
            json.dump({"_device": info["device"], **{k: v.verified for k, v in out.items()},
                       "_verdicts": {k: [v.stage, v.reason] for k, v in out.items()}}, f, indent=1)
    return out


@pytest.mark.parametrize("entry_id", [e.id for e in ENTRIES])
def test_corpus3_kernel_matches_numba(entry_id, verdicts):
    if entry_id not in verdicts:
        pytest.skip("no local copy of its source")
    v = verdicts[entry_id]
    if v.stage == "refused":
        pytest.skip(f"not translated: {v.reason}")
    assert v.verified, f"{entry_id}: {v.stage}: {v.reason}"
