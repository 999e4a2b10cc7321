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


COPIES_AND_STORES = json.loads((Path(__file__).parent / "shared_copy_store_patterns.json").read_text())["patterns"]
SOURCE_BASE = 1 << 20  # a 128-byte aligned global base: only the sources' 128-byte lines matter


def _copy_or_store(pattern) -> Accesses:
    lanes = [(lane, BASE + offset, pattern.get("bytes", 4)) for lane, offset in enumerate(pattern["offsets"])
             if offset >= 0]
    if pattern["instruction"] != "LDGSTS":
        return Accesses.of(lanes)
    return Accesses.of(lanes, [SOURCE_BASE + source for offset, source in zip(pattern["offsets"], pattern["global"])
                               if offset >= 0])


@pytest.mark.parametrize("pattern", COPIES_AND_STORES,
                         ids=[f"{i}-{p['instruction']}-{p['what']}" for i, p in enumerate(COPIES_AND_STORES)])
def test_copies_and_stores_take_the_wavefronts_the_gpu_counts(pattern):
    assert int(rules.wavefronts(_copy_or_store(pattern))[0]) == pattern["gpu"]["wavefronts"], pattern["what"]


def test_a_copy_is_written_one_source_line_at_a_time():
    # the same lanes and destinations (32 consecutive words, one wavefront as a store) take one wavefront for each
    # global line the words come from; the old rule, blind to the sources, counted one for all of them
    by_lines = {p["what"]: p["gpu"]["wavefronts"] for p in COPIES_AND_STORES if p["what"].startswith("4-byte copies")}
    assert by_lines["4-byte copies: contiguous source, contiguous destination"] == 1
    assert by_lines["4-byte copies: 4 source sectors 512 apart; contiguous destination"] == 4
    assert by_lines["4-byte copies: each lane its own source line; contiguous destination"] == 32


def test_bank_conflicts_of_stores_and_4_byte_copies_are_the_wavefronts_beyond_the_ideal():
    # ncu's bank-conflict counter for 16-byte copies reads 0 on every pattern, even 32 wavefronts of destinations 128
    # bytes apart (8 times the ideal): it does not count them, so the profile's conflicts (wavefronts - ideal) are
    # compared only where ncu counts them
    for pattern in COPIES_AND_STORES:
        if pattern["instruction"] == "LDGSTS" and pattern["bytes"] == 16:
            assert pattern["gpu"]["l1_bank_conflicts"] == 0
        else:
            conflicts = int(rules.bank_conflicts(_copy_or_store(pattern))[0])
            assert conflicts == pattern["gpu"]["l1_bank_conflicts"], pattern["what"]


def test_the_library_copies_and_stores_are_in_the_file():
    kernels = {p["what"].split(" of ")[1].split(" (")[0] for p in COPIES_AND_STORES if " of " in p["what"]}
    assert {"matmul_bf16", "matmul_3xtf32", "matmul_pipelined", "conv2d_nchw", "matmul_wgmma_f16"} <= kernels
