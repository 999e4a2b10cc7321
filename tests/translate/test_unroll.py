"""``for i in unroll(range(C))`` in the C: the author's loop, marked ``#pragma unroll`` whatever its trip count
(``UNROLL_LIMIT`` is for unmarked loops), typed from the rolled function; NVRTC compiles it."""

import os

from translate.api import translate_kernel

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(HERE, "unroll_kernels.py")


def test_marked_loops_keep_their_shape_with_pragma_unroll():
    r = translate_kernel(f"{KERNELS}:dot_steps", signature="void(float32[::1], float32[::1])",
                         constants={"n": 100}, write=False)
    assert r.compile["ok"], r.compile["log"]
    lines = [l.strip() for l in r.code.splitlines()]
    s_loop = lines.index("for (int64_t s = 0; s < n; s++) {")
    q_loop = lines.index("for (int64_t q = 0; q < STEPS; q++) {")
    assert lines[s_loop - 1] == "#pragma unroll"  # 100 trips: above UNROLL_LIMIT, unrolled because it is marked
    assert lines[q_loop - 1] == "#pragma unroll"
    assert "unroll(" not in r.code.split("__global__")[1]


def test_unroll_by_k_is_pragma_unroll_k():
    r = translate_kernel(f"{KERNELS}:two_at_a_time", signature="void(float32[::1], float32[::1])",
                         constants={"n": 8}, write=False)
    assert r.compile["ok"], r.compile["log"]
    lines = [l.strip() for l in r.code.splitlines()]
    loops = [i for i, l in enumerate(lines) if l == "for (int64_t s = 0; s < n; s++) {"]
    assert [lines[i - 1] for i in loops] == ["#pragma unroll 2", "#pragma unroll 1"]
