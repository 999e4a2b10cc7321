"""``python -m translate.verify.worker``: every child process of verification, speaking its one protocol
(``translate.verify.protocol``: a JSON job a line on stdin, a JSON answer a line on stdout). A worker of a
verification spread over GPUs (``translate.verify.parallel``) has its GPU alone in ``CUDA_VISIBLE_DEVICES``
(``translate.verify.pool``) and gets these jobs (``message`` makes them):

- ``{"kind": "cases", "spec": <spec_ref>, "candidate": {...}, "so": path | null, "seeds": [...], "units": [...]}``:
  ``harness.verify`` of the candidate on those cases (``units``: ``[size index, seed, dist]`` triples, [] for all),
  the candidate in its sandboxed child as always, the Numba reference here -> ``{"result": <VerifyResult>,
  "seconds": s}``;
- ``{"kind": "sanitize", "tool": t, "items": [{"spec", "candidate", "so"}, ...]}``: one compute-sanitizer tool over
  the items (``sanitize.sanitize_tool``) -> ``{"status": {name: verdict}, "item_seconds": {name: s}, "seconds": s}``;
- ``{"kind": "whoami", "sleep": s}``: the process, its ``CUDA_VISIBLE_DEVICES`` and when it started and ended the
  job (what the tests of the assignment read; touches no GPU) -> ``{"pid", "cuda_visible_devices", ...}``.

A sandboxed one-shot child gets one job, ``candidate`` (``translate.verify.isolated``) or ``compile``
(``translate.verify.sandboxed_compile``). An exception in a job is its answer (``{"error": ...}``); the worker goes
on with the next.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from . import protocol


def candidate_message(cand: Any) -> dict[str, Any]:
    return {"cu": str(Path(cand.cu).resolve()), "launcher": dict(cand.launcher), "label": cand.label,
            "nvcc_flags": list(cand.nvcc_flags)}


def _candidate(message: Mapping[str, Any]):
    from .harness import Candidate  # imports numba: only once a job needs it (whoami never does)

    return Candidate(Path(message["cu"]), dict(message["launcher"]), message.get("label", ""),
                     tuple(message.get("nvcc_flags", ())))


def result_to_json(result: Any) -> dict[str, Any]:
    """A ``harness.VerifyResult`` as JSON-ready data (``result_from_json`` reads it back)."""
    return dataclasses.asdict(result)


def result_from_json(data: Mapping[str, Any]):
    from .harness import CaseResult, VerifyResult  # imports numba: the parent has it loaded by then anyway

    cases = [CaseResult(**{**c, "first_mismatches": [(tuple(i), g, w) for i, g, w in c["first_mismatches"]]})
             for c in data.get("cases", ())]
    return VerifyResult(**{**data, "cases": cases})


class _Builds:
    """Libraries this worker built itself (a job without a prebuilt one: the parent did not know the GPU's arch)."""

    def __init__(self):
        self.folder = tempfile.TemporaryDirectory(prefix="numbakern-worker-builds-")
        self.done: dict[str, Path | None] = {}

    def so(self, cand: Any, arch: str) -> Path | None:
        from . import isolated  # with the candidate: only for a job that needs a build

        key = str(cand.cu)
        if key not in self.done:
            folder = Path(self.folder.name) / f"build-{len(self.done)}"
            folder.mkdir()
            self.done[key] = isolated.build(cand.cu, arch=arch, workdir=folder, nvcc_flags=cand.nvcc_flags).so
        return self.done[key]


_ARCH: list[str] = []
_BUILDS: list[_Builds] = []  # this worker's, made by its first sanitizer job


def _arch() -> str:
    from .harness import device_facts  # the device's own facts: this process has its GPU

    if not _ARCH:
        _ARCH.append(device_facts()["arch"])
    return _ARCH[0]


def _spec(ref: Any):
    from numbakern import registry  # imports numba: only for a job that needs the spec

    return registry.get(ref) if isinstance(ref, str) else registry.from_ref(ref)


def run_cases(job: Mapping[str, Any]) -> dict[str, Any]:
    from .harness import verify  # numba's real CUDA target, chosen by the parent's environment

    spec, cand = _spec(job["spec"]), _candidate(job["candidate"])
    units = [tuple(u) for u in job.get("units") or ()] or None
    t0 = time.perf_counter()
    result = verify(spec, cand, seeds=tuple(job["seeds"]), prebuilt=job.get("so"), only=units)
    return {"result": result_to_json(result), "seconds": time.perf_counter() - t0}


def run_sanitize(job: Mapping[str, Any]) -> dict[str, Any]:
    from .sanitize import sanitize_tool  # the registry (numba) comes with it

    if not _BUILDS:
        _BUILDS.append(_Builds())
    builds = _BUILDS[0]
    items, missing = [], []
    for item in job["items"]:
        spec, cand = _spec(item["spec"]), _candidate(item["candidate"])
        so = item.get("so") or builds.so(cand, _arch())
        if so:
            items.append((spec, cand, Path(so)))
        else:
            missing.append(cand.name)
    t0 = time.perf_counter()
    status, seconds = sanitize_tool(items, job["tool"], timeout=float(job.get("timeout", 300)),
                                    log_dir=job.get("log_dir"))
    status.update({name: "not run: the .cu did not build" for name in missing})
    return {"status": status, "item_seconds": seconds, "seconds": time.perf_counter() - t0}


def whoami(job: Mapping[str, Any]) -> dict[str, Any]:
    started = time.time()
    time.sleep(float(job.get("sleep", 0)))
    return {"pid": os.getpid(), "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "threads": os.environ.get("OMP_NUM_THREADS"), "started": started, "ended": time.time()}


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "0")
    # the cases' small sizes launch grids of a block or two on purpose: numba's low-occupancy warning would be one
    # line of noise per worker in the run's output
    os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
    return protocol.serve()


if __name__ == "__main__":
    raise SystemExit(main())
