"""The benchmark tools in scripts/ without a GPU: their arguments, their refusal to run without a GPU, their results
files, the tables the docs embed from them, and the hand-written reference CUDA C they load."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from numbakern import mode

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
no_gpu_here = pytest.mark.skipif(mode.gpu_available(), reason="checks what the tools do on a machine without a GPU")


def load(name: str):
    """A script as a module (its folder on sys.path, as when it runs)."""
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    spec = importlib.util.spec_from_file_location(f"scripts_{name}", SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (dataclasses look their module up while it runs)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def benchkit():
    return load("benchkit")


@pytest.fixture(scope="module")
def bench():
    return load("bench")


@pytest.fixture(scope="module")
def study():
    return load("bench_matmul")


def run_tool(*args, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k not in (mode.SIM_ENV, "OUT")}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300,
                          check=False)


# ---------------------------------------------------------------------------------------------------------------
# arguments and the GPU check


@pytest.mark.parametrize("argv, message", [
    (["--sizes", "4096x4096"], "a size is HxKxW with positive integers, e.g. 4096x4096x4096; got '4096x4096'"),
    (["--sizes", "0x1x1"], "got '0x1x1'"),
    (["--budget", "0"], "--budget must be positive, got 0.0"),
    (["--codegen", "--render", "x.csv"], "not allowed with argument"),
])
def test_matmul_tool_rejects_bad_arguments(study, capsys, argv, message):
    with pytest.raises(SystemExit) as exc:
        study.main(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_bench_rejects_an_unknown_kernel_and_a_bad_budget(bench, capsys):
    with pytest.raises(SystemExit) as exc:
        bench.main(["--kernels", "matmull"])
    assert exc.value.code == 2 and "no registered kernel named 'matmull'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        bench.main(["--budget", "-1"])
    assert "--budget must be positive" in capsys.readouterr().err


def test_sizes_parse(study):
    assert study.parse_sizes("5120x256x5120, 33X70X45") == [(5120, 256, 5120), (33, 70, 45)]


def test_the_tools_refuse_the_simulator(benchkit, monkeypatch, capsys):
    monkeypatch.setenv(mode.SIM_ENV, "1")
    monkeypatch.setattr(mode, "gpu_available", lambda: True)  # the refusal must not depend on this machine
    with pytest.raises(SystemExit) as exc:
        benchkit.require_gpu("bench.py")
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "bench.py: NUMBA_ENABLE_CUDASIM=1 selects the CUDA simulator; benchmarks need the GPU" in err


@no_gpu_here
@pytest.mark.parametrize("tool", ["bench.py", "bench_matmul.py"])
def test_without_a_gpu_the_tools_say_so_and_exit_2(tool, tmp_path):
    proc = run_tool(f"scripts/{tool}", env_extra={"OUT": str(tmp_path)})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"{tool}: needs a CUDA GPU, and the CUDA driver reports none on this machine" in proc.stderr
    assert "Traceback" not in proc.stderr
    log = tmp_path / f"{tool.removesuffix('.py')}.log"
    assert "needs a CUDA GPU" in log.read_text()  # with $OUT set, the full log goes there


@no_gpu_here
def test_gpu_check_refuses_a_bad_step_and_a_machine_without_gpu(tmp_path):
    proc = subprocess.run(["bash", "scripts/gpu_check.sh", "benchmark"], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "OUT": str(tmp_path)}, check=False)
    assert proc.returncode == 2 and "unknown step 'benchmark' (expected tests, verify, bench or matmul)" in proc.stderr
    env = {k: v for k, v in os.environ.items() if k != mode.SIM_ENV}
    proc = subprocess.run(["bash", "scripts/gpu_check.sh", "bench"], capture_output=True, text=True, cwd=ROOT,
                          env={**env, "OUT": str(tmp_path)}, check=False)
    assert proc.returncode == 2 and "gpu_check.sh: needs a CUDA GPU" in proc.stderr


# ---------------------------------------------------------------------------------------------------------------
# results files and the tables in the docs


def test_csv_keeps_its_provenance_and_embed_replaces_only_its_block(benchkit, tmp_path):
    rows = [{"a": 1, "b": 2.5}, {"a": 3, "b": float("nan")}]
    benchkit.write_csv(tmp_path / "r.csv", rows, ["a", "b"], "Measured on X, 2026-01-01, with `y`")
    back, provenance = benchkit.read_csv(tmp_path / "r.csv")
    assert provenance == "Measured on X, 2026-01-01, with `y`" and back[0] == {"a": "1", "b": "2.5"}
    assert benchkit.number(back[1]["b"]) != benchkit.number(back[1]["b"])  # nan
    begin, end = benchkit.block_markers("t.md")
    doc = tmp_path / "doc.md"
    doc.write_text(f"intro\n{begin}\nold\n{end}\noutro\n")
    assert benchkit.embed(doc, "t.md", "| new |") and not benchkit.embed(doc, "t.md", "| new |")
    assert doc.read_text() == f"intro\n{begin}\n| new |\n{end}\noutro\n"
    with pytest.raises(ValueError, match="no block 'other.md'"):
        benchkit.embed(doc, "other.md", "x")
    (tmp_path / "bare.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="no '# ...' provenance line"):
        benchkit.read_csv(tmp_path / "bare.csv")


@pytest.mark.parametrize("doc, block, csv_path, tool, render, doc_render", [
    ("README.md", "bench.md", "docs/bench/bench.csv", "bench", "markdown", "readme_markdown"),
    ("docs/performance.md", "matmul.md", "docs/perf/matmul.csv", "bench_matmul", "markdown", "markdown"),
    ("docs/performance.md", "codegen.md", "docs/perf/codegen.csv", "bench_matmul", "codegen_markdown",
     "codegen_markdown"),
])
def test_the_tables_in_the_docs_are_what_the_tools_make_of_their_csv(benchkit, doc, block, csv_path, tool, render,
                                                                     doc_render):
    rows, provenance = benchkit.read_csv(ROOT / csv_path)
    made = getattr(load(tool), render)(rows, provenance)
    in_doc = getattr(load(tool), doc_render)(rows, provenance)
    assert benchkit.embedded_block(ROOT / doc, block) == in_doc.strip("\n"), (
        f"{doc} is out of step with {csv_path}: run python scripts/{tool}.py --render {csv_path}")
    md = (ROOT / csv_path).with_suffix(".md")
    assert md.read_text() == made, f"{md} is out of step with {csv_path}"
    assert re.match(r"(Measured on|Compiled for) .*\b20\d\d-\d\d-\d\d\b", provenance), "device and date"
    assert not re.search(r"\d\d:\d\d", provenance), "dates, not times of day"


def test_docs_hold_no_run_logs_and_name_no_tracker_numbers():
    assert not list((ROOT / "docs").rglob("*.log"))
    pattern = re.compile(r"\b[Ii]ssue \d+|\b[Rr]ound \d\b|(?<![\w&])#\d+\b")
    offenders = []
    for path in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *SCRIPTS.rglob("*.py"), *SCRIPTS.rglob("*.sh"),
                 *SCRIPTS.rglob("*.cu"), *(ROOT / "numbakern").rglob("*.py"), *(ROOT / "translate").rglob("*.py")]:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


# ---------------------------------------------------------------------------------------------------------------
# the matmul study's variants and its reference C


def test_study_variants_are_named_once_and_end_with_cublas(study):
    variants = study.all_variants(sweep=True, chosen={})
    names = [v.name for v in variants]
    assert len(names) == len(set(names))
    assert study.CUBLAS in names
    assert {v.group for v in variants} <= {"lecture", "flagship", "reference C", "peer", "sweep"}
    for v in variants:  # every variant is checked on at least two shapes, one of them not a multiple of 4 in h or w
        accepted = [s for s in study.CHECK_SHAPES if v.accepts(*s)]
        assert len(accepted) >= 2, v.name
    assert any(s[0] % 4 or s[2] % 4 for s in study.CHECK_SHAPES)
    assert not study.async_shapes(6, 8, 8) and not study.vec_shapes(8, 6, 8) and study.any_shape(1, 1, 1)


def test_reference_launchers_are_the_ones_the_study_calls(study):
    for cu in ("lecture.cu", "sgemm.cu"):
        declared = set(re.findall(r'extern "C" cudaError_t (launch_\w+)\(', (study.REFERENCE / cu).read_text()))
        timed = rf'reference_c\("{re.escape(cu)}", "(launch_\w+)"'
        used = set(re.findall(timed, (SCRIPTS / "bench_matmul.py").read_text()))
        assert used == declared, f"{cu}: declared {sorted(declared)}, timed {sorted(used)}"


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (compile only, no GPU)")
def test_reference_cuda_c_builds_and_exports_its_launchers(study, tmp_path):
    import ctypes

    from translate.verify.build import build_shared_library

    for cu in ("lecture.cu", "sgemm.cu"):
        source = study.REFERENCE / cu
        so = build_shared_library(source, arch="sm_90", cache_dir=tmp_path)
        try:
            lib = ctypes.CDLL(str(so))
        except OSError as exc:  # the CUDA runtime is linked in; without a driver some systems refuse to load it
            pytest.skip(f"cannot load {so.name} here: {exc}")
        for symbol in re.findall(r'extern "C" cudaError_t (launch_\w+)\(', source.read_text()):
            assert hasattr(lib, symbol), f"{cu} does not export {symbol}"


def test_ptx_counting(study):
    ptx = """
.version 9.0
.target sm_90
.visible .entry k(
\t.param .u64 k_param_0,
\t.param .u32 k_param_1
)
{
\tselp.b64 %rd1, %rd2, %rd3, %p1;
\tadd.s64 %rd4, %rd1, 1;   // a comment: add.s64 fma.rn.f32
\tfma.rn.ftz.f32 %f1, %f2, %f3, %f4;
\tld.shared.v4.f32 {%f1, %f2, %f3, %f4}, [%r1];
\tld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];
\tld.global.f32 %f5, [%rd1];
}
"""
    counts = study.ptx_counts(ptx)
    assert counts["params"] == 2 and counts["wrap_selects"] == 1 and counts["int64_ops"] == 1
    assert counts["fma_f32"] == 1 and (counts["ld_shared"], counts["ld_shared_v4"]) == (1, 1)
    assert (counts["ld_global"], counts["ld_global_v4"]) == (2, 1)
    entries = load("benchkit").split_entries(ptx + ptx.split(".target sm_90", 1)[1].replace("entry k(", "entry k2("))
    assert [name for name, _ in entries] == ["k", "k2"] and all(".target sm_90" in text for _, text in entries)


def test_the_numba_cuda_mlir_column_is_like_for_like_and_says_why_a_kernel_is_missing(rng):
    """bench_mlir puts numba-cuda-mlir beside the C timed in its own run, only at the size that run timed, and a
    kernel numba-cuda-mlir could not type gets the name it could not resolve."""
    bm = load("bench_mlir")
    mlir_ms, c_ms = float(rng.uniform(0.1, 1)), float(rng.uniform(0.1, 1))
    mlir = {"kernels": [
        {"kernel": "vector_add", "bench_size": {"n": 64}, "mlir_ms": mlir_ms, "c_ms": c_ms, "c_vs_mlir_ok": True},
        {"kernel": "reduce_sum", "error": "numba-cuda-mlir: TypingError: Failed in mlir mode pipeline",
         "traceback": "...\nUntyped global name 'vload4': Cannot determine Numba type of <class '_Intrinsic'>\n"}]}
    bench_rows = [{"kernel": "vector_add", "size": "64", "numba_ms": 1.0, "c_ms": 0.9},
                  {"kernel": "vector_add", "size": "128", "numba_ms": 2.0, "c_ms": 1.8},
                  {"kernel": "reduce_sum", "size": "64", "numba_ms": 1.0, "c_ms": 0.9},
                  {"kernel": "transpose", "size": "8", "numba_ms": 1.0, "c_ms": 0.9}]
    rows = bm.merge(bench_rows, mlir)
    assert [r["kernel"] for r in rows] == ["vector_add", "vector_add", "reduce_sum"]
    assert rows[0]["mlir_ms"] == mlir_ms and rows[0]["mlir_vs_c"] == round(c_ms / mlir_ms, 3)
    assert rows[1]["mlir_ms"] is None and rows[1]["mlir_note"] == "mlir_gpu.py timed size 64"
    assert rows[2]["mlir_note"] == "numba-cuda-mlir cannot type `vload4` (a numba-cuda intrinsic)"


def test_the_numba_cuda_mlir_column_takes_each_size_mlir_gpu_timed(rng):
    """mlir_gpu.py times every benchmark size: each bench.py row gets numba-cuda-mlir's time at its own size."""
    bm = load("bench_mlir")
    t = [float(v) for v in rng.uniform(0.1, 1, 4)]
    mlir = {"kernels": [{"kernel": "vector_add", "timings": [
        {"size": {"n": 64}, "mlir_ms": t[0], "c_ms": t[1]}, {"size": {"n": 128}, "mlir_ms": t[2], "c_ms": t[3]}]}]}
    bench_rows = [{"kernel": "vector_add", "size": s, "numba_ms": 1.0, "c_ms": 0.9} for s in ("64", "128", "256")]
    rows = bm.merge(bench_rows, mlir)
    assert [(r["mlir_ms"], r["mlir_run_c_ms"]) for r in rows] == [(t[0], t[1]), (t[2], t[3]), (None, None)]
    assert rows[1]["mlir_vs_c"] == round(t[3] / t[2], 3)
    assert rows[2]["mlir_note"] == "mlir_gpu.py timed size 64, 128"


def test_mlir_gpu_prints_one_line_per_kernel_and_size(monkeypatch):
    monkeypatch.setenv("NUMBAKERN_FRONTEND", "numba-cuda")  # mlir_gpu.py's default would outlive this test
    mg = load("mlir_gpu")
    rows = [{"kernel": "softmax", "mlir_runs": True, "mlir_vs_numpy": "ok", "c_vs_mlir_max_err": 2e-7,
             "c_vs_mlir_ok": True, "error": None, "timings": [
                 {"size": {"rows": 4096, "n": 1024}, "mlir_ms": 0.5, "c_ms": 0.25},
                 {"size": {"rows": 64, "n": 7}, "mlir_ms": 0.01, "c_ms": None}]},
            {"kernel": "matmul_bf16", "mlir_runs": True, "mlir_vs_numpy": "MISMATCH", "c_vs_mlir_max_err": None,
             "c_vs_mlir_ok": None, "error": None, "timings": []}]
    lines = mg.table(rows)
    assert len(lines) == 4 and lines[0].startswith("kernel")
    assert re.search(r"softmax .*\| 4096×1024 +\| 0\.5000 +\| 0\.2500 +\| 0\.50$", lines[1]), lines[1]
    assert re.search(r"^ +\|.*\| 64×7 +\| 0\.0100 +\| - +\| -$", lines[2]), lines[2]
    assert re.search(r"matmul_bf16 .*MISMATCH .*no C", lines[3]), lines[3]


# ---------------------------------------------------------------------------------------------------------------
# the torch column: torch's default dispatch, named, and torch's other backends beside it (run here on CPU tensors)


def _cpu_tensors(torch, case):
    import numpy as np

    return [torch.from_numpy(a.copy()) if isinstance(a, np.ndarray) else a for a in case.args]


@pytest.mark.parametrize("name", ["attention_bf16_d64_causal", "attention_d128"])
def test_attention_rows_time_torchs_default_dispatch_and_its_other_backends(bench, rng, name, capsys):
    """The torch column is the default ``F.scaled_dot_product_attention`` and names what it ran (on CPU tensors, the
    ATen operator it dispatched to); each SDPA backend that takes the inputs is a peer, named, computing the same."""
    torch = pytest.importorskip("torch")
    from numbakern import get

    spec = get(name)
    tensors = _cpu_tensors(torch, spec.make_case({"bh": 2, "lq": 19, "lk": 23}, rng, "normal"))
    run, label = bench.torch_equivalent(spec, tensors)
    assert "default dispatch" in label
    assert "scaled_dot_product" in bench.kernels_ran(torch, run)
    peers = bench.peer_impls(torch, spec, tensors, run)
    assert {"sdpa_flash_attention", "sdpa_math"} <= set(peers)  # (the CPU has no cuDNN or memory-efficient kernel)
    assert "SDPA CUDNN_ATTENTION unavailable" in capsys.readouterr().out
    want = run().double()
    for key, (fn, peer) in peers.items():
        assert peer.startswith("SDPA ") and "(ran aten::" in peer, peer
        torch.testing.assert_close(fn().double(), want, rtol=0.02, atol=0.02, msg=key)


@pytest.mark.parametrize("name, label", [
    # as torch's profiler named them on an H200: CUTLASS's fp32 SDPA kernel, a translated kernel's template
    ("fmha_cutlassF_f32_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel<float, cutlass::arch::Sm80>)",
     "fmha_cutlassF_f32_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel[float, cutlass::arch::Sm80])"),
    ("void cutlass::Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(cutlass_80_simt_sgemm_256x128_8x4_nn_align1)",
     "cutlass::Kernel2[cutlass_80_simt_sgemm_256x128_8x4_nn_align1](cutlass_80_simt_sgemm_256x128_8x4_nn_align1)"),
    ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"),
])
def test_kernel_names_become_cells_that_merge_takes(bench, name, label):
    assert bench.kernel_label(name) == label
    assert not bench._NOT_IN_CELLS.search(label)


def test_matmul_rows_name_the_kernel_torch_ran(bench, rng):
    """The matmul rows' torch column names what ran; the BLAS libraries' peers exist only where torch has a GPU."""
    torch = pytest.importorskip("torch")
    from numbakern import get

    spec = get("matmul_flagship")
    tensors = _cpu_tensors(torch, spec.make_case({"h": 9, "k": 7, "w": 5}, rng, "normal"))
    run, label = bench.torch_equivalent(spec, tensors)
    assert label == "torch.matmul (TF32 off)" and "aten::mm" in bench.kernels_ran(torch, run)
    if not torch.cuda.is_available():
        assert not any(key.startswith("blas_") for key in bench.peer_impls(torch, spec, tensors, run))


def test_split_3xtf32_row_compares_with_sgemm_of_the_values_its_parts_make_up(bench, rng):
    """matmul_3xtf32_wgmma takes the split parts of A and B^T: its torch column multiplies the fp32 matrices they
    make up (the float64 product of the parts, to fp32's accuracy), and no peer reads the 3-D parts as a matrix."""
    torch = pytest.importorskip("torch")
    from numbakern import get

    spec = get("matmul_3xtf32_wgmma")
    tensors = _cpu_tensors(torch, spec.make_case({"h": 9, "k": 12, "w": 8}, rng, "normal"))
    run, label = bench.torch_equivalent(spec, tensors)
    assert "SGEMM" in label
    parts_a, parts_b = tensors[:2]
    want = parts_a.double().sum(0) @ parts_b.double().sum(0).t()
    torch.testing.assert_close(run().double(), want, rtol=1e-5, atol=1e-5)
    assert "triton" not in bench.peer_impls(torch, spec, tensors, run)


def test_sizes_last_times_only_each_kernels_largest_size(bench, monkeypatch, capsys):
    from numbakern import get

    timed = []
    row = {"kernel": "x", "size": "1", "metric": "GFLOP/s", "numba_ms": 1.0, "c_ms": 1.0, "torch_ms": 1.0,
           "c_rate": 1.0, "c_numba_max_rel_diff": 0.0}
    monkeypatch.setattr(bench, "bench_one", lambda torch, spec, size, budget, directory: timed.append(size) or row)
    spec = get("matmul_flagship")
    no_gpu = type("torch", (), {"cuda": type("cuda", (), {"empty_cache": staticmethod(lambda: None)})})
    bench.kernel_rows(no_gpu, spec, 0.1, ROOT, 1.0, sizes="last")
    assert timed == [spec.bench_sizes[-1]] and len(spec.bench_sizes) > 1
    with pytest.raises(SystemExit):
        bench.main(["--sizes", "first"])
    assert "invalid choice: 'first'" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------------------
# bench.py --gpus N, with fake GPUs and a stand-in for the GPU worker

FAKE_BENCH_WORKER = """
import json, os, sys, time
gpu = os.environ["CUDA_VISIBLE_DEVICES"]
rate = {"0": 3000.0, "1": 3010.0}.get(gpu, 2000.0)
copy = {"kernel": "copy", "size": "268435456", "size_keys": "n", "metric": "GB/s", "torch_ms": 0.7,
        "torch_rate": rate, "numba_ms": float("nan"), "c_ms": float("nan"), "numba_rate": float("nan"),
        "c_rate": float("nan"), "c_vs_numba": float("nan"), "torch_vs_c": float("nan"), "c_pct_copy": float("nan"),
        "c_numba_max_rel_diff": float("nan"), "torch_op": "copy", "triton_ms": float("nan"), "peers": ""}
log = open(os.path.join(os.environ["SPANS"], f"gpu{gpu}-{os.getpid()}"), "a")
for line in sys.stdin:
    name = json.loads(line)["spec"]["name"]
    start = time.time()
    time.sleep(0.05)
    rows = [{**copy, "kernel": name, "size": str(k), "c_rate": rate / 2, "c_pct_copy": 50.0, "c_ms": 1.0,
             "numba_ms": 2.0, "torch_ms": 1.0, "c_numba_max_rel_diff": 0.0} for k in range(2)]
    log.write(f"{start} {time.time()}\\n")
    log.flush()
    print(json.dumps({"rows": rows, "copy": copy, "device": f"NVIDIA H100 80GB HBM3 (cc 9.0, gpu {gpu})"}), flush=True)
"""


def test_bench_spread_measures_each_kernel_on_one_gpu_and_one_at_a_time(bench, tmp_path, monkeypatch):
    from numbakern.gpus import fake_list
    from numbakern.registry import get

    (tmp_path / "w.py").write_text(FAKE_BENCH_WORKER)
    spans = tmp_path / "spans"
    spans.mkdir()
    monkeypatch.setenv("SPANS", str(spans))
    specs = [get(k) for k in ("vector_add", "transpose", "softmax", "matmul_tiled", "reduce_sum")]
    used = fake_list('[{"name": "NVIDIA H100 80GB HBM3", "sm_clock_mhz": 1980}, '
                     '{"name": "NVIDIA H100 80GB HBM3", "sm_clock_mhz": 1980}]')
    rows, provenance, failed = bench.bench_spread(specs, used, 0.1, tmp_path,
                                                  worker_argv=[sys.executable, str(tmp_path / "w.py")])
    assert not failed
    assert [(r["kernel"], r["gpu"]) for r in rows[:2]] == [("copy", "GPU 0"), ("copy", "GPU 1")]  # each its own
    kernels = [r["kernel"] for r in rows[2:]]
    assert kernels == [name for s in specs for name in [s.name] * 2]  # in the order of a one-GPU run
    for spec in specs:  # each kernel wholly on one GPU
        assert len({r["gpu"] for r in rows if r["kernel"] == spec.name}) == 1
    assert {r["gpu"] for r in rows[2:]} == {"GPU 0", "GPU 1"}
    for log in spans.iterdir():  # never two measurements on one GPU at once
        spans_of = sorted(tuple(map(float, line.split())) for line in log.read_text().splitlines())
        assert all(a[1] <= b[0] for a, b in zip(spans_of, spans_of[1:]))
    assert len(list(spans.iterdir())) == 2  # one worker process per GPU
    assert "Rows from GPU 0 and GPU 1 are comparable: all 2 are NVIDIA H100 80GB HBM3" in provenance
    assert "GPU 0 3,000 GB/s, GPU 1 3,010 GB/s (0.3% apart)" in provenance
    table = bench.markdown(rows, provenance)
    assert "| GPU | kernel | size |" in table and "| GPU 1 | copy |" in table and "and the same GPU." in table


def test_rows_of_different_models_are_not_called_comparable(bench):
    from numbakern.gpus import fake_list

    mixed = fake_list('["NVIDIA H100 80GB HBM3", "NVIDIA H200"]')
    same, sentence = bench.comparable(mixed, {0: "NVIDIA H100 80GB HBM3 (cc 9.0)", 1: "NVIDIA H200 (cc 9.0)"},
                                      {0: 3000.0, 1: 4400.0})
    assert not same and "NOT comparable" in sentence and "compare rows of one GPU only" in sentence
    twins = fake_list('["NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"]')
    # nvidia-smi says one model, but the workers' drivers disagree: not comparable either
    same, sentence = bench.comparable(twins, {0: "NVIDIA H100 80GB HBM3 (cc 9.0)", 1: "NVIDIA H100 PCIe (cc 9.0)"},
                                      {0: 3000.0, 1: 2000.0})
    assert not same and "drivers name different devices" in sentence


def test_a_one_gpu_table_has_no_gpu_column(bench):
    rows = [{"kernel": "copy", "size": "1", "metric": "GB/s", "gpu": "GPU 0", "torch_ms": 1.0, "torch_rate": 1.0},
            {"kernel": "vector_add", "size": "2", "metric": "GB/s", "gpu": "GPU 0", "c_ms": 1.0, "c_rate": 1.0}]
    table = bench.markdown(rows, "P")
    assert "| GPU |" not in table and "| vector_add | 2 |" in table and "and the same GPU" not in table


@pytest.mark.parametrize("argv, message", [(["--gpus", "3"], "--gpus 3: only 2 GPUs are visible"),
                                           (["--shard", "5/4"], "--shard 5/4: I must be between 1 and N")])
def test_bench_rejects_bad_gpu_and_shard_options(bench, capsys, monkeypatch, tmp_path, argv, message):
    monkeypatch.setenv("NUMBAKERN_FAKE_GPUS", "2")
    monkeypatch.setattr(mode, "gpu_available", lambda: True)
    with pytest.raises(SystemExit) as exc:
        bench.main([*argv, "--out", str(tmp_path)])
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_merge_replaces_the_rerun_kernels_rows_in_place_and_keeps_the_first_runs_copy(bench, benchkit, tmp_path):
    def row(kernel, size, gpu, c_ms):
        return {"kernel": kernel, "size": size, "metric": "GB/s", "gpu": gpu, "c_ms": c_ms}

    fields = ["kernel", "size", "metric", "gpu", "c_ms"]
    benchkit.write_csv(tmp_path / "all.csv", [row("copy", "1", "GPU 0", 1.0), row("a", "8", "GPU 0", 2.0),
                                              row("a", "9", "GPU 0", 3.0), row("b", "8", "GPU 1", 4.0)],
                       fields, "Measured on X, 2026-01-01, with `all`")
    benchkit.write_csv(tmp_path / "again.csv", [row("copy", "1", "GPU 0", 9.0), row("a", "8", "GPU 1", 5.0),
                                                row("c", "7", "GPU 0", 6.0)],
                       fields, "Measured on X, 2026-01-02, with `again`")
    rows, provenance = bench.merge([tmp_path / "all.csv", tmp_path / "again.csv"])
    assert [(r["kernel"], r["size"], r["c_ms"]) for r in rows] == [
        ("copy", "1", "1.0"), ("a", "8", "5.0"), ("b", "8", "4.0"), ("c", "7", "6.0")]
    assert provenance == ("Measured on X, 2026-01-01, with `all` Then a, c, measured in a later run (their rows "
                          "replace any earlier ones): Measured on X, 2026-01-02, with `again`")
    with pytest.raises(SystemExit) as exc:
        bench.main(["--merge", str(tmp_path / "all.csv")])
    assert exc.value.code == 2


def test_merging_another_shard_adds_its_rows_and_says_so(bench, benchkit, tmp_path):
    fields = ["kernel", "size", "metric", "gpu", "c_ms"]
    for name, kernel in (("one", "a"), ("two", "b")):
        benchkit.write_csv(tmp_path / f"{name}.csv", [{"kernel": kernel, "size": "8", "metric": "GB/s", "gpu": "GPU 0",
                                                      "c_ms": 1.0}], fields, f"Measured with `shard {name}`")
    rows, provenance = bench.merge([tmp_path / "one.csv", tmp_path / "two.csv"])
    assert [r["kernel"] for r in rows] == ["a", "b"]
    assert provenance == "Measured with `shard one` Then b, added from another run or shard: Measured with `shard two`"


@pytest.mark.parametrize("argv, command", [
    ([], "python scripts/bench.py"),
    (["--gpus", "2", "--shard", "1/2", "--budget", "0.3"], "python scripts/bench.py --gpus 2 --shard 1/2 --budget 0.3"),
    (["--kernels", "softmax", "--sizes", "last"], "python scripts/bench.py --kernels softmax --sizes last"),
])
def test_the_provenance_names_the_options_that_chose_what_was_measured(bench, argv, command):
    assert bench.command_line(bench.build_parser().parse_args(argv)) == command
