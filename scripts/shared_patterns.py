#!/usr/bin/env python
"""How a GPU serves one warp's shared-memory access, lane pattern by lane pattern, as Nsight Compute counts it: the
measurements ``numbakern.profiler.rules`` is held to (tests/profile/test_shared_patterns.py).

    python scripts/shared_patterns.py tests/profile/shared_load_patterns.json     # on a GPU, with ncu

The file holds lane patterns: ``offsets``, each lane's byte offset from a 128-byte aligned shared base (-1: the
lane does not take part), and ``instruction``, one of

- ``LDS.128`` (the default): one ``vload4`` (16 bytes) per lane;
- ``STS.32``: one 4-byte store per lane;
- ``LDGSTS``: one ``cp.async`` per lane of ``bytes`` (4 or 16) from ``global``, each lane's byte offset from a
  128-byte aligned global base (every warp its own copy of the source, so each warp's copy misses in L1).

For each, one block of four warps runs the instruction once per warp (LDS.128 after filling the array); the script
runs itself under ``ncu`` and writes back, per pattern and per warp-level instruction, the wavefronts
(``smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_{ld,st,ldgsts}``) and bank conflicts, with the device,
ncu's version and the date. Exit status: 0 done, 1 the profiled run failed, 2 no GPU / no ncu.
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
WORDS = 8192  # the shared array's float32s (32 KiB: the library patterns span up to 17 KB)
#: by instruction: the shared-memory operation ncu files it under, and the L1 bank-conflict counter it has
OPS = {"LDS.128": ("ld", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"),
       "STS.32": ("st", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"),
       "LDGSTS": ("ldgsts", "smsp__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum")}


def _wavefronts(op: str) -> str:
    return f"smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum"


METRICS = sorted({m for op, conflicts in OPS.values() for m in (_wavefronts(op), conflicts)})


def instruction(pattern) -> str:
    return pattern.get("instruction", "LDS.128")


def child(path: Path) -> int:
    """Under ncu: one launch per pattern, in the file's order."""
    import numpy as np
    from numba import cuda

    from numbakern.async_copy import async_commit, async_wait_all, copy_async, copy_async16
    from numbakern.vector_io import vload4

    @cuda.jit
    def lds128(out, offsets):
        sm = cuda.shared.array(WORDS, np.float32, alignment=16)
        t = cuda.threadIdx.x
        for i in range(t, WORDS, 32 * WARPS):
            sm[i] = i * 0.5
        cuda.syncthreads()
        regs = cuda.local.array(4, np.float32)
        vload4(sm, (offsets[t % 32] // 4,), regs, 0)
        out[t] = regs[0] + regs[1] + regs[2] + regs[3]

    @cuda.jit
    def sts32(out, offsets):
        sm = cuda.shared.array(WORDS, np.float32, alignment=16)
        t = cuda.threadIdx.x
        if offsets[t % 32] >= 0:
            sm[offsets[t % 32] // 4] = t * 0.5
        cuda.syncthreads()
        out[t] = sm[t]

    def ldgsts(copy):
        @cuda.jit
        def probe(out, offsets, src, sources):
            sm = cuda.shared.array(WORDS, np.float32, alignment=16)
            t = cuda.threadIdx.x
            if offsets[t % 32] >= 0:
                copy(sm, (offsets[t % 32] // 4,), src, (t // 32 * WORDS + sources[t % 32] // 4,), True)
            async_commit()
            async_wait_all()
            cuda.syncthreads()
            out[t] = sm[t]
        return probe

    ldgsts16, ldgsts4 = ldgsts(copy_async16), ldgsts(copy_async)
    out = cuda.device_array(32 * WARPS, np.float32)
    src = cuda.to_device(np.arange(WARPS * WORDS, dtype=np.float32))
    for pattern in json.loads(path.read_text())["patterns"]:
        offsets = cuda.to_device(np.array(pattern["offsets"], np.int32))
        kind = instruction(pattern)
        if kind == "LDS.128":
            lds128[1, 32 * WARPS](out, offsets)
        elif kind == "STS.32":
            sts32[1, 32 * WARPS](out, offsets)
        else:
            probe = ldgsts16 if pattern["bytes"] == 16 else ldgsts4
            probe[1, 32 * WARPS](out, offsets, src, cuda.to_device(np.array(pattern["global"], np.int32)))
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
    run = subprocess.run([ncu, "--metrics", ",".join(METRICS), "--csv", sys.executable, __file__,
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
        op, conflicts = OPS[instruction(pattern)]
        # each warp runs the probed instruction once, and nothing else of its kind
        pattern["gpu"] = {"wavefronts": launch[_wavefronts(op)] / WARPS, "l1_bank_conflicts": launch[conflicts] / WARPS}
    data["measured"] = (f"{benchkit.device_line(torch)}, Nsight Compute {ncu_version(ncu)}, {benchkit.today()}, "
                        f"`python scripts/shared_patterns.py {path}`")
    benchkit.write_text(path, json.dumps(data, indent=1) + "\n")
    print(f"{len(data['patterns'])} patterns measured: {data['measured']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
