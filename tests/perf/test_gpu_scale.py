"""scripts/gpu_scale.py without a GPU: what it reads from the tools' output, and a whole run against a stand-in
nvidia-smi (every tool then refuses, quickly): the steps, the table, and no more files in $OUT than come back from
the GPU machine (eight)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from numbakern import mode

from .test_bench_tools import load

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def scale():
    return load("gpu_scale")


def test_it_reads_the_verdicts_and_the_plan_of_a_verification(scale):
    text = ("verification on GPU 0 (NVIDIA H100 80GB HBM3), GPU 1 (NVIDIA H100 80GB HBM3), nvcc 13.0, "
            "2026-11-26T10:00:00Z: 35 kernels, 2 GPUs × 8 worker processes (at most 8 a GPU): 16 at once, 61 jobs, "
            "about 98 s by the estimates\n"
            "kernel                   verdict   cases    max abs    max rel  sanitizer / failing checks\n"
            "vector_add               PASS     60/60           0          0  ok (memcheck)\n"
            "transpose                FAIL     47/48           0          0  vs_numba\n"
            "conv2d_5x5               PASS     60/60           0          0  ok (memcheck)\n")
    assert scale.verdicts(text) == "2 PASS, 1 FAIL"
    assert scale.plan_line(text) == "2 GPUs × 8 worker processes (at most 8 a GPU)"
    assert scale.verdicts("Traceback ...") == "no summary"


def test_it_compares_the_two_benchmark_runs_row_for_row(scale, tmp_path):
    head = "kernel,size,c_ms,numba_ms\n"
    (tmp_path / "one.csv").write_text(head + "copy,1,,\nvector_add,1024,1.00,2.00\ntranspose,64,4.00,8.00\n# P\n")
    (tmp_path / "two.csv").write_text(head + "copy,1,,\nvector_add,1024,1.02,2.00\ntranspose,64,3.96,8.08\n# P\n")
    assert scale.bench_agreement(tmp_path / "one.csv", tmp_path / "two.csv") == \
        "2 rows: C and Numba times apart by median 1.0%, at most 2.0%"
    assert scale.bench_agreement(tmp_path / "one.csv", tmp_path / "missing.csv") == "no rows to compare"


def test_it_reads_the_hosts_cpu_and_each_gpus_utilisation(scale):
    before = scale.cpu_times("cpu  100 0 50 800 50 0 0 0 0 0")
    after = scale.cpu_times("cpu  400 0 150 1100 50 0 0 0 0 0")
    assert before == (1000, 850) and after == (1700, 1150)
    assert scale.busy_share(before, after) == pytest.approx(100 * 400 / 700)
    assert scale.busy_share(after, after) != scale.busy_share(after, after)  # no time passed: nan, not 0
    assert scale.gpu_utilisation("0, 61\n1, 7\n[N/A]\n") == {"GPU 0": 61.0, "GPU 1": 7.0}
    assert scale.gpu_utilisation("No devices were found\n") == {}


FAKE_SMI = """#!/bin/sh
case "$*" in
  *query-gpu=index,uuid*) printf '0, GPU-aa\\n1, GPU-bb\\n' ;;
  *query-gpu=index,name*) printf '0, Fake GPU, 81559 MiB, 1980 MHz, 580.1\\n'
                          printf '1, Fake GPU, 81559 MiB, 1980 MHz, 580.1\\n' ;;
  *query-compute-apps*) printf 'GPU-aa, 4242\\n' ;;
  *) printf '0, GPU-aa, Fake GPU, 81559, 80000, 1980, 2619, 9.0\\n' ;;
esac
"""


@pytest.mark.parametrize("cores, counts", [(1, [1]), (2, [1, 2]), (8, [1, 8]), (12, [1, 8, 12]),
                                           (32, [1, 8, 16, 32]), (64, [1, 8, 16, 32, 64])])
def test_the_host_step_counts_processes_up_to_the_cores(scale, cores, counts):
    assert scale.host_counts(cores) == counts


@pytest.mark.skipif(mode.gpu_available(), reason="a run against a stand-in nvidia-smi, on a machine without a GPU")
def test_a_whole_run_without_a_gpu_writes_its_table_and_at_most_eight_files(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(FAKE_SMI)
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k != mode.SIM_ENV}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", OUT=str(out))
    done = subprocess.run([sys.executable, "scripts/gpu_scale.py", "--deadline", "240"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    files = sorted(p.name for p in out.iterdir())
    assert len(files) <= 8 and "scale.md" in files and "verify-1gpu.log" in files and "tests.log" in files, files
    table = (out / "scale.md").read_text()
    for step in ("host: one case's host work",
                 "translate.verify --all --sanitize --gpus 1", "translate.verify --all --sanitize --gpus 2",
                 "bench.py --gpus 2", "bench.py --gpus 1", "pytest --gpu -n auto"):
        assert f"| {step}" in table, table
    assert "exit 2" in table  # every tool refused: there is no GPU
    host = next(line for line in table.splitlines() if line.startswith("| host:"))
    assert "1: 1.00x" in host and "cases/s" in host, host  # (the host step needs no GPU: it ran)
    assert done.stdout.rstrip().endswith(table.rstrip().splitlines()[-1])  # the table is printed last
