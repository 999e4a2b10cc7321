"""``scripts/bench.py --render/--merge`` read a results CSV as data (issue 38, finding 4 and its malformed inputs):
a kernel cell never makes anything be imported, and every kind of malformed file is one line naming the file, the
row and the cell, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from numbakern import mode

ROOT = Path(__file__).resolve().parents[2]
HEADER = "kernel,size,size_keys,metric,c_ms,c_rate,torch_rate,torch_op,peers,gpu"
GOOD = "vector_add,1048576,n,GB/s,0.0123,1020.5,1100.25,a + b,,GPU 0"
PROVENANCE = "# Measured on NVIDIA H200, 2026-11-26, with `python scripts/bench.py`"


def _bench(*args, cwd):
    env = {k: v for k, v in os.environ.items() if k not in (mode.SIM_ENV, "OUT")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "bench.py"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_a_kernel_cell_naming_a_module_is_never_imported(tmp_path):
    marker = tmp_path / "pwned"
    (tmp_path / "planted.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('pwned')\n"
                                         "def kernel():\n    pass\n")
    (tmp_path / "run.csv").write_text(f"{PROVENANCE}\n{HEADER}\n{GOOD.replace('vector_add', 'planted:kernel', 1)}\n")
    for args in (("--render", "run.csv"), ("--merge", "run.csv", "--out", "merged")):
        r = _bench(*args, cwd=tmp_path)
        assert not marker.exists(), f"bench.py {args[0]} imported a module a CSV named"
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert r.stderr.splitlines()[-1] == (f"bench.py: error: {args[0]}: run.csv, row 1: the kernel 'planted:kernel' "
                                             "is not a kernel's name (such as matmul_tiled)"), r.stderr


MALFORMED = {
    "no such file": (None, "missing.csv: no such file"),
    "a folder": ("<folder>", "run.csv: not a file"),
    "not UTF-8": (b"# x\n\xff\xfe,\x00\n", "run.csv: not UTF-8 text"),
    "no provenance": (f"{HEADER}\n{GOOD}\n", "run.csv: no '# ...' provenance line"),
    "no kernel column": (f"{PROVENANCE}\nsize,metric\n1,GB/s\n", "run.csv, row 1: no kernel (every row has"),
    "a word for a number": (f"{PROVENANCE}\n{HEADER}\n{GOOD.replace('0.0123', 'fast')}\n",
                            "run.csv, row 1: c_ms is 'fast', not a number"),
    "a negative time": (f"{PROVENANCE}\n{HEADER}\n{GOOD.replace('0.0123', '-1')}\n",
                        "run.csv, row 1: c_ms is -1, not a time, rate or ratio"),
    "a short row": (f"{PROVENANCE}\n{HEADER}\nvector_add,1,n,GB/s\n", "run.csv, row 1: fewer cells than the header"),
    "a long row": (f"{PROVENANCE}\n{HEADER}\n{GOOD},extra\n", "run.csv, row 1: more cells than the header"),
    "a table break in a cell": (f"{PROVENANCE}\n{HEADER}\n{GOOD.replace('a + b', 'a | b')}\n",
                                "run.csv, row 1: torch_op 'a | b' holds a character that is not text for a table"),
    "a zero rate": (f"{PROVENANCE}\n{HEADER}\n{GOOD.replace('1100.25', '0')}\n", None),
}


@pytest.mark.parametrize("kind", list(MALFORMED))
def test_malformed_results_are_one_line(tmp_path, kind):
    content, message = MALFORMED[kind]
    name = "missing.csv" if content is None else "run.csv"
    if content == "<folder>":
        (tmp_path / name).mkdir()
    elif isinstance(content, bytes):
        (tmp_path / name).write_bytes(content)
    elif content is not None:
        (tmp_path / name).write_text(content)
    for args in (("--render", name), ("--merge", name, "--out", "merged")):
        r = _bench(*args, cwd=tmp_path)
        assert "Traceback" not in r.stderr, r.stderr
        if message is None:  # data that renders (a zero rate: the chart shows no bar)
            assert r.returncode == 0, r.stderr
            continue
        assert r.returncode == 2, r.stdout + r.stderr
        assert r.stderr.splitlines()[-1].startswith(f"bench.py: error: {args[0]}: {message}"), r.stderr
