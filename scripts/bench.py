#!/usr/bin/env python
"""Benchmark every registered kernel: the Numba kernel, its translated CUDA C and the torch/cuBLAS equivalent.

    python scripts/bench.py [--kernels matmul_tiled ...] [--budget 0.8] [--out DIR]
    python scripts/bench.py --gpus 2                           # the kernels shared out over two GPUs
    python scripts/bench.py --shard 2/4                        # one host's share (a CI matrix, a job array)
    python <numbakern>/scripts/bench.py                        # in a user's project: the project's kernels

Inside a user's project (``[tool.numbakern]`` in the current folder's or a parent's ``pyproject.toml``) the kernels
are the project's and their ``.cu`` files come from the project's folder (``numbakern.project``); results then go to
``bench/`` in the project (a kernel's torch equivalent is the one its declaration names, if any).
    python scripts/bench.py --render docs/bench/bench.csv     # Markdown, chart and README table from a CSV (no GPU)
    python scripts/bench.py --merge all.csv rerun.csv --out docs/bench   # one table from several runs (no GPU)

For each kernel and each of its ``bench_sizes`` (the lecture's 5120×256 @ 256×5120 and 4096³ for the matmuls;
``--sizes last``: the largest only), the three implementations run on the same device tensors: the Numba kernel, the
kernel's ``.cu`` from ``generated_cuda/`` (its manifest launcher, built with ``nvcc -shared`` and called through
ctypes) and the torch operation that computes the same thing, timed with CUDA events (``numbakern.bench.do_bench``);
fp32 matmuls with TF32 off. Before the timing, the C's output is compared with Numba's at the benchmark size. For
attention and matmul rows the torch column is torch's default dispatch (``F.scaled_dot_product_attention``,
``torch.matmul``), the row names the kernels it ran (torch's profiler, once per size), and torch's other SDPA backends
and BLAS libraries are timed beside it ("other implementations").

With ``--gpus N`` each kernel is measured wholly on one GPU, by one worker process per GPU (``CUDA_VISIBLE_DEVICES``
its GPU alone), one kernel at a time on each, so that no two measurements ever share a GPU; each GPU measures its
own copy bandwidth first, the yardstick of its rows' "share of copy bandwidth". Every row names its GPU. Rows of
different GPUs are said to be comparable only after the GPUs are checked to be one model (``numbakern.gpus.same_model``:
the name, and where ``nvidia-smi`` reports them the memory and the clocks; and the names the workers' drivers give).

Writes ``bench.csv``, ``bench.md`` and ``bench.png`` (with matplotlib) to ``--out`` (default: ``$OUT`` when set,
else ``docs/bench``, where it also refreshes the table in README.md), and prints the table last. With ``$OUT`` set,
everything printed also goes to ``$OUT/bench.log``. Exit status: 0 done, 1 a translated kernel disagreed with
Numba or a kernel could not be measured, 2 no GPU.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import benchkit  # this script's folder

TOOL = "bench.py"
RESULTS = benchkit.ROOT / "docs" / "bench"
README = benchkit.ROOT / "README.md"
FIELDS = ["kernel", "size", "size_keys", "metric", "numba_ms", "c_ms", "torch_ms", "numba_rate", "c_rate", "torch_rate",
          "c_vs_numba", "torch_vs_c", "c_pct_copy", "c_numba_max_rel_diff", "torch_op", "triton_ms", "peers", "gpu"]
NUMERIC = ("numba_ms", "c_ms", "torch_ms", "numba_rate", "c_rate", "torch_rate", "c_vs_numba", "torch_vs_c",
           "c_pct_copy")
#: the columns every results row has; a kernel cell is a registered kernel's name (or ``copy``), nothing else
REQUIRED = ("kernel", "size", "metric")
_KERNEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,199}$")
#: what a text cell may not hold: it goes into Markdown tables (a column break, HTML, code spans)
_NOT_IN_CELLS = re.compile(r"[|<>`\x00-\x1f\x7f]")
#: seconds of timed samples per implementation and size, unless --budget says otherwise
DEFAULT_BUDGET = 0.8
#: no results file is larger
MAX_CSV_BYTES = 16 << 20
#: the largest relative difference between the translated C and Numba at a benchmark size that counts as agreement
AGREEMENT = 1e-4
#: matmul kernels that take A transposed (their first argument is k×h): ``out = mt.T @ n``
TRANSPOSED_A = ("matmul_flagship_async", "matmul_pipelined_at")


def torch_equivalent(spec, tensors):
    """``(fn, description)``: the torch operation that computes what ``spec``'s kernel computes, on its tensors."""
    import torch

    if spec.baseline is not None:  # the spec names its own (KernelSpec.baseline)
        return spec.baseline(*tensors)
    if spec.namespace != "library":  # a user's kernel: the rules below know only the library's kernels
        return None, ""
    arrays = [a for a in tensors if isinstance(a, torch.Tensor)]
    if spec.name in TRANSPOSED_A:  # out = mt.T @ n: cuBLAS takes the transposed operand as it is
        mt, n, out = arrays[:3]
        return (lambda: torch.matmul(mt.t(), n, out=out)), "torch.matmul of mt.t() (TF32 off)"
    if spec.family == "matmul":
        m, n, out = arrays[:3]
        return (lambda: torch.matmul(m, n, out=out)), "torch.matmul (TF32 off)"
    if spec.name == "vector_add":
        a, b, out = arrays
        return (lambda: torch.add(a, b, out=out)), "torch.add"
    if spec.family == "reduce":
        return (lambda: torch.sum(arrays[0])), "torch.sum"
    if spec.family == "transpose":
        return (lambda: arrays[0].t().contiguous()), ".t().contiguous()"
    return None, ""


#: the families whose torch column names the kernels torch ran, with torch's other backends beside it
NAMED_FAMILIES = ("attention", "matmul")


def kernels_ran(torch, fn) -> str:
    """What one call of ``fn`` ran, from torch's profiler: the CUDA kernels it launched (which SDPA backend, which
    cuBLAS or cuBLASLt kernel), or where nothing ran on a GPU (CPU tensors) the ATen operators it dispatched to."""
    from torch.profiler import ProfilerActivity, profile

    cuda = torch.cuda.is_available()
    try:
        with profile(activities=[ProfilerActivity.CUDA if cuda else ProfilerActivity.CPU]) as prof:
            fn()
            if cuda:
                torch.cuda.synchronize()
        events = prof.key_averages()
    except Exception as exc:  # noqa: BLE001 - a profiler that cannot trace here: the row says so
        return f"profiler unavailable: {type(exc).__name__}"
    kind = "CUDA" if cuda else "CPU"
    names = [e.key for e in events if e.device_type.name == kind and e.key and not e.key.startswith("cudaDevice")]
    if not cuda:  # the operator that did the work: the innermost ATen calls, not the wrappers around them
        names = [n for n in names if n.startswith("aten::_") or n in ("aten::mm", "aten::bmm", "aten::addmm")]
    names = sorted(set(map(kernel_label, names)), key=len)
    return "; ".join(n[:90] for n in names[:3]) or f"no {kind} kernel seen"


def kernel_label(name: str) -> str:
    """A CUDA kernel's name as a table cell: a demangled C++ name without ``void``, its template brackets as square
    ones (``<`` and ``>`` are not table text: ``merge`` refuses them; the template arguments often say the most, as
    in ``cutlass::Kernel2[cutlass_80_simt_sgemm_256x128_8x4_nn_align1]``)."""
    return name.removeprefix("void ").replace("<", "[").replace(">", "]")


_TRITON: dict = {}


def peer_impls(torch, spec, tensors, baseline=None) -> dict:
    """Implementations timed beside the three, in the same run: Triton (fp32 ieee) for the fp32 matmuls (none where
    Triton is missing); torch's other BLAS library (cuBLAS and cuBLASLt) for every matmul and each of torch's SDPA
    backends for attention (``bench_tc.backend_peers``: the kernels each ran named); the tensor-core matmuls'
    peers (``bench_tc.tensor_core_peers``). ``{key: (launch, label)}``; ``baseline`` is the torch column's call."""
    arrays = [a for a in tensors if isinstance(a, torch.Tensor)]
    out = {}
    # (the fp32 Triton kernel here; the 16-bit matmuls' Triton and Hopper peers come from bench_tc)
    # (2-D operands: not the split parts that matmul_3xtf32_wgmma takes)
    if (spec.family == "matmul" and spec.name not in TRANSPOSED_A and arrays[0].dtype == torch.float32
            and arrays[0].dim() == 2):
        if "make" not in _TRITON:  # one autotuned Triton kernel for every matmul row
            import bench_matmul  # this script's folder

            _TRITON["make"] = bench_matmul.triton_variant()
        if _TRITON["make"] is not None:
            m, n, o = arrays[:3]
            launch = _TRITON["make"](m, n, o.clone(), m.shape[0], m.shape[1], n.shape[1])
            out["triton"] = (launch, "Triton tl.dot ieee, autotuned")
    import bench_tc  # this script's folder: the tensor-core matmuls' peers, torch's other backends

    out.update(bench_tc.tensor_core_peers(torch, spec, arrays))
    if baseline is not None and spec.family in NAMED_FAMILIES:
        out.update(bench_tc.backend_peers(torch, spec.family, baseline, lambda fn: kernels_ran(torch, fn)))
    return out


def implementations(torch, spec, size, directory: Path = benchkit.ROOT / "generated_cuda"):
    """``(tensors, impls, torch_op)``: ``spec``'s case at ``size`` (seeded, uniform) as torch CUDA tensors, and a
    zero-argument launch on them of each implementation there is: ``numba``, ``c`` (the kernel's ``.cu`` in
    ``directory``) and ``torch`` (its torch equivalent, described by ``torch_op``)."""
    import numpy as np
    from numba import cuda

    from numbakern.tensormap import launch_arguments
    from translate.verify.abi import AbiError

    case = spec.make_case(size, np.random.default_rng(0), "uniform")
    tensors = [torch.from_numpy(a).cuda() if isinstance(a, np.ndarray) else a for a in case.args]
    cfg = case.launch
    numba_args = [cuda.as_cuda_array(t) if isinstance(t, torch.Tensor) else t for t in tensors]
    # the tensor maps of the kernels that take them (the Hopper matmuls), made from these arrays once
    numba_args = launch_arguments(spec.kernel, spec.arg_names(), numba_args, cfg.shared_bytes, cuda.to_device)
    numba_kernel = spec.kernel[cfg.grid, cfg.block, 0, cfg.shared_bytes]
    impls = {"numba": lambda: numba_kernel(*numba_args)}
    try:
        impls["c"] = benchkit.translated_launch(spec, tensors, cfg.grid, cfg.block, cfg.shared_bytes,
                                                directory=directory)
    except (LookupError, AbiError) as exc:
        print(f"  {spec.name}: no translated C to run ({exc})", flush=True)
    torch_fn, torch_op = torch_equivalent(spec, tensors)
    if torch_fn is not None:
        impls["torch"] = torch_fn
        if spec.family in NAMED_FAMILIES:  # once per shape: which kernel torch's default dispatch chose
            torch_op = f"{torch_op}; ran {kernels_ran(torch, torch_fn)}"
    return tensors, impls, torch_op


def bench_one(torch, spec, size, budget: float, directory: Path = benchkit.ROOT / "generated_cuda") -> dict:
    from numbakern.bench import do_bench, rate  # numbakern chooses the CUDA target when imported: after the GPU check

    tensors, impls, torch_op = implementations(torch, spec, size, directory)
    initial = {i: tensors[i].clone() for i in spec.outputs}

    def reset_outputs():
        for i in spec.outputs:
            if i in spec.accumulates:
                tensors[i].copy_(initial[i])
            else:
                tensors[i].fill_(float("nan"))

    agreement = float("nan")
    if "c" in impls:
        reset_outputs()
        impls["c"]()
        torch.cuda.synchronize()
        c_out = {i: tensors[i].double().clone() for i in spec.outputs}
        reset_outputs()
        impls["numba"]()
        torch.cuda.synchronize()
        agreement = max(float(((c_out[i] - tensors[i].double()).abs().max()
                               / tensors[i].double().abs().max().clamp_min(1e-30)).item()) for i in spec.outputs)

    work = spec.work(size)
    row = {"kernel": spec.name, "size": "×".join(str(v) for v in size.values()), "size_keys": ",".join(size),
           "metric": rate(work, 1.0)[1], "torch_op": torch_op, "c_numba_max_rel_diff": agreement}
    for name in ("numba", "c", "torch"):
        ms = do_bench(impls[name], budget) if name in impls else float("nan")
        row[f"{name}_ms"] = ms
        row[f"{name}_rate"] = rate(work, ms)[0]
    row["c_vs_numba"] = row["numba_ms"] / row["c_ms"]
    row["torch_vs_c"] = row["c_ms"] / row["torch_ms"]
    peers = []
    for key, (fn, label) in peer_impls(torch, spec, tensors, impls.get("torch")).items():
        ms = do_bench(fn, budget)
        peers.append(f"{label}: {ms:.3f} ms")
        if key == "triton":
            row["triton_ms"] = ms
    import bench_tc

    accuracy = bench_tc.accuracy_note(torch, spec, tensors, impls)
    row["peers"] = "; ".join(peers + ([accuracy] if accuracy else []))
    return row


def copy_bandwidth(budget: float, n: int = 1 << 28) -> dict:
    """A row with the device's copy bandwidth as this run measures it: ``dst.copy_(src)`` of ``n`` floats, counted
    as bytes read plus bytes written (the yardstick for the memory-bound kernels' GB/s)."""
    import torch

    from numbakern.bench import do_bench  # numbakern chooses the CUDA target when imported: after the GPU check

    src = torch.rand(n, device="cuda")
    dst = torch.empty_like(src)
    ms = do_bench(lambda: dst.copy_(src), budget)
    nan = float("nan")
    row = {"kernel": "copy", "size": str(n), "size_keys": "n", "metric": "GB/s",
           "torch_op": "Tensor.copy_ (bytes read + written)", "torch_ms": ms, "torch_rate": 8.0 * n / (ms * 1e-3) / 1e9}
    row.update({k: nan for k in ("numba_ms", "c_ms", "numba_rate", "c_rate", "c_vs_numba", "torch_vs_c",
                                 "c_pct_copy", "c_numba_max_rel_diff", "triton_ms")})
    row["peers"] = ""
    src = dst = None  # the buffers' memory back before the next row
    torch.cuda.empty_cache()
    return row


def markdown(rows, provenance: str) -> str:
    """The results table, headed by where and when it was measured."""
    def cell(ms, rate):
        return "n/a" if math.isnan(ms) else f"{ms:.3f} ms ({rate:,.0f})"

    def ratio(x, suffix=""):
        return "" if math.isnan(x) else f"{x:.2f}{suffix}"

    header = ("kernel", "size", "unit", "Numba", "translated C", "torch/cuBLAS", "C speed-up over Numba",
              "C time / torch time", "C share of copy bandwidth")
    several = len({r.get("gpu") or "" for r in rows}) > 1  # rows of several GPUs: each names its own
    lines = [provenance, "", "| " + " | ".join(("GPU",) * several + header) + " |",
             "|---" * several + "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        n = {k: benchkit.number(r.get(k, "nan")) for k in NUMERIC}
        share = "" if math.isnan(n["c_pct_copy"]) else f"{n['c_pct_copy']:.0f}%"
        gpu = f"| {r.get('gpu') or ''} " if several else ""
        lines.append(f"{gpu}| {r['kernel']} | {r['size']} | {r['metric']} | {cell(n['numba_ms'], n['numba_rate'])} | "
                     f"{cell(n['c_ms'], n['c_rate'])} | {cell(n['torch_ms'], n['torch_rate'])} | "
                     f"{ratio(n['c_vs_numba'], '×')} | {ratio(n['torch_vs_c'])} | {share} |")
    lines += ["", ("Throughput in parentheses (GFLOP/s or GB/s). \"C speed-up over Numba\" = Numba time / C time; "
                   "\"C time / torch time\" > 1 means torch is faster; the share of copy bandwidth compares a "
                   "memory-bound kernel's GB/s (bytes it must read + write) with the `copy` row of the same run"
                   + (" and the same GPU." if several else "."))]
    peers = [r for r in rows if r.get("peers")]
    if peers:  # Triton beside the matmuls, torch's SDPA backends beside attention
        lines += ["", "Other implementations timed in the same run:", "", "| kernel | size | torch op | timings |",
                  "|---|---|---|---|"]
        lines += [f"| {r['kernel']} | {r['size']} | {r.get('torch_op', '')} | {r['peers']} |" for r in peers]
    return "\n".join(lines) + "\n"


def readme_markdown(rows, provenance: str) -> str:
    """The README's table: each kernel at its largest benchmark size (the last timed), the copy row, and where the
    whole table is."""
    last: dict[str, dict] = {}
    for r in rows:
        last[r["kernel"]] = r
    table = markdown([{**r, "peers": ""} for r in last.values()], provenance)
    return table + ("\nEvery size, and the other implementations timed beside them (Triton, torch's attention "
                    "backends): [docs/bench/bench.md](docs/bench/bench.md).\n")


def family_of(kernel: str) -> str:
    """The registered family of a benchmarked kernel ("copy" for the bandwidth row, "other" if unregistered). Only
    names are looked up (the library's registry), never a module: rendering data imports nothing."""
    import numbakern

    if not _KERNEL_NAME.match(kernel):
        return "other"
    try:
        return numbakern.get(kernel).family
    except (KeyError, LookupError):
        return "copy" if kernel == "copy" else "other"


def chart(rows, path: Path, provenance: str) -> bool:
    """A panel per kernel family: each implementation's throughput relative to torch's."""
    panels: dict[str, list] = {}
    for r in rows:
        if r["kernel"] != "copy":
            panels.setdefault(family_of(r["kernel"]), []).append(r)
    made = []
    for family, members in panels.items():
        series = {label: [_ratio(benchkit.number(r.get(f"{name}_rate", "")), benchkit.number(r.get("torch_rate", "")))
                          for r in members]
                  for name, label in (("numba", "Numba"), ("c", "translated C"), ("torch", "torch/cuBLAS"))}
        made.append((family, [f"{r['kernel']} {r['size']}" for r in members], series))
    return benchkit.panel_chart(path, made, "throughput relative to torch/cuBLAS",
                                f"python scripts/bench.py. {benchkit.where_and_when(provenance)}", log=True)


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else float("nan")


def read_results(path: str | os.PathLike) -> tuple[list[dict], str]:
    """``(rows, provenance)`` of a results CSV, checked as data before anything is made of it: a UTF-8 file of at
    most 16 MiB with a provenance line, every row with the columns ``REQUIRED`` and no others than its header's,
    a kernel cell that is a kernel's name (``matmul_tiled``: never ``module:attribute``, nothing is imported), numeric
    cells that are numbers (or ``nan``) not below zero, and text cells with no Markdown or HTML syntax. A
    ``ValueError`` naming the file, the row and the cell otherwise."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: not a file" if path.exists() else f"{path}: no such file")
    if path.stat().st_size > MAX_CSV_BYTES:
        raise ValueError(f"{path}: larger than {MAX_CSV_BYTES >> 20} MiB, which no results file is")
    try:
        rows, provenance = benchkit.read_csv(path)
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text") from None
    except csv.Error as e:
        raise ValueError(f"{path}: not CSV ({e})") from None
    for n, row in enumerate(rows, start=1):
        where = f"{path}, row {n}"
        if None in row:
            raise ValueError(f"{where}: more cells than the header has columns")
        missing = [k for k in REQUIRED if not row.get(k)]
        if missing:
            raise ValueError(f"{where}: no {', '.join(missing)} (every row has {', '.join(REQUIRED)})")
        if not _KERNEL_NAME.match(row["kernel"]):
            raise ValueError(f"{where}: the kernel {row['kernel']!r} is not a kernel's name (such as matmul_tiled)")
        for key, cell in row.items():
            if cell is None:
                raise ValueError(f"{where}: fewer cells than the header has columns")
            if key in NUMERIC and cell != "":
                try:
                    value = float(cell)
                except ValueError:
                    raise ValueError(f"{where}: {key} is {cell!r}, not a number") from None
                if value < 0 or math.isinf(value):
                    raise ValueError(f"{where}: {key} is {cell}, not a time, rate or ratio")
            elif _NOT_IN_CELLS.search(cell):
                raise ValueError(f"{where}: {key} {cell!r} holds a character that is not text for a table")
    return rows, provenance


def publish(rows, provenance: str, out: Path) -> str:
    """bench.md and bench.png next to bench.csv; README.md's table too for the repository's results."""
    md = markdown(rows, provenance)
    benchkit.publish(out, "bench", md, lambda png: chart(rows, png, provenance), README, RESULTS,
                     doc_md=readme_markdown(rows, provenance))
    return md


def merge(paths: Sequence[Path]) -> tuple[list[dict], str]:
    """One table from several runs' CSVs, in order: a later file's rows replace every earlier row of the kernels it
    measured (a re-run of some kernels after a change), and add the kernels no earlier file has (another host's
    shard). ``copy`` rows come from the first file that has one for that GPU: each row's share of copy bandwidth was
    computed in its own run. The provenance names which kernels each run measured."""
    rows: list[dict] = []
    notes = []
    for i, path in enumerate(paths):
        new, provenance = read_results(path)
        kernels = list(dict.fromkeys(r["kernel"] for r in new if r["kernel"] != "copy"))
        copies = {r.get("gpu") for r in rows if r["kernel"] == "copy"}
        kept = [r for r in rows if r["kernel"] not in kernels]
        for r in new:  # a replaced kernel's rows take the place of its first earlier row
            if r["kernel"] == "copy" and r.get("gpu") in copies:
                continue
            kept.append(r)
        order = {k: n for n, k in enumerate(dict.fromkeys(r["kernel"] for r in rows))}
        rows = sorted(kept, key=lambda r: order.get(r["kernel"], len(order)))
        if i == 0:
            notes.append(provenance)
        elif set(kernels) & set(order):
            notes.append(f"Then {', '.join(kernels)}, measured in a later run (their rows replace any earlier ones): "
                         f"{provenance}")
        else:  # nothing replaced: another shard of the run, or another host's
            notes.append(f"Then {', '.join(kernels)}, added from another run or shard: {provenance}")
    return rows, " ".join(notes)


def kernel_rows(torch, spec, budget: float, directory: Path, copy_rate: float, sizes: str = "all") -> list[dict]:
    """Every benchmark size of one kernel (``sizes="last"``: its last, the largest), on this process's GPU; its
    share of copy bandwidth against ``copy_rate``, this GPU's."""
    rows = []
    for size in spec.bench_sizes[-1:] if sizes == "last" else spec.bench_sizes:
        r = bench_one(torch, spec, size, budget, directory=directory)
        r["c_pct_copy"] = 100.0 * r["c_rate"] / copy_rate if r["metric"] == "GB/s" else float("nan")
        rows.append(r)
        torch.cuda.empty_cache()  # this size's tensors are gone with bench_one's closures
        print(row_line(r), flush=True)
    return rows


def row_line(r: dict) -> str:
    where = f"{r['gpu']:<6} " if r.get("gpu") else ""
    return (f"{where}{r['kernel']:<22} {r['size']:<16} numba {r['numba_ms']:9.4f} ms  C {r['c_ms']:9.4f} ms  "
            f"torch {r['torch_ms']:9.4f} ms  C-vs-Numba max rel diff {r['c_numba_max_rel_diff']:.1e}")


def command_line(args) -> str:
    """The command as a results file's provenance names it: the options that choose what was measured and how."""
    words = ["python scripts/bench.py"]
    if args.gpus.strip() != "1":
        words.append(f"--gpus {args.gpus.strip()}")
    if args.shard:
        words.append(f"--shard {args.shard}")
    if args.families:
        words.append(f"--families {' '.join(args.families)}")
    if args.kernels:
        words.append(f"--kernels {' '.join(args.kernels)}" if len(args.kernels) <= 4 else
                     f"--kernels ({len(args.kernels)} names)")
    if args.sizes != "all":
        words.append(f"--sizes {args.sizes}")
    if args.budget != DEFAULT_BUDGET:
        words.append(f"--budget {args.budget:g}")
    return " ".join(words)


def bench_here(specs, budget: float, directory: Path, gpu: str, sizes: str = "all",
               command: str = "python scripts/bench.py") -> tuple[list[dict], str]:
    """Every kernel in this process, on its GPU: ``(rows, provenance)``."""
    began = time.perf_counter()
    torch = benchkit.require_gpu(TOOL)
    provenance = (f"Measured on {benchkit.device_line(torch)}, {benchkit.today()}, with `{command}`; "
                  "median of CUDA-event timings, fp32, TF32 off.")
    print(provenance, flush=True)
    copy = {**copy_bandwidth(budget), "gpu": gpu}
    print(f"copy bandwidth {copy['torch_rate']:,.0f} GB/s ({copy['torch_ms']:.4f} ms, {copy['size']} floats); "
          f"the start (torch, the CUDA context, the yardstick) took {time.perf_counter() - began:.0f} s", flush=True)
    rows = [copy]
    for spec in specs:
        rows += [{**r, "gpu": gpu} for r in kernel_rows(torch, spec, budget, directory, copy["torch_rate"], sizes)]
    return rows, provenance


def worker_main(budget: float, sizes: str = "all") -> int:
    """``--worker``: one GPU's process of ``bench_spread``, a child of ``translate.verify.protocol``: one kernel a
    job (``{"spec": spec_ref, "directory": ...}``), answered with its rows, and this GPU's copy row and device."""
    from translate.verify import protocol

    began = time.perf_counter()
    state: dict = {}

    def answer(job):
        if not state:
            from numbakern import registry  # numbakern chooses the CUDA target when imported: after the GPU check

            state.update(registry=registry, torch=benchkit.require_gpu(TOOL))
        start = None
        if "copy" not in state:  # this GPU's own yardstick, measured before any of its kernels
            state["copy"] = copy_bandwidth(budget)
            start = time.perf_counter() - began  # numbakern, torch, the CUDA context, the yardstick
        torch, copy = state["torch"], state["copy"]
        rows = kernel_rows(torch, state["registry"].from_ref(job["spec"]), budget, Path(job["directory"]),
                           copy["torch_rate"], sizes)
        return {"rows": rows, "copy": copy, "device": benchkit.device_line(torch), "start_seconds": start}

    return protocol.serve(answer)


def comparable(used, devices: dict[int, str], copies: dict[int, float]) -> tuple[bool, str]:
    """Whether the rows of the GPUs ``used`` may be compared with each other, and the sentence that says so: the
    GPUs one model (``numbakern.gpus.same_model``) and their drivers naming the same device; the copy bandwidths
    each measured are quoted, as evidence."""
    from numbakern import gpus as gpu_list

    same, why = gpu_list.same_model(used)
    names = {d.split(" (")[0] for d in devices.values()}
    if same and len(names) > 1:
        same, why = False, "their drivers name different devices: " + ", ".join(sorted(names))
    rates = ", ".join(f"GPU {i} {rate:,.0f} GB/s" for i, rate in sorted(copies.items()))
    spread = (max(copies.values()) / min(copies.values()) - 1) * 100 if len(copies) > 1 else 0.0
    labels = " and ".join(f"GPU {g.index}" for g in used)
    if same:
        return True, (f"Rows from {labels} are comparable: {why}; copy bandwidth {rates} ({spread:.1f}% apart).")
    return False, (f"Rows from {labels} are NOT comparable with each other ({why}): compare rows of one GPU only; "
                   f"copy bandwidth {rates}.")


def bench_spread(specs, used, budget: float, directory: Path, worker_argv=None, sizes: str = "all",
                 command: str = "") -> tuple[list[dict], str, list[str]]:
    """The kernels shared out over the GPUs ``used``, one worker process per GPU, largest first:
    ``(rows, provenance, kernels that could not be measured)``; rows in the order of a run on one GPU, each GPU's
    copy row first. The workers print each row as they measure it, behind their GPU (``[GPU 1#0] ...``)."""
    from numbakern import registry  # (imported by the caller's spec lookup already)
    from translate.verify.pool import Pool, slots_for

    order = {spec.name: k for k, spec in enumerate(specs)}
    jobs = sorted(specs, key=lambda s: (-len(s.bench_sizes), order[s.name]))  # largest first
    results: dict[str, list[dict]] = {}
    copies: dict[int, dict] = {}
    devices: dict[int, str] = {}
    failed: list[str] = []
    argv = worker_argv or [sys.executable, os.path.abspath(__file__), "--worker", "--budget", str(budget), "--sizes",
                           sizes]
    pool = Pool(argv, slots_for(used, {g.index: 1 for g in used}))  # one measurement at a time on each GPU

    def message(spec, slot):
        return {"spec": registry.spec_ref(spec), "directory": str(directory)}

    busy: dict[int, list[float]] = {}  # each GPU's seconds per kernel, for the line on how the work was shared
    started: dict[int, float] = {}  # each GPU's worker's own start (counted in its first kernel's seconds)

    def done(spec, slot, answer, seconds):
        busy.setdefault(slot.gpu.index, []).append(seconds)
        if isinstance(answer.get("start_seconds"), (int, float)):
            started[slot.gpu.index] = answer["start_seconds"]
        gpu = f"GPU {slot.gpu.index}"
        if "error" in answer:
            failed.append(spec.name)
            print(f"{gpu}: {spec.name}: {answer['error']}", flush=True)
            return
        copies.setdefault(slot.gpu.index, {**answer["copy"], "gpu": gpu})
        devices[slot.gpu.index] = answer["device"]
        results[spec.name] = [{**r, "gpu": gpu} for r in answer["rows"]]

    start = time.perf_counter()
    pool.run(jobs, message, done)
    print(f"{time.perf_counter() - start:.0f} s wall; " + "; ".join(
        f"GPU {i}: {len(t)} kernels in {sum(t):.0f} s"
        + (f" (its worker's start {started[i]:.0f} s of it)" if i in started else "")
        for i, t in sorted(busy.items())), flush=True)
    if not copies:
        raise benchkit.NoGPU(TOOL, "no GPU's worker measured anything (its errors are above)")
    _, sentence = comparable(used, devices, {i: c["torch_rate"] for i, c in copies.items()})
    print(sentence, flush=True)
    shown = "; ".join(f"GPU {i}: {d}" for i, d in sorted(devices.items()))
    provenance = (f"Measured on {len(used)} GPUs ({shown}), {benchkit.today()}, with "
                  f"`{command or f'python scripts/bench.py --gpus {len(used)}'}`, each kernel wholly on one GPU, one "
                  f"measurement per GPU at a time; median of CUDA-event timings, fp32, TF32 off. {sentence}")
    rows = [copies[i] for i in sorted(copies)]
    for spec in specs:
        rows += results.get(spec.name, [])
    return rows, provenance, failed


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="folder for bench.csv/.md/.png (default: $OUT, else docs/bench)")
    parser.add_argument("--kernels", nargs="+", metavar="NAME", help="registered kernel names (default: all)")
    parser.add_argument("--families", nargs="+", metavar="FAMILY",
                        help="only these kernel families (matmul, attention, reduce, softmax, norm, ...)")
    parser.add_argument("--budget", type=float, default=DEFAULT_BUDGET,
                        help="seconds of timed samples per implementation and size")
    parser.add_argument("--sizes", choices=("all", "last"), default="all",
                        help="each kernel's benchmark sizes: all, or only the last (the largest)")
    parser.add_argument("--gpus", default="1", metavar="all|N",
                        help="share the kernels out over this many of the visible GPUs, each kernel wholly on one "
                             "(default 1: this process's GPU)")
    parser.add_argument("--shard", metavar="I/N", help="only shard I of N (from 1) of the kernels (a CI matrix, a "
                                                        "job array; the same split on every host)")
    parser.add_argument("--render", metavar="CSV", help="only rewrite bench.md/.png (and README's table) from this CSV")
    parser.add_argument("--merge", nargs="+", metavar="CSV", help="one bench.csv (and its table) in --out from these "
                        "runs' CSVs: a later file's rows replace the earlier rows of the kernels it measured")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)  # one GPU's process of --gpus N
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.budget <= 0:
        parser.error(f"--budget must be positive, got {args.budget}")
    if args.worker:
        return worker_main(args.budget, args.sizes)

    if args.render:
        try:
            rows, provenance = read_results(args.render)
        except (OSError, ValueError) as exc:
            parser.error(f"--render: {exc}")
        print(publish(rows, provenance, Path(args.render).parent))
        return 0
    if args.merge:
        if not args.out:
            parser.error("--merge needs --out (the folder for the merged bench.csv)")
        try:
            rows, provenance = merge(args.merge)
        except (OSError, ValueError) as exc:
            parser.error(f"--merge: {exc}")
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        benchkit.write_csv(out / "bench.csv", rows, FIELDS, provenance)
        print(publish(rows, provenance, out))
        return 0

    from numbakern import gpus as gpu_list
    from numbakern import project as projects
    from translate.verify import shards
    from translate.verify.cli import resolve_gpus, specs_named

    try:
        project = projects.find(Path.cwd())
        specs = specs_named(args.kernels or None, project)
        shard = shards.parse(args.shard) if args.shard else None
    except (KeyError, projects.ProjectError) as exc:
        parser.error(str(exc.args[0]))
    except shards.ShardError as exc:
        parser.error(str(exc))
    if args.families:
        specs = [s for s in specs if s.family in args.families]
    if shard:  # balanced by what each kernel costs: its sizes, each timed for every implementation
        chosen = shards.select([s.name for s in specs], {s.name: len(s.bench_sizes) for s in specs}, shard)
        specs = [s for s in specs if s.name in chosen]
    out = benchkit.out_dir(args.out, RESULTS if project.is_library else project.root / "bench")
    # the library's files are the repository's wherever the script is run from
    generated = benchkit.ROOT / "generated_cuda" if project.is_library else project.out_dir
    benchkit.log_to_out("bench")
    if args.gpus.strip() == "1":
        used = None
    else:
        from numbakern import mode

        if not mode.gpu_available():  # (the check require_gpu makes, without starting CUDA in this process)
            raise benchkit.NoGPU(TOOL, "needs a CUDA GPU, and the CUDA driver reports none on this machine")
        try:
            used = resolve_gpus(args.gpus)
        except gpu_list.GpuListError as exc:
            parser.error(str(exc))
    t0 = time.perf_counter()
    failed: list[str] = []
    if used is None or len(used) == 1:
        rows, provenance = bench_here(specs, args.budget, generated, "GPU 0", args.sizes, command_line(args))
    else:
        rows, provenance, failed = bench_spread(specs, used, args.budget, generated, sizes=args.sizes,
                                                command=command_line(args))
    out.mkdir(parents=True, exist_ok=True)
    benchkit.write_csv(out / "bench.csv", rows, FIELDS, provenance)
    md = publish(rows, provenance, out)
    disagree = [f"{r['kernel']} {r['size']}" for r in rows if r["c_numba_max_rel_diff"] > AGREEMENT]
    print(f"\n{md}\n{len(rows)} rows in {time.perf_counter() - t0:.0f} s; "
          + (f"translated C disagrees with Numba (> {AGREEMENT:g} relative): {', '.join(disagree)}" if disagree
             else "translated C agrees with Numba everywhere it ran")
          + (f"; not measured (errors above): {', '.join(failed)}" if failed else ""))
    return 1 if disagree or failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
