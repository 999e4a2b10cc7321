#!/usr/bin/env python
"""Every GPU of the host, measured: verification, the test suite and the benchmark on one GPU and on two, in one go.

    python scripts/gpu_scale.py [host] [verify] [bench] [tests]     # default: all four, in this order

- **host**: how the host's throughput grows with processes: 1, 8, 16, ... processes at once (up to the cores), each
  doing the same fixed host work of a verification case (a float32 array made float64, compared within a tolerance
  and hashed; one math-library thread each): the seconds each took beside one process alone. Work that slows down
  as processes are added is bound by something they share (memory bandwidth), not by the cores.
- **verify**: ``python -m translate.verify --all --sanitize`` with ``--gpus 1``, then with ``--gpus 2``, on the same
  machine in the same run (``--no-record``: both plan from the same manifest); the wall time of each, their ratio
  (the target is at most 0.55) and the verdicts, and how busy the host's CPU and each GPU were meanwhile (sampled
  every 2 s: a run that does not halve on two GPUs waits on one or the other). The two-GPU run's records (with
  each kernel's seconds) are kept for ``python -m translate.verify --apply``.
- **bench**: ``scripts/bench.py`` on a subset of kernels with ``--gpus 2`` and ``--gpus 1``: the wall times, and how
  far the two runs' figures are apart row for row (the same kernels at the same sizes must time the same, within
  noise), and whether the two GPUs were found to be one model.
- **tests**: ``pytest --gpu -n auto``: every xdist worker on a GPU of its own (the header says which), the outcome,
  and which GPUs had test processes on them (``nvidia-smi``, sampled); its log lists the 25 slowest tests.

The steps but ``host`` need a machine with at least two GPUs (with one, the two-GPU runs are left out). Each step
has a time limit, and the whole run a deadline (``--deadline``, default 570 s, for a 10-minute call): a step that
runs over is stopped, its log kept, and the table says so. Writes to ``$OUT`` (default ``build/gpu_scale``), at most
eight files: ``scale.md`` (the table, printed last too; the host step's figures are in it), ``verify-1gpu.log``,
``verify-2gpu.log``, ``records.json``, ``bench.log``, ``bench-1gpu.csv``, ``bench-2gpu.csv``, ``tests.log``.

On the offline GPU machine, numbakern runs from the checkout with its wheels installed beside it (see the GPU
machine's notes): ``pip install --target /tmp/site .whl/*.whl`` and ``PYTHONPATH=/tmp/site:$PWD``; pytest loads the
plugin with ``-p numbakern.pytest_plugin`` there (numbakern is not installed).
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STEPS = ("host", "verify", "bench", "tests")
#: the benchmark's subset: every kernel but the matmuls and the attentions (a Triton peer's autotuning, and SDPA's
#: backends timed beside each attention, would take the ten minutes of a GPU call) -- 22 kernels of eight families
BENCH_SKIP_FAMILIES = ("matmul", "attention")
#: each step's longest run, in seconds (the deadline may leave less)
LIMITS = {"verify-1gpu": 300, "verify-2gpu": 200, "bench-2gpu": 200, "bench-1gpu": 330, "tests": 570}


class Run:
    """One command: its wall time, exit status, whether the time limit stopped it, its log."""

    def __init__(self, name: str, argv: list[str], log: Path, limit: float, env: dict[str, str], scratch: Path):
        self.name, self.argv, self.log = name, argv, log
        # a build cache of its own: no run profits from the libraries an earlier one built
        env = {**env, "NUMBAKERN_BUILD_DIR": str(scratch / f"build-{name}")}
        print(f"\n######## {name}: {' '.join(argv)}  (at most {limit:.0f} s; log {log.name})", flush=True)
        t0 = time.perf_counter()
        with open(log, "w") as f:
            f.write(f"$ {' '.join(argv)}\n")
            f.flush()
            proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            try:
                self.rc = proc.wait(timeout=max(1.0, limit))
                self.cut = False
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)  # the command and every worker it started
                proc.wait()
                self.rc, self.cut = None, True
        self.seconds = time.perf_counter() - t0
        self.text = log.read_text(errors="replace")
        if self.cut:
            with open(log, "a") as f:
                f.write(f"\n[gpu_scale.py: stopped after {self.seconds:.0f} s, the step's time limit]\n")
        tail = [line for line in self.text.splitlines() if line.strip()][-3:]
        print("\n".join(tail), flush=True)
        print(f"######## {name}: {self.status} in {self.seconds:.0f} s", flush=True)

    @property
    def status(self) -> str:
        return f"stopped at the limit ({self.seconds:.0f} s)" if self.cut else ("ok" if self.rc == 0 else
                                                                                  f"exit {self.rc}")


class GpuUse:
    """``nvidia-smi``'s compute processes, sampled every few seconds while a step runs: which GPUs had work."""

    def __init__(self):
        self.seen: dict[str, set[int]] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self):
        while not self.stop.is_set():
            try:
                out = subprocess.run(["nvidia-smi", "--query-compute-apps=gpu_uuid,pid", "--format=csv,noheader"],
                                     capture_output=True, text=True, timeout=20).stdout
            except (OSError, subprocess.TimeoutExpired):
                return
            for line in out.splitlines():
                uuid, _, pid = line.partition(",")
                if pid.strip().isdigit():
                    self.seen.setdefault(uuid.strip(), set()).add(int(pid))
            self.stop.wait(3.0)

    def summary(self, names: dict[str, str]) -> str:
        self.stop.set()
        self.thread.join(timeout=30)
        return "; ".join(f"{names.get(u, u)}: {len(p)} processes" for u, p in sorted(self.seen.items())) or "none seen"


def cpu_times(stat_line: str) -> tuple[int, int]:
    """``(total, idle)`` jiffies of all cores from ``/proc/stat``'s first line (idle counts iowait too)."""
    fields = [int(x) for x in stat_line.split()[1:]]
    return sum(fields), fields[3] + (fields[4] if len(fields) > 4 else 0)


def busy_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The share of all cores' time spent busy between two ``cpu_times`` readings, in percent."""
    total, idle = after[0] - before[0], after[1] - before[1]
    return 100.0 * (total - idle) / total if total > 0 else float("nan")


def gpu_utilisation(smi_text: str) -> dict[str, float]:
    """``{"GPU 0": 61.0, ...}`` from ``nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits``."""
    found = {}
    for line in smi_text.splitlines():
        index, _, util = (part.strip() for part in line.partition(","))
        if index.isdigit() and re.fullmatch(r"\d+(\.\d+)?", util):
            found[f"GPU {index}"] = float(util)
    return found


class Utilisation:
    """The host's CPU (``/proc/stat``, all cores) and each GPU's utilisation (``nvidia-smi``: the share of time a
    kernel was running), sampled every ``period`` seconds while a step runs: whether a step that does not scale with
    the GPUs waits on the host or on the GPUs."""

    def __init__(self, period: float = 2.0):
        self.cpu: list[float] = []
        self.gpus: dict[str, list[float]] = {}
        self.period = period
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self):
        try:
            with open("/proc/stat") as f:
                last = cpu_times(f.readline())
        except (OSError, ValueError, IndexError):
            last = None
        while not self.stop.wait(self.period):
            if last is not None:
                with open("/proc/stat") as f:
                    now = cpu_times(f.readline())
                self.cpu.append(busy_share(last, now))
                last = now
            try:
                out = subprocess.run(["nvidia-smi", "--query-gpu=index,utilization.gpu",
                                      "--format=csv,noheader,nounits"], capture_output=True, text=True,
                                     timeout=20).stdout
            except (OSError, subprocess.TimeoutExpired):
                continue
            for gpu, util in gpu_utilisation(out).items():
                self.gpus.setdefault(gpu, []).append(util)

    def summary(self) -> str:
        self.stop.set()
        self.thread.join(timeout=30)
        parts = []
        if self.cpu:
            parts.append(f"host CPU busy {statistics.mean(self.cpu):.0f}% of all cores on average "
                         f"({sum(c >= 90 for c in self.cpu)} of {len(self.cpu)} samples at 90% or more)")
        parts += [f"{gpu} busy {statistics.mean(u):.0f}%" for gpu, u in sorted(self.gpus.items())]
        return "; ".join(parts) or "no utilisation samples"


#: the host step's work: one array of this many float32 elements, converted, compared and hashed this many times
HOST_ELEMENTS = 2048 * 2048
HOST_ROUNDS = 6


def host_case(_: int = 0) -> float:
    """Seconds of one verification case's kind of host work, in this process: ``HOST_ROUNDS`` times an array of
    ``HOST_ELEMENTS`` float32 made float64, compared with a copy within a tolerance and hashed."""
    import hashlib

    import numpy as np

    a = np.random.default_rng(0).standard_normal(HOST_ELEMENTS).astype(np.float32)
    t0 = time.perf_counter()
    for _ in range(HOST_ROUNDS):
        b = a.astype(np.float64)
        close = np.abs(b - b * (1 + 1e-7)) <= 1e-6 + 1e-5 * np.abs(b)
        hashlib.sha256(a.tobytes()).hexdigest()
        assert close.all()
    return time.perf_counter() - t0


def host_capacity(counts: list[int]) -> list[tuple[int, float, float]]:
    """``(processes, median seconds of each one's case, throughput in cases a second)`` for each count in
    ``counts``: that many processes (math libraries on one thread each) each doing ``host_case`` at once."""
    import multiprocessing

    threads = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    before = {name: os.environ.get(name) for name in threads}
    os.environ.update(dict.fromkeys(threads, "1"))  # (the spawned processes inherit this environment)
    context = multiprocessing.get_context("spawn")
    found = []
    try:
        for n in counts:
            with context.Pool(n) as pool:
                pool.map(host_case, range(n))  # every process started and numpy imported before the timed round
                t0 = time.perf_counter()
                each = pool.map(host_case, range(n))
                wall = time.perf_counter() - t0
            found.append((n, statistics.median(each), n / wall))
    finally:  # the steps after this one start their tools with the environment they had
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return found


def host_counts(cores: int) -> list[int]:
    """1, then 8, 16, 32, ... up to ``cores``, and ``cores`` itself."""
    counts, n = [1], 8
    while n < cores:
        counts.append(n)
        n *= 2
    return counts + ([cores] if cores > 1 else [])


def gpu_names() -> dict[str, str]:
    """``{uuid: "GPU i"}`` from nvidia-smi."""
    out = subprocess.run(["nvidia-smi", "--query-gpu=index,uuid", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout
    return {u.strip(): f"GPU {i.strip()}" for i, _, u in (line.partition(",") for line in out.splitlines()) if u}


def verdicts(text: str) -> str:
    """``35 PASS, 0 FAIL`` from a verification's summary table."""
    rows = re.findall(r"^\S+\s+(PASS|FAIL)\s+\d+/\d+", text, flags=re.MULTILINE)
    return f"{rows.count('PASS')} PASS, {rows.count('FAIL')} FAIL" if rows else "no summary"


def plan_line(text: str) -> str:
    m = re.search(r"kernels, (\d+ GPUs? × [\d/]+ worker process(?:es)? \([^)]*\))", text)
    return m.group(1) if m else ""


def bench_kernels() -> list[str]:
    """The library's kernels outside ``BENCH_SKIP_FAMILIES``, by name."""
    from numbakern import registry

    return [s.name for s in registry.all_specs() if s.family not in BENCH_SKIP_FAMILIES]


def bench_rows(path: Path) -> dict[tuple[str, str], dict[str, str]]:
    if not path.exists():
        return {}
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    return {(r["kernel"], r["size"]): r for r in csv.DictReader(lines) if r["kernel"] != "copy"}


def bench_agreement(one: Path, two: Path) -> str:
    """How far the two runs' C and Numba times are apart, row for row."""
    a, b = bench_rows(one), bench_rows(two)
    common = sorted(set(a) & set(b))
    diffs = []
    for key in common:
        for field in ("c_ms", "numba_ms"):
            x, y = float(a[key][field] or "nan"), float(b[key][field] or "nan")
            if x == x and y == y and x > 0:
                diffs.append(abs(y / x - 1) * 100)
    if not diffs:
        return "no rows to compare"
    return (f"{len(common)} rows: C and Numba times apart by median {statistics.median(diffs):.1f}%, "
            f"at most {max(diffs):.1f}%")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("steps", nargs="*", metavar="STEP", help=f"{', '.join(STEPS)} (default: all, in this order)")
    parser.add_argument("--deadline", type=float, default=570.0, help="seconds for the whole run (default 570)")
    args = parser.parse_args(argv)
    unknown = [s for s in args.steps if s not in STEPS]
    if unknown:
        parser.error(f"unknown step {unknown[0]!r} (expected {', '.join(STEPS)})")
    steps = args.steps or list(STEPS)
    start = time.perf_counter()
    out = Path(os.environ.get("OUT") or ROOT / "build" / "gpu_scale")
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="gpu_scale-"))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("OUT", None)  # the tools would write their own files into $OUT: here only the eight below go there
    env.pop("NUMBAKERN_VERIFY_LOG", None)

    gpus_needed = [s for s in steps if s != "host"]
    if gpus_needed and shutil.which("nvidia-smi") is None:
        print(f"gpu_scale.py: {', '.join(gpus_needed)} need nvidia-smi and a GPU", file=sys.stderr)
        return 2
    names = gpu_names() if gpus_needed else {}
    environment = subprocess.run(["nvidia-smi", "--query-gpu=index,name,memory.total,clocks.max.sm,driver_version",
                                  "--format=csv,noheader"], capture_output=True, text=True).stdout.strip() \
        if gpus_needed else "(no GPU step)"
    cores = len(os.sched_getaffinity(0))
    print(f"{environment}\n{cores} CPU cores", flush=True)
    two = len(names) >= 2

    def left(step: str) -> float:
        return min(LIMITS[step], args.deadline - (time.perf_counter() - start))

    rows: list[tuple[str, str, str, str]] = []  # step, wall, result, notes
    t = sys.executable
    if "host" in steps:
        t0 = time.perf_counter()
        found = host_capacity(host_counts(cores))
        alone = found[0][1]
        for n, each, rate in found:
            print(f"host: {n} processes at once: each case {each:.2f} s ({each / alone:.2f}x one alone), "
                  f"{rate:.1f} cases/s", flush=True)
        rows.append(("host: one case's host work, N processes at once", f"{time.perf_counter() - t0:.0f} s",
                     "; ".join(f"{n}: {each / alone:.2f}x" for n, each, _ in found),
                     f"seconds of each case beside one process alone ({alone:.2f} s); {found[-1][2]:.1f} cases/s "
                     f"with {found[-1][0]} processes, {found[0][2]:.1f} with one"))
    if "verify" in steps:
        runs = {}
        for n in ((1, 2) if two else (1,)):
            records = out / "records.json" if n == 2 else scratch / "records-1gpu.json"
            use = Utilisation()
            runs[n] = Run(f"verify-{n}gpu", [t, "-m", "translate.verify", "--all", "--sanitize", "--gpus", str(n),
                                             "--no-record", "--records-out", str(records),
                                             "--verify-log", str(scratch / f"verify-{n}gpu")],
                          out / f"verify-{n}gpu.log", left(f"verify-{n}gpu"), env, scratch)
            rows.append((f"translate.verify --all --sanitize --gpus {n}", f"{runs[n].seconds:.0f} s",
                         f"{runs[n].status}; {verdicts(runs[n].text)}",
                         f"{plan_line(runs[n].text)}; {use.summary()}"))
        if two and runs[1].rc == 0 and runs[2].rc == 0:  # (a run stopped or failed times nothing comparable)
            ratio = runs[2].seconds / runs[1].seconds
            rows.append(("  2 GPUs / 1 GPU", f"{ratio:.2f}", "target <= 0.55: " + ("met" if ratio <= 0.55 else
                                                                                     "NOT met"), ""))
    if "bench" in steps:
        kernels = bench_kernels()
        subset = ["--kernels", *kernels]  # measured as bench.py measures them, at its own budget
        timed = {}
        for n in ((2, 1) if two else (1,)):
            folder = scratch / f"bench-{n}gpu"
            use = Utilisation()
            run = Run(f"bench-{n}gpu", [t, "scripts/bench.py", *subset, "--gpus", str(n), "--out", str(folder)],
                      scratch / f"bench-{n}gpu.log", left(f"bench-{n}gpu"), env, scratch)
            with open(out / "bench.log", "a") as log:
                log.write(run.text + "\n")
            if (folder / "bench.csv").exists():
                shutil.copy(folder / "bench.csv", out / f"bench-{n}gpu.csv")
            timed[n] = run
            same = re.search(r"Rows from .*? (are comparable|are NOT comparable)[^\n]*", run.text)
            rows.append((f"bench.py --gpus {n} ({len(kernels)} kernels)", f"{run.seconds:.0f} s", run.status,
                         (same.group(0)[:160] + "; " if same else "") + use.summary()))
        if two and all(r.rc == 0 for r in timed.values()):
            rows.append(("  2 GPUs / 1 GPU", f"{timed[2].seconds / timed[1].seconds:.2f}",
                         bench_agreement(out / "bench-1gpu.csv", out / "bench-2gpu.csv"), ""))
    if "tests" in steps:
        plugin = [] if _installed() else ["-p", "numbakern.pytest_plugin"]
        use = GpuUse()
        run = Run("tests", [t, "-m", "pytest", *plugin, "--gpu", "-n", "auto", "-v", "-rfEs", "--durations=25",
                   "-p", "no:cacheprovider"],
                  out / "tests.log", left("tests"), env, scratch)
        last = next((line for line in reversed(run.text.splitlines()) if re.search(r"\b(passed|failed)\b", line)),
                    "no summary")
        header = re.search(r"numbakern: (\d+ xdist workers on \d+ GPUs?)", run.text)
        rows.append(("pytest --gpu -n auto", f"{run.seconds:.0f} s", f"{run.status}; {last.strip('= ')}",
                     (header.group(1) if header else "no worker-to-GPU header") + "; test processes seen: "
                     + use.summary(names)))

    table = ["| step | wall | result | notes |", "|---|---:|---|---|"]
    table += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows]
    text = (f"Measured on {len(names)} GPU(s), {cores} CPU cores, {time.strftime('%Y-%m-%d')}:\n\n```\n"
            f"{environment}\n```\n\n" + "\n".join(table) + "\n")
    (out / "scale.md").write_text(text)
    shutil.rmtree(scratch, ignore_errors=True)
    print("\n######## summary (files in " + str(out) + ")\n" + text, flush=True)
    return 0


def _installed() -> bool:
    from importlib.metadata import entry_points

    return any(p.value == "numbakern.pytest_plugin" for p in entry_points(group="pytest11"))


if __name__ == "__main__":
    raise SystemExit(main())
