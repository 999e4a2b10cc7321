"""numbakern's worklist forms of numba-cuda's liveness analysis and scope completion
(``numbakern.frontend.liveness``) give numba's own answers, call for call, on the IR of real compiles: a kernel with
loops left by break, while loops, for-else and nested loops (back edges, several exits), and library kernels (a
decoupled look-back scan's spin loops, an unrolled online softmax, flash attention)."""

from __future__ import annotations

import pytest

from numbakern.frontend import client

COMPARED = "tests.numbakern.liveness_functions:compared"
CONTROL_FLOW = {"module": "tests.sim.test_rebuild", "name": "control_flow",
                "signature": "void(float64[::1], float64[::1])"}


@pytest.mark.parametrize("kernel", [
    CONTROL_FLOW,
    {"module": "registry", "name": "inclusive_scan"},
    {"module": "registry", "name": "softmax_long"},
    {"module": "registry", "name": "attention_d64_causal"},
], ids=lambda k: k["name"])
def test_every_analysis_of_a_compile_gives_numbas_answer(kernel):
    counts = client.call(COMPARED, **kernel)
    assert counts["live_maps"] > 3 and counts["scopes"] >= 1, counts
    assert counts["differ"] == []


def test_a_different_answer_is_seen():
    counts = client.call(COMPARED, **CONTROL_FLOW, fault=True)
    assert counts["differ"] and all(d.startswith("live map") for d in counts["differ"])
