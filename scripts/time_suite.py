"""How long the test suite takes: the README's test command (``pytest``) and its quick tier (``pytest -m "not
slow"``), each timed as a user runs it, wall-clock and CPU time (every process of the run: pytest-xdist's workers,
the helpers and the children they start), with pytest's summary line; ``--update-readme`` writes the result into the
README's "suite time" block.

Each run starts with an empty numbakern cache (a temporary ``NUMBAKERN_CACHE_DIR``, which the tests' child processes
get too: ``tests/environments.py``), as a fresh clone's first run and CI's do: typing every kernel and deriving the
library is then part of the time. ``--warm`` runs with your own cache
instead (a repeat run on the same tree: most of the typing and every derivation remembered).

    python scripts/time_suite.py                  # both, printed
    python scripts/time_suite.py --quick          # the quick tier only
    python scripts/time_suite.py --update-readme  # both, and the README's block
    python scripts/time_suite.py --quick --update-readme  # the quick tier, and its line of the block
    python scripts/time_suite.py --store-durations --update-readme  # and tests/durations.json, from the whole suite
    python scripts/time_suite.py --warm           # with the user's numbakern cache, as a repeat run

``--store-durations`` is pytest's option of tests/conftest.py, given to the whole suite's run (which then comes first,
so that the quick tier selects with the new measurements): after tests were added or changed, it measures each
test's CPU time again, which orders the files and marks the slow ones.

Run it on a quiet machine: other work on the same cores makes every figure larger.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import benchkit  # this script's folder
from machine_info import describe

from numbakern.frontend.cache import CACHE_ENV

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BLOCK = "suite time"
TIERS = {"the whole suite": ["pytest"], "the quick tier": ["pytest", "-m", "not slow"]}


@dataclass
class Timing:
    command: str
    wall: float
    cpu: float
    summary: str
    returncode: int
    load: float  # the machine's load average over the last 5 minutes, when the run ended
    workers: str  # pytest-xdist's "created: N/N workers", or "" (one process)

    def line(self) -> str:
        on = f" on {self.workers.split('/')[0]} pytest-xdist workers" if self.workers else ""
        return (f"`{self.command}`{on}: {self.wall / 60:.1f} min wall, {self.cpu / 60:.1f} min of CPU time, "
                f"{self.summary} (load average {self.load:.1f} at its end)")


def run(argv: list[str], warm: bool) -> Timing:
    """``argv`` (a pytest command) run in the checkout, its output shown as it goes, timed; with an empty numbakern
    cache unless ``warm``."""
    with tempfile.TemporaryDirectory(prefix="time-suite-cache-") as empty:
        env = dict(os.environ) if warm else {**os.environ, CACHE_ENV: empty}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", *argv[0:1], "-p", "no:cacheprovider", *argv[1:]], cwd=ROOT,
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        last = workers = ""
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            if line.strip():
                last = line.strip()
            created = re.match(r"created: (\d+/\d+) workers", line)
            if created:
                workers = created.group(1)
        proc.wait()
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    summary = re.sub(r"^=+ | =+$", "", last)
    command = " ".join(f'"{a}"' if " " in a else a for a in argv)
    return Timing(command, wall, cpu, summary, proc.returncode, os.getloadavg()[1], workers)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only the quick tier")
    parser.add_argument("--update-readme", action="store_true", help=f"write the README's '{BLOCK}' block")
    parser.add_argument("--warm", action="store_true",
                        help="run with your own numbakern cache (a repeat run), not an empty one (a first run)")
    parser.add_argument("--store-durations", action="store_true",
                        help="the whole suite's run also writes tests/durations.json (pytest --store-durations)")
    args = parser.parse_args(argv)
    if args.quick and args.store_durations:
        parser.error("--store-durations measures the whole suite (leave out --quick)")
    tiers = {k: v for k, v in TIERS.items() if not args.quick or k == "the quick tier"}
    if args.store_durations:
        tiers["the whole suite"] = [*tiers["the whole suite"], "--store-durations"]
    timings = {name: run(command, args.warm) for name, command in tiers.items()}
    cache = "the user's numbakern cache (a repeat run)" if args.warm else "an empty numbakern cache (a first run)"
    where = f"{describe()}, {cache}"
    text = "\n".join(f"- {name}, {t.line()}" for name, t in timings.items())
    print(f"\nMeasured on {where}:\n{text}")
    failed = [name for name, t in timings.items() if t.returncode != 0]
    if failed:
        print(f"not written into the README: {', '.join(failed)} failed", file=sys.stderr)
        return 1
    if args.update_readme and args.quick:  # the quick tier's line only, the whole suite's kept
        lines = benchkit.embedded_block(README, BLOCK).splitlines()
        quick = f"- the quick tier, {timings['the quick tier'].line()} ({benchkit.today()}, --quick)"
        body = "\n".join(quick if line.startswith("- the quick tier,") else line for line in lines)
        benchkit.embed(README, BLOCK, body if quick in body else f"{body}\n{quick}")
    elif args.update_readme:
        body = (f"Measured with `python scripts/time_suite.py --update-readme` on {where}, "
                f"{benchkit.today()}:\n\n{text}")
        benchkit.embed(README, BLOCK, body)
    return 0


if __name__ == "__main__":
    os.environ.pop("PYTEST_ADDOPTS", None)  # the suite as the README runs it
    sys.exit(main())
