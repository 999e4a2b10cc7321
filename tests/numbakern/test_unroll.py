"""``numbakern.unroll``: loops marked ``unroll(range(C))`` become straight-line copies that compute what the loop
computes (plain Python, the simulator with its checkers), errors name the loop's line, and ``specialize`` expands
the kernels it builds while the translator keeps the rolled function."""

import dis
import inspect

import numpy as np
import pytest
from numba import cuda

from numbakern import mode, specialize
from numbakern import unroll as unroll_module
from numbakern.fastpath import u32
from numbakern.unroll import UnrollError, rolled_function, unroll, unrolled

N = 5


def _loops(func) -> int:
    return sum(ins.opname == "FOR_ITER" for ins in dis.get_instructions(func))


def triangle(x):
    s = 0.0
    for i in unroll(range(N)):
        for j in unroll(range(i)):  # an inner trip count from the outer counter
            s += x[i] * x[j]
        for k in range(2):  # an ordinary loop stays a loop
            s += k * x[i]
    for i in unroll(range(N - 1, -1, -2)):  # a negative step; the name reused by a second unrolled loop
        s -= x[i] / (i + 1)
    return s


def test_expansion_computes_what_the_loops_compute(rng):
    x = rng.standard_normal(N)
    fast = unrolled(triangle)
    assert fast is not triangle and rolled_function(fast) is triangle
    assert fast(x) == pytest.approx(triangle(x), rel=1e-12)
    assert _loops(triangle) == 4 and _loops(fast) == N  # only the N copies of the `range(2)` loop are left
    assert unrolled(fast) is fast


def test_an_expansion_is_read_back_from_the_cache(monkeypatch, tmp_path, rng):
    """A process that builds the same function again reads its expanded code back instead of expanding it (every
    process that loads the kernel library did that for seconds), and that code computes the same."""
    monkeypatch.setenv("NUMBAKERN_CACHE_DIR", str(tmp_path))
    first = unrolled(triangle)
    monkeypatch.setattr(unroll_module._Expander, "expand", lambda self: pytest.fail("expanded again"))
    again = unrolled(triangle)
    assert again is not first and again.__code__ == first.__code__ and rolled_function(again) is triangle
    x = rng.standard_normal(N)
    assert again(x) == first(x) == pytest.approx(triangle(x), rel=1e-12)


@pytest.mark.parametrize("change", ["trip count", "marker"])
def test_an_expansion_whose_values_changed_is_made_again(monkeypatch, tmp_path, rng, change):
    """The cache's entry holds every compile-time value the expansion read: a trip count's module constant or the
    ``unroll`` marker itself that reads otherwise now is expanded again, never taken from the entry."""
    monkeypatch.setenv("NUMBAKERN_CACHE_DIR", str(tmp_path))
    assert _loops(unrolled(triangle)) == N
    if change == "trip count":
        monkeypatch.setitem(triangle.__globals__, "N", 3)
        assert _loops(unrolled(triangle)) == 3  # the copies of the `range(2)` loop, one per outer value
    else:
        monkeypatch.setitem(triangle.__globals__, "unroll", lambda r, times=None: r)  # not numbakern's marker
        assert unrolled(triangle) is triangle  # no loop of it is an unroll loop now
    x = rng.standard_normal(N)
    assert unrolled(triangle)(x) == pytest.approx(triangle(x), rel=1e-12)


def test_the_counter_of_an_unsigned_range_stays_unsigned():
    def f():
        out = []
        for q in unroll(range(u32(3))):
            out.append(q)
        return out

    got = unrolled(f)()
    assert got == [0, 1, 2] and all(type(v) is np.uint64 for v in got)  # numba counts range(uint32) in uint64


@pytest.mark.parametrize("times", [1, 2, 4, 7, 100])
def test_partial_unrolling_visits_the_same_values_in_order(times):
    def f():
        seen = []
        for i in unroll(range(2, 23, 3), times):  # 7 values: 4 does not divide them (a remainder of 3 copies)
            seen.append(i)
            seen.append(-i)
        return seen

    g = unrolled(f)
    assert g() == f()
    n = len(range(2, 23, 3))
    assert _loops(g) == (0 if times >= n else 1)  # one rolled loop of `times` copies, or straight-line code
    if times < n:
        assert "unroll" not in g.__code__.co_names  # (times == 1: the marker taken off, the loop kept)


def test_partial_unrolling_of_an_unsigned_range():
    def f():
        out = []
        for q in unroll(range(u32(5)), 2):
            out.append(q)
        return out

    got = unrolled(f)()
    # the copies read counter + np.uint64(step) (numba's counter of an unsigned range is uint64 too; Python's range
    # yields ints, so the copies that read the counter itself hold ints here)
    assert got == [0, 1, 2, 3, 4] and [type(v) for v in got[1::2]] == [np.uint64, np.uint64]


def test_functions_without_unroll_are_returned_as_they_are():
    def f(x):
        return [i * x for i in range(3)]

    assert unrolled(f) is f


def _error(func):
    with pytest.raises(UnrollError) as e:
        unrolled(func)
    return str(e.value)


def test_break_is_refused_with_the_line():
    def f(x):
        for i in unroll(range(4)):
            if x[i]:
                break

    msg = _error(f)
    line = inspect.getsourcelines(f)[1] + 1
    assert f"test_unroll.py:{line}" in msg and "break/continue" in msg


def test_a_break_of_an_inner_ordinary_loop_is_fine():
    def f(x):
        n = 0
        for i in unroll(range(3)):
            for j in range(10):
                if j > i:
                    break
                n += x
        return n

    assert unrolled(f)(2) == f(2) == 12


@pytest.mark.parametrize("body, match", [
    ("for i in unroll(range(n)):\n        pass", "compile-time constant"),
    ("for i in unroll(range(3)):\n        i = 2", "is assigned in its body"),
    ("for i in unroll(range(3)):\n        pass\n    else:\n        pass", "else clause"),
    ("for i in unroll([1, 2]):\n        pass", "takes range"),
    ("for i in unroll(range(2.0)):\n        pass", "needs integers"),
])
def test_refused_loops(body, match, tmp_path):
    path = tmp_path / "k.py"
    path.write_text(f"from numbakern.unroll import unroll\n\ndef f(n):\n    {body}\n")
    ns = {}
    exec(compile(path.read_text(), str(path), "exec"), ns)
    msg = _error(ns["f"])
    assert match in msg and f"{path}:4" in msg


@specialize
def scaled_sum(n: int, m: int):
    @cuda.jit
    def scaled_sum(x, out):
        i = cuda.grid(1)
        if i < x.shape[0]:
            acc = np.float32(0.0)
            for a in unroll(range(n)):
                for b in unroll(range(a, m)):
                    acc += x[i] * np.float32(a + 1) - np.float32(b)
            out[i] = acc

    return scaled_sum


def test_specialize_expands_and_the_kernel_matches_numpy(rng):
    x = rng.standard_normal(37).astype(np.float32)
    kernel = scaled_sum(3, 4)
    func = getattr(kernel, "py_func", None) or kernel.fn
    assert rolled_function(func) is not func and _loops(func) == 0
    other = getattr(scaled_sum(2, 2), "py_func", None) or scaled_sum(2, 2).fn
    assert rolled_function(func).__code__ is rolled_function(other).__code__  # one source, two expansions
    out = np.full_like(x, np.nan)
    if mode.in_simulator():
        kernel[2, 32](x, out)
    else:
        d = [cuda.to_device(v) for v in (x, out)]
        kernel[2, 32](*d)
        out = d[1].copy_to_host()
    expected = sum(x.astype(np.float64) * (a + 1) - b for a in range(3) for b in range(a, 4))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


@specialize
def reads_past_the_end(n: int):
    @cuda.jit
    def reads_past_the_end(x, out):
        for i in unroll(range(n)):
            out[0] += x[i]

    return reads_past_the_end


@pytest.mark.sim
def test_simulator_reports_point_at_the_loop_body():
    from numbakern.sim import OutOfBoundsError

    x = np.ones(3, np.float32)
    with pytest.raises(OutOfBoundsError, match=r"test_unroll\.py:\d+ \(reads_past_the_end\): out\[0\] \+= x\[i\]"):
        reads_past_the_end(4)[1, 1](x, np.zeros(1, np.float32))


@pytest.mark.sim
def test_the_simulator_types_and_runs_the_loops_as_written(rng):
    """numba types the rolled loops (a tensor-core kernel's expansion takes it seconds more), as ``translate`` does;
    the profiler asks for the expansion, the code a GPU runs."""
    from numbakern.sim import kerneltypes

    kernel = scaled_sum(3, 4)
    x = rng.standard_normal(37).astype(np.float32)
    out = np.full_like(x, np.nan)
    kernel[2, 32](x, out)
    expected = sum(x.astype(np.float64) * (a + 1) - b for a in range(3) for b in range(a, 4))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    rolled, _ = kerneltypes.type_launch(kernel, (x, out), ("x", "out"))
    expanded, _ = kerneltypes.type_launch(kernel, (x, out), ("x", "out"), rolled=False)
    assert _loops(rolled_function(kernel.fn)) == 2 and _loops(kernel.fn) == 0
    assert _loops(rolled.kernel.function) == 2 and _loops(expanded.kernel.function) == 0


@specialize
def mixed_parts(n: int):
    @cuda.jit
    def mixed_parts(x, out):
        parts = (np.float32(0.5), np.int64(3))  # a tuple of two types: only a literal index reads it
        acc = np.float32(0.0)
        for i in unroll(range(n)):
            acc += parts[i] * x[i]
        out[0] = acc

    return mixed_parts


@pytest.mark.sim
def test_loops_numba_types_only_expanded_run_expanded(rng):
    """Rolled, ``parts[i]`` is refused (no type for a tuple of two types read at a run-time index); the expansion,
    which is what a GPU compiles, is typed then, and its verdict stands."""
    from numbakern.sim import kerneltypes

    kernel = mixed_parts(2)
    x = (rng.random(2) + 1).astype(np.float32)
    out = np.zeros(1, np.float32)
    kernel[1, 1](x, out)
    assert out[0] == np.float32(np.float64(np.float32(0.5) * x[0]) + 3 * np.float64(x[1]))
    typed, _ = kerneltypes.type_launch(kernel, (x, out), ("x", "out"))
    assert _loops(typed.kernel.function) == 0
