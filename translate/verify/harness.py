"""The verification harness: does the compiled C compute what the Numba kernel computes?

For every case (seeds × the spec's ``verify_sizes`` × its input distributions, ``KernelSpec.distributions``):

1. **candidate run 1** -- the ``.cu`` built with ``nvcc -shared`` and called through its ``extern "C"`` launcher,
   in buffers of its own, outputs poisoned with NaN (integers: a sentinel), shared memory poisoned with NaN;
2. **candidate run 2** -- fresh buffers again, outputs poisoned with a different (finite) sentinel and shared
   memory with a different pattern;
3. **reference** -- the Numba kernel, in separate buffers, outputs poisoned like run 1.

The candidate is built, loaded and run in a sandboxed child process (``translate.verify.isolated``), never in this
one: its code is not vouched for (a model may have written it), and its static initialisers run when it is
loaded. This process runs the Numba reference and makes every comparison.

Checks (a case passes only if all pass): ``launch`` (no launch or execution error), ``inputs`` (SHA-256 of every
input array unchanged after each candidate run), ``vs_numba`` (both candidate runs within the spec's tolerance of
the Numba output: ``|c - r| <= atol + rtol * error_scale``, exact for integers), ``vs_numpy`` (candidate run 1
against the spec's independent numpy reference), ``repeat`` (run 1 == run 2 bit for bit; within tolerance for
kernels that accumulate with atomics) and ``reference`` (the Numba kernel itself agrees with numpy -- otherwise
there is nothing trustworthy to compare with).
"""

from __future__ import annotations

import datetime as _dt
import socket
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numba import cuda

from numbakern.compare import compare

from . import driver, isolated
from .build import build_shared_library, nvcc_version, sha256_file
from .cases import DEFAULT_SEEDS, cases_for
from .runner import RunResult, poisonable, poisoned, sha256
from .sanitize import TOOLS, sanitize_candidates

CHECKS = ("launch", "inputs", "vs_numba", "vs_numpy", "repeat", "reference")


@dataclass
class Candidate:
    """A ``.cu`` and the launcher of it that implements a spec (from the manifest, or written by hand)."""

    cu: Path
    launcher: Mapping[str, Any]
    label: str = ""
    nvcc_flags: tuple[str, ...] = ()  # the manifest entry's build.nvcc_flags (e.g. numba's fastmath as nvcc flags)

    @property
    def name(self) -> str:
        return self.label or self.cu.stem

    def build(self, arch: str) -> Path:
        """The candidate's shared library, built here the way a deployer builds it (with the file's build flags),
        for files already vouched for (the benchmarks of the library's own files); verification builds in a
        sandbox (``translate.verify.isolated``)."""
        return build_shared_library(self.cu, arch=arch, extra_flags=self.nvcc_flags)


@dataclass
class CaseResult:
    kernel: str
    size: dict[str, int]
    seed: int
    dist: str
    ok: bool
    failed: list[str]
    max_abs_error: float
    max_rel_error: float
    messages: list[str] = field(default_factory=list)
    first_mismatches: list[tuple[tuple[int, ...], float, float]] = field(default_factory=list)

    @property
    def label(self) -> str:
        size = ",".join(f"{k}={v}" for k, v in self.size.items())
        return f"{size} seed={self.seed} {self.dist}"


@dataclass
class VerifyResult:
    kernel: str
    candidate: str
    cu: str
    file_sha256: str
    ok: bool
    cases: list[CaseResult] = field(default_factory=list)
    error: str = ""  # build/bind/ABI problems that stopped verification before any case ran
    stage: str = ""  # where that happened: "build", "load" or "child" (see translate.verify.isolated)
    build_log: str = ""  # nvcc's output when the build failed
    sanitizer: dict[str, str] | None = None
    device: dict[str, Any] = field(default_factory=dict)
    date: str = ""
    # how long it took: {"cases": seconds, "sanitize": {tool: seconds}} (what the next run plans with)
    seconds: dict[str, Any] | None = None

    @property
    def n_failed(self) -> int:
        return sum(not c.ok for c in self.cases)

    @property
    def max_abs_error(self) -> float:
        return max((c.max_abs_error for c in self.cases), default=0.0)

    @property
    def max_rel_error(self) -> float:
        return max((c.max_rel_error for c in self.cases), default=0.0)

    def failed_checks(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for c in self.cases:
            for name in c.failed:
                counts[name] = counts.get(name, 0) + 1
        if self.sanitizer:
            for tool, status in self.sanitizer.items():
                if status != "ok":
                    counts[f"sanitizer:{tool}"] = 1
        return counts

    def to_record(self) -> dict[str, Any]:
        """The manifest's ``verification`` record (docs/design/translate-contract.md §4)."""
        return {
            "ok": bool(self.ok),
            "device": self.device.get("device", ""),
            # who made the record: the host it ran on (a record is a claim; translate --list shows it as one)
            **({"host": self.device["host"]} if self.device.get("host") else {}),
            "compute_capability": self.device.get("compute_capability", ""),
            "driver": self.device.get("driver", ""),
            "runtime": self.device.get("runtime", ""),
            "date": self.date,
            "cases": len(self.cases),
            "failed_cases": self.n_failed,
            "max_abs_error": _finite(self.max_abs_error),
            "max_rel_error": _finite(self.max_rel_error),
            "sanitizer": self.sanitizer,
            "file_sha256": self.file_sha256,
            "launcher": self.candidate,
            "error": self.error or None,
            **({"seconds": self.seconds} if self.seconds else {}),
        }


def _finite(x: float) -> float | str:
    return float(x) if np.isfinite(x) else str(x)


def now() -> str:
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def device_facts(arch: str | None = None) -> dict[str, Any]:
    """The device (through the driver API) and the toolkit: the runtime a candidate links is nvcc's own (static
    cudart), so nothing built from a ``.cu`` is loaded here to ask it."""
    info = driver.device_info()
    info["nvcc"] = info["runtime"] = nvcc_version()
    info["host"] = socket.gethostname()
    return info


# ---------------------------------------------------------------------------------------------------------------


def _tolerance(spec, dtype: np.dtype) -> tuple[float, float]:
    return (0.0, 0.0) if np.dtype(dtype).kind in "iub" else (float(spec.rtol), float(spec.atol))


def _compare(spec, i: int, got: np.ndarray, want: np.ndarray, scale, name: str):
    rtol, atol = _tolerance(spec, got.dtype)
    return compare(got, want, scale=scale, rtol=rtol, atol=atol, name=name)


def numba_run(spec, case, run: str = "a") -> RunResult:
    """The Numba kernel on its own device copies of ``case``'s arguments, outputs poisoned."""
    result = RunResult()
    args: list[Any] = []
    for i, a in enumerate(case.args):
        if isinstance(a, np.ndarray):
            args.append(cuda.to_device(poisoned(a, run) if poisonable(spec, i) else a))
        else:
            args.append(a)
    cfg = case.launch
    try:
        spec.kernel[cfg.grid, cfg.block, 0, cfg.shared_bytes](*args)
        cuda.synchronize()
        result.outputs = {i: args[i].copy_to_host() for i in spec.outputs}
        result.input_sha_after = {i: sha256(args[i].copy_to_host()) for i, a in enumerate(case.args)
                                  if isinstance(a, np.ndarray) and i not in spec.outputs}
    except Exception as exc:  # noqa: BLE001 - reported per case
        result.error = f"{type(exc).__name__}: {exc}"
    return result


def run_case(spec, case, c1: RunResult, c2: RunResult, *,
             deterministic: bool) -> tuple[bool, list[str], float, float, list[str], list]:
    """The candidate's two runs of one case (made in the sandbox) against the Numba reference, run here; see the
    module docstring for the checks."""
    failed: list[str] = []
    messages: list[str] = []
    first: list = []
    input_sha = {i: sha256(a) for i, a in enumerate(case.args) if isinstance(a, np.ndarray) and i not in spec.outputs}

    ref = numba_run(spec, case, "a")

    if c1.error or c2.error:
        failed.append("launch")
        messages.append(f"launch: {c1.error or c2.error}")
    if ref.error:
        failed.append("reference")
        messages.append(f"reference: the Numba kernel failed: {ref.error}")
    if "launch" in failed or "reference" in failed:
        return False, failed, float("inf"), float("inf"), messages, first

    for run_name, run in (("run 1", c1), ("run 2", c2)):
        changed = [i for i, h in input_sha.items() if run.input_sha_after.get(i) != h]
        if changed:
            names = spec.arg_names()
            if "inputs" not in failed:
                failed.append("inputs")
            messages.append(f"inputs: the candidate changed {', '.join(repr(names[i]) for i in changed)} ({run_name})")

    expected = spec.reference(*case.args)
    scales = spec.error_scale(*case.args) if spec.error_scale else {}
    max_abs = max_rel = 0.0
    for i in spec.outputs:
        scale = scales.get(i)
        name = spec.arg_names()[i]
        for run_name, run in (("run 1", c1), ("run 2", c2)):
            cmp = _compare(spec, i, run.outputs[i], ref.outputs[i], scale, f"{name} ({run_name}) vs Numba")
            if run is c1:
                max_abs, max_rel = max(max_abs, cmp.max_abs_error), max(max_rel, cmp.max_rel_error)
            if not cmp.ok:
                if "vs_numba" not in failed:
                    failed.append("vs_numba")
                    first = list(cmp.first_mismatches)
                messages.append(f"vs_numba: {cmp}")
        truth = _compare(spec, i, c1.outputs[i], expected[i], scale, f"{name} vs numpy reference")
        if not truth.ok:
            failed.append("vs_numpy")
            messages.append(f"vs_numpy: {truth}")
        sane = _compare(spec, i, ref.outputs[i], expected[i], scale, f"{name}: Numba vs numpy reference")
        if not sane.ok:
            failed.append("reference")
            messages.append(f"reference: {sane}")
        a, b = c1.outputs[i], c2.outputs[i]
        if deterministic:
            if a.dtype.kind == "f":
                neq = ~((a == b) | (np.isnan(a) & np.isnan(b)))
            else:
                neq = a != b
            if a.shape != b.shape or neq.any():
                diff = np.argwhere(neq) if a.shape == b.shape else np.zeros((0, a.ndim), dtype=int)
                failed.append("repeat")
                messages.append(f"repeat: run 1 and run 2 differ at {int(len(diff))} elements of {name}, first at "
                                f"{[tuple(int(j) for j in d) for d in diff[:3]]} (race, uninitialised read or "
                                "unwritten output)")
        else:
            rep = _compare(spec, i, b, a, scale, f"{name}: run 2 vs run 1")
            if not rep.ok:
                failed.append("repeat")
                messages.append(f"repeat: {rep}")
    return not failed, failed, max_abs, max_rel, messages, first


def verify(
    spec,
    candidate: Candidate,
    *,
    seeds: Sequence[int] = DEFAULT_SEEDS,
    sizes: Sequence[Mapping[str, int]] | None = None,
    dists: Sequence[str] | None = None,
    arch: str | None = None,
    sanitize: bool | Sequence[str] = False,
    poison_shared: bool = True,
    progress=None,
    prebuilt: str | Path | None = None,
    limits: Any = None,
    only: Sequence[tuple[int, int, str]] | None = None,
) -> VerifyResult:
    """Verify one candidate ``.cu`` against one registered kernel on the GPU. The candidate is built (unless
    ``prebuilt`` is its library, built by ``isolated.build``), loaded and run in a sandboxed child process
    (``limits``: its ``sandbox.Limits``, by default ``isolated.RUN_LIMITS``). ``only``: just these
    ``(size index, seed, dist)`` cases (``cases.cases_for``)."""
    info = device_facts(arch)
    arch = arch or info["arch"]
    cu = Path(candidate.cu)
    result = VerifyResult(kernel=spec.name, candidate=str(candidate.launcher.get("symbol", "")), cu=str(cu),
                          file_sha256=sha256_file(cu), ok=False, device=info, date=now())
    cases = list(cases_for(spec, seeds, sizes, dists, only))
    with tempfile.TemporaryDirectory(prefix="numbakern-verify-") as workdir:
        runs = isolated.run_candidate(cu, candidate.launcher, [c for *_, c in cases], outputs=spec.outputs,
                                      accumulates=getattr(spec, "accumulates", ()), arch=arch, workdir=workdir,
                                      nvcc_flags=candidate.nvcc_flags, so=prebuilt, poison_shared=poison_shared,
                                      limits=limits or isolated.RUN_LIMITS)
        if runs.stage:
            result.error, result.stage, result.build_log = runs.error, runs.stage, runs.build_log
            return result
        source = cu.read_text(errors="replace")
        deterministic = not getattr(spec, "accumulates", ()) and "atomic" not in source
        for (size, seed, dist, case), (c1, c2) in zip(cases, runs.pairs):
            ok, failed, mabs, mrel, messages, first = run_case(spec, case, c1, c2, deterministic=deterministic)
            cr = CaseResult(spec.name, size, seed, dist, ok, failed, mabs, mrel, messages, first)
            result.cases.append(cr)
            if progress:
                progress(cr)
        result.ok = bool(result.cases) and all(c.ok for c in result.cases)
        if sanitize and runs.so is not None:
            tools = TOOLS if sanitize is True else tuple(sanitize)
            result.sanitizer = sanitize_candidates([(spec, candidate, runs.so)], tools=tools)[candidate.name]
            result.ok = result.ok and all(v == "ok" for v in result.sanitizer.values())
    return result
