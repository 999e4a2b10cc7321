"""The corpus on a GPU: every translated kernel against its Numba kernel on the same random inputs (the Numba
kernel is the reference; every array argument is compared), and the count table.

Run on the GPU machine:  pytest --gpu tests/translate -m gpu -s
NUMBAKERN_CORPUS_SHARD=k/n runs every n-th kernel from the k-th (to fit a time limit: 1/3, 2/3, 3/3), and
NUMBAKERN_CORPUS_RESULTS=path.json writes the verdicts for `python -m tests.translate.corpus.report --verified
path.json [more.json ...] --write-docs`."""

from __future__ import annotations

import pytest

from .corpus.index import ENTRIES
from .coverage_entries import COVERAGE
from .extra_entries import EXTRA

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    from .corpus import gpu

    return gpu.once_per_run(tmp_path_factory, "corpus_gpu", lambda: _verify(tmp_path_factory))


def _verify(tmp_path_factory):
    from translate.verify.driver import device_info

    from .corpus import gpu

    work = str(tmp_path_factory.mktemp("corpus_gpu"))
    info = device_info()
    entries = gpu.shard(ENTRIES + EXTRA + COVERAGE)
    prepared = gpu.prepare(entries, work, info["arch"])
    out = gpu.verify_all(entries, prepared, work)
    print("\n" + gpu.table(ENTRIES, out))
    print(gpu.table(EXTRA, out).replace("corpus on the GPU", "extra kernels (tests/translate/extra_kernels.py)"))
    print(gpu.table(COVERAGE, out).replace("corpus on the GPU",
                                           "coverage kernels (tests/translate/coverage_kernels.py)"))
    gpu.write_results(info, out)
    return out


@pytest.mark.parametrize("entry_id", [e.id for e in ENTRIES + EXTRA + COVERAGE])
def test_corpus_kernel_matches_numba(entry_id, verdicts):
    if entry_id not in verdicts:
        pytest.skip("in another shard (NUMBAKERN_CORPUS_SHARD)")
    v = verdicts[entry_id]
    if v.stage == "refused":
        pytest.skip(f"not translated: {v.reason}")
    gap = next(e.known_gap for e in ENTRIES + EXTRA + COVERAGE if e.id == entry_id)
    if gap:
        assert not v.verified, f"{entry_id} now matches Numba: remove its known_gap ({gap})"
        pytest.xfail(f"{gap} ({v.stage}: {v.reason})")
    assert v.verified, f"{entry_id}: {v.stage}: {v.reason}"


def test_corpus_verified_share(verdicts):
    if any(e.id not in verdicts for e in ENTRIES):
        pytest.skip("a shard: the share is over the whole corpus (merge the shards' results with the report)")
    verified = sum(verdicts[e.id].verified for e in ENTRIES)
    assert verified >= 0.9 * len(ENTRIES), f"{verified} of {len(ENTRIES)} corpus kernels verified on the GPU"
