"""scripts/ncu_profile.py without a GPU: its arguments, its refusal to run without ncu or a GPU, and how it reads
Nsight Compute's raw CSV.

``data/ncu_raw_conv2d_5x5.csv`` is real ncu 2025 output (H200, 2026-11-23: ``ncu --page raw --csv --print-units
base`` of a profile of conv2d_5x5 at 8192², Numba as registered then, its C and cuDNN), cut to the columns the
script reads; the NVTX range names were changed to the script's ``numbakern-profile/<i>`` and a copy of the cuDNN
row without a range was added. The values the tests expect are ncu's, read from that file.
"""

from __future__ import annotations

import pytest

from tests.perf.test_bench_tools import ROOT, load, no_gpu_here, run_tool

RAW = ROOT / "tests" / "perf" / "data" / "ncu_raw_conv2d_5x5.csv"
LABELS = [{"kernel": "conv2d_5x5", "size": "8192×8192", "impl": impl} for impl in ("numba", "c", "torch")]


@pytest.fixture(scope="module")
def tool():
    return load("ncu_profile")


def test_summarize_maps_each_launch_to_its_range_and_reads_the_metrics(tool):
    rows = tool.summarize(RAW.read_text(), LABELS)
    assert [r["impl"] for r in rows] == ["numba", "c", "torch"]  # the launch outside a range is left out
    numba, c, cudnn = rows
    assert numba["launched"] == "conv::conv2d_image"
    assert c["launched"] == "void conv2d_5x5<2, 8>"
    assert cudnn["launched"].startswith("void implicit_convolve_sgemm<float, float")
    assert (numba["registers"], c["registers"]) == (60, 40)
    assert numba["ms"] == pytest.approx(0.4268, abs=1e-4) and c["ms"] == pytest.approx(0.3461, abs=1e-4)
    assert numba["achieved_occupancy_pct"] == pytest.approx(48.71)
    assert c["achieved_occupancy_pct"] == pytest.approx(72.93)
    assert (numba["theoretical_occupancy_pct"], c["theoretical_occupancy_pct"]) == (50, 75)
    assert numba["warp_instructions_M"] == pytest.approx(238.4, abs=0.1)
    assert numba["local_loads_M"] == 0 and c["local_stores_M"] == 0
    assert numba["top_stalls"].startswith("long_scoreboard 7.01, not_selected 2.03, wait 1.45")
    assert cudnn["top_stalls"].startswith("not_selected 3.34")


def test_summarize_rejects_text_that_is_not_ncu_csv(tool):
    with pytest.raises(ValueError, match="no header row"):
        tool.summarize("==PROF== Connected to process 1\n", LABELS)


def test_render_rebuilds_the_markdown_from_the_csv(tool, benchkit, tmp_path):
    rows = tool.summarize(RAW.read_text(), LABELS)
    csv_path = tmp_path / "profile.csv"
    benchkit.write_csv(csv_path, rows, tool.FIELDS, "Measured on a test, 2026-11-23, with `a test`.")
    assert tool.main(["--render", str(csv_path)]) == 0
    md = (tmp_path / "profile.md").read_text()
    assert md.startswith("Measured on a test")
    assert "| conv2d_5x5 | 8192×8192 | numba | `conv::conv2d_image` | 0.427 | 60 | 48.7% (50.0%) |" in md
    assert "| conv2d_5x5 | 8192×8192 | c | `void conv2d_5x5<2, 8>` | 0.346 | 40 | 72.9% (75.0%) |" in md


@pytest.fixture(scope="module")
def benchkit():
    return load("benchkit")


@pytest.mark.parametrize("argv, message", [
    (["conv2d_5x5", "--size", "h=x"], "--size: expected NAME=POSITIVE_INT"),
    (["conv2d_5x5", "--size", "h=0,w=4"], "--size: expected NAME=POSITIVE_INT"),
    (["conv2d_5x5", "--size", "h=64"], "--size: conv2d_5x5 takes the sizes h, w, got h"),
    (["conv2d_55"], "no registered kernel named 'conv2d_55'"),
    ([], "name at least one registered kernel"),
])
def test_bad_arguments_are_named(tool, capsys, argv, message):
    with pytest.raises(SystemExit) as exc:
        tool.main(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_without_ncu_it_says_so_and_exits_2(tmp_path):
    proc = run_tool("scripts/ncu_profile.py", "conv2d_5x5", env_extra={"PATH": str(tmp_path), "NCU": ""})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "ncu_profile.py: needs Nsight Compute's ncu on PATH (or $NCU naming it)" in proc.stderr


@no_gpu_here
def test_without_a_gpu_it_says_so_and_exits_2(tmp_path):
    proc = run_tool("scripts/ncu_profile.py", "conv2d_5x5", env_extra={"NCU": "/bin/true", "OUT": str(tmp_path)})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "ncu_profile.py: needs a CUDA GPU, and the CUDA driver reports none on this machine" in proc.stderr
