#!/usr/bin/env python
"""How well a sample of blocks stands for the grid, and what a profile costs against a checked simulator run.

    python scripts/profile_sampling.py                      # every library kernel, the table into docs/profiling.md
    python scripts/profile_sampling.py --kernels transpose,softmax --no-docs

For each kernel, at a size whose grid is several times the sample (``SIZES``), one launch is profiled three ways in
the simulator: every block (``sample=None``), a stratified sample of ``--sample`` blocks (``numbakern.profile``'s
default way), and not profiled but run with every checker on (``NUMBAKERN_SIM_CHECKS=all``). The table gives the
largest relative difference between the sample's extrapolated counts and the whole grid's, over the counts Nsight
Compute is compared on (global requests and sectors, shared wavefronts and bank conflicts) and the bytes the kernel
must move and its flops; and the time of each run. No GPU needed. Writes ``sampling.{csv,md}`` to ``--out`` (default
``$OUT``, else build/profile-sampling) and the table into docs/profiling.md (unless ``--no-docs``).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import benchkit  # this script's folder

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

TOOL = "profile_sampling.py"
DOC = benchkit.ROOT / "docs" / "profiling.md"
BLOCK = "profile sampling"
SAMPLE = 8
#: kernel -> size: a grid of 24 to a few hundred blocks (the whole grid is profiled too). Not here: histogram,
#: reduce_sum and reduce_max, whose grids are a few blocks at any size (each block strides over the data), so a
#: profile always runs them whole.
SIZES = {
    "vector_add": {"n": 1 << 18}, "block_sum": {"n": 1 << 16}, "reduce_sum_rows": {"rows": 8, "cols": 1 << 14},
    "reduce_max_rows": {"rows": 8, "cols": 1 << 14}, "reduce_sum_short_rows": {"rows": 1 << 10, "cols": 256},
    "reduce_max_short_rows": {"rows": 1 << 10, "cols": 256}, "transpose": {"h": 257, "w": 300},
    "conv2d_3x3": {"h": 200, "w": 301}, "conv2d_5x5": {"h": 200, "w": 301},
    "conv2d_nchw": {"n": 4, "h": 96, "w": 128}, "inclusive_scan": {"n": 1 << 20},
    "layer_norm": {"rows": 300, "cols": 1024}, "rms_norm": {"rows": 300, "cols": 1024},
    "layer_norm_block": {"rows": 40, "cols": 4096}, "rms_norm_block": {"rows": 40, "cols": 4096},
    "softmax": {"rows": 1000, "cols": 128}, "softmax_block": {"rows": 40, "cols": 4096},
    "softmax_long": {"rows": 24, "cols": 8192}, "softmax_warp": {"rows": 300, "cols": 1024},
    "matmul_naive": {"h": 100, "k": 64, "w": 130}, "matmul_tiled": {"h": 100, "k": 64, "w": 130},
    "matmul_tiled_static": {"h": 100, "k": 64, "w": 130}, "matmul_tiled_fast": {"h": 100, "k": 64, "w": 130},
    **{name: {"h": 200, "k": 16, "w": 300} for name in ("matmul_flagship", "matmul_flagship_async",
                                                          "matmul_flagship_vec", "matmul_pipelined",
                                                          "matmul_pipelined_at")},
    **{name: {"h": 500, "k": 16, "w": 704} for name in ("matmul_bf16", "matmul_f16", "matmul_3xtf32")},
    **{f"attention{p}_d{d}{c}": {"bh": 8, "lq": 64, "lk": 32}
       for p in ("", "_bf16", "_f16", "_3xtf32") for d in (64, 128) for c in ("", "_causal")},
}
#: what is compared: (label, kind in the profile's memory, field)
COUNTS = [(f"{kind} {field}", kind, field) for kind in ("global_ld", "global_st", "global_atom", "global_ldgsts")
          for field in ("requests", "sectors")] + \
         [(f"{kind} {field}", kind, field) for kind in ("shared_ld", "shared_st", "shared_ldgsts")
          for field in ("wavefronts", "bank_conflicts")]


def counts(p) -> dict[str, float]:
    out = {}
    for label, kind, field in COUNTS:
        m = p.kernel.memory.get(kind)
        if m is not None:
            out[label] = getattr(m, field)
    out["bytes to move"] = p.kernel.unique_bytes
    out["flops"] = sum(v for k, v in p.kernel.flops.items() if not k.startswith("sfu"))
    return out


def measure(spec, size: dict, sample: int) -> dict:
    import numpy as np

    import numbakern.sim
    from numbakern.profiler import profile

    case = spec.make_case(size, np.random.default_rng(0), "uniform")
    cfg = case.launch
    launch = spec.kernel[cfg.grid, cfg.block, 0, cfg.shared_bytes]
    launch(*case.fresh_args())  # typed once, outside the timings
    with numbakern.sim.checks("all"):
        start = time.perf_counter()
        launch(*case.fresh_args())
        checked = time.perf_counter() - start
    timings = {}
    profiles = {}
    for name, budget in (("whole grid", None), ("sample", sample)):
        start = time.perf_counter()
        profiles[name] = profile(spec.kernel, cfg.grid, cfg.block, *case.fresh_args(), shared_bytes=cfg.shared_bytes,
                                 sample=budget, compile=False)
        timings[name] = time.perf_counter() - start
    whole, sampled = counts(profiles["whole grid"]), counts(profiles["sample"])
    worst, what = 0.0, ""
    for key, value in whole.items():
        other = sampled.get(key, 0.0)
        diff = abs(other - value) / value if value else (0.0 if not other else math.inf)
        if diff > worst:
            worst, what = diff, key
    return {"kernel": spec.name, "size": ", ".join(f"{k}={v}" for k, v in size.items()),
            "blocks": profiles["whole grid"].sampling.blocks, "sampled": profiles["sample"].sampling.profiled,
            "worst_difference": worst, "worst_count": what, "checked_s": checked, "whole_s": timings["whole grid"],
            "sample_s": timings["sample"]}


FIELDS = ["kernel", "size", "blocks", "sampled", "worst_difference", "worst_count", "checked_s", "whole_s", "sample_s"]


def markdown(rows: list[dict], provenance: str) -> str:
    lines = [provenance, "", "| kernel | size | blocks | sampled | largest difference (count) | checked run | "
             "whole-grid profile | sampled profile |", "|---|---|---:|---:|---|---:|---:|---:|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['kernel']} | {r['size']} | | | failed: {r['error'][:100]} | | | |")
            continue
        lines.append(f"| {r['kernel']} | {r['size']} | {r['blocks']} | {r['sampled']} | "
                     f"{100 * r['worst_difference']:.2f}% ({r['worst_count']}) | {r['checked_s']:.2f} s | "
                     f"{r['whole_s']:.2f} s | {r['sample_s']:.2f} s |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernels", help="only these library kernels (comma-separated)")
    parser.add_argument("--sample", type=int, default=SAMPLE, help=f"blocks in the sample (default {SAMPLE})")
    parser.add_argument("--out", help="results folder (default: $OUT, else build/profile-sampling)")
    parser.add_argument("--no-docs", action="store_true", help="leave docs/profiling.md as it is")
    args = parser.parse_args(argv)
    import numbakern

    wanted = set(args.kernels.split(",")) if args.kernels else None
    specs = [s for s in numbakern.all_specs() if s.name in SIZES and (wanted is None or s.name in wanted)]
    if wanted and len(specs) != len(wanted):
        parser.error(f"--kernels: not in SIZES: {', '.join(sorted(wanted - {s.name for s in specs}))}")
    rows = []
    for spec in specs:
        try:
            row = measure(spec, SIZES[spec.name], args.sample)
        except Exception as e:  # noqa: BLE001 - one kernel's failure is a row, not the end of the run
            row = {"kernel": spec.name, "size": str(SIZES[spec.name]), "error": f"{type(e).__name__}: {e}"}
        rows.append(row)
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    out = benchkit.out_dir(args.out, benchkit.ROOT / "build" / "profile-sampling")
    out.mkdir(parents=True, exist_ok=True)
    provenance = (f"Run on {os.cpu_count()} CPU cores, {benchkit.today()}, with `python scripts/profile_sampling.py"
                  f"{' --kernels ' + args.kernels if args.kernels else ''}`; samples of {args.sample} blocks.")
    benchkit.write_csv(out / "sampling.csv", rows, FIELDS + ["error"], provenance)
    md = markdown(rows, provenance)
    benchkit.write_text(out / "sampling.md", md)
    if not args.no_docs and benchkit.embed(DOC, BLOCK, md):
        print(f"updated the table in {DOC}")
    print(md)
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
