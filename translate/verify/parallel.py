"""Verification spread over the host's GPUs: worker processes (``translate.verify.worker``), several per GPU, each
with its GPU alone visible, take jobs largest first (``translate.verify.schedule``); the results are put together
per kernel, printed as each kernel's cases finish (with the GPUs that ran them), and each kernel's record goes into
the manifest, under the folder's lock, as soon as its last job is done.

This process never initialises CUDA: the GPUs come from ``numbakern.gpus`` (``nvidia-smi``), and the candidates are
built here, sandboxed, for each GPU's architecture while the first jobs already run (a job waits for its kernel's
build; without a known architecture each worker builds what it needs itself).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from numbakern.gpus import Gpu

from .. import manifest
from . import isolated, protocol, schedule, worker
from .build import nvcc_version, sha256_file
from .harness import VerifyResult, now
from .pool import Pool, Slot, slots_for
from .report import result_block, sanitizer_text
from .sanitize import TOOLS


@dataclass
class RunPlan:
    """What a spread run will do: the GPUs, how many workers each gets and why, the slots and the jobs in order."""

    gpus: list[Gpu]
    per_gpu: dict[int, tuple[int, str]]
    slots: list[Slot]
    jobs: list[schedule.Job]
    work: list[schedule.KernelWork]

    def describe(self) -> str:
        counts = sorted({n for n, _ in self.per_gpu.values()})
        whys = sorted({why for _, why in self.per_gpu.values()})
        each = "/".join(map(str, counts))
        return (f"{len(self.gpus)} GPU{'s' if len(self.gpus) != 1 else ''} × {each} worker process"
                f"{'es' if counts != [1] else ''} ({'; '.join(whys)}): {len(self.slots)} at once, "
                f"{len(self.jobs)} jobs, about {schedule.makespan(self.jobs, len(self.slots)):.0f} s by the estimates")


def cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def make_plan(specs: Sequence[Any], records: Mapping[str, Mapping[str, Any] | None], *, gpus: Sequence[Gpu],
              seeds: int, tools: Sequence[str], jobs_per_gpu: int | None = None, cpus: int | None = None) -> RunPlan:
    """The plan for verifying ``specs`` on ``gpus``; ``records``: each spec's last verification record, by name."""
    cpus = cpus or cpu_count()
    per_gpu = {g.index: schedule.per_gpu(g, len(gpus), cpus, jobs_per_gpu) for g in gpus}
    slots = slots_for(gpus, {i: n for i, (n, _) in per_gpu.items()})
    work = schedule.kernel_work(specs, records, seeds=range(seeds), tools=tools)
    return RunPlan(list(gpus), per_gpu, slots, schedule.plan(work, len(slots), tools), work)


@dataclass
class _Kernel:
    """One kernel's progress through the run."""

    spec: Any
    file_name: str
    cand: Any
    jobs_left: int = 0
    case_jobs_left: int = 0
    parts: list[VerifyResult] = field(default_factory=list)
    case_seconds: float = 0.0
    gpus: set[int] = field(default_factory=set)
    sanitizer: dict[str, str] = field(default_factory=dict)
    sanitize_seconds: dict[str, float] = field(default_factory=dict)
    result: VerifyResult | None = None


def merge_parts(spec: Any, parts: Sequence[VerifyResult]) -> VerifyResult:
    """One kernel's result from the results of its parts: every case, in the order of a whole run, and the first
    part's error (a build or load failure stops each part the same way)."""
    first = next((p for p in parts if p.error), parts[0])
    sizes = [dict(s) for s in spec.verify_sizes]
    dists = list(spec.distributions)

    def order(case):
        si = sizes.index(case.size) if case.size in sizes else len(sizes)
        return (si, case.seed, dists.index(case.dist) if case.dist in dists else len(dists))

    cases = sorted((c for p in parts for c in p.cases), key=order)
    merged = VerifyResult(first.kernel, first.candidate, first.cu, first.file_sha256, False, cases, first.error,
                          first.stage, first.build_log, None, dict(first.device), first.date)
    merged.ok = not merged.error and bool(cases) and all(c.ok for c in cases)
    return merged


class _Builds:
    """The candidates' libraries, built here (sandboxed) for each architecture, started at once in job order."""

    def __init__(self, kernels: Mapping[str, _Kernel], order: Sequence[str], arches: Sequence[str], wake: Callable):
        self.folder = tempfile.TemporaryDirectory(prefix="numbakern-verify-builds-", ignore_cleanup_errors=True)
        self.futures: dict[tuple[str, str], Future] = {}
        self.executor = ThreadPoolExecutor(max_workers=min(16, cpu_count()))
        for n, name in enumerate(order):
            for arch in arches:
                folder = Path(self.folder.name) / f"build-{n}-{arch}"
                folder.mkdir()
                cand = kernels[name].cand
                future = self.executor.submit(isolated.build, cand.cu, arch=arch, workdir=folder,
                                              nvcc_flags=cand.nvcc_flags)
                future.add_done_callback(lambda _f: wake())
                self.futures[(name, arch)] = future

    def state(self, name: str) -> bool | None:
        """True: built (for every architecture asked); None: the build failed; False: still building. Without
        builds here (the architecture unknown) every kernel is ready: its worker builds it."""
        mine = [f for (n, _), f in self.futures.items() if n == name]
        if not all(f.done() for f in mine):
            return False
        return True if all(f.exception() is None and f.result().so is not None for f in mine) else None

    def so(self, name: str, arch: str) -> str | None:
        future = self.futures.get((name, arch))
        if future is None or future.exception() is not None or future.result().so is None:
            return None
        return str(future.result().so)

    def close(self, wait: bool = True) -> None:
        """``wait``: for the builds still running (an interrupted run does not wait: they end with the process)."""
        self.executor.shutdown(wait=wait, cancel_futures=True)
        self.folder.cleanup()


def verify_on_gpus(
    found: Mapping[str, tuple[Any, str, Any]],
    *,
    directory: str | os.PathLike,
    gpus: Sequence[Gpu],
    seeds: int = 3,
    sanitize: bool = False,
    jobs_per_gpu: int | None = None,
    record: bool = True,
    log_dir: str | os.PathLike | None = None,
    verbose_cases: bool = False,
    out=sys.stdout,
    worker_argv: Sequence[str] | None = None,
) -> tuple[dict[str, VerifyResult], dict[str, str]]:
    """Verify the kernels of ``found`` (``{name: (spec, file name, Candidate)}``, from ``directory``'s manifest) on
    ``gpus``; print as it goes. Returns ``({name: result}, {file name: what recording did})``; a kernel missing
    from the results was not finished (an interrupted run)."""
    data = manifest.load(directory)
    records = {name: (data["files"].get(file_name) or {}).get("verification") for name, (_, file_name, _) in
               found.items()}
    tools = TOOLS if sanitize else ()
    run_plan = make_plan([spec for spec, _, _ in found.values()], records, gpus=gpus, seeds=seeds, tools=tools,
                         jobs_per_gpu=jobs_per_gpu)
    kernels = {name: _Kernel(spec, file_name, cand) for name, (spec, file_name, cand) in found.items()}
    for job in run_plan.jobs:
        for name in job.kernels:
            kernels[name].jobs_left += 1
            kernels[name].case_jobs_left += job.kind == "cases"
    print(f"verification on {', '.join(g.label for g in gpus)}, nvcc {nvcc_version()}, {now()}: "
          f"{len(found)} kernels, {run_plan.describe()}", file=out, flush=True)

    results: dict[str, VerifyResult] = {}
    recorded: dict[str, str] = {}
    log = Path(log_dir) if log_dir else None
    start = time.perf_counter()
    spans: list[Span] = []  # each finished job's start and end, for the timeline at the end
    arches = sorted({g.arch for g in gpus})
    order = list(dict.fromkeys(name for job in run_plan.jobs for name in job.kernels))
    pool: Pool[schedule.Job] = Pool(worker_argv or protocol.ARGV, run_plan.slots)
    builds = _Builds(kernels, order, arches, pool.wake) if "" not in arches else None

    def ready(job: schedule.Job) -> bool | None:
        if builds is None:
            return True
        states = [builds.state(name) for name in job.kernels]
        if False in states:
            return False
        # cases of a kernel that did not build still run: the worker's verify builds it again, and reports nvcc's
        # output; a sanitizer batch runs the kernels that built
        return None if job.kind == "sanitize" and not any(states) else True

    def message(job: schedule.Job, slot: Slot) -> dict[str, Any]:
        def so(name):
            return builds.so(name, slot.gpu.arch) if builds is not None else None

        if job.kind == "cases":
            k = kernels[job.kernels[0]]
            return {"kind": "cases", "spec": _ref(k.spec), "candidate": worker.candidate_message(k.cand),
                    "so": so(job.kernels[0]), "seeds": list(range(seeds)), "units": [list(u) for u in job.units]}
        items = [{"spec": _ref(kernels[n].spec), "candidate": worker.candidate_message(kernels[n].cand), "so": so(n)}
                 for n in job.kernels if builds is None or builds.state(n)]
        return {"kind": "sanitize", "tool": job.tool, "items": items,
                "log_dir": str(log) if log else os.environ.get("NUMBAKERN_VERIFY_LOG")}

    def finish(name: str) -> None:
        k = kernels[name]
        result = k.result
        assert result is not None  # (its cases ran first)
        if k.sanitizer:
            result.sanitizer = {tool: k.sanitizer[tool] for tool in TOOLS if tool in k.sanitizer}
            result.ok = result.ok and all(v == "ok" for v in result.sanitizer.values())
        seconds: dict[str, Any] = {"cases": round(k.case_seconds, 2)}
        result.seconds = seconds
        if k.sanitize_seconds:
            seconds["sanitize"] = {t: round(s, 3) for t, s in k.sanitize_seconds.items()}
        results[name] = result
        if record:
            recorded[k.file_name] = manifest.store_verification(directory, k.file_name, result.to_record())

    def show(name: str) -> None:
        """A kernel's cases are all done: its block, with the GPUs that ran them (the sanitizer may still run)."""
        k = kernels[name]
        where = ", ".join(f"GPU {i}" for i in sorted(k.gpus))
        block = result_block(k.result, verbose=verbose_cases, sanitizer_pending=k.jobs_left > 0)
        print(f"{block}  [{where}, {k.case_seconds:.1f} s]", file=out, flush=True)
        if log:
            log.mkdir(parents=True, exist_ok=True)
            with open(log / "cases.log", "a") as f:
                f.write(result_block(k.result, verbose=True) + "\n")

    def done(job: schedule.Job, slot: Slot, answer: dict[str, Any], seconds: float) -> None:
        end = time.perf_counter() - start
        spans.append(Span(job.label, slot.label, end - seconds, end))
        if answer.get("traceback"):  # an exception in the worker: where it happened, for whoever reads the log
            sys.stderr.write(f"[{slot.label}] {job.label}: {answer['traceback']}\n")
        if job.kind == "cases":
            k = kernels[job.kernels[0]]
            k.gpus.add(slot.gpu.index)
            part = worker.result_from_json(answer["result"]) if "result" in answer else \
                _failed(k, answer, slot)
            k.parts.append(part)
            k.case_seconds += max(0.0, float(answer.get("seconds", seconds)) - schedule.JOB_OVERHEAD_SECONDS)
            k.case_jobs_left -= 1
            k.jobs_left -= 1
            if k.case_jobs_left == 0:
                k.result = merge_parts(k.spec, k.parts)
                k.result.cu = str(k.cand.cu)  # as the manifest names it (the worker saw the absolute path)
                if k.jobs_left == 0:
                    finish(job.kernels[0])
                show(job.kernels[0])
            return
        status = answer.get("status") or {}
        spent = batch_shares(answer.get("item_seconds") or {}, seconds)
        for name in job.kernels:
            if name in status:
                kernels[name].sanitizer[job.tool] = str(status[name])
            elif "error" in answer:
                kernels[name].sanitizer[job.tool] = f"the sanitizer job failed: {answer['error']}"[:300]
            if name in spent:
                kernels[name].sanitize_seconds[job.tool] = spent[name]
        print(_sanitize_line(job, slot, answer, seconds), file=out, flush=True)
        skipped(job)

    def skipped(job: schedule.Job) -> None:
        for name in job.kernels:
            kernels[name].jobs_left -= 1
            if kernels[name].jobs_left == 0 and kernels[name].result is not None:
                finish(name)

    try:
        pool.run(run_plan.jobs, message, done, ready=ready, skipped=skipped)
    except BaseException:
        if builds is not None:
            builds.close(wait=False)
        raise
    if builds is not None:
        builds.close()
    if spans:
        print(timeline(spans, len(run_plan.slots), time.perf_counter() - start), file=out, flush=True)
    return results, recorded


def batch_shares(items: Mapping[str, float], wall: float) -> dict[str, float]:
    """Each kernel's share of a sanitizer batch that took ``wall`` seconds: its own cases under the tool (``items``,
    the sanitized process's ``SANCASE-TIME`` lines) and an equal part of the rest (the process's start under the
    tool, the sandbox, and any runs of single kernels that attributed a finding). What the next run plans with: the
    cases alone leave out what makes a batch long."""
    if not items:
        return {}
    rest = max(0.0, wall - sum(items.values())) / len(items)
    return {name: float(s) + rest for name, s in items.items()}


@dataclass(frozen=True)
class Span:
    """When a job ran, in seconds from the start of the run, and in which slot."""

    job: str
    slot: str
    start: float
    end: float


def timeline(spans: Sequence[Span], slots: int, wall: float, last: int = 3) -> str:
    """One line on where a spread run's wall time went: how busy its slots were (the jobs' seconds over slots x
    wall time: low when workers wait for builds or for the last long job) and the ``last`` jobs to finish, which set
    the wall time."""
    busy = sum(s.end - s.start for s in spans)
    ends = sorted(spans, key=lambda s: s.end)[-last:][::-1]
    tail = "; ".join(f"{s.job} [{s.slot}] {s.start:.0f}-{s.end:.0f} s" for s in ends)
    return (f"timeline: {wall:.0f} s wall, {len(spans)} jobs, slots busy {busy / max(slots * wall, 1e-9):.0%} of "
            f"{slots} x {wall:.0f} s; first job done at {min(s.end for s in spans):.0f} s; last to finish: {tail}")


def _ref(spec: Any) -> Any:
    from numbakern import registry  # the spec's module is loaded: numba is too, by then

    return registry.spec_ref(spec)


def _failed(k: _Kernel, answer: Mapping[str, Any], slot: Slot) -> VerifyResult:
    """A part whose worker failed (an exception, or the process died): the kernel's error."""
    error = f"verification on {slot.gpu.label} failed: {answer.get('error', 'no answer')}"
    return VerifyResult(k.spec.name, str(k.cand.launcher.get("symbol", "")), str(k.cand.cu), sha256_file(k.cand.cu),
                        False, error=error[:500], stage="worker", date=now())


def _sanitize_line(job: schedule.Job, slot: Slot, answer: Mapping[str, Any], seconds: float) -> str:
    status = answer.get("status") or {}
    findings = {name: verdict for name, verdict in status.items() if verdict != "ok"}
    if "error" in answer:
        verdict = f"failed: {answer['error']}"[:200]
    elif findings:
        verdict = "; ".join(f"{name}: {v}" for name, v in findings.items())
    else:
        verdict = sanitizer_text({job.tool: "ok"}) if status else "nothing to run"
    n = len(status) or len(job.kernels)  # (the batch's kernels that built)
    return (f"compute-sanitizer {job.tool} over {n} kernel{'s' if n != 1 else ''} on GPU {slot.gpu.index}: {verdict}  "
            f"[{seconds:.1f} s]")
