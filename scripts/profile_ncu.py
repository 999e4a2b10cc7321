#!/usr/bin/env python
"""numbakern's profiler against Nsight Compute: the same kernels at the same sizes, counted in the simulator
(``numbakern.profile``) and measured by ``ncu`` on a GPU, side by side.

    python scripts/profile_ncu.py --out DIR                  # on a GPU: every kernel, then the tables
    python scripts/profile_ncu.py --out DIR --kernels transpose,vector_add
    python scripts/profile_ncu.py --sim-only --out DIR       # no GPU: the simulator's side (and the lessons' tables)
    python scripts/profile_ncu.py --render DIR               # the tables again from DIR's sim.json and ncu.csv
    python scripts/profile_ncu.py --merge D1 D2 --out DIR    # one table from several runs' folders

The kernels: every library kernel, the examples project's and the lessons of docs/profiling.md
(``numbakern.profiler.lessons``), each at the size in ``SIZES`` with seeded inputs (the same in both runs). The
simulator's profiles run in worker processes (all CPU cores but two) while one ``ncu`` process profiles one launch
of each kernel on the GPU: the child launches each kernel once to compile it, then once between
``cuProfilerStart``/``Stop`` (``ncu --profile-from-start off``, so exactly those launches are profiled, in order),
with the clocks as they run (``--clock-control none``) and only the metrics compared (``NCU_METRICS``, those this
ncu knows). Nothing else is measured.

The simulator's workers make each launch as the GPU does (``NUMBAKERN_SIM_AS_GPU``: the kernels' GPU configurations
and grids). After ncu's run the GPU's copy bandwidth is measured (scripts/bench.py's yardstick, ``copy.json``): the
predicted time's target is on the roofline bound with DRAM at it. docs/profiling.md says which counters are compared
and why (shared memory: the instructions' wavefronts and conflicts, not L1's).

Writes to DIR: ``sim.json`` (the simulator's profiles), ``profile.ncu-rep`` and ``ncu.csv`` (ncu's), ``copy.json``, and
``comparison.{csv,md,json}``; and, unless ``--no-docs``, the comparison and the lessons' measured times into
docs/profiling.md between its markers (``--sim-only``: the lessons' profiler tables). Prints a short table last.
Exit status: 0 done, 1 a run failed, 2 no GPU / no ncu / a bad argument.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from multiprocessing import get_context
from pathlib import Path

import benchkit  # this script's folder
from ncu_profile import ncu_number, ncu_path, ncu_version

TOOL = "profile_ncu.py"
DEFAULT_OUT = benchkit.ROOT / "build" / "profile-ncu"
DOC = benchkit.ROOT / "docs" / "profiling.md"
EXAMPLES = benchkit.ROOT / "examples"
SEED = 0
#: the GPU whose roofline predicts the times (the machine's own when it is in numbakern.profiler.roofline.GPUS)
DEFAULT_GPU = "H200"

#: kernel -> (size, most blocks the simulator runs); library kernels not named here: their largest verification size.
#: The memory-bound kernels move 128 MB or more (so that a launch's fixed costs are a few percent of its time on an
#: H200); the compute-bound ones are kept small, as the simulator runs every instruction of the blocks it samples.
SIZES: dict[str, tuple[dict, int | None]] = {
    "vector_add": ({"n": 1 << 24}, 16),
    "block_sum": ({"n": 1 << 25}, 32),
    "reduce_sum": ({"n": 1 << 25}, 16),
    "reduce_max": ({"n": 1 << 25}, 16),
    "reduce_sum_rows": ({"rows": 16, "cols": 1 << 21}, 16),
    "reduce_max_rows": ({"rows": 16, "cols": 1 << 21}, 16),
    "reduce_sum_short_rows": ({"rows": 1 << 17, "cols": 256}, 32),
    "reduce_max_short_rows": ({"rows": 1 << 17, "cols": 256}, 32),
    "transpose": ({"h": 4096, "w": 4096}, 32),
    "conv2d_3x3": ({"h": 4096, "w": 4096}, 32),
    "conv2d_5x5": ({"h": 4096, "w": 4096}, 32),
    "conv2d_nchw": ({"n": 2, "h": 224, "w": 224}, 16),
    "histogram": ({"n": 1 << 25, "bins": 1024}, 16),
    "inclusive_scan": ({"n": 1 << 25}, 16),
    "layer_norm": ({"rows": 32768, "cols": 1024}, 32),
    "rms_norm": ({"rows": 32768, "cols": 1024}, 32),
    "layer_norm_block": ({"rows": 4096, "cols": 4096}, 16),
    "rms_norm_block": ({"rows": 4096, "cols": 4096}, 16),
    "softmax": ({"rows": 1 << 17, "cols": 128}, 32),
    "softmax_block": ({"rows": 4096, "cols": 4096}, 16),
    "softmax_long": ({"rows": 512, "cols": 32768}, 8),
    "softmax_warp": ({"rows": 32768, "cols": 1024}, 32),
    "matmul_naive": ({"h": 256, "k": 256, "w": 256}, 8),
    "matmul_tiled": ({"h": 256, "k": 256, "w": 256}, 8),
    "matmul_tiled_static": ({"h": 256, "k": 256, "w": 256}, 8),
    "matmul_tiled_fast": ({"h": 256, "k": 256, "w": 256}, 8),
    **{name: ({"h": 128, "k": 128, "w": 128}, 8)
       for name in ("matmul_flagship", "matmul_flagship_async", "matmul_flagship_vec", "matmul_pipelined",
                    "matmul_pipelined_at", "matmul_bf16", "matmul_f16", "matmul_3xtf32")},
    **{f"attention{p}_d{d}{c}": ({"bh": 1, "lq": 128, "lk": 128}, 8)
       for p in ("", "_bf16", "_f16", "_3xtf32") for d in (64, 128) for c in ("", "_causal")},
}
EXAMPLE_SIZES: dict[str, tuple[dict, int | None]] = {
    "row_softmax": ({"rows": 32768, "cols": 1000}, 32),
    "stencil5": ({"h": 4096, "w": 4096}, 32),
    "histogram": ({"n": 1 << 25}, 16),
    "block_sum": ({"n": 1 << 25}, 32),
}
LESSON_SAMPLE = 16


@dataclass(frozen=True)
class Target:
    name: str  # the kernel's (library, examples project) or the lesson's name
    where: str  # "lesson", "library" or "examples"
    size: dict
    sample: int | None

    @property
    def label(self) -> str:
        prefix = {"lesson": "lesson ", "examples": "examples: "}.get(self.where, "")
        return f"{prefix}{self.name}"


def targets(selection: set[str] | None) -> list[Target]:
    """Every kernel compared (or those ``selection`` names), lessons first."""
    from numbakern import registry
    from numbakern.profiler import lessons

    found = [Target(name, "lesson", {}, LESSON_SAMPLE) for name in lessons.LESSONS]
    for spec in registry.all_specs():
        size, sample = SIZES.get(spec.name, (None, 32))
        if size is None:
            size = dict(max(spec.verify_sizes, key=lambda s: math.prod(s.values())))
        found.append(Target(spec.name, "library", size, sample))
    found += [Target(name, "examples", size, sample) for name, (size, sample) in EXAMPLE_SIZES.items()]
    if selection:
        unknown = selection - {t.name for t in found} - {t.label for t in found}
        if unknown:
            raise ValueError(f"--kernels: unknown kernel(s) {', '.join(sorted(unknown))}")
        found = [t for t in found if t.name in selection or t.label in selection]
    return found


def case_of(t: Target):
    """``(kernel, registry Case)`` of a target, with its seeded inputs."""
    import numpy as np

    from numbakern import project as projects
    from numbakern import registry

    rng = np.random.default_rng(SEED)
    if t.where == "lesson":
        from numbakern.profiler import lessons

        kernel, make = lessons.LESSONS[t.name]
        return kernel, make(rng)
    spec = projects.load(EXAMPLES).spec(t.name) if t.where == "examples" else registry.get(t.name)
    return spec.kernel, spec.make_case(t.size, rng, "uniform")


# ---------------------------------------------------------------------------------------------------------------
# the simulator's side


def _simulator_process(gpu: str) -> None:
    """A simulator worker: its kernels configured and launched as on ``gpu`` (its multiprocessors), not as the
    simulator's tests launch them (small tiles, a few blocks), so that it profiles the launch ncu profiles."""
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # before anything imports numba
    from numbakern.kernels.config import SIM_AS_GPU_ENV
    from numbakern.profiler.roofline import GPUS

    os.environ[SIM_AS_GPU_ENV] = str(GPUS[gpu].sms)
    sys.path.insert(0, str(EXAMPLES))


def launch_ready(kernel, args, shared_bytes: int = 0, upload=None) -> list:
    """``args`` as ``registry.run_case`` launches them: the kernel's declared tensor maps made from its arrays (the
    wgmma kernels'), and on a GPU its dynamic shared-memory limit raised where it asks for more than 48 KiB."""
    from numbakern.tensormap import launch_arguments

    code = getattr(kernel, "py_func", kernel).__code__
    return launch_arguments(kernel, code.co_varnames[:code.co_argcount], args, shared_bytes, upload)


def simulate(t: Target, gpu: str) -> dict:
    """The simulator's profile of ``t`` (in a worker process on the simulator)."""
    from numbakern.profiler import profile

    kernel, case = case_of(t)
    cfg = case.launch
    start = time.perf_counter()
    try:
        p = profile(kernel, cfg.grid, cfg.block, *launch_ready(kernel, case.fresh_args()),
                    shared_bytes=cfg.shared_bytes, gpu=gpu, sample=t.sample)
    except Exception as e:  # noqa: BLE001 - one kernel's failure is a row of the table, not the end of the run
        return {"target": asdict(t), "error": f"{type(e).__name__}: {e}"}
    from numbakern.profiler import report

    return {"target": asdict(t), "seconds": round(time.perf_counter() - start, 2), "profile": p.to_json(),
            "metrics": sim_metrics(p), "text": report.text(p)}


def sim_metrics(p) -> dict:
    """The simulator's numbers the comparison uses (``COMPARED``)."""
    m = p.kernel.memory

    def get(kind, field):
        found = m.get(kind)
        if found is None:
            return 0.0
        return found.bank_conflicts if field == "conflicts" else getattr(found, field)

    out = {f"{kind}.{field}": get(kind, field)
           for kind in ("global_ld", "global_st", "global_atom", "global_ldgsts")
           for field in ("requests", "sectors")}
    out.update({f"{kind}.{field}": get(kind, field)
                for kind in ("shared_ld", "shared_st", "shared_atom", "shared_ldgsts")
                for field in ("requests", "wavefronts", "conflicts")})
    # ldmatrix apart from the other shared loads: Nsight Compute counts LDSM under a metric of its own
    ldsm = [row.memory["shared_ld"] for row in p.lines
            if "shared_ld" in row.memory and row.memory["shared_ld"].instruction == "ldmatrix"]
    for field in ("requests", "wavefronts", "conflicts"):
        key = "bank_conflicts" if field == "conflicts" else field
        out[f"shared_ldsm.{field}"] = sum(getattr(m, key) for m in ldsm)
        out[f"shared_lds.{field}"] = out[f"shared_ld.{field}"] - out[f"shared_ldsm.{field}"]
    out["grid_blocks"] = math.prod(p.grid)
    out["block_threads"] = math.prod(p.block)
    out["active_lanes"] = p.kernel.active_lanes
    out["occupancy_pct"] = 100 * p.occupancy.fraction if p.occupancy else float("nan")
    out["registers"] = p.occupancy.registers if p.occupancy and p.occupancy.registers is not None else float("nan")
    out["dram_bytes"] = p.kernel.unique_bytes
    out["fp32_flops"] = p.kernel.flops.get("fp32", 0.0)
    out["fp64_flops"] = p.kernel.flops.get("fp64", 0.0)
    out["predicted_ns"] = 1e9 * p.roofline.bound_seconds
    # the bound without DRAM's term: the bound at another DRAM bandwidth is the larger of this and bytes / bandwidth
    out["bound_not_dram_ns"] = 1e9 * max((v for k, v in p.roofline.seconds.items() if k != "dram"), default=0.0)
    out["limiter"] = p.roofline.limiter
    return out


def run_simulator(found: list[Target], gpu: str, jobs: int, progress: Path | None = None) -> list[dict]:
    """Every target's profile, in ``found``'s order; each one also written to ``progress`` as it finishes, so that a
    run stopped early (a time limit) keeps the profiles it made."""
    order = {t.label: i for i, t in enumerate(found)}
    results: list[dict] = []
    with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn"), initializer=_simulator_process,
                             initargs=(gpu,)) as ex:
        futures = {ex.submit(simulate, t, gpu): t for t in found}
        for future in as_completed(futures):
            t = futures[future]
            try:
                result = future.result()
            except Exception as e:  # noqa: BLE001 - a worker that died: that kernel has no profile
                result = {"target": asdict(t), "error": f"{type(e).__name__}: {e}"}
            results.append(result)
            print(f"simulated {t.label}: {result.get('seconds', 'failed')} s "
                  f"{result.get('error', '')}".rstrip(), flush=True)
            if progress is not None:
                benchkit.write_text(progress, json.dumps(sorted(results, key=lambda r: order[Target(
                    **r["target"]).label]), indent=1))
    return sorted(results, key=lambda r: order[Target(**r["target"]).label])


# ---------------------------------------------------------------------------------------------------------------
# the GPU's side


#: ncu metric -> what it is (the comparison's ncu side; metrics this ncu does not know are left out)
NCU_METRICS = {
    "gpu__time_duration.sum": "time (ns)",
    "launch__registers_per_thread": "registers",
    "launch__grid_size": "blocks in the grid",
    "launch__block_size": "threads per block",
    "sm__maximum_warps_per_active_cycle_pct": "theoretical occupancy (%)",
    "smsp__thread_inst_executed_per_inst_executed.ratio": "active lanes per warp instruction",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": "DRAM throughput (% of peak)",
    "dram__bytes_read.sum": "DRAM bytes read",
    "dram__bytes_write.sum": "DRAM bytes written",
    **{f"l1tex__t_{what}_pipe_lsu_mem_global_op_{op}.sum": f"global {op} {what}"
       for what in ("requests", "sectors") for op in ("ld", "st", "atom", "red")},
    # cp.async's global side: Nsight Compute splits LDGSTS by whether it goes through L1 (.ca) or bypasses it (.cg)
    **{f"l1tex__t_{what}_pipe_lsu_mem_global_op_ldgsts_cache_{how}.sum": f"global ldgsts {what} ({how})"
       for what in ("requests", "sectors") for how in ("access", "bypass")},
    **{f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum": f"shared {op} wavefronts"
       for op in ("ld", "st", "atom")},
    **{f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum": f"shared {op} bank conflicts"
       for op in ("ld", "st", "atom")},
    # the SASS-level counters: the wavefronts the instructions asked for (ld, st), the only counters of ldmatrix
    # (LDSM) and cp.async's shared side; this ncu (2025.3) has SASS bank conflicts for ldsm and ldgsts only
    **{f"smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum": f"shared {op} wavefronts (SASS)"
       for op in ("ld", "st", "ldsm", "ldgsts")},
    **{f"smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum": f"shared {op} bank conflicts (SASS)"
       for op in ("ldsm", "ldgsts")},
    **{f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum": f"{op} (thread instructions)"
       for op in ("fadd", "fmul", "ffma", "dadd", "dmul", "dfma")},
}


#: metrics kept whatever ``--query-metrics`` lists (launch statistics and the duration are always there)
ALWAYS = ("launch__", "gpu__time_duration", "sm__maximum_warps_per_active_cycle")


def available_metrics(ncu: str) -> set[str]:
    """The base names of the metrics this ncu knows for the GPU here (empty if it cannot say)."""
    result = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True)
    return {line.split()[0] for line in result.stdout.splitlines() if line.strip() and "__" in line.split()[0]}


def child(targets_file: Path) -> int:
    """Under ncu, on the GPU: each kernel once to compile it, then once profiled, in order."""
    from numba import cuda

    from numbakern.frontend.choice import cuda_module_of

    sys.path.insert(0, str(EXAMPLES))
    found = [Target(**t) for t in json.loads(targets_file.read_text())]
    profiled: list[str] = []  # the labels of the profiled launches, in order: ncu's rows are in the same order
    for t in found:
        try:
            kernel, case = case_of(t)
            device = cuda_module_of(kernel)
            cfg = case.launch
            args = [device.to_device(a) if hasattr(a, "dtype") and getattr(a, "ndim", 0) else a
                    for a in case.fresh_args()]
            args = launch_ready(kernel, args, cfg.shared_bytes, device.to_device)
            launch = kernel[cfg.grid, cfg.block, 0, cfg.shared_bytes]
            launch(*args)  # compiles it, outside the profiled range
            device.synchronize()
        except Exception as e:  # noqa: BLE001 - that kernel has no ncu row; the others go on
            print(f"{TOOL}: {t.label} failed on the GPU: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            continue
        cuda.profile_start()
        launch(*args)
        device.synchronize()
        cuda.profile_stop()
        profiled.append(t.label)
        benchkit.write_text(targets_file.with_name("profiled.json"), json.dumps(profiled))
        print(f"profiled {t.label}", flush=True)
    return 0


#: the yardstick of the achievable DRAM bandwidth: scripts/bench.py's device-to-device copy, of as many floats
COPY_FLOATS = 1 << 28


def copy_child(result: Path) -> int:
    """(A process of its own, after ncu's run, alone on the GPU.) scripts/bench.py's copy-bandwidth yardstick."""
    import bench

    row = bench.copy_bandwidth(0.8, COPY_FLOATS)
    benchkit.write_text(result, json.dumps({"bytes_per_s": row["torch_rate"] * 1e9, "ms": row["torch_ms"],
                                            "floats": COPY_FLOATS, "how": row["torch_op"]}))
    return 0


def measure_copy(out: Path) -> dict | None:
    """The GPU's device-to-device copy bandwidth as scripts/bench.py measures it (``DIR/copy.json``), or None (with
    the reason printed) when it could not be measured."""
    result = out / "copy.json"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--copy-child", str(result)], env=env)
    if done.returncode != 0 or not result.exists():
        print(f"{TOOL}: the copy bandwidth could not be measured; predicted times at the spec's bandwidth only",
              file=sys.stderr)
        return None
    return json.loads(result.read_text())


def run_ncu(ncu: str, found: list[Target], out: Path, metrics: list[str]) -> subprocess.Popen:
    targets_file = out / "targets.json"
    benchkit.write_text(targets_file, json.dumps([asdict(t) for t in found]))
    command = [ncu, "--profile-from-start", "off", "--clock-control", "none", "--metrics", ",".join(metrics),
               "-o", str(out / "profile"), "-f", sys.executable, str(Path(__file__).resolve()),
               "--child", str(targets_file)]
    print(" ".join(command), flush=True)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    return subprocess.Popen(command, env=env)


def read_ncu(ncu: str, out: Path) -> dict[str, dict]:
    """ncu's rows by the label of the kernel profiled (``profiled.json``: the labels in launch order)."""
    raw = subprocess.run([ncu, "--import", str(out / "profile.ncu-rep"), "--page", "raw", "--csv",
                          "--print-units", "base"], capture_output=True, text=True, check=True).stdout
    benchkit.write_text(out / "ncu.csv", raw)
    return by_label(parse_ncu_csv(raw), out)


def by_label(rows: list[dict], out: Path) -> dict[str, dict]:
    labels = json.loads((out / "profiled.json").read_text()) if (out / "profiled.json").exists() else []
    if len(labels) != len(rows):
        print(f"{TOOL}: ncu has {len(rows)} rows for {len(labels)} profiled launches: rows matched in order",
              file=sys.stderr)
    return dict(zip(labels, rows))


def parse_ncu_csv(raw: str) -> list[dict]:
    import csv

    lines = list(csv.reader(raw.splitlines()))
    header = next((line for line in lines if line and line[0] == "ID"), None)
    if header is None:
        raise ValueError("ncu's raw CSV has no header row (a line starting with \"ID\")")
    rows = []
    for line in lines[lines.index(header) + 1:]:
        if len(line) != len(header) or not line[0].isdigit():  # the units row, ncu's own messages
            continue
        raw_row = dict(zip(header, line, strict=True))
        row = {metric: ncu_number(raw_row[metric]) for metric in NCU_METRICS if metric in raw_row}
        row["kernel"] = raw_row.get("Kernel Name", "")
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------------------------------
# the comparison


def _ncu_sum(row: dict, *metrics: str, scale=(1.0,)) -> float:
    found = [row.get(m) for m in metrics]
    if all(v is None for v in found):
        return float("nan")
    scales = scale * len(metrics) if len(scale) == 1 else scale
    return sum((v or 0.0) * s for v, s in zip(found, scales) if v == v)


def instruction_conflicts(row: dict, op: str) -> float:
    """The bank conflicts of the shared-memory ``op`` ("ld" or "st") instructions, from ncu's row.

    L1's counters (``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}`` and
    ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}``) also count wavefronts no instruction asked for: the
    data banks are shared with L1's global traffic, and each such extra wavefront is counted as a bank conflict too.
    The SASS counter ``smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_{op}`` counts only the instructions'
    wavefronts, and this ncu has no SASS bank-conflict counter for ld and st. So the instructions' conflicts are
    L1's conflicts less L1's extra wavefronts: ``conflicts_l1 - (wavefronts_l1 - wavefronts_sass)``. L1's loads
    include ``ldmatrix``'s wavefronts, which SASS counts apart (``op_ldsm``), so for "ld" those are the
    instructions' too. NaN when a counter is missing."""
    l1 = row.get(f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum")
    sass = row.get(f"smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum")
    if op == "ld" and sass is not None:
        sass += row.get("smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum") or 0.0
    conflicts = row.get(f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum")
    if l1 is None or sass is None or conflicts is None or l1 != l1 or sass != sass or conflicts != conflicts:
        return float("nan")
    return conflicts - (l1 - sass)


def _l1_shared_rows(op: str, name: str, sim: str) -> list[tuple]:
    """L1's own wavefronts and bank conflicts of the shared-memory ``op``: shown, no target (they count more than
    the instructions cause: ``instruction_conflicts``)."""
    return [(f"shared {name} wavefronts (L1, all)", f"{sim}.wavefronts",
             lambda r: r.get(f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum"), ""),
            (f"shared {name} bank conflicts (L1, all)", f"{sim}.conflicts",
             lambda r: r.get(f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum"), "")]


def _shared_rows(op: str, sim: str) -> list[tuple]:
    """The shared-memory ``op``'s ("ld" or "st") rows: the instructions' wavefronts and conflicts (the 2% targets),
    then L1's own counts."""
    return [(f"shared {op} wavefronts", f"{sim}.wavefronts",
             lambda r: r.get(f"smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum"), "2%"),
            (f"shared {op} bank conflicts", f"{sim}.conflicts", lambda r: instruction_conflicts(r, op), "2%"),
            *_l1_shared_rows(op, op, sim)]


#: (what, the simulator's metric, ncu's value from its row, the target: "2%", "equal", "25%" or "" (shown only))
COMPARED = [
    # global loads with cp.async's global side: this ncu counts every cp.async (LDGSTS) under op_ld, and its
    # op_ldgsts counters hold only the 4-byte ones again (an H200: 0 where all are 16-byte, 512 of matmul_pipelined's
    # 640), so the simulator's loads and cp.asyncs are compared with op_ld, and the cp.async rows are shown only
    ("global ld requests (cp.async's included)", "global_ld.requests+global_ldgsts.requests",
     lambda r: r.get("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"), "2%"),
    ("global ld sectors (cp.async's included)", "global_ld.sectors+global_ldgsts.sectors",
     lambda r: r.get("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"), "2%"),
    ("global st requests", "global_st.requests", lambda r: r.get("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"),
     "2%"),
    ("global st sectors", "global_st.sectors", lambda r: r.get("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"),
     "2%"),
    ("global atomic requests", "global_atom.requests",
     lambda r: _ncu_sum(r, "l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum",
                        "l1tex__t_requests_pipe_lsu_mem_global_op_red.sum"), "2%"),
    ("cp.async requests", "global_ldgsts.requests",
     lambda r: _ncu_sum(r, *(f"l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts_cache_{how}.sum"
                             for how in ("access", "bypass"))), ""),
    ("cp.async sectors", "global_ldgsts.sectors",
     lambda r: _ncu_sum(r, *(f"l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_{how}.sum"
                             for how in ("access", "bypass"))), ""),
    *_shared_rows("ld", "shared_lds"),
    ("ldmatrix wavefronts", "shared_ldsm.wavefronts",
     lambda r: r.get("smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum"), "2%"),
    ("ldmatrix bank conflicts", "shared_ldsm.conflicts",
     lambda r: r.get("smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum"), "2%"),
    *_shared_rows("st", "shared_st"),
    *_l1_shared_rows("atom", "atomic", "shared_atom"),
    ("cp.async shared wavefronts", "shared_ldgsts.wavefronts",
     lambda r: r.get("smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum"), "2%"),
    # shown only: ncu's conflict counter reads 0 for every 16-byte cp.async, even one of 32 wavefronts where the ideal
    # is 4 (tests/profile/shared_copy_store_patterns.json); for the 4-byte ones it is the wavefronts beyond the ideal
    ("cp.async shared bank conflicts", "shared_ldgsts.conflicts",
     lambda r: r.get("smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum"), ""),
    # the same launch on both sides, or nothing else compares
    ("blocks in the grid", "grid_blocks", lambda r: r.get("launch__grid_size"), "equal"),
    ("threads per block", "block_threads", lambda r: r.get("launch__block_size"), "equal"),
    ("theoretical occupancy %", "occupancy_pct", lambda r: r.get("sm__maximum_warps_per_active_cycle_pct"), "equal"),
    ("registers per thread", "registers", lambda r: r.get("launch__registers_per_thread"), ""),
    ("active lanes per warp instruction", "active_lanes",
     lambda r: r.get("smsp__thread_inst_executed_per_inst_executed.ratio"), ""),
    ("DRAM bytes (must move / measured)", "dram_bytes",
     lambda r: _ncu_sum(r, "dram__bytes_read.sum", "dram__bytes_write.sum"), ""),
    ("fp32 flops", "fp32_flops",
     lambda r: _ncu_sum(r, *(f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum" for op in ("fadd", "fmul", "ffma")),
                        scale=(1.0, 1.0, 2.0)), ""),
    ("time: predicted bound / measured (ns)", "predicted_ns", lambda r: r.get("gpu__time_duration.sum"), "25%"),
]
#: with a measured copy bandwidth, the time's target is on the bound at it (the spec's peak bound is shown only)
AT_COPY = ("time: bound at the measured copy bandwidth / measured (ns)", "predicted_at_copy_ns")


def at_copy_ns(metrics: dict, copy: dict | None) -> float:
    """The roofline bound with DRAM at the measured copy bandwidth (NaN without a measurement)."""
    if not copy or "bound_not_dram_ns" not in metrics:
        return float("nan")
    return max(1e9 * metrics["dram_bytes"] / copy["bytes_per_s"], metrics["bound_not_dram_ns"])


#: a kernel is bandwidth-bound (the predicted time's target applies) when ncu measures its DRAM throughput at
#: this share of the peak or more
BANDWIDTH_BOUND_PCT = 60


def _relative(sim: float, gpu: float) -> float:
    if gpu != gpu or sim != sim:
        return float("nan")
    if gpu == 0:
        return 0.0 if sim == 0 else float("inf")
    return (sim - gpu) / gpu


def compare(sims: list[dict], gpu_rows: dict[str, dict] | None, copy: dict | None = None) -> list[dict]:
    """One row per kernel and compared metric that either side counts; with ``copy`` (the measured copy bandwidth,
    ``measure_copy``) also the time bound at it, which then carries the time's target."""
    compared = list(COMPARED)
    if copy:
        what, key = AT_COPY
        compared = [(w, k, f, "" if k == "predicted_ns" else t) for w, k, f, t in compared]
        compared.append((what, key, lambda r: r.get("gpu__time_duration.sum"), "25%"))
    rows = []
    for sim in sims:
        t = Target(**sim["target"])
        if "error" in sim:
            rows.append({"kernel": t.label, "size": _size(t), "what": "simulator", "note": sim["error"]})
            continue
        gpu = gpu_rows.get(t.label) if gpu_rows is not None else None
        dram = gpu.get("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed") if gpu is not None else None
        bandwidth_bound = (dram or 0) >= BANDWIDTH_BOUND_PCT
        for what, key, ncu_value, target in compared:
            s = at_copy_ns(sim["metrics"], copy) if key == AT_COPY[1] else _sim_value(sim["metrics"], key)
            g = ncu_value(gpu) if gpu is not None else float("nan")
            g = float("nan") if g is None else g
            if not s and (not g or g != g) and target == "2%":
                continue  # neither side has any
            rel = _relative(s, g)
            if target == "25%" and not bandwidth_bound:
                target = ""  # the time target is for the bandwidth-bound kernels
            met = ("" if not target or rel != rel else
                   "yes" if (abs(rel) <= 0.02 if target == "2%" else abs(rel) <= 0.25 if target == "25%"
                             else round(s, 1) == round(g, 1)) else "no")
            rows.append({"kernel": t.label, "size": _size(t), "what": what, "simulator": s, "ncu": g,
                         "difference": rel, "target": target, "met": met})
    return rows


def _sim_value(metrics: dict, key: str) -> float:
    """The simulator's ``key`` (``a+b``: the sum of two)."""
    return sum(metrics.get(part, float("nan")) for part in key.split("+"))


def _size(t: Target) -> str:
    return ", ".join(f"{k}={v}" for k, v in t.size.items()) if t.size else "docs size"


def _cell(x) -> str:
    if isinstance(x, str):
        return x
    if x != x:
        return ""
    if abs(x) >= 1e6:
        return f"{x:.4g}"
    return f"{x:,.1f}" if x != int(x) else f"{int(x):,}"


def markdown(rows: list[dict], provenance: str) -> str:
    lines = [provenance, "", "| kernel | size | what | simulator | ncu | difference | target met |",
             "|---|---|---|---:|---:|---:|---|"]
    for r in rows:
        if "note" in r:
            lines.append(f"| {r['kernel']} | {r['size']} | {r['what']} | | | | failed: {r['note'][:120]} |")
            continue
        diff = "" if r["difference"] != r["difference"] else f"{100 * r['difference']:+.1f}%"
        met = f"{r['met']} ({r['target']})" if r["target"] else ""
        lines.append(f"| {r['kernel']} | {r['size']} | {r['what']} | {_cell(r['simulator'])} | {_cell(r['ncu'])} "
                     f"| {diff} | {met} |")
    return "\n".join(lines) + "\n"


def short_table(rows: list[dict]) -> str:
    """Per kernel: the worst difference among the 2% targets, occupancy and time, as one line each."""
    by_kernel: dict[str, dict] = {}
    for r in rows:
        k = by_kernel.setdefault(r["kernel"], {"worst": 0.0, "missed": [], "occupancy": "", "time": ""})
        if "note" in r:
            k["missed"].append("simulator failed")
            continue
        if r["target"] == "2%" and r["difference"] == r["difference"]:
            k["worst"] = max(k["worst"], abs(r["difference"]))
            if r["met"] == "no":
                k["missed"].append(r["what"])
        if r["what"].startswith("theoretical occupancy"):
            k["occupancy"] = f"{_cell(r['simulator'])}/{_cell(r['ncu'])}"
        if r["what"].startswith("time") and (r["what"] == AT_COPY[0] or not k["time"]):
            k["time"] = "" if r["difference"] != r["difference"] else f"{r['simulator'] / r['ncu']:.2f}"
    out = [f"{'kernel':34} {'worst 2%-metric':>16} {'occupancy sim/ncu':>18} {'time pred/meas':>15}  missed"]
    for name, k in by_kernel.items():
        out.append(f"{name[:34]:34} {100 * k['worst']:>15.1f}% {k['occupancy']:>18} {k['time']:>15}  "
                   f"{', '.join(k['missed'])}")
    return "\n".join(out)


def lesson_times(sims: list[dict], gpu_rows: dict[str, dict], provenance: str) -> str:
    lines = [provenance, "", "| lesson | predicted lower bound | limiter | measured (ncu) |",
             "|---|---:|---|---:|"]
    for sim in sims:
        t = Target(**sim["target"])
        if t.where != "lesson" or "error" in sim:
            continue
        measured = gpu_rows.get(t.label, {}).get("gpu__time_duration.sum", float("nan"))
        lines.append(f"| {t.name} | {sim['metrics']['predicted_ns'] / 1e3:.1f} us | {sim['metrics']['limiter']} | "
                     f"{measured / 1e3:.1f} us |")
    return "\n".join(lines) + "\n"


def lesson_tables(sims: list[dict]) -> dict[str, str]:
    """Each lesson's profiler output, for its block of docs/profiling.md."""
    return {Target(**s["target"]).name: "```text\n" + s["text"] + "\n```" for s in sims
            if s["target"]["where"] == "lesson" and "text" in s}


def write_docs(doc: Path, sims: list[dict], rows: list[dict] | None, gpu_rows, provenance: str) -> None:
    for name, text in lesson_tables(sims).items():
        if benchkit.embed(doc, f"profile lesson {name}", text):
            print(f"updated the {name} table in {doc}")
    if rows is not None:
        benchkit.embed(doc, "profile ncu comparison", markdown(rows, provenance))
        benchkit.embed(doc, "profile lesson times", lesson_times(sims, gpu_rows, provenance))
        print(f"updated the comparison and the lessons' times in {doc}")


# ---------------------------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="results folder (default: $OUT, else build/profile-ncu)")
    parser.add_argument("--kernels", help="only these kernels (comma-separated names or labels)")
    parser.add_argument("--sim-only", action="store_true", help="only the simulator's side (no GPU needed)")
    parser.add_argument("--sim-json", help="reuse the simulator's profiles of an earlier run (its sim.json)")
    parser.add_argument("--render", metavar="DIR", help="only rewrite the tables from DIR's sim.json and ncu.csv")
    parser.add_argument("--merge", metavar="DIR", nargs="+", help="one table from the folders of several runs (a "
                        "later folder's kernel replaces an earlier one's), written to --out")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) - 2),
                        help="simulator worker processes (default: the CPU cores less two)")
    parser.add_argument("--gpu", default=None, help="the GPU of the predicted times (default: this machine's, "
                        f"else {DEFAULT_GPU})")
    parser.add_argument("--docs", default=str(DOC), help="the page whose tables to refresh (default: "
                        "docs/profiling.md)")
    parser.add_argument("--no-docs", action="store_true", help="leave the docs as they are")
    parser.add_argument("--child", metavar="TARGETS_JSON", help=argparse.SUPPRESS)  # the run under ncu
    parser.add_argument("--copy-child", metavar="RESULT_JSON", help=argparse.SUPPRESS)  # the copy bandwidth
    args = parser.parse_args(argv)
    if args.child:
        return child(Path(args.child))
    if args.copy_child:
        return copy_child(Path(args.copy_child))
    out = benchkit.out_dir(args.render or args.out, DEFAULT_OUT)
    out.mkdir(parents=True, exist_ok=True)
    doc = None if args.no_docs else Path(args.docs)
    if args.render:
        sims, gpu_rows, copy, provenance = read_run(out)
        return _finish(out, doc, sims, gpu_rows, provenance, copy)
    if args.merge:
        sims, gpu_rows, copy, provenance = merge_runs([Path(d) for d in args.merge])
        return _finish(out, doc, sims, gpu_rows, provenance, copy)

    try:
        found = targets(set(args.kernels.split(",")) if args.kernels else None)
    except ValueError as e:
        parser.error(str(e))
    ncu = gpu_name = None
    if not args.sim_only:
        ncu = ncu_path()
        gpu_name = _gpu_name()
    gpu = args.gpu or _roofline_gpu(gpu_name)
    process = None
    if ncu is not None:
        known = available_metrics(ncu)
        metrics = [m for m in NCU_METRICS if not known or m.split(".")[0] in known or m.startswith(ALWAYS)]
        process = run_ncu(ncu, found, out, metrics)  # the GPU's side runs while the simulator's does
    if args.sim_json:
        sims = json.loads(Path(args.sim_json).read_text())
        wanted = {t.label for t in found}
        sims = [s for s in sims if Target(**s["target"]).label in wanted]
    else:
        sims = run_simulator(found, gpu, args.jobs, progress=out / "sim.json")
    benchkit.write_text(out / "sim.json", json.dumps(sims, indent=1))
    gpu_rows = copy = None
    if process is not None:
        if process.wait() != 0:
            print(f"{TOOL}: the profiled run under ncu failed (its output is above)", file=sys.stderr)
            return 1
        gpu_rows = read_ncu(ncu, out)
        copy = measure_copy(out)  # after ncu's run: nothing else on the GPU
        missing = [t.label for t in found if t.label not in gpu_rows]
        if missing:
            print(f"{TOOL}: no ncu profile of {', '.join(missing)}", file=sys.stderr)
    where = f"{gpu_name}, Nsight Compute {ncu_version(ncu)}" if ncu else "the simulator only"
    from numbakern.profiler.roofline import GPUS

    provenance = (f"Measured on {where}, {benchkit.today()}, with `python scripts/profile_ncu.py"
                  f"{' --kernels ' + args.kernels if args.kernels else ''}`; predicted times on {gpu} "
                  f"(DRAM at the spec's {GPUS[gpu].dram_bytes_per_s / 1e9:,.0f} GB/s")
    if copy:
        provenance += (f"; and at the copy bandwidth this run measured after ncu's: {copy['bytes_per_s'] / 1e9:,.0f} "
                       f"GB/s, scripts/bench.py's yardstick, {copy['how']} of {copy['floats']:,} floats, which "
                       "carries the time's target")
    provenance += ")."
    benchkit.write_text(out / "provenance.json", json.dumps({"text": provenance}))
    return _finish(out, doc, sims, gpu_rows, provenance, copy)


def read_run(folder: Path) -> tuple[list[dict], dict | None, dict | None, str]:
    """A run's simulator profiles, ncu's rows by kernel, measured copy bandwidth and provenance, from its folder."""
    sims = json.loads((folder / "sim.json").read_text())
    ncu_csv = folder / "ncu.csv"
    gpu_rows = by_label(parse_ncu_csv(ncu_csv.read_text()), folder) if ncu_csv.exists() else None
    copy = json.loads((folder / "copy.json").read_text()) if (folder / "copy.json").exists() else None
    return sims, gpu_rows, copy, json.loads((folder / "provenance.json").read_text())["text"]


def merge_runs(folders: list[Path]) -> tuple[list[dict], dict, dict | None, str]:
    """Several runs as one: each kernel from the last run that profiled it on both sides, its ncu row with it. A
    kernel is compared against its own run's ncu row; the time's target uses the copy bandwidth of the last run that
    measured one (each run's own figure is in the provenance)."""
    sims: dict[str, dict] = {}
    gpu_rows: dict[str, dict] = {}
    copy = None
    provenance = []
    for folder in folders:
        run_sims, run_rows, run_copy, text = read_run(folder)
        for sim in run_sims:
            label = Target(**sim["target"]).label
            if run_rows is not None and label in run_rows:
                sims[label], gpu_rows[label] = sim, run_rows[label]
        copy = run_copy or copy
        provenance.append(text)
    return list(sims.values()), gpu_rows, copy, f"{len(folders)} runs merged: " + " ".join(provenance)


def _finish(out: Path, doc: Path | None, sims: list[dict], gpu_rows, provenance: str, copy: dict | None = None) -> int:
    rows = compare(sims, gpu_rows, copy) if gpu_rows is not None else None
    if rows is not None:
        benchkit.write_text(out / "comparison.json", json.dumps(rows, indent=1))
        benchkit.write_csv(out / "comparison.csv", rows, ["kernel", "size", "what", "simulator", "ncu", "difference",
                                                          "target", "met", "note"], provenance)
        benchkit.write_text(out / "comparison.md", markdown(rows, provenance))
    if doc is not None:
        write_docs(doc, sims, rows, gpu_rows, provenance)
    print(f"\nwrote {out}/sim.json" + (", comparison.{csv,md,json}, ncu.csv, profile.ncu-rep" if rows else ""))
    if rows is not None:
        print("\n" + short_table(rows))
    else:
        for s in sims:
            state = s.get("error") or f"{s['seconds']} s, bound {s['metrics']['predicted_ns'] / 1e3:.1f} us " \
                                       f"({s['metrics']['limiter']})"
            print(f"{Target(**s['target']).label:40} {state}")
    return 0 if all("error" not in s for s in sims) else 1


def _gpu_name() -> str:
    result = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                            text=True)
    name = result.stdout.strip().splitlines()[0] if result.returncode == 0 and result.stdout.strip() else ""
    if not name:
        raise benchkit.NoGPU(TOOL, "needs a CUDA GPU (nvidia-smi lists none); --sim-only runs the simulator's side")
    return name


def _roofline_gpu(name: str | None) -> str:
    from numbakern.profiler.roofline import GPUS

    if name:
        squashed = name.replace(" ", "").upper()
        for key in GPUS:
            if key.upper() in squashed:
                return key
    return DEFAULT_GPU


if __name__ == "__main__":
    raise SystemExit(main())
