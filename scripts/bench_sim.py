"""Benchmark numbakern's simulator engine against numba-cuda's stock simulator: speed, memory, typing cost.

Every comparison with the stock engine is made in the same run, in rounds that alternate the engines (the machine
this runs on is shared: its load moves single timings by more than the targets' margins), and reported as the
median of the rounds' ratios, beside the targets:

1. every registered kernel on the stock engine and on numbakern's (typed, warm cache), checks off and all checks
   on, each result verified against the kernel's reference; times are the best of ``--repeat`` runs (the stock
   engine: ``--stock-repeat``, default one: it is the slow one);
2. the lecture's tiled matmul (64x64x64, 16x16 tiles) in ``--rounds`` rounds: stock, numbakern checks off and all
   checks (targets: 30x and 15x);
3. a tiny kernel's launch (32 threads, all checks): a new kernel object (typing cached), a repeated launch, and a
   kernel typed for the first time, beside the stock engine's launch;
4. numba-cuda's main test set (its doc examples and the cudapy modules of ``scripts/numba_cuda_suite.py``'s main
   set), every check on, in ``--suite-rounds`` rounds of one pytest process each: stock, numbakern with a warm
   typing cache and with an empty one (targets: 5x warm, 3x cold);
5. the cost of typing a kernel the first time, in an empty typing cache: the helper process compiling it
   (``--ptx``: with NVVM as well) and numbakern rewriting the Python rebuilt from its typed IR;
6. a launch of 10^6 one-thread blocks, unchecked and with all checks, each in a process of its own: time and the
   process's peak memory;
7. ``--suite``: numbakern's own simulator-backed tests with typing on and off (warm cache).

    python scripts/bench_sim.py                          # 1 to 6, all registered kernels
    python scripts/bench_sim.py matmul_tiled             # just these kernels (1 and 5)
    python scripts/bench_sim.py --suite-rounds 0         # without numba-cuda's test set (minutes per round)
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


def bench_size(spec) -> dict:
    """The family's benchmark size where the kernel takes its dimensions, else its first test size."""
    size = SIZES.get(spec.family)
    return size if size is not None and set(size) == set(spec.test_sizes[0]) else spec.test_sizes[0]
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
        size = bench_size(spec)
        case = spec.make_case(size, rng, "uniform")
        with sim.use_engine("numbakern"), sim.checks("none"):
            numbakern.run_case(spec, case)  # typed (or read from the cache) before the timing
        try:
            with sim.use_engine("stock"):
                stock = timed(spec, case, stock_repeat)
        except (AttributeError, RuntimeError):  # the stock engine lacks warp and tensor-core intrinsics
            stock = None
        with sim.use_engine("numbakern"), sim.checks("none"):
            fast = timed(spec, case, repeat)
        with sim.use_engine("numbakern"), sim.checks("all"):
            checked = timed(spec, case, repeat)
        shown = "×".join(str(v) for v in size.values())
        stock_cells = f"{stock:.3f} s | {stock / fast:.1f}×" if stock is not None else "cannot run it | —"
        emit(f"| {spec.name} | {shown} | {stock_cells.split(' | ')[0]} | {fast:.3f} s | "
             f"{stock_cells.split(' | ')[1]} | {checked:.3f} s | {checked / fast:.2f}× |")


#: the speed-ups numbakern's engine is held to (docs/simulator.md, "Speed")
TARGETS = {"lecture, checks off": 30, "lecture, all checks": 15, "main set, warm cache": 5, "main set, cold cache": 3}


def median(values: list[float]) -> float:
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def verdict(name: str, ratios: list[float]) -> str:
    m = median(ratios)
    target = TARGETS[name]
    return (f"{name}: median {m:.1f}× (rounds from {min(ratios):.1f}× to {max(ratios):.1f}×), target ≥ {target}×: "
            f"{'met' if m >= target else 'NOT met'}")


def lecture_rounds(rounds: int, repeat: int) -> None:
    """The lecture's tiled matmul: the stock engine and numbakern's (typed, checks off and all checks) in
    alternation, one ratio per round and configuration, and their medians."""
    spec = numbakern.get("matmul_tiled")
    case = spec.make_case(MATMUL, np.random.default_rng(2024), "uniform")
    for checks in ("none", "all"):
        with sim.use_engine("numbakern"), sim.checks(checks):
            numbakern.run_case(spec, case)
    off, on = [], []
    emit("| round | stock simulator | numbakern, checks off | speed-up | numbakern, all checks | speed-up |")
    emit("|---:|---:|---:|---:|---:|---:|")
    for r in range(rounds):
        with sim.use_engine("stock"):
            stock = timed(spec, case, 1)
        with sim.use_engine("numbakern"), sim.checks("none"):
            fast = timed(spec, case, repeat)
        with sim.use_engine("numbakern"), sim.checks("all"):
            checked = timed(spec, case, repeat)
        off.append(stock / fast)
        on.append(stock / checked)
        emit(f"| {r + 1} | {stock:.3f} s | {fast:.3f} s | {stock / fast:.1f}× | {checked:.3f} s | "
             f"{stock / checked:.1f}× |")
    emit("")
    emit(f"- {verdict('lecture, checks off', off)}")
    emit(f"- {verdict('lecture, all checks', on)}")


_TINY_CHILD = r"""
import json, os, sys, time
os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
import numpy as np
import numbakern
from numba import cuda
from numbakern import sim


def make(scale):
    @cuda.jit
    def tiny(x, out):
        i = cuda.grid(1)
        if i < x.shape[0]:
            out[i] = x[i] * np.float32(scale) + np.float32(1.0)

    return tiny


engine, n = sys.argv[1], int(sys.argv[2])
x = np.arange(32, dtype=np.float32)
out = np.zeros_like(x)
times = {}
with sim.use_engine(engine), sim.checks("all"):
    start = time.perf_counter()
    make(-1.0)[1, 32](x, out)  # numbakern: starts the typing helper, types the kernel
    times["first"] = time.perf_counter() - start
    start = time.perf_counter()
    for i in range(n):  # a kernel typed for the first time each (a constant of its own), the helper running
        make(float(i))[1, 32](x, out)
    times["typed"] = (time.perf_counter() - start) / n
    start = time.perf_counter()
    for _ in range(n):  # a new kernel object of code typed before: the typing cache
        make(0.0)[1, 32](x, out)
    times["new"] = (time.perf_counter() - start) / n
    kernel = make(0.0)
    kernel[1, 32](x, out)
    start = time.perf_counter()
    for _ in range(n):
        kernel[1, 32](x, out)
    times["repeated"] = (time.perf_counter() - start) / n
assert (out == x * np.float32(0.0) + np.float32(1.0)).all()
print(json.dumps(times))
"""


def tiny_launches(n: int) -> None:
    """A 32-thread kernel with every check on, in a fresh process per engine with an empty typing cache: the
    launch of a kernel typed for the first time, of a new kernel object whose typing is cached, and a repeated
    launch of one kernel object."""
    results = {}
    for engine in ("stock", "numbakern"):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, NUMBAKERN_CACHE_DIR=cache)
            done = subprocess.run([sys.executable, "-c", _TINY_CHILD, engine, str(n)], capture_output=True,
                                  text=True, cwd=ROOT, env=env, timeout=3600)
        if done.returncode != 0:
            raise SystemExit(f"the tiny-kernel launches failed on the {engine} engine:\n{done.stderr[-3000:]}")
        results[engine] = json.loads(done.stdout.strip().splitlines()[-1])
    stock, mine = results["stock"], results["numbakern"]
    emit("| a 32-thread kernel, all checks | stock simulator | numbakern |")
    emit("|---|---:|---:|")
    emit(f"| the process's first launch (numbakern: starts the typing helper) | {stock['first'] * 1e3:.0f} ms | "
         f"{mine['first'] * 1e3:.0f} ms |")
    emit(f"| a kernel typed for the first time (the helper running) | {stock['typed'] * 1e3:.1f} ms | "
         f"{mine['typed'] * 1e3:.1f} ms |")
    emit(f"| a new kernel object, its typing cached | {stock['new'] * 1e3:.1f} ms | {mine['new'] * 1e3:.1f} ms |")
    emit(f"| a repeated launch | {stock['repeated'] * 1e3:.1f} ms | {mine['repeated'] * 1e3:.1f} ms |")


def main_set_modules() -> tuple[str, ...]:
    """numba-cuda's main test set, as ``numbakern.sim.numba_cuda_suite`` defines it."""
    from numbakern.sim import numba_cuda_suite

    return numba_cuda_suite.MAIN


def run_main_set(engine: str, cache: str) -> dict:
    """numba-cuda's main set in one pytest process, every check on, the tests numba-cuda runs under its own simulator
    (numbakern's engine could run more: the doc examples numba-cuda skips there): seconds and outcome counts."""
    import xml.etree.ElementTree as ET

    from numbakern.sim import numba_cuda_suite

    with tempfile.TemporaryDirectory() as tmp:
        config = ["-c", numba_cuda_suite.write_configuration(tmp)]
        env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", NUMBAKERN_SIM_ENGINE=engine, NUMBAKERN_SIM_CHECKS="all",
                   # the same tests on both engines: the ones numba-cuda skips under its simulator are skipped on both
                   NUMBAKERN_CACHE_DIR=cache, NUMBAKERN_RUN_DOC_EXAMPLES="0",
                   PYTHONPATH=os.pathsep.join(p for p in (tmp, ROOT, os.environ.get("PYTHONPATH", "")) if p))
        junit = os.path.join(tmp, "junit.xml")
        cmd = [sys.executable, "-m", "pytest", "-q", "--sim", "-p", numba_cuda_suite.PLUGIN_MODULE, "-p",
               "no:cacheprovider", "-o", "consider_namespace_packages=true", "-o", "addopts=", *config, "--rootdir",
               ROOT, f"--junitxml={junit}", "--pyargs", *(f"numba.cuda.tests.{m}" for m in main_set_modules())]
        start = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=7200)
        seconds = time.perf_counter() - start
        counts = {"passed": 0, "failed": 0, "skipped": 0}
        if os.path.exists(junit):
            for case in ET.parse(junit).getroot().iter("testcase"):
                if case.find("skipped") is not None:
                    counts["skipped"] += 1
                elif case.find("failure") is not None or case.find("error") is not None:
                    counts["failed"] += 1
                else:
                    counts["passed"] += 1
    return {"seconds": seconds, **counts}


def main_set_rounds(rounds: int) -> None:
    """numba-cuda's main set: the stock engine, numbakern with a warm typing cache and with an empty one, every
    check on, one pytest process each, in rounds whose order alternates."""
    modules = main_set_modules()
    doc = sum(m.startswith("doc_examples.") for m in modules)
    emit(f"{doc} doc examples and {len(modules) - doc} cudapy modules, every check on; passed / failed / skipped "
         "per run.\n")
    emit("| round | stock simulator | numbakern, warm cache | speed-up | numbakern, cold cache | speed-up |")
    emit("|---:|---:|---:|---:|---:|---:|")
    warm_ratios, cold_ratios = [], []
    with tempfile.TemporaryDirectory() as warm:
        run_main_set("numbakern", warm)  # fills the warm cache
        for r in range(rounds):
            order = ("stock", "warm", "cold") if r % 2 == 0 else ("cold", "warm", "stock")
            got = {}
            for what in order:
                if what == "cold":
                    with tempfile.TemporaryDirectory() as empty:
                        got[what] = run_main_set("numbakern", empty)
                else:
                    got[what] = run_main_set("numbakern" if what == "warm" else "stock", warm)
            stock, w, c = got["stock"], got["warm"], got["cold"]
            warm_ratios.append(stock["seconds"] / w["seconds"])
            cold_ratios.append(stock["seconds"] / c["seconds"])

            def cell(x):
                return f"{x['seconds']:.1f} s ({x['passed']} / {x['failed']} / {x['skipped']})"

            emit(f"| {r + 1} | {cell(stock)} | {cell(w)} | {warm_ratios[-1]:.1f}× | {cell(c)} | "
                 f"{cold_ratios[-1]:.1f}× |")
    emit("")
    emit(f"- {verdict('main set, warm cache', warm_ratios)}")
    emit(f"- {verdict('main set, cold cache', cold_ratios)}")


def typing_cost(specs, ptx: bool) -> None:
    """The first launch of each kernel, each from an empty typing cache (memory and disk) and a fresh helper process
    (kernels of one code share a typing, and the helper keeps device functions it has rebuilt): numba-cuda typing
    and lowering it in the helper (started by a warm-up kernel outside the measurement), and numbakern rewriting
    the Python the helper rebuilt from its typed IR."""
    from numba import cuda

    from numbakern.frontend import client, helper
    from numbakern.sim import kerneltypes, typedcache

    @cuda.jit
    def warm_up(x):
        x[0] = 1.0

    rng = np.random.default_rng(2024)
    modes = [("LLVM IR", False)] + ([("LLVM IR and PTX", True)] if ptx else [])
    emit("| kernel | " + " | ".join(f"typing and lowering to {m}" for m, _ in modes) +
         " | rewriting its Python (numbakern) |")
    emit("|---|" + "---:|" * (len(modes) + 1))
    rows = {spec.name: [] for spec in specs}
    rewrites = {spec.name: [] for spec in specs}
    for _, with_ptx in modes:
        os.environ[client.PTX_ENV] = "1" if with_ptx else "0"
        for spec in specs:
            case = spec.make_case(bench_size(spec), rng, "uniform")
            with tempfile.TemporaryDirectory() as cache:
                os.environ["NUMBAKERN_CACHE_DIR"] = cache
                helper.stop()
                kerneltypes.forget()
                with sim.use_engine("numbakern"), sim.checks("none"):
                    warm_up[1, 1](np.zeros(1, np.float32))
                asked, before = client.stats["helper"], client.stats["helper_seconds"]
                rewrite_before = typedcache.stats["rewrite_seconds"]
                with sim.use_engine("numbakern"), sim.checks("none"):
                    numbakern.run_case(spec, case)
                if client.stats["helper"] == asked:
                    raise SystemExit(f"{spec.name}: its first launch did not type it (a typing cache was not empty)")
                rows[spec.name].append(client.stats["helper_seconds"] - before)
                rewrites[spec.name].append(typedcache.stats["rewrite_seconds"] - rewrite_before)
    os.environ.pop("NUMBAKERN_CACHE_DIR", None)
    os.environ.pop(client.PTX_ENV, None)
    helper.stop()
    kerneltypes.forget()
    for name, seconds in rows.items():
        emit(f"| {name} | " + " | ".join(f"{s:.2f} s" for s in seconds) + f" | {min(rewrites[name]) * 1e3:.0f} ms |")


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
                # reported, not raised: the sections measured before this one still reach the report and the docs
                print(done.stdout[-3000:], file=sys.stderr)
                summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else f"exit {done.returncode}"
                emit(f"The suite failed with typing {typing} ({summary}): no timing.")
                return
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
    parser.add_argument("--suite-rounds", type=int, default=3,
                        help="rounds of numba-cuda's main test set, stock and numbakern warm and cold (0: skip)")
    parser.add_argument("--launches", type=int, default=50, help="launches per kind of the tiny kernel (0: skip)")
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
    if args.launches and not args.kernels:
        emit(f"\n### A tiny kernel's launch (mean of {args.launches})\n")
        tiny_launches(args.launches)
    if args.suite_rounds and not args.kernels:
        emit(f"\n### numba-cuda's main test set, {args.suite_rounds} rounds\n")
        main_set_rounds(args.suite_rounds)
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
