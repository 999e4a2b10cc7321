"""The profiler on the examples project, run the way its user runs it (``numbakern profile KERNEL`` in the project's
folder, ``pytest --profile-kernel KERNEL``), and the advice it gives on the lecture's mistakes."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import numbakern
from numbakern.profiler import lessons
from tests.environments import pytest_plugin_args, with_path_first

pytestmark = pytest.mark.sim
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(args):
    env = with_path_first(dict(os.environ), EXAMPLES)
    return subprocess.run(args, cwd=EXAMPLES, env=env, capture_output=True, text=True, timeout=900)


def stencil_wavefronts(h, w, tile=16, padded=18):
    """Requests and wavefronts of the five shared loads of stencil5's sum, counted bank by bank."""
    requests = wavefronts = 0
    for by in range(-(-h // tile)):
        for bx in range(-(-w // tile)):
            for warp in range(tile * tile // 32):
                lanes = [(ty, tx) for ty in (2 * warp, 2 * warp + 1) for tx in range(tile)
                         if by * tile + ty < h and bx * tile + tx < w]
                if not lanes:
                    continue
                for dr, dc in ((1, 1), (0, 1), (2, 1), (1, 0), (1, 2)):
                    words = {(ty + dr) * padded + tx + dc for ty, tx in lanes}
                    wavefronts += max(sum(1 for word in words if word % 32 == bank) for bank in range(32))
                    requests += 1
    return requests, wavefronts


def test_numbakern_profile_on_the_examples_stencil():
    result = run([sys.executable, "-m", "numbakern.profiler.cli", "stencil5", "--size", "h=40,w=40", "--json",
                  "--no-compile"])
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(result.stdout)
    assert data["case"]["kernel"] == "mykernels.stencil:stencil5" and data["grid"] == [3, 3, 1]
    source = (EXAMPLES / "mykernels" / "stencil.py").read_text().splitlines()
    line = next(i + 1 for i, text in enumerate(source) if text.strip().startswith("total = tile"))
    row = next(r for r in data["lines"] if r["line"] == line)
    requests, wavefronts = stencil_wavefronts(40, 40)
    assert row["memory"]["shared_ld"]["requests"] == requests
    assert row["memory"]["shared_ld"]["wavefronts"] == wavefronts
    assert wavefronts > requests  # rows 18 words apart: the two half-warps share two banks
    assert data["kernel"]["unique_bytes_read"] == data["kernel"]["unique_bytes_written"] == 40 * 40 * 4


@pytest.mark.parametrize("kernel", ["row_softmax", "histogram", "block_sum"])
def test_every_example_kernel_profiles(kernel):
    result = run([sys.executable, "-m", "numbakern.profiler.cli", kernel, "--json", "--no-compile"])
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(result.stdout)
    assert data["lines"] and data["kernel"]["memory"]["global_ld"]["requests"] > 0
    if kernel != "row_softmax":
        atomics = data["kernel"]["memory"].get("global_atom") or data["kernel"]["memory"]["shared_atom"]
        assert atomics["max_contention"] >= 1


def test_the_command_names_a_bad_size():
    result = run([sys.executable, "-m", "numbakern.profiler.cli", "stencil5", "--size", "rows=3"])
    assert result.returncode == 2
    assert "--size: stencil5 takes the sizes h, w, got rows" in result.stderr


def test_pytest_profile_kernel_prints_the_launches_profiles():
    result = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *pytest_plugin_args(),
                  "tests/test_kernels.py", "-k", "row_softmax and uniform", "--profile-kernel", "row_softmax"])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    summary = result.stdout.split("numbakern profile", 1)[1]
    assert summary.count("kernel row_softmax: grid") >= 2  # one per distinct launch (the test sizes)
    assert "sect/req" in summary and "m = max(m, x[row, j])" in summary


@pytest.mark.parametrize("lesson, what, phrase", [
    ("transpose_unpadded", "bank conflicts", "neighbouring lanes are 128 bytes apart"),
    ("matmul_naive_rows", "coalescing", "consecutive threads access addresses"),
    ("reduce_divergent", "divergence", "splits the lanes of a warp"),
])
def test_the_first_advice_on_each_lesson(lesson, what, phrase):
    kernel, make = lessons.LESSONS[lesson]
    case = make(np.random.default_rng(0))
    cfg = case.launch
    p = numbakern.profile(kernel, cfg.grid, cfg.block, *case.fresh_args(), shared_bytes=cfg.shared_bytes, sample=4,
                          compile=False)
    first = p.advice[0]
    assert first.what == what and phrase in first.message
    assert first.file == kernel.py_func.__code__.co_filename
