"""numba-cuda's own test suite, run the way numba-cuda's CI runs it, on the stock simulator and on numbakern's engine.

The same tests on both engines, under numba-cuda's own CI configuration, in simulator mode
(``NUMBA_ENABLE_CUDASIM=1``):

- its ``testing/pytest.ini``: ``filterwarnings = error`` with its list of ignores, ``consider_namespace_packages``
  and ``--benchmark-disable`` (``UPSTREAM_INI``);
- its ``testing/conftest.py``: one option and one fixture, which ``CONFTEST_PLUGIN`` provides (numba-cuda's wheel
  ships its tests but not that file);
- its markers decide what is skipped in the simulator, on both engines alike: nothing is unskipped for one.

The engines:

- ``stock``: numba-cuda's simulator as it ships (numbakern's pytest plugin is not loaded; numbakern is never
  imported);
- ``numbakern``: numbakern's engine with every check on (``--sim``, ``NUMBAKERN_SIM_CHECKS=all``).

``compare(modules)`` runs both; ``report`` gives passed / failed / skipped per module and engine, and the time, and
below it every test that passes on the stock simulator and fails on numbakern's engine, each classified
(``classify``): a defect a checker finds in the test's own kernel (``KERNEL_DEFECTS``), a kernel without source whose
typed run is pending, or numbakern's. ``scripts/numba_cuda_suite.py`` is the command (and writes docs/simulator.md's
table); tests/sim/test_numba_cuda_suite.py runs a selection in CI.

Each chunk of modules runs in a pytest process of its own per engine, with a per-test timeout (pytest-timeout);
numba-cuda's test dependencies must be installed (``pip install -e '.[test]'`` brings them). Standard library only:
importing this module imports neither numba nor the simulator's engine.
"""

from __future__ import annotations

import datetime
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

ENGINES = ("stock", "numbakern")
PACKAGE = "numba.cuda.tests"


#: numba-cuda 0.30.4's testing/pytest.ini, the configuration its CI runs its test suite with (passed with -c). Only
#: addopts differs: upstream's "--pyargs numba.cuda.tests" is the modules chosen here.
UPSTREAM_INI = "\n".join([
    "[pytest]",
    'minversion = 8.0',
    'consider_namespace_packages = true',
    'addopts = --benchmark-disable',
    'filterwarnings =',
    '    error',
    '    ignore:.*Grid size .* will likely result in GPU under-utilization.+'
    ':numba.cuda.core.errors.NumbaPerformanceWarning',
    '    ignore:.*Grid size .* will likely result in GPU under-utilization.+'
    ':numba.core.errors.NumbaPerformanceWarning',
    '    ignore:.*dynamic initialization is not supported for a function-scope static __shared__.*:UserWarning',
    '    ignore:.*The keyword argument .nopython=False. was supplied.+:numba.core.errors.NumbaDeprecationWarning',
    '    ignore:.*nvJitLink is not installed or too old.*:RuntimeWarning',
    '    ignore:.*libnvJitLink.*is too old.*:RuntimeWarning',
    '    ignore:.*float16 relies on LTO for performance. LTO requires nvjitlink.*'
    ':numba.cuda.core.errors.NumbaPerformanceWarning',
    '    ignore:.*The CUDA driver version is older than the backend version.*:RuntimeWarning',
    '    ignore:.*class "double4" was declared deprecated.*:UserWarning',
    '    ignore:All-NaN slice encountered:RuntimeWarning',
    '    ignore:Mean of empty slice:RuntimeWarning',
    '    ignore:(invalid value|divide by zero) encountered in.+:RuntimeWarning',
    '    ignore:.*Compilation is falling back to object mode WITHOUT looplifting enabled.*'
    ':numba.cuda.core.errors.NumbaWarning',
    r'    ignore:\nCompilation is falling back to object mode WITHOUT looplifting enabled.*'
    ':numba.core.errors.NumbaWarning',
    '    ignore:overflow encountered in scalar .+:RuntimeWarning',
    '    ignore:.*Host array used in CUDA kernel will incur copy overhead.*'
    ':numba.cuda.core.errors.NumbaPerformanceWarning',
    '    ignore:NVRTC log messages.*Architectures prior to.*are deprecated.*:UserWarning',
    '    ignore:Benchmark machine_info is different:pytest_benchmark.logger.PytestBenchmarkWarning',
    "",
])

#: what numba-cuda's testing/conftest.py gives its tests (the wheel ships the tests but not that file): the same
#: option and fixture, as a plugin (``-p``). It imports neither numba nor numbakern.
CONFTEST_PLUGIN = """import pytest


def pytest_addoption(parser):
    parser.addoption("--dump-failed-filechecks", action="store_true",
                     help="Dump reproducers for FileCheck tests that fail.")


@pytest.fixture(scope="class")
def initialize_from_pytest_config(request):
    request.cls._dump_failed_filechecks = request.config.getoption("dump_failed_filechecks")
"""
#: the plugin's module name in the run's folder
PLUGIN_MODULE = "numba_cuda_conftest"


def write_configuration(folder: str) -> str:
    """numba-cuda's pytest.ini and its conftest's plugin (``PLUGIN_MODULE``) written into ``folder``, which the
    run puts first on its ``PYTHONPATH``; the ini's path."""
    ini = os.path.join(folder, "pytest.ini")
    with open(ini, "w") as f:
        f.write(UPSTREAM_INI)
    with open(os.path.join(folder, PLUGIN_MODULE + ".py"), "w") as f:
        f.write(CONFTEST_PLUGIN)
    return ini


#: the main set: the doc examples and the cudapy modules whose kernels compute things (no compiler output, devices,
#: streams or linking). doc_examples.test_montecarlo is left out: it initialises 10^6 random-number states on the
#: host, in numba's object mode under any simulator, for minutes.
MAIN = (
    "doc_examples.test_cg", "doc_examples.test_cpu_gpu_compat", "doc_examples.test_globals",
    "doc_examples.test_laplace", "doc_examples.test_matmul", "doc_examples.test_reduction",
    "doc_examples.test_sessionize", "doc_examples.test_ufunc", "doc_examples.test_vecadd",
    "cudapy.test_array", "cudapy.test_atomics", "cudapy.test_boolean", "cudapy.test_casting",
    "cudapy.test_complex", "cudapy.test_freevar", "cudapy.test_globals", "cudapy.test_idiv",
    "cudapy.test_intrinsics", "cudapy.test_iterators", "cudapy.test_laplace", "cudapy.test_localmem",
    "cudapy.test_mandel", "cudapy.test_matmul", "cudapy.test_minmax", "cudapy.test_montecarlo",
    "cudapy.test_operator", "cudapy.test_powi", "cudapy.test_py2_div_issue", "cudapy.test_slicing",
    "cudapy.test_sm", "cudapy.test_sync", "cudapy.test_transpose", "cudapy.test_warp_ops",
    "cudapy.test_math", "cudapy.test_record_dtype", "cudapy.test_vector_type", "cudapy.test_userexc",
)

#: tests a checker fails for a real defect of the test's own kernel (numba-cuda's), with the defect
KERNEL_DEFECTS = {
    "cudapy.test_freevar::TestFreeVar::test_freevar":
        "reads a shared array it never writes (the test only checks that it compiles): UninitializedReadError",
    "cudapy.test_sm::TestSharedMemoryIssue::test_issue_2393":
        "reads shared arrays it never writes (the test only checks that it compiles): UninitializedReadError",
    "cudapy.test_sm_creation::TestSharedMemoryCreation::test_global_constants":
        "reads a shared array it never writes (the test checks the array's shape): UninitializedReadError",
    "cudapy.test_sm_creation::TestSharedMemoryCreation::test_global_build_tuple":
        "reads a shared array it never writes (the test checks the array's shape): UninitializedReadError",
    "cudapy.test_sm_creation::TestSharedMemoryCreation::test_global_constant_tuple":
        "reads a shared array it never writes (the test checks the array's shape): UninitializedReadError",
    "cudapy.test_exception::TestException::test_raise_causing_warp_diverge":
        "threads 13 and up all update y[i] for every i with plain stores, nothing ordering them: RaceError",
}

#: tests that assert the stock simulator's own refusal of something numba-cuda compiles for a GPU, which numbakern's
#: engine runs (numbakern's own kernels use it)
STOCK_LIMITATIONS = {
    "cudapy.test_array_alignment::TestCudasimUnsupportedAlignment::test_local_unsupported":
        "expects the stock simulator's RuntimeError for cuda.local.array(..., alignment=16), which a GPU compiles",
    "cudapy.test_array_alignment::TestCudasimUnsupportedAlignment::test_shared_unsupported":
        "expects the stock simulator's RuntimeError for cuda.shared.array(..., alignment=16), which a GPU compiles",
}

#: tests whose outcome does not depend on the engine, with the reason they may fail on either
NOT_THE_ENGINE = {
    f"cudapy.test_print::TestPrint::{name}":
        "its kernel runs in a `python -c` subprocess on the stock simulator under either engine (numbakern is not "
        "imported there), whose OS threads may interleave one print()'s two writes"
    for name in ("test_cuhello", "test_dim3", "test_printfloat", "test_bool", "test_printempty", "test_string")
}

#: the warning a kernel without source gives (made by exec() from a string template): its typed run is the
#: subject of other work
NO_SOURCE = "runs with Python's arithmetic, not Numba's"
CLASSES = {
    "defect": "a checker finds a defect in the test's kernel",
    "not-the-engine": "not the engine's doing",
    "stock-limitation": "asserts a limitation of the stock simulator that numbakern's engine lifts",
    "no-source": "pending typed-without-source (kernel made by exec)",
    "numbakern": "numbakern's",
}


@dataclass
class Case:
    outcome: str  # "passed", "failed" or "skipped"
    seconds: float
    message: str = ""


@dataclass
class Run:
    """One engine's results over some modules: test id -> case."""

    engine: str
    cases: dict[str, Case] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)  # module -> wall-clock time of its process share
    crashed: list[str] = field(default_factory=list)  # modules whose process ended without a report

    def counts(self, module: str) -> tuple[int, int, int]:
        found = [c.outcome for tid, c in self.cases.items() if module_of(tid) == module]
        return found.count("passed"), found.count("failed"), found.count("skipped")


def module_of(test_id: str) -> str:
    return test_id.split("::", 1)[0]


def tests_folder() -> str:
    """numba-cuda's installed test package (``numba/cuda/tests``), found without importing numba."""
    spec = importlib.util.find_spec("numba_cuda")
    if spec is None or spec.origin is None:
        raise SystemExit("numba-cuda is not installed")
    return os.path.join(os.path.dirname(spec.origin), "numba", "cuda", "tests")


def all_modules() -> list[str]:
    """Every test module of cudapy and doc_examples in the installed numba-cuda."""
    base = tests_folder()
    return [f"{package}.{name[:-3]}" for package in ("cudapy", "doc_examples")
            for name in sorted(os.listdir(os.path.join(base, package)))
            if name.startswith("test_") and name.endswith(".py")]


def _test_id(case: ET.Element) -> str:
    """``cudapy.test_sm::TestSharedMemoryIssue::test_issue_2393`` from a junit test case."""
    classname = case.get("classname", "")
    if not classname:  # a module skipped as a whole: its name is the case's
        return f"{case.get('name', '')}::(module)"
    if PACKAGE + "." in classname:
        classname = classname.split(PACKAGE + ".", 1)[1]
    parts = classname.split(".")
    # module path parts are lower case (test_x), class names are not: split the class off the module
    cut = next((i for i, p in enumerate(parts) if i >= 1 and not p.islower()), len(parts))
    return "::".join([".".join(parts[:cut]), *parts[cut:], case.get("name", "")])


def _environment(engine: str, folder: str) -> dict:
    env = dict(os.environ)
    env["NUMBA_ENABLE_CUDASIM"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([folder] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    for name in ("NUMBAKERN_SIM_ENGINE", "NUMBAKERN_SIM_CHECKS", "NUMBAKERN_SIM_TYPING", "PYTEST_ADDOPTS"):
        env.pop(name, None)
    if engine == "numbakern":
        env["NUMBAKERN_SIM_CHECKS"] = "all"
    return env


def run_chunk(modules: list[str], engine: str, per_test_timeout: float, run: Run) -> None:
    """Run some modules in one pytest process on one engine; add their cases to ``run``."""
    with tempfile.TemporaryDirectory() as tmp:
        ini = write_configuration(tmp)  # (pytest would take the ini's folder for the rootdir's default)
        junit = os.path.join(tmp, "junit.xml")
        # ids relative to numba-cuda's tests folder (cudapy/test_globals.py, doc_examples/test_globals.py): a rootdir
        # elsewhere would name both test_globals.py
        cmd = [sys.executable, "-m", "pytest", "-q", "-c", ini, "--rootdir", tests_folder(), "-p", "no:cacheprovider",
               "-p", PLUGIN_MODULE, f"--junitxml={junit}", "-o", "junit_family=xunit1"]
        if importlib.util.find_spec("pytest_timeout") is not None:
            cmd.append(f"--timeout={per_test_timeout:g}")
        cmd += ["--sim"] if engine == "numbakern" else ["-p", "no:numbakern"]
        cmd += ["--pyargs", *(f"{PACKAGE}.{m}" for m in modules)]
        start = time.perf_counter()
        budget = per_test_timeout * 20 + 120 * len(modules)  # a hang the per-test timeout cannot end
        try:
            proc = subprocess.run(cmd, cwd=tmp, env=_environment(engine, tmp), capture_output=True, text=True,
                                  timeout=budget)
            tail = (proc.stdout + proc.stderr)[-2000:]
            finished = proc.returncode in (0, 1)  # (1: some tests failed)
        except subprocess.TimeoutExpired:
            tail, finished = "timed out", False
        elapsed = time.perf_counter() - start
        found: dict[str, Case] = {}
        if os.path.exists(junit):
            try:
                root = ET.parse(junit).getroot()
            except ET.ParseError:
                root = None
            for case in root.iter("testcase") if root is not None else ():
                tid = _test_id(case)
                if case.find("skipped") is not None:
                    found[tid] = Case("skipped", 0.0)
                    continue
                bad = case.find("failure")
                bad = bad if bad is not None else case.find("error")
                if bad is not None:
                    message = (bad.get("message") or bad.text or "").strip()
                    # a teardown error after a pass is a failure too; keep the first message
                    if tid in found and found[tid].outcome == "failed":
                        continue
                    found[tid] = Case("failed", float(case.get("time", 0) or 0), message)
                elif tid not in found:
                    found[tid] = Case("passed", float(case.get("time", 0) or 0))
        run.cases.update(found)
        reported = {module_of(t) for t in found}
        for m in modules:
            if m not in reported and not finished:  # (a module may have no tests at all)
                run.crashed.append(m)
                print(f"  {engine}: {m}: no results ({tail.strip().splitlines()[-1] if tail.strip() else '?'})",
                      file=sys.stderr)
        # the process's time, shared among its modules by their tests' own times
        own = {m: sum(c.seconds for t, c in found.items() if module_of(t) == m) for m in modules}
        total = sum(own.values())
        for m in modules:
            run.seconds[m] = elapsed * own[m] / total if total else elapsed / len(modules)


def run_engine(modules: list[str], engine: str, per_test_timeout: float, chunk: int, jobs: int) -> Run:
    run = Run(engine)
    chunks = [modules[i:i + chunk] for i in range(0, len(modules), chunk)]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for i, _ in enumerate(pool.map(lambda c: run_chunk(c, engine, per_test_timeout, run), chunks)):
            print(f"  {engine}: {min((i + 1) * chunk, len(modules))}/{len(modules)} modules", file=sys.stderr,
                  flush=True)
    return run


def classify(test_id: str, message: str) -> tuple[str, str]:
    """``(class, cause)`` of a test that passes on the stock simulator and fails on numbakern's engine."""
    if test_id in KERNEL_DEFECTS:
        return "defect", KERNEL_DEFECTS[test_id]
    if test_id in STOCK_LIMITATIONS:
        return "stock-limitation", STOCK_LIMITATIONS[test_id]
    if test_id in NOT_THE_ENGINE:
        return "not-the-engine", NOT_THE_ENGINE[test_id]
    if NO_SOURCE in message:
        return "no-source", "kernel made by exec() from a string template: runs untyped, and warns"
    return "numbakern", _first_line(message)


def _first_line(message: str) -> str:
    for line in message.splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""


@dataclass
class Comparison:
    modules: list[str]
    runs: dict[str, Run]

    def numbakern_only(self) -> list[tuple[str, str, str]]:
        """``(test id, class, cause)`` of every test that passes on stock and fails on numbakern's engine."""
        stock, ours = self.runs["stock"].cases, self.runs["numbakern"].cases
        out = []
        for tid, case in sorted(ours.items()):
            if case.outcome == "failed" and stock.get(tid, Case("missing", 0)).outcome == "passed":
                out.append((tid, *classify(tid, case.message)))
        return out

    def different_sets(self) -> list[str]:
        """Tests one engine ran and the other did not report (a crash, a timeout of a whole process)."""
        a, b = set(self.runs["stock"].cases), set(self.runs["numbakern"].cases)
        return sorted(a ^ b)


def compare(modules: list[str], per_test_timeout: float = 60, chunk: int = 8, jobs: int = 1,
            engines=ENGINES) -> Comparison:
    return Comparison(modules, {e: run_engine(modules, e, per_test_timeout, chunk, jobs) for e in engines})


def table(comparison: Comparison) -> str:
    engines = list(comparison.runs)
    lines = ["| module |" + "".join(f" {e}: passed / failed / skipped | {e}: time |" for e in engines),
             "|---|" + "---:|---:|" * len(engines)]
    totals = {e: [0, 0, 0, 0.0] for e in engines}
    for module in comparison.modules:
        row = f"| {module} |"
        for e in engines:
            run = comparison.runs[e]
            p, f, s = run.counts(module)
            t = run.seconds.get(module, 0.0)
            for i, v in enumerate((p, f, s, t)):
                totals[e][i] += v
            mark = " (no report)" if module in run.crashed else ""
            row += f" {p} / {f} / {s}{mark} | {t:.1f} s |"
        lines.append(row)
    lines.append("| **all** |" + "".join(
        f" **{p} / {f} / {s}** | **{t:.0f} s** |" for p, f, s, t in (totals[e] for e in engines)))
    return "\n".join(lines)


def report(comparison: Comparison, command: str, machine: str = "this machine") -> str:
    """The table and, below it, every test that passes on the stock simulator and fails on numbakern's engine."""
    text = [f"Measured {datetime.date.today().isoformat()} on {machine}, with `{command}` (numba-cuda's CI "
            "configuration; numbakern's engine with every check on):", "", table(comparison)]
    if "stock" in comparison.runs and "numbakern" in comparison.runs:
        only = comparison.numbakern_only()
        by_class = {k: sum(1 for _, c, _ in only if c == k) for k in CLASSES}
        text += ["", f"Passing on the stock simulator and failing on numbakern's engine: {len(only)} ("
                 + ", ".join(f"{n} {CLASSES[k]}" for k, n in by_class.items()) + ")" + (":" if only else ".")]
        if only:
            text.append("")
            text += [f"- `{tid}`: {CLASSES[c]}: {cause}" for tid, c, cause in only if c != "no-source"]
            pending: dict[str, int] = {}
            for tid, c, _ in only:
                if c == "no-source":
                    pending[module_of(tid)] = pending.get(module_of(tid), 0) + 1
            text += [f"- {n} tests of `{m}`: {CLASSES['no-source']}" for m, n in sorted(pending.items())]
        odd = comparison.different_sets()
        if odd:
            text += ["", f"Reported by one engine only ({len(odd)}): " + ", ".join(f"`{t}`" for t in odd[:20])
                     + (" …" if len(odd) > 20 else "")]
    return "\n".join(text)
