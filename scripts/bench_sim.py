"""Benchmark numbakern's simulator engine against numba-cuda's stock simulator: speed, memory, typing cost.

In one run (about five minutes on two cores):

1. every registered kernel on the stock engine and on numbakern's (typed by numba-cuda's front end, warm cache),
   checks off and all checks on, each result verified against the kernel's reference; times are the best of
   ``--repeat`` runs (the stock engine: ``--stock-repeat``, default one: it is the slow one); then the lecture's
   tiled matmul in ``--rounds`` alternating rounds, for the median speed-up;
2. the cost of typing a kernel the first time (the helper process compiling it; ``--ptx``: with NVVM as well);
3. a launch of 10^6 one-thread blocks, unchecked and with all checks, each in a process of its own: time and the
   process's peak memory;
4. ``--suite``: the simulator-backed test suite with typing on and off (warm cache).

    python scripts/bench_sim.py                       # 1 to 3, all registered kernels
    python scripts/bench_sim.py matmul_tiled          # just these kernels (1 and 2)
    python scripts/bench_sim.py --suite               # 1 to 4
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # before numba is imported: numba reads it once

import numpy as np

import numbakern
from numbakern import sim

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: the lecture's matmul size (64×64×64, 16×16 tiles), for every kernel of the matmul family
MATMUL = {"h": 64, "k": 64, "w": 64}
SIZES = {"matmul": MATMUL, "elementwise": {"n": 4096}, "reduce": {"n": 4096}, "transpose": {"h": 64, "w": 64}}
MANY_BLOCKS = 1_000_000

_MANY_BLOCKS_CHILD = r"""
import json, os, resource, sys, time
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
import numpy as np
import numbakern
from numba import cuda
from numbakern import sim

@cuda.jit
def scale(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * np.float32(2.0)

n, checks = int(sys.argv[1]), sys.argv[2]
x = np.random.default_rng(7).random(n).astype(np.float32)
out = np.zeros(n, np.float32)
scale[1, 1](x[:1], out[:1])  # typed and warmed up outside the measurement
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
with sim.checks(checks):
    start, cpu = time.perf_counter(), time.process_time()
    scale[n, 1](x, out)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
assert (out == x * np.float32(2.0)).all()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": seconds, "cpu": cpu, "peak_mb": peak / 1024, "before_mb": before / 1024}))
"""


_lines: list[str] = []


def emit(line: str = "") -> None:
    """Print a line of the report (and keep it for --update-docs)."""
    print(line, flush=True)
    _lines.append(line)


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
    from machine_info import describe  # scripts/machine_info.py (this script's folder is on sys.path)

    return describe()


def speed(specs, repeat: int, stock_repeat: int) -> None:
    rng = np.random.default_rng(2024)
    emit("| kernel | size | stock simulator | numbakern, checks off | speed-up | numbakern, all checks | checks cost |")
    emit("|---|---|---:|---:|---:|---:|---:|")
    for spec in specs:
        size = SIZES.get(spec.family, spec.test_sizes[0])
        case = spec.make_case(size, rng, "uniform")
        with sim.use_engine("numbakern"), sim.checks("none"):
            numbakern.run_case(spec, case)  # typed (or read from the cache) before the timing
        with sim.use_engine("stock"):
            stock = timed(spec, case, stock_repeat)
        with sim.use_engine("numbakern"), sim.checks("none"):
            fast = timed(spec, case, repeat)
        with sim.use_engine("numbakern"), sim.checks("all"):
            checked = timed(spec, case, repeat)
        shown = "×".join(str(v) for v in size.values())
        emit(
            f"| {spec.name} | {shown} | {stock:.3f} s | {fast:.3f} s | {stock / fast:.1f}× | {checked:.3f} s "
            f"| {checked / fast:.2f}× |"
        )


def lecture_rounds(rounds: int, repeat: int) -> None:
    """The lecture's tiled matmul, stock engine and numbakern's (typed, checks off) in alternation: one ratio per
    round, and their median (a shared machine's load moves single timings by more than the target's margin)."""
    spec = numbakern.get("matmul_tiled")
    case = spec.make_case(MATMUL, np.random.default_rng(2024), "uniform")
    with sim.use_engine("numbakern"), sim.checks("none"):
        numbakern.run_case(spec, case)
    ratios = []
    emit("| round | stock simulator | numbakern, typed, checks off | speed-up |")
    emit("|---:|---:|---:|---:|")
    for r in range(rounds):
        with sim.use_engine("stock"):
            stock = timed(spec, case, 1)
        with sim.use_engine("numbakern"), sim.checks("none"):
            fast = timed(spec, case, repeat)
        ratios.append(stock / fast)
        emit(f"| {r + 1} | {stock:.3f} s | {fast:.3f} s | {stock / fast:.1f}× |")
    ratios.sort()
    emit(f"\nMedian speed-up {ratios[len(ratios) // 2]:.1f}× (from {ratios[0]:.1f}× to {ratios[-1]:.1f}×).")


def typing_cost(specs, ptx: bool) -> None:
    """The first launch of each kernel types it in the helper process (a fresh cache: nothing to read)."""
    from numbakern.frontend import client, helper
    from numbakern.sim import kerneltypes

    rng = np.random.default_rng(2024)
    modes = [("LLVM IR", False)] + ([("LLVM IR and PTX", True)] if ptx else [])
    emit("| kernel | " + " | ".join(f"typing and lowering to {m}" for m, _ in modes) + " |")
    emit("|---|" + "---:|" * len(modes))
    rows = {spec.name: [] for spec in specs}
    start_cost = None
    for _, with_ptx in modes:
        os.environ[client.PTX_ENV] = "1" if with_ptx else "0"
        with tempfile.TemporaryDirectory() as cache:
            os.environ["NUMBAKERN_CACHE_DIR"] = cache
            helper.stop()
            client._memory.clear()
            kerneltypes._memo.clear()
            for spec in specs:
                case = spec.make_case(SIZES.get(spec.family, spec.test_sizes[0]), rng, "uniform")
                before = client.stats["helper_seconds"]
                with sim.checks("none"):
                    numbakern.run_case(spec, case)
                spent = client.stats["helper_seconds"] - before
                if start_cost is None:
                    start_cost = spent  # the first request also starts the helper
                    spec_first = spec.name
                rows[spec.name].append(spent)
    os.environ.pop("NUMBAKERN_CACHE_DIR", None)
    os.environ.pop(client.PTX_ENV, None)
    client._memory.clear()
    kerneltypes._memo.clear()
    for name, seconds in rows.items():
        note = " (includes starting the helper)" if name == spec_first else ""
        emit(f"| {name}{note} | " + " | ".join(f"{s:.2f} s" for s in seconds) + " |")


def many_blocks(n: int) -> None:
    results = {}
    for checks in ("none", "all"):
        done = subprocess.run([sys.executable, "-c", _MANY_BLOCKS_CHILD, str(n), checks], capture_output=True,
                              text=True, cwd=ROOT, timeout=3600)
        if done.returncode != 0:
            raise SystemExit(f"the {n}-block launch failed:\n{done.stderr[-3000:]}")
        results[checks] = json.loads(done.stdout.strip().splitlines()[-1])
    emit(f"| {n:,} one-thread blocks | time (CPU time) | peak memory of the process |")
    emit("|---|---:|---:|")
    for checks, label in (("none", "checks off"), ("all", "all checks")):
        r = results[checks]
        emit(f"| {label} | {r['seconds']:.1f} s ({r['cpu']:.1f} s) | {r['peak_mb']:.0f} MB |")
    ratio = results["all"]["cpu"] / results["none"]["cpu"]
    emit(f"\nAll checks cost {ratio:.2f}× the unchecked CPU time and "
          f"{results['all']['peak_mb'] - results['none']['peak_mb']:.0f} MB more at peak.")


def suite(runs: int) -> None:
    tests = ["tests/numbakern", "tests/perf", "tests/sim/test_engine.py"]
    times = {"on": [], "off": []}
    for _ in range(runs):
        for typing in ("on", "off"):
            env = dict(os.environ, NUMBAKERN_SIM_TYPING="1" if typing == "on" else "0")
            start = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests], cwd=ROOT,
                                  env=env, capture_output=True, text=True)
            times[typing].append(time.perf_counter() - start)
            if done.returncode != 0:
                raise SystemExit(f"the suite failed with typing {typing}:\n{done.stdout[-3000:]}")
    on, off = min(times["on"]), min(times["off"])
    emit(f"| `pytest {' '.join(tests)}` | typing on (warm cache) | typing off | slowdown |")
    emit("|---|---:|---:|---:|")
    emit(f"| best of {runs} | {on:.1f} s | {off:.1f} s | {100 * (on / off - 1):+.0f}% |")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernels", nargs="*", help="registered kernel names (default: all)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per numbakern configuration (best is kept)")
    parser.add_argument("--stock-repeat", type=int, default=1, help="runs on the stock engine (best is kept)")
    parser.add_argument("--blocks", type=int, default=MANY_BLOCKS, help="blocks of the many-blocks launch (0: skip)")
    parser.add_argument("--ptx", action="store_true", help="also time typing with NVVM (LLVM IR to PTX)")
    parser.add_argument("--suite", action="store_true", help="also time the test suite with typing on and off")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the lecture matmul comparison (0: skip)")
    parser.add_argument("--update-docs", action="store_true", help="write the report into docs/simulator.md")
    args = parser.parse_args(argv)

    specs = [numbakern.get(name) for name in args.kernels] if args.kernels else numbakern.all_specs()
    emit(f"numbakern simulator benchmark, {datetime.date.today().isoformat()}")
    emit(f"machine: {machine()}")
    emit(f"command: python scripts/bench_sim.py {' '.join(sys.argv[1:])}".rstrip())
    emit("\n### Speed (times are wall-clock, best of the runs)\n")
    speed(specs, args.repeat, args.stock_repeat)
    if args.rounds and not args.kernels:
        emit(f"\n### The lecture's tiled matmul, {args.rounds} rounds\n")
        lecture_rounds(args.rounds, args.repeat)
    emit("\n### Typing a kernel the first time\n")
    typing_cost(specs, args.ptx)
    if args.blocks and not args.kernels:
        emit("\n### Memory and time of a launch of many blocks\n")
        many_blocks(args.blocks)
    if args.suite:
        emit("\n### The test suite with and without typing\n")
        suite(2)
    if args.update_docs:
        update_docs("\n".join(_lines))


def update_docs(text: str) -> None:
    import re

    path = os.path.join(ROOT, "docs", "simulator.md")
    begin, end = "<!-- bench_sim: begin -->", "<!-- bench_sim: end -->"
    with open(path, encoding="utf-8") as f:
        doc = f.read()
    if begin not in doc or end not in doc:
        raise SystemExit(f"{path} has no bench_sim markers")
    # the report's own title line is the section's: keep from the machine line on
    text = text.split("\n", 1)[1] if text.startswith("numbakern simulator benchmark") else text
    new = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: f"{begin}\n{text}\n{end}", doc, flags=re.S)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(new)
    os.replace(tmp, path)

if __name__ == "__main__":
    main()
