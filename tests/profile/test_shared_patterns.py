"""The 16-byte shared-load rule against a GPU: for each lane pattern of tests/profile/shared_load_patterns.json, the
wavefronts ``rules.wavefronts`` counts for one warp equal those Nsight Compute counted on an H200 per request
(scripts/shared_patterns.py measures them)."""

import json
from pathlib import Path

import pytest

from numbakern.profiler import rules
from numbakern.profiler.rules import Accesses

DATA = json.loads((Path(__file__).parent / "shared_load_patterns.json").read_text())
PATTERNS = DATA["patterns"]
BASE = 4096  # a 128-byte aligned base: only the offsets' banks and 16-byte addresses matter


def _access(pattern) -> Accesses:
    return Accesses.of([(lane, BASE + offset, 16) for lane, offset in enumerate(pattern["offsets"])])


@pytest.mark.parametrize("pattern", PATTERNS, ids=[f"{i}-{p['what']}" for i, p in enumerate(PATTERNS)])
def test_wavefronts_as_the_gpu_counts_them(pattern):
    assert int(rules.wavefronts(_access(pattern))[0]) == pattern["gpu"]["wavefronts"], pattern["offsets"]


def test_bank_conflicts_as_the_gpu_counts_them_but_for_two_made_up_patterns():
    # L1's bank-conflict counter agrees with wavefronts - ideal on 45 of the 47; on these two it counts conflicts the
    # wavefronts do not show (2 for "two addresses 1024 bytes apart", where the wavefronts exceed the ideal by 6) or
    # none where the wavefronts exceed the ideal (the same 4 addresses in every 4 lanes: 4 wavefronts for 64 bytes)
    differ = {"each 4 lanes the same 4 consecutive addresses", "two addresses 1024 bytes apart in each quarter-warp"}
    for pattern in PATTERNS:
        conflicts = int(rules.bank_conflicts(_access(pattern))[0])
        if pattern["what"] in differ:
            assert conflicts != pattern["gpu"]["l1_bank_conflicts"]
        else:
            assert conflicts == pattern["gpu"]["l1_bank_conflicts"], pattern["what"]


def test_the_library_patterns_are_most_of_the_file():
    assert sum(p["what"].startswith("a 16-byte shared load of") for p in PATTERNS) >= 30
