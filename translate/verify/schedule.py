"""How a verification run is cut into jobs and spread over GPUs: what each kernel costs, how many worker processes
share one GPU, and in which order the jobs start.

**Cost.** A kernel's cases cost what its last verification recorded (``record["seconds"]``, written by every run:
``{"cases": s, "sanitize": {tool: s}}``), spread over its cases in proportion to their estimates; without a record,
each case is estimated from its size: ``CASE_SECONDS + bytes · SECONDS_PER_BYTE + flops · SECONDS_PER_FLOP`` (the
spec's ``work(size)``). Most of a case is host work -- making the inputs, the float64 numpy reference, the
comparisons, the candidate's outputs coming back from its sandbox -- so bytes and flops predict it; the constants
were fitted to the library's serial run on an H200 (transpose 54 s: its 134 MB size dominates; conv2d_5x5 95 s:
the same bytes plus 839 MFLOP of reference convolution). Kernels without a record are scaled by the median ratio
of measured to estimated seconds of those with one (the machine's speed).

**Jobs.** One job is some of a kernel's cases (``cases``), or one compute-sanitizer tool over a batch of kernels
(``sanitize``). A kernel whose cases cost more than half a slot's fair share (all the work / the slots) is cut into
parts of about that size, so that the largest kernel does not set the run's wall time; a part is never smaller than
``MIN_JOB_SECONDS`` (each job pays for the reference kernel's JIT in its process and a sandbox child). Each
sanitizer tool's kernels are packed into batches of the same size, at least ``MIN_BATCH_SECONDS`` each: every
batch is one process under compute-sanitizer, and its start (Python, numba, the registry, instrumented) is paid
once per batch. A kernel's recorded seconds under a tool are its share of the batch it ran in
(``parallel.batch_shares``: its own cases and an equal part of the batch's start and of any single-kernel runs
that attributed a finding). With one slot nothing is cut: a kernel is one job and each tool one batch, as a serial
run does. Jobs start largest first (LPT), each in the first free slot on any GPU.

**Processes per GPU** (``per_gpu``). A verification job keeps its GPU busy for a small part of its time: the
candidate's launches and the Numba reference take milliseconds, the host work around them seconds (on two H200s,
2026-11-27, ``nvidia-smi`` saw each GPU busy 2-15% of a run). That host work streams arrays through memory (the
inputs, the float64 reference, the comparisons, the outputs coming back from the sandbox), so it is the host's
memory bandwidth, not the number of GPUs, that sets how fast the jobs go: on that 32-core host the library's
verification took 92 s with 8 workers on one GPU and 71-78 s with 16, 95 s with 4 workers on each of two GPUs and
67-72 s with 8 each (the runs' timelines). So the run has one worker per ``CORES_PER_WORKER`` of the host's cores
(each worker's sandboxed child, the builds and compute-sanitizer's own threads take the other), shared evenly
between the GPUs it uses, at most ``MAX_PER_GPU`` on one GPU, and no more than fit in the GPU's free memory at
``WORKER_GPU_MIB`` each (two CUDA contexts -- the worker's Numba context and its candidate child's -- and the
buffers of the largest cases). ``--jobs-per-gpu N`` overrides it.

Standard library only; the specs and records are passed in.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: the estimate of one case: a constant, per byte the kernel moves, per flop it does (see the module docstring)
CASE_SECONDS = 0.15
SECONDS_PER_BYTE = 3.0e-8
SECONDS_PER_FLOP = 5.0e-9
#: what a job costs before its first case: the reference kernel's JIT in the worker, the sandbox child's start
JOB_OVERHEAD_SECONDS = 3.0
MIN_JOB_SECONDS = 12.0
#: one kernel under one sanitizer tool without a record, and one sanitized process's start (measured on an H100,
#: 2026-11-26: Python, the registry and a CUDA context take 5.9 s under memcheck, 3.8 s without it)
SANITIZE_SECONDS = 2.0
SANITIZER_START_SECONDS = 8.0
MIN_BATCH_SECONDS = 4 * SANITIZER_START_SECONDS
#: one worker process per this many of the host's cores; at most this many on one GPU (16 contexts on one H200 were
#: measured, no more), each reserving this much of the GPU's free memory
CORES_PER_WORKER = 2
MAX_PER_GPU = 16
WORKER_GPU_MIB = 2048


@dataclass(frozen=True)
class Unit:
    """One case of a kernel: its size (by index in ``verify_sizes``), seed and distribution; what it should take."""

    size_index: int
    seed: int
    dist: str
    seconds: float

    @property
    def key(self) -> tuple[int, int, str]:
        return (self.size_index, self.seed, self.dist)


@dataclass
class KernelWork:
    """A kernel's share of a run: its cases and, per sanitizer tool, what sanitizing it adds to a batch."""

    name: str
    units: list[Unit]
    sanitize: dict[str, float] = field(default_factory=dict)
    measured: bool = False  # the case costs come from a recorded run

    @property
    def seconds(self) -> float:
        return sum(u.seconds for u in self.units)


@dataclass(frozen=True)
class Job:
    """``cases``: ``units`` (keys of ``Unit``) of ``kernels[0]``, part ``part`` of ``parts``; ``sanitize``: ``tool``
    over ``kernels``. ``seconds``: the estimate it was ordered by."""

    kind: str
    kernels: tuple[str, ...]
    seconds: float
    units: tuple[tuple[int, int, str], ...] = ()
    tool: str = ""
    part: int = 1
    parts: int = 1

    @property
    def label(self) -> str:
        if self.kind == "sanitize":
            return f"{self.tool} over {', '.join(self.kernels)}"
        part = f" (part {self.part}/{self.parts}, {len(self.units)} cases)" if self.parts > 1 else ""
        return self.kernels[0] + part


# -- costs ------------------------------------------------------------------------------------------------------


def case_estimate(spec: Any, size: Mapping[str, int]) -> float:
    """Seconds one case of ``spec`` at ``size`` should take, from its size alone."""
    work = spec.work(size) if getattr(spec, "work", None) else None
    if work is None:  # no work model: a float32 array in and one out per element of the size
        elements = math.prod(int(v) for v in size.values())
        return CASE_SECONDS + 8.0 * elements * SECONDS_PER_BYTE
    return CASE_SECONDS + float(work.bytes) * SECONDS_PER_BYTE + float(work.flops) * SECONDS_PER_FLOP


def _units(spec: Any, seeds: Sequence[int]) -> list[Unit]:
    # in the order translate.verify.cases.cases_for makes the cases
    return [Unit(si, int(seed), dist, case_estimate(spec, size))
            for si, size in enumerate(spec.verify_sizes) for seed in seeds for dist in spec.distributions]


def measured_ratio(spec: Any, record: Mapping[str, Any] | None) -> float | None:
    """Recorded seconds of the kernel's cases / their estimate, from ``record`` (a manifest verification record);
    None when it has no timing, or one of a different set of cases than ``spec``'s sizes and distributions make."""
    if not record:
        return None
    seconds = (record.get("seconds") or {}) if isinstance(record.get("seconds"), dict) else {}
    spent, cases = seconds.get("cases"), record.get("cases")
    per_seed = len(spec.verify_sizes) * len(spec.distributions)
    if not isinstance(spent, (int, float)) or spent <= 0 or not isinstance(cases, int) or not per_seed \
            or cases <= 0 or cases % per_seed:
        return None
    estimate = sum(u.seconds for u in _units(spec, range(cases // per_seed)))
    return float(spent) / estimate


def kernel_work(specs: Sequence[Any], records: Mapping[str, Mapping[str, Any] | None], *, seeds: Sequence[int],
                tools: Sequence[str] = ()) -> list[KernelWork]:
    """Each spec's ``KernelWork`` for a run with ``seeds`` and the sanitizer ``tools``; ``records``: the manifest's
    verification record of each spec's file, by spec name (None: never verified)."""
    ratios = {s.name: measured_ratio(s, records.get(s.name)) for s in specs}
    known = [r for r in ratios.values() if r is not None]
    machine = statistics.median(known) if known else 1.0
    out = []
    for spec in specs:
        ratio = ratios[spec.name]
        units = [Unit(u.size_index, u.seed, u.dist, u.seconds * (ratio if ratio is not None else machine))
                 for u in _units(spec, seeds)]
        recorded = ((records.get(spec.name) or {}).get("seconds") or {})
        recorded = recorded.get("sanitize") if isinstance(recorded, dict) else None
        recorded = recorded if isinstance(recorded, dict) else {}
        sanitize = {tool: float(recorded[tool]) if isinstance(recorded.get(tool), (int, float)) else SANITIZE_SECONDS
                    for tool in tools}
        out.append(KernelWork(spec.name, units, sanitize, measured=ratio is not None))
    return out


def estimates(specs: Sequence[Any], records: Mapping[str, Mapping[str, Any] | None], *, seeds: Sequence[int],
              tools: Sequence[str] = ()) -> dict[str, float]:
    """Each kernel's whole verification in seconds, by spec name (what ``--shard`` balances)."""
    return {w.name: w.seconds + JOB_OVERHEAD_SECONDS + sum(w.sanitize.values())
            for w in kernel_work(specs, records, seeds=seeds, tools=tools)}


# -- processes per GPU ------------------------------------------------------------------------------------------


def per_gpu(gpu: Any, gpus_used: int, cpus: int, requested: int | None = None) -> tuple[int, str]:
    """How many worker processes share ``gpu`` (a ``numbakern.gpus.Gpu``) when ``gpus_used`` GPUs share ``cpus``
    cores; ``requested``: ``--jobs-per-gpu``. Returns the number and why, in words."""
    if requested is not None:
        return requested, "--jobs-per-gpu"
    share = max(1, cpus // CORES_PER_WORKER // max(1, gpus_used))
    free = getattr(gpu, "memory_free_mib", None)
    by_memory = free // WORKER_GPU_MIB if free is not None else None
    n = max(1, min(MAX_PER_GPU, share, by_memory if by_memory is not None else MAX_PER_GPU))
    limits = {MAX_PER_GPU: f"at most {MAX_PER_GPU} a GPU",
              share: f"{cpus} CPU cores for {gpus_used} GPU{'s' if gpus_used != 1 else ''}, a worker per "
                     f"{CORES_PER_WORKER}"}
    if by_memory is not None:
        limits[by_memory] = f"{free} MiB free at {WORKER_GPU_MIB} MiB each"
    return n, limits.get(n, "at least one")


# -- jobs -------------------------------------------------------------------------------------------------------


def balance(weights: Sequence[float], bins: int) -> list[list[int]]:
    """Indices of ``weights`` packed into ``bins`` bins of about equal total: largest first into the lightest bin
    (ties: the earlier index, the lower bin); each bin's indices in ascending order; no empty bin is returned."""
    loads = [0.0] * bins
    members: list[list[int]] = [[] for _ in range(bins)]
    for i in sorted(range(len(weights)), key=lambda i: (-weights[i], i)):
        b = min(range(bins), key=lambda b: (loads[b], b))
        loads[b] += weights[i]
        members[b].append(i)
    return [sorted(m) for m in members if m]


def plan(kernels: Sequence[KernelWork], slots: int, tools: Sequence[str] = ()) -> list[Job]:
    """The run's jobs in the order they start (largest first) for ``slots`` worker processes in all."""
    slots = max(1, slots)
    total = sum(k.seconds + JOB_OVERHEAD_SECONDS for k in kernels)
    total += sum(SANITIZER_START_SECONDS + sum(k.sanitize.get(t, 0.0) for k in kernels) for t in tools) \
        if kernels else 0.0
    target = max(total / slots / 2, MIN_JOB_SECONDS)
    jobs: list[Job] = []
    for k in kernels:
        parts = 1 if slots == 1 else max(1, min(len(k.units), math.ceil(k.seconds / target)))
        chunks = balance([u.seconds for u in k.units], parts) if k.units else [[]]
        for p, chunk in enumerate(chunks, 1):
            units = tuple(k.units[i].key for i in chunk) if len(chunks) > 1 else ()
            seconds = JOB_OVERHEAD_SECONDS + sum(k.units[i].seconds for i in chunk)
            jobs.append(Job("cases", (k.name,), seconds, units, part=p, parts=len(chunks)))
    batch_target = max(target, MIN_BATCH_SECONDS)
    for tool in tools:
        costs = [k.sanitize.get(tool, SANITIZE_SECONDS) for k in kernels]
        if not costs:
            continue
        batches = 1 if slots == 1 else max(1, min(len(costs), math.ceil((SANITIZER_START_SECONDS + sum(costs))
                                                                         / batch_target)))
        for batch in balance(costs, batches):
            jobs.append(Job("sanitize", tuple(kernels[i].name for i in batch),
                            SANITIZER_START_SECONDS + sum(costs[i] for i in batch), tool=tool))
    return sorted(jobs, key=lambda j: (-j.seconds, j.kind, j.kernels, j.tool, j.part))


def makespan(jobs: Iterable[Job], slots: int) -> float:
    """The wall time ``jobs`` take on ``slots`` slots when each starts in the first free slot, in this order
    (what the estimates predict for the run; the scheduler's own tests measure plans with it)."""
    free = [0.0] * max(1, slots)
    for job in jobs:
        i = min(range(len(free)), key=lambda i: (free[i], i))
        free[i] += job.seconds
    return max(free)
