"""Benchmark numbakern's simulator engine against numba-cuda's stock simulator, side by side in one process.

Every registered kernel runs on the stock engine, then on numbakern's with checks off and with all checks on;
each result is verified against the kernel's reference. Prints a markdown table (times are the best of
``--repeat`` runs; the stock engine runs once, it is the slow one) with the machine and the date.

    python scripts/bench_sim.py              # all registered kernels
    python scripts/bench_sim.py matmul_tiled # just these
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # before numba is imported: numba reads it once

import numba_cuda
import numpy as np

import numbakern
from numbakern import sim

#: the lecture's matmul size (64×64×64, 16×16 tiles), for every kernel of the matmul family
MATMUL = {"h": 64, "k": 64, "w": 64}
SIZES = {"matmul": MATMUL, "elementwise": {"n": 4096}, "reduce": {"n": 4096}, "transpose": {"h": 64, "w": 64}}


def timed(spec, case, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        outputs = numbakern.run_case(spec, case)
        best = min(best, time.perf_counter() - start)
        failed = [str(c) for c in spec.check(case, outputs).values() if not c.ok]
        if failed:
            raise SystemExit(f"{spec.name}: wrong result on the {sim.active_engine()} engine: {failed}")
    return best


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores; Python {platform.python_version()}, numba-cuda {numba_cuda.__version__}, "
        f"numpy {np.__version__}"
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernels", nargs="*", help="registered kernel names (default: all)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per numbakern configuration (best is kept)")
    args = parser.parse_args(argv)

    specs = [numbakern.get(name) for name in args.kernels] if args.kernels else numbakern.all_specs()
    rng = np.random.default_rng(2024)
    print(f"numbakern simulator benchmark, {datetime.date.today().isoformat()}")
    print(f"machine: {machine()}")
    print(f"command: python scripts/bench_sim.py {' '.join(sys.argv[1:])}".rstrip())
    print()
    print("| kernel | size | stock simulator | numbakern, checks off | speed-up | numbakern, all checks "
          "| checks cost |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for spec in specs:
        size = SIZES.get(spec.family, spec.test_sizes[0])
        case = spec.make_case(size, rng, "uniform")
        with sim.use_engine("stock"):
            stock = timed(spec, case, 1)
        with sim.use_engine("numbakern"), sim.checks("none"):
            fast = timed(spec, case, args.repeat)
        with sim.use_engine("numbakern"), sim.checks("all"):
            checked = timed(spec, case, args.repeat)
        shown = "×".join(str(v) for v in size.values())
        print(
            f"| {spec.name} | {shown} | {stock:.3f} s | {fast:.3f} s | {stock / fast:.1f}× | {checked:.3f} s "
            f"| {checked / fast:.2f}× |",
            flush=True,
        )


if __name__ == "__main__":
    main()
