"""numba-cuda's own test suite on the stock simulator and on numbakern's engine, the way numba-cuda's CI runs it
(``numbakern.sim.numba_cuda_suite`` does the work): the table per module and engine, and every test that passes on
the stock simulator and fails on numbakern's engine, classified.

    python scripts/numba_cuda_suite.py                        # the main set (MAIN), both engines
    python scripts/numba_cuda_suite.py --all                  # every module of cudapy and doc_examples
    python scripts/numba_cuda_suite.py test_sm test_warp_ops  # these modules (cudapy's unless dotted)
    python scripts/numba_cuda_suite.py --all --update-docs    # the table docs/simulator.md shows

numba-cuda's test dependencies must be installed (``pip install -e '.[test]'`` brings them).
"""

from __future__ import annotations

import argparse
import os
import re
import sys

from machine_info import describe  # this script's folder

from numbakern.sim.numba_cuda_suite import ENGINES, MAIN, all_modules, compare, report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs", "simulator.md")
BEGIN, END = "<!-- numba-cuda suite: begin (scripts/numba_cuda_suite.py --update-docs) -->", \
    "<!-- numba-cuda suite: end -->"


def update_docs(text: str) -> None:
    with open(DOCS, encoding="utf-8") as f:
        doc = f.read()
    if BEGIN not in doc or END not in doc:
        raise SystemExit(f"{DOCS} has no numba-cuda suite markers")
    new = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: f"{BEGIN}\n{text}\n{END}", doc, flags=re.S)
    tmp = DOCS + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(new)
    os.replace(tmp, DOCS)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help="modules under numba.cuda.tests (default: the main set)")
    parser.add_argument("--all", action="store_true", help="every module of cudapy and doc_examples")
    parser.add_argument("--engine", choices=(*ENGINES, "both"), default="both")
    parser.add_argument("--timeout", type=float, default=60, help="seconds per test (pytest-timeout; default 60)")
    parser.add_argument("--chunk", type=int, default=8, help="modules per pytest process (default 8)")
    parser.add_argument("--jobs", type=int, default=1, help="pytest processes at once, per engine (default 1)")
    parser.add_argument("--update-docs", action="store_true", help="write the report into docs/simulator.md")
    args = parser.parse_args(argv)

    if args.all:
        modules = all_modules()
    else:
        modules = [m if "." in m else f"cudapy.{m}" for m in args.modules] or list(MAIN)
    engines = ENGINES if args.engine == "both" else (args.engine,)
    comparison = compare(modules, args.timeout, args.chunk, args.jobs, engines)
    command = "python scripts/numba_cuda_suite.py" + (" " + " ".join(argv if argv is not None else sys.argv[1:])
                                                      if (argv if argv is not None else sys.argv[1:]) else "")
    text = report(comparison, command.replace(" --update-docs", ""), describe())
    print(text)
    if args.update_docs:
        update_docs(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
