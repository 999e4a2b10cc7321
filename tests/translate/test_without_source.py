"""Kernels and device functions made by exec() of a string have no source file: translate rebuilds their Python
from numba's typed IR (the text the simulator runs), names the kernel as its module binds it, and hashes its code
for ``translate --check``. The C of such kernels is verified on a GPU with the extra kernels (``made_rows_dot``,
``calls_made_device`` in extra_kernels.py)."""

from __future__ import annotations

import pytest

from translate.api import translate_kernel
from translate.errors import TranslationError

_TEMPLATE = """
def scale(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * {factor}
"""


def _module(tmp_path, body: str) -> str:
    path = tmp_path / "made.py"
    path.write_text("from numba import cuda\n\nns = {}\n" + body)
    return str(path)


def test_a_kernel_made_by_exec_is_named_where_it_is_bound(tmp_path):
    path = _module(tmp_path, f"exec({_TEMPLATE.format(factor=3)!r}, {{'cuda': cuda}}, ns)\ntriple = ns['scale']\n")
    r = translate_kernel(f"{path}:triple", signature="void(float32[::1], float32[::1])", write=False)
    assert r.compile["ok"], r.compile["log"]
    assert r.name == "triple" and 'extern "C" cudaError_t launch_triple(' in r.code
    # numba: float32 * int64 is float64 (the factor is an integer literal)
    assert "__global__ void triple(" in r.code and "out[i] = (double)x[i] * 3;" in r.code
    assert r.code.count("return") == 1  # the launcher's: the IR's end of the kernel is not repeated as C


def test_the_source_hash_follows_the_string(tmp_path):
    """``translate --check`` hashes a function without source by its code: another string, another hash."""
    from translate import depends

    made = {}
    for factor in (3, 3, 4):
        ns: dict = {}
        exec(_TEMPLATE.format(factor=factor), {}, ns)
        made.setdefault(factor, []).append(depends.source_sha256(ns["scale"], (), {}, {}))
    assert made[3][0] == made[3][1] != made[4][0]



def test_the_source_hash_does_not_follow_reference_counts():
    """The process that checks a kernel holds other references to its code's names and constants than the one that
    translated it (a GPU machine's --check found an exec-made kernel stale that had not changed): the hash is of the
    code written out as text, the same however many references there are."""
    from translate import depends

    ns: dict = {}
    exec(_TEMPLATE.format(factor="2.0") + "    def inner():\n        return 1\n", {}, ns)
    before = depends.source_sha256(ns["scale"], (), {}, {})
    code = ns["scale"].__code__
    held = [*code.co_consts, *code.co_names, *code.co_varnames]  # noqa: F841 - the extra references are the point
    assert depends.source_sha256(ns["scale"], (), {}, {}) == before


CODE_TEXT_OF_A_SET_TEST = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("codetext", sys.argv[1])
codetext = importlib.util.module_from_spec(spec)
spec.loader.exec_module(codetext)
ns = {}
exec("def pick(x):\\n    return x in {'add', 'max', 'min', 'or', 'xor'}\\n", ns)
print(codetext.code_text(ns["pick"].__code__))
"""


def test_a_codes_text_is_the_same_whatever_the_string_hashing():
    """A set constant is a frozenset, whose order follows string hashing (PYTHONHASHSEED, random per process)."""
    import subprocess
    import sys
    from pathlib import Path

    import numbakern.frontend.codetext as codetext

    texts = set()
    for seed in ("1", "2", "3"):
        run = subprocess.run([sys.executable, "-c", CODE_TEXT_OF_A_SET_TEST, str(Path(codetext.__file__))],
                             capture_output=True, text=True, env={"PYTHONHASHSEED": seed}, check=True)
        texts.add(run.stdout)
    assert len(texts) == 1 and "frozenset(" in texts.pop()


def test_a_function_defined_inside_is_refused_where_the_kernel_is_bound(tmp_path):
    """numba inlines a function defined inside the kernel; the rebuilt Python has no names of its own for it, so
    the C would read like no person's: refused, with where to put the kernel instead."""
    inner = "def k(x):\n    def inner(v):\n        return v + 1\n    x[0] = inner(x[0])\n"
    path = _module(tmp_path, f"exec({inner!r}, {{'cuda': cuda}}, ns)\nmade = ns['k']\n")
    with pytest.raises(TranslationError) as info:
        translate_kernel(f"{path}:made", signature="void(float32[::1])", write=False)
    e = info.value
    assert "defines a function inside it" in e.message and "define the kernel in a file" in e.message
    assert e.line == 5 and "made" in e.source_line


_ROW_FUNCTIONS = """
def total(row, n):
    acc = 0.0
    for j in range(n):
        acc += row[j]
    return acc

def scale_row(row, n, f):
    for j in range(n):
        row[j] *= f
"""


def test_an_array_passed_to_a_made_device_function_is_const_unless_it_writes_it(tmp_path):
    """Whether a device function made by exec() writes its array parameter is read from its rebuilt Python, as for
    any device function: the kernel's array stays `const` when the function only reads it."""
    path = _module(tmp_path, f"exec({_ROW_FUNCTIONS!r}, {{}}, ns)\n"
                             "total = cuda.jit(device=True)(ns['total'])\n"
                             "scale_row = cuda.jit(device=True)(ns['scale_row'])\n\n"
                             "@cuda.jit\ndef rows_total(x, out):\n    i = cuda.grid(1)\n    if i < x.shape[0]:\n"
                             "        out[i] = total(x[i], x.shape[1])\n\n"
                             "@cuda.jit\ndef rows_scale(x, f):\n    i = cuda.grid(1)\n    if i < x.shape[0]:\n"
                             "        scale_row(x[i], x.shape[1], f[0])\n")
    reads = translate_kernel(f"{path}:rows_total", signature="void(float64[:, ::1], float64[::1])", write=False)
    writes = translate_kernel(f"{path}:rows_scale", signature="void(float64[:, ::1], float64[::1])", write=False)
    assert reads.compile["ok"] and writes.compile["ok"], reads.compile["log"] + writes.compile["log"]
    assert "const double* x, int64_t x_shape0, int64_t x_shape1," in reads.code
    assert "__global__ void rows_scale(double* x, int64_t x_shape0, int64_t x_shape1, const double* f" in writes.code
