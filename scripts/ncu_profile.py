#!/usr/bin/env python
"""Nsight Compute profiles of registered kernels: one launch each of the Numba kernel, its translated C and the torch
operation it replaces, with the figures that say what limits a kernel.

    python scripts/ncu_profile.py attention_d128 conv2d_5x5 [--size h=4096,w=4096] [--out DIR]
    python scripts/ncu_profile.py --render docs/bench/profile.csv      # profile.md from a CSV: no GPU needed

Needs a CUDA GPU, torch and Nsight Compute (``ncu`` on PATH, or ``$NCU``). The script runs itself under ``ncu`` with
the clocks left as they run (``--clock-control none``, as ``bench.py`` times them) and profiling off except around
the launches it measures: each implementation is launched three times first (compilation, caches), then once
inside ``cudaProfilerStart``/``Stop`` and an NVTX range that names it. Every CUDA kernel launched in that range is
a row (torch's operation may launch more than one). The inputs are those of ``bench.py`` (seeded, uniform) at the
kernel's last benchmark size, or at ``--size`` for every kernel named.

Per row (``profile.csv``, ``profile.md``): the kernel's time under the profiler, registers per thread, theoretical
and achieved occupancy, the share of scheduler cycles that issued an instruction, warp instructions executed, how
busy the FMA and tensor pipes were, DRAM throughput, local-memory (spill) loads and stores, and the three largest
stall reasons in cycles per issued instruction. ``profile.ncu-rep`` holds the whole profile (open it with
``ncu-ui`` or ``ncu --import``).

``--out`` defaults to ``$OUT`` when set, else ``build/profile``. Exit status: 0 done, 1 the profiled run failed,
2 no GPU, no ncu or a bad argument.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import benchkit  # this script's folder

TOOL = "ncu_profile.py"
DEFAULT_OUT = benchkit.ROOT / "build" / "profile"
#: warm-up launches of each implementation before the profiled one
WARMUP = 3
SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "WarpStateStats", "ComputeWorkloadAnalysis",
            "MemoryWorkloadAnalysis", "SchedulerStats", "InstructionStats")
STALL_PREFIX, STALL_SUFFIX = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"
EXTRA_METRICS = (f"regex:{STALL_PREFIX}.*{re.escape(STALL_SUFFIX)}", "smsp__inst_executed.sum",
                 "smsp__sass_inst_executed_op_local_ld.sum", "smsp__sass_inst_executed_op_local_st.sum")
#: the CSV's columns: (field, ncu metric, scale the metric is divided by)
METRICS = (
    ("ms", "gpu__time_duration.sum", 1e6),  # base unit: ns
    ("registers", "launch__registers_per_thread", 1),
    ("theoretical_occupancy_pct", "sm__maximum_warps_per_active_cycle_pct", 1),
    ("achieved_occupancy_pct", "sm__warps_active.avg.pct_of_peak_sustained_active", 1),
    ("issue_active_pct", "smsp__issue_active.avg.pct_of_peak_sustained_active", 1),
    ("warp_instructions_M", "smsp__inst_executed.sum", 1e6),
    ("fma_pipe_pct", "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active", 1),
    ("tensor_pipe_pct", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", 1),
    ("dram_pct", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", 1),
    ("local_loads_M", "smsp__sass_inst_executed_op_local_ld.sum", 1e6),
    ("local_stores_M", "smsp__sass_inst_executed_op_local_st.sum", 1e6),
)
FIELDS = ["kernel", "size", "impl", "launched", *(f for f, _, _ in METRICS), "top_stalls"]
#: the NVTX range around one profiled launch: ``numbakern-profile/<index into the labels file>``
RANGE = "numbakern-profile"
_RANGE_RE = re.compile(rf"{RANGE}/(\d+)")


def parse_size(text: str | None) -> dict[str, int] | None:
    """``"h=4096,w=4096"`` -> ``{"h": 4096, "w": 4096}``; ``ValueError`` naming ``--size`` otherwise (the parser of
    ``numbakern profile --size``)."""
    from numbakern.profiler.cli import parse_size as parse

    return None if text is None else parse(text)


def size_for(spec, size: Mapping[str, int] | None) -> dict[str, int]:
    """``size`` checked against ``spec``'s size keys, or its last benchmark size."""
    known = spec.bench_sizes or spec.test_sizes
    if not known:
        raise ValueError(f"--size: {spec.name} declares no sizes; name one with --size")
    if size is None:
        return dict(known[-1])
    keys = list(known[-1])
    if sorted(size) != sorted(keys):
        raise ValueError(f"--size: {spec.name} takes the sizes {', '.join(keys)}, got {', '.join(size)}")
    return {k: size[k] for k in keys}


def ncu_number(cell: str) -> float:
    """A cell of ncu's CSV (``"3,842,098"``; empty: nan) as a float."""
    return benchkit.number(cell.replace(",", ""))


def top_stalls(row: Mapping[str, str], count: int = 3) -> str:
    """The ``count`` largest stall reasons of an ncu raw row: ``"long_scoreboard 7.01, not_selected 2.03, ..."``."""
    stalls = []
    for name, value in row.items():
        if name.startswith(STALL_PREFIX) and name.endswith(STALL_SUFFIX):
            stalls.append((ncu_number(value), name[len(STALL_PREFIX):-len(STALL_SUFFIX)]))
    stalls.sort(reverse=True)
    return ", ".join(f"{reason} {value:.2f}" for value, reason in stalls[:count])


def summarize(raw_csv: str, labels: Sequence[Mapping[str, str]]) -> list[dict]:
    """Rows of ``FIELDS`` from ``ncu --page raw --csv --print-units base`` output; ``labels[i]`` names the
    implementation whose launch ran in NVTX range ``numbakern-profile/i``. Kernels outside such a range are left out."""
    import csv

    lines = list(csv.reader(raw_csv.splitlines()))
    header = next((line for line in lines if line and line[0] == "ID"), None)
    if header is None:
        raise ValueError("ncu's raw CSV has no header row (a line starting with \"ID\")")
    nvtx = next((i for i, name in enumerate(header) if "Push/Pop_Range" in name), None)
    rows = []
    for line in lines[lines.index(header) + 1:]:
        if len(line) != len(header) or not line[0].isdigit():  # the units row, ncu's own messages
            continue
        found = _RANGE_RE.search(line[nvtx]) if nvtx is not None else None
        if found is None:
            continue
        raw = dict(zip(header, line, strict=True))
        label = labels[int(found.group(1))]
        row = {"kernel": label["kernel"], "size": label["size"], "impl": label["impl"],
               "launched": raw["Kernel Name"].split("(")[0].split("[")[0][:60]}
        for field, metric, scale in METRICS:
            row[field] = ncu_number(raw.get(metric, "")) / scale
        row["top_stalls"] = top_stalls(raw)
        rows.append(row)
    return rows


def markdown(rows: Sequence[Mapping], provenance: str) -> str:
    def cell(value, digits=1):
        value = benchkit.number(value)
        return "" if value != value else f"{value:,.{digits}f}"

    head = ("| kernel | size | impl | CUDA kernel | ms | regs | occupancy (theor.) | issue active | warp instr. (M) | "
            "FMA pipe | tensor pipe | DRAM | local ld/st (M) | top stalls (cycles per issued instr.) |")
    lines = [provenance, "", head, "|" + "---|" * 4 + "---:|" * 9 + "---|"]
    for r in rows:
        lines.append(
            f"| {r['kernel']} | {r['size']} | {r['impl']} | `{r['launched']}` | {cell(r['ms'], 3)} | "
            f"{cell(r['registers'], 0)} | "
            f"{cell(r['achieved_occupancy_pct'])}% ({cell(r['theoretical_occupancy_pct'])}%) | "
            f"{cell(r['issue_active_pct'])}% | {cell(r['warp_instructions_M'])} | {cell(r['fma_pipe_pct'])}% | "
            f"{cell(r['tensor_pipe_pct'])}% | {cell(r['dram_pct'])}% | "
            f"{cell(r['local_loads_M'], 2)} / {cell(r['local_stores_M'], 2)} | {r['top_stalls']} |")
    lines += ["", "One launch of each under Nsight Compute (`--clock-control none`), after warm-up launches; the ms is "
              "the profiled launch's own, not a benchmark timing. Occupancy in % of the warps a multiprocessor can "
              "hold; issue active, FMA and tensor pipe in % of their peak over the active cycles; DRAM in % of its "
              "peak throughput."]
    return "\n".join(lines) + "\n"


def child(names: Sequence[str], size: Mapping[str, int] | None, labels_path: Path) -> int:
    """Under ncu: warm each implementation up, then profile one launch of it in its own NVTX range."""
    import bench  # this script's folder

    torch = benchkit.require_gpu(TOOL)
    cudart = torch.cuda.cudart()
    specs, generated = kernels_here(names)
    labels = []
    for spec in specs:
        at = size_for(spec, size)
        _, impls, _ = bench.implementations(torch, spec, at, generated)
        for impl, launch in impls.items():
            for _ in range(WARMUP):
                launch()
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_push(f"{RANGE}/{len(labels)}")
            cudart.cudaProfilerStart()
            launch()
            torch.cuda.synchronize()
            cudart.cudaProfilerStop()
            torch.cuda.nvtx.range_pop()
            labels.append({"kernel": spec.name, "size": "×".join(map(str, at.values())), "impl": impl})
            print(f"profiled {spec.name} {labels[-1]['size']} {impl}", flush=True)
        torch.cuda.empty_cache()
    benchkit.write_text(labels_path, json.dumps(labels, indent=1))
    return 0


def kernels_here(names: Sequence[str]):
    """``(specs, folder of their .cu files)``: the library's kernels, or in a user's project (as ``bench.py``) the
    project's."""
    from numbakern import project as projects
    from translate.verify.cli import specs_named

    project = projects.find(Path.cwd())
    specs = specs_named(list(names), project)
    return specs, benchkit.ROOT / "generated_cuda" if project.is_library else project.out_dir


def ncu_path() -> str:
    found = os.environ.get("NCU") or shutil.which("ncu")
    if not found:
        raise benchkit.NoGPU(TOOL, "needs Nsight Compute's ncu on PATH (or $NCU naming it)")
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kernels", nargs="*", metavar="KERNEL", help="registered kernel names")
    parser.add_argument("--size", help="the size for every kernel named, e.g. h=4096,w=4096 (default: the "
                        "kernel's last benchmark size)")
    parser.add_argument("--out", help="folder for profile.ncu-rep/.csv/.md (default: $OUT, else build/profile)")
    parser.add_argument("--render", metavar="CSV", help="only rewrite profile.md from this CSV")
    parser.add_argument("--child", metavar="LABELS_JSON", help=argparse.SUPPRESS)  # the run under ncu
    args = parser.parse_args(argv)

    if args.render:
        rows, provenance = benchkit.read_csv(Path(args.render))
        md = markdown(rows, provenance)
        benchkit.write_text(Path(args.render).with_suffix(".md"), md)
        print(md)
        return 0
    if not args.kernels:
        parser.error("name at least one registered kernel (or --render CSV)")
    try:
        size = parse_size(args.size)
    except ValueError as exc:
        parser.error(str(exc))
    if args.child:
        return child(args.kernels, size, Path(args.child))

    from numbakern import project as projects

    try:
        for spec in kernels_here(args.kernels)[0]:
            size_for(spec, size)
    except (KeyError, ValueError, projects.ProjectError) as exc:
        parser.error(str(exc.args[0]))
    ncu = ncu_path()
    torch = benchkit.require_gpu(TOOL)
    out = benchkit.out_dir(args.out, DEFAULT_OUT)
    out.mkdir(parents=True, exist_ok=True)
    labels_path = out / "profile.labels.json"
    command = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--nvtx",
               *(a for s in SECTIONS for a in ("--section", s)), "--metrics", ",".join(EXTRA_METRICS),
               "-o", str(out / "profile"), "-f", sys.executable, str(Path(__file__).resolve()), *args.kernels,
               "--child", str(labels_path)] + (["--size", args.size] if args.size else [])
    print(" ".join(command), flush=True)
    if subprocess.run(command).returncode != 0:
        print(f"{TOOL}: the profiled run failed (its output is above)", file=sys.stderr)
        return 1
    raw = subprocess.run([ncu, "--import", str(out / "profile.ncu-rep"), "--page", "raw", "--csv",
                          "--print-units", "base"], capture_output=True, text=True, check=True).stdout
    rows = summarize(raw, json.loads(labels_path.read_text()))
    provenance = (f"Measured on {benchkit.device_line(torch)}, {benchkit.today()}, with `python scripts/ncu_profile.py "
                  f"{' '.join(args.kernels)}{' --size ' + args.size if args.size else ''}` (Nsight Compute "
                  f"{ncu_version(ncu)}).")
    benchkit.write_csv(out / "profile.csv", rows, FIELDS, provenance)
    md = markdown(rows, provenance)
    benchkit.write_text(out / "profile.md", md)
    print(f"\nwrote {out / 'profile.ncu-rep'}, {out / 'profile.csv'}, {out / 'profile.md'}\n\n{md}")
    return 0


def ncu_version(ncu: str) -> str:
    text = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout
    found = re.search(r"Version (\S+)", text)
    return found.group(1) if found else "?"


if __name__ == "__main__":
    raise SystemExit(main())
