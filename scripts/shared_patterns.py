#!/usr/bin/env python
"""How a GPU serves one warp's 16-byte shared-memory load, pattern by pattern, as Nsight Compute counts it: the
measurements ``numbakern.profiler.rules`` is held to (tests/profile/test_shared_patterns.py).

    python scripts/shared_patterns.py tests/profile/shared_load_patterns.json     # on a GPU, with ncu

The file holds lane patterns (``offsets``: each lane's byte offset from a 128-byte aligned base). For each, one
block of four warps fills a shared array, then each thread does one ``vload4`` (``LDS.128``) at its lane's offset;
the script runs itself under ``ncu`` and writes back, per pattern and per warp-level request, the instructions'
wavefronts (``smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld``) and L1's bank conflicts, with the
device, ncu's version and the date. Exit status: 0 done, 1 the profiled run failed, 2 no GPU / no ncu.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path

import benchkit  # this script's folder
from ncu_profile import ncu_path, ncu_version

TOOL = "shared_patterns.py"
WARPS = 4
METRICS = {"requests": "smsp__sass_inst_executed_op_shared_ld.sum",
           "wavefronts": "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
           "l1_bank_conflicts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"}


def child(path: Path) -> int:
    """Under ncu: one launch per pattern, in the file's order."""
    import numpy as np
    from numba import cuda

    from numbakern.vector_io import vload4

    @cuda.jit
    def probe(out, offsets):
        sm = cuda.shared.array(4096, np.float32, alignment=16)
        t = cuda.threadIdx.x
        for i in range(t, 4096, 32 * WARPS):
            sm[i] = i * 0.5
        cuda.syncthreads()
        regs = cuda.local.array(4, np.float32)
        vload4(sm, (offsets[t % 32] // 4,), regs, 0)
        out[t] = regs[0] + regs[1] + regs[2] + regs[3]

    out = cuda.device_array(32 * WARPS, np.float32)
    for pattern in json.loads(path.read_text())["patterns"]:
        probe[1, 32 * WARPS](out, cuda.to_device(np.array(pattern["offsets"], np.int32)))
    cuda.synchronize()
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("patterns", help="the patterns' JSON file (rewritten with the measurements)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    path = Path(args.patterns)
    if args.child:
        return child(path)
    torch = benchkit.require_gpu(TOOL)
    ncu = ncu_path()
    run = subprocess.run([ncu, "--metrics", ",".join(METRICS.values()), "--csv", sys.executable, __file__,
                          str(path), "--child"], capture_output=True, text=True)
    if run.returncode != 0:
        print(run.stdout[-4000:], run.stderr[-4000:], sep="\n", file=sys.stderr)
        return 1
    lines = [line for line in run.stdout.splitlines() if line.startswith('"')]
    by_launch: dict[int, dict[str, float]] = {}
    for row in csv.DictReader(lines):
        by_launch.setdefault(int(row["ID"]), {})[row["Metric Name"]] = float(row["Metric Value"].replace(",", ""))
    data = json.loads(path.read_text())
    if len(by_launch) != len(data["patterns"]):
        print(f"{TOOL}: ncu profiled {len(by_launch)} launches for {len(data['patterns'])} patterns", file=sys.stderr)
        return 1
    for pattern, launch in zip(data["patterns"], (by_launch[i] for i in sorted(by_launch))):
        requests = launch[METRICS["requests"]]
        pattern["gpu"] = {name: launch[metric] / requests for name, metric in METRICS.items() if name != "requests"}
    data["measured"] = (f"{benchkit.device_line(torch)}, Nsight Compute {ncu_version(ncu)}, {benchkit.today()}, "
                        f"`python scripts/shared_patterns.py {path}`")
    benchkit.write_text(path, json.dumps(data, indent=1) + "\n")
    print(f"{len(data['patterns'])} patterns measured: {data['measured']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
