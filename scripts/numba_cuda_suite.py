"""Run numba-cuda's own test suite (the one its wheel ships) on numbakern's simulator engine and on the stock one.

Each test module runs in its own pytest process in simulator mode (``--sim``), once per engine; the script
counts passed, failed, errored and skipped tests and the time each engine took, and prints a markdown table.
``--update-docs`` writes that table into docs/simulator.md between its ``numba-cuda suite`` markers.

    python scripts/numba_cuda_suite.py                       # both engines, the default modules
    python scripts/numba_cuda_suite.py --engine numbakern    # numbakern's only (CI runs this through pytest)
    python scripts/numba_cuda_suite.py test_warp_ops test_sm # these modules

numba-cuda's doc examples are marked to skip in the simulator ("cudasim doesn't support cuda import at
non-top-level": the stock engine finds the ``cuda`` module only among a kernel's globals). numbakern's engine
runs a kernel's closure values too, so under it those tests run (``NUMBAKERN_RUN_DOC_EXAMPLES=1``).
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs", "simulator.md")
BEGIN, END = "<!-- numba-cuda suite: begin (scripts/numba_cuda_suite.py --update-docs) -->", \
    "<!-- numba-cuda suite: end -->"

#: the modules a simulator can run: kernels computing things, not compiler output (PTX, LLVM IR), devices,
#: streams or linking, which only a GPU build has. (doc_examples.test_montecarlo is left out: it initialises 10^6
#: random-number states on the host, in numba's object mode under any simulator, for minutes.)
MODULES = (
    "doc_examples.test_cg", "doc_examples.test_cpu_gpu_compat", "doc_examples.test_globals",
    "doc_examples.test_laplace", "doc_examples.test_matmul",
    "doc_examples.test_reduction", "doc_examples.test_sessionize", "doc_examples.test_ufunc",
    "doc_examples.test_vecadd",
    "cudapy.test_array", "cudapy.test_atomics", "cudapy.test_boolean", "cudapy.test_casting",
    "cudapy.test_complex", "cudapy.test_freevar", "cudapy.test_globals", "cudapy.test_idiv",
    "cudapy.test_intrinsics", "cudapy.test_iterators", "cudapy.test_laplace", "cudapy.test_localmem",
    "cudapy.test_mandel", "cudapy.test_matmul", "cudapy.test_minmax", "cudapy.test_montecarlo",
    "cudapy.test_operator", "cudapy.test_powi", "cudapy.test_py2_div_issue", "cudapy.test_slicing",
    "cudapy.test_sm", "cudapy.test_sync", "cudapy.test_transpose", "cudapy.test_warp_ops",
    "cudapy.test_math", "cudapy.test_record_dtype", "cudapy.test_vector_type", "cudapy.test_userexc",
)
ENGINES = ("numbakern", "stock")


@dataclass
class Result:
    module: str
    engine: str
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)
    timed_out: bool = False


def run_module(module: str, engine: str, timeout: float, checks: str) -> Result:
    """One module (or several, separated by spaces, in one process) on one engine."""
    env = dict(os.environ)
    env["NUMBA_ENABLE_CUDASIM"] = "1"
    env["NUMBAKERN_SIM_ENGINE"] = engine
    env["NUMBAKERN_SIM_CHECKS"] = checks
    env["NUMBAKERN_RUN_DOC_EXAMPLES"] = "1" if engine == "numbakern" else "0"
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    result = Result(module, engine)
    with tempfile.TemporaryDirectory() as tmp:
        junit = os.path.join(tmp, "junit.xml")
        cmd = [sys.executable, "-m", "pytest", "-q", "--sim", "-p", "tests.sim.numba_cuda.plugin",
               "-o", "consider_namespace_packages=true", "-o", "addopts=", "-W", "ignore",
               "--rootdir", ROOT, "-c", os.devnull, f"--junitxml={junit}", "--pyargs",
               *(f"numba.cuda.tests.{m}" for m in module.split())]
        start = time.perf_counter()
        try:
            subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=timeout)
        except subprocess.TimeoutExpired:
            result.timed_out = True
        result.seconds = time.perf_counter() - start
        if os.path.exists(junit):
            for case in ET.parse(junit).getroot().iter("testcase"):
                name = f"{case.get('classname', '')}.{case.get('name')}".split("numba.cuda.tests.")[-1]
                if case.find("skipped") is not None:
                    result.skipped += 1
                elif case.find("failure") is not None:
                    result.failed += 1
                    result.failures.append(name)
                elif case.find("error") is not None:
                    result.errors += 1
                    result.failures.append(name)
                else:
                    result.passed += 1
    return result


def table(results: dict[str, dict[str, Result]], engines) -> str:
    head = "| module |" + "".join(f" {e}: passed / failed / skipped | {e}: time |" for e in engines)
    rule = "|---|" + "---:|---:|" * len(engines)
    lines = [head, rule]
    totals = {e: Result("total", e) for e in engines}
    for module, by_engine in results.items():
        row = f"| {module} |"
        for e in engines:
            r = by_engine[e]
            t = totals[e]
            t.passed += r.passed
            t.failed += r.failed + r.errors
            t.skipped += r.skipped
            t.seconds += r.seconds
            mark = " (timed out)" if r.timed_out else ""
            row += f" {r.passed} / {r.failed + r.errors} / {r.skipped}{mark} | {r.seconds:.1f} s |"
        lines.append(row)
    row = "| **all** |"
    for e in engines:
        t = totals[e]
        row += f" **{t.passed} / {t.failed} / {t.skipped}** | **{t.seconds:.1f} s** |"
    lines.append(row)
    return "\n".join(lines)


def machine() -> str:
    from machine_info import describe  # scripts/machine_info.py (this script's folder is on sys.path)

    return describe()


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
    parser.add_argument("modules", nargs="*", help="modules under numba.cuda.tests (default: the curated list)")
    parser.add_argument("--engine", choices=(*ENGINES, "both"), default="both")
    parser.add_argument("--checks", default="none", help="NUMBAKERN_SIM_CHECKS for numbakern's engine (default none)")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per module and engine")
    parser.add_argument("--update-docs", action="store_true", help="write the table into docs/simulator.md")
    parser.add_argument("--failures", action="store_true", help="list each failing test")
    args = parser.parse_args(argv)

    modules = [m if "." in m else f"cudapy.{m}" for m in args.modules] or list(MODULES)
    engines = ENGINES if args.engine == "both" else (args.engine,)
    results: dict[str, dict[str, Result]] = {}
    for module in modules:
        results[module] = {e: run_module(module, e, args.timeout, args.checks) for e in engines}
        print(f"{module}: " + ", ".join(
            f"{e} {r.passed} passed, {r.failed + r.errors} failed, {r.skipped} skipped in {r.seconds:.1f} s"
            for e, r in results[module].items()), file=sys.stderr, flush=True)
    text = (f"Measured {datetime.date.today().isoformat()} on {machine()}, with "
            f"`python scripts/numba_cuda_suite.py{' ' + ' '.join(sys.argv[1:]) if sys.argv[1:] else ''}` "
            f"(numbakern's checks: {args.checks}):\n\n" + table(results, engines))
    failing = [(m, e, f) for m, by in results.items() for e, r in by.items() for f in r.failures]
    if args.failures and failing:
        text += "\n\nFailing:\n\n" + "\n".join(f"- {e}: `{m}` {f}" for m, e, f in failing)
    print(text)
    if args.update_docs:
        update_docs(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
