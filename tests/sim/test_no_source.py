"""Kernels without source text compute with Numba's types like any other: the simulator runs the Python that the
front end rebuilds from numba's typed IR, never the kernel "with Python's arithmetic". A kernel read from stdin,
given with ``python -c``, made by ``exec`` from a string template (as numba-cuda's own tests make them), defined in
a notebook cell, or expanded by ``unroll()``. Every expected value is numpy int64/float64 arithmetic on the inputs,
the types numba-cuda computes in (int32 * int32 is int64, float32 * 0.1 is float64, // and % floor)."""

from __future__ import annotations

import linecache
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from numba import cuda

from numbakern import sim
from numbakern.unroll import unroll, unrolled

SEED = 20261126
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: int32 * int32 is int64 in Numba: exact, where numpy's int32 product wraps (2 * 2147483647 is -2 in int32)
SCRIPT = textwrap.dedent("""
    import os
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    import sys
    import numpy as np
    import numbakern
    from numba import cuda

    @cuda.jit
    def scale(x, out):
        i = cuda.grid(1)
        if i < x.shape[0]:
            out[i] = x[i] * np.int32(2147483647)

    x = np.array([int(v) for v in sys.argv[1:]], np.int32)
    out = np.full(x.size, -7, np.int64)
    scale[2, 32](x, out)
    print(" ".join(str(v) for v in out))
""")


@pytest.fixture
def rng():
    return np.random.default_rng(SEED)


def _int32s(rng, n):
    """int32 values whose product with 2**31 - 1 overflows int32: large, of both signs, never zero."""
    x = rng.integers(2, 2**31 - 1, n, dtype=np.int64) * rng.choice([-1, 1], n)
    return x.astype(np.int32)


def _run_script(how: str, x: np.ndarray) -> subprocess.CompletedProcess:
    args = [str(v) for v in x]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    if how == "stdin":  # `python - args`: the script is read from stdin, so it has no file
        cmd, stdin = [sys.executable, "-", *args], SCRIPT
    else:
        cmd, stdin = [sys.executable, "-c", SCRIPT, *args], None
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)


@pytest.mark.parametrize("how", ["stdin", "-c"])
def test_a_kernel_without_a_file_computes_with_numbas_integer_types(how, rng):
    x = _int32s(rng, 37)  # not a multiple of the 32-thread block
    done = _run_script(how, x)
    assert done.returncode == 0, done.stderr[-3000:]
    got = np.array(done.stdout.split(), np.int64)
    expected = x.astype(np.int64) * np.int64(2147483647)
    np.testing.assert_array_equal(got, expected, err_msg=f"seed {SEED}")
    assert "arithmetic" not in done.stderr and "Warning" not in done.stderr, done.stderr[-3000:]


#: numba-cuda's test_atomics and test_ufuncs make their kernels this way: a template, formatted, exec'd
TEMPLATE = """
def binary(x, y, out, f):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] {op} y[i]
        f[i] = x[i] * 0.1
"""


def _from_template(op: str):
    namespace = {"cuda": cuda}
    exec(TEMPLATE.format(op=op), namespace)  # noqa: S102 - the test's own template
    return cuda.jit(namespace["binary"])


@pytest.mark.parametrize("op", ["+", "-", "*", "//", "%"])
def test_a_kernel_exec_d_from_a_template_computes_with_numbas_types(op, rng):
    n = 45
    x = _int32s(rng, n)
    y = _int32s(rng, n)
    xf = (rng.random(n) * 100 + 1).astype(np.float32)
    out, f = np.full(n, -7, np.int64), np.full(n, -7.0, np.float64)
    kernel = _from_template(op)
    kernel[2, 32](x, y, out, f)
    a, b = x.astype(np.int64), y.astype(np.int64)
    expected = {"+": a + b, "-": a - b, "*": a * b, "//": np.floor_divide(a, b), "%": np.mod(a, b)}[op]
    np.testing.assert_array_equal(out, expected, err_msg=f"x {op} y, seed {SEED}")
    kernel[2, 32](xf, y, out, f)  # float32 * 0.1 is float64 in Numba (numpy keeps float32)
    np.testing.assert_array_equal(f, xf.astype(np.float64) * 0.1, err_msg=f"seed {SEED}")


@cuda.jit
@unrolled
def dot_rows(x, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        acc = 0
        for k in unroll(range(4)):  # four copies of the body, k a literal in each
            acc += x[i * 4 + k] * np.int32(2147483647)
        out[i] = acc


def test_an_unrolled_kernel_computes_with_numbas_types(rng):
    rows = 21
    x = (rng.integers(2, 2**20, 4 * rows) * rng.choice([-1, 1], 4 * rows)).astype(np.int32)
    out = np.full(rows, -7, np.int64)
    dot_rows[1, 32](x, out)
    expected = (x.astype(np.int64) * np.int64(2147483647)).reshape(rows, 4).sum(axis=1)
    np.testing.assert_array_equal(out, expected, err_msg=f"seed {SEED}")


#: a notebook cell: IPython compiles each cell from a string under a name it registers in linecache
CELL = """\
@cuda.jit
def shifted(x, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[i + 1] * np.int32(2147483647) - np.int32(1)
"""


def _cell(name: str):
    filename = f"<ipython-input-{name}>"
    linecache.cache[filename] = (len(CELL), None, CELL.splitlines(keepends=True), filename)
    namespace = {"cuda": cuda, "np": np}
    exec(compile(CELL, filename, "exec"), namespace)  # noqa: S102 - the test's own cell
    return namespace["shifted"], filename


def test_a_kernel_defined_in_a_notebook_cell_computes_with_numbas_types(rng):
    kernel, _ = _cell("3-5f2a")
    n = 40
    x = _int32s(rng, n + 1)
    out = np.full(n, -7, np.int64)
    kernel[2, 32](x, out)  # one more element than outputs: x[i + 1] is in bounds
    expected = x[1:].astype(np.int64) * np.int64(2147483647) - np.int64(1)
    np.testing.assert_array_equal(out, expected, err_msg=f"seed {SEED}")


def test_a_checker_names_the_line_of_a_notebook_cell(rng):
    kernel, filename = _cell("4-77c1")
    x = _int32s(rng, 32)
    out = np.full(32, -7, np.int64)
    with sim.checks("bounds"), pytest.raises(sim.OutOfBoundsError) as info:
        kernel[1, 32](x, out)  # as many elements as outputs: thread 31 reads x[32]
    message = str(info.value)
    assert f"{os.path.basename(filename)}:5" in message, message
    assert "out[i] = x[i + 1]" in message, message  # the cell's own text, from linecache
