"""Building, loading and running a candidate ``.cu`` in a sandboxed child process, never in this one.

Verification runs code that nobody has vouched for: a ``.cu`` a model wrote, or one edited by hand. Loading its
shared library runs its static initialisers, and running its launcher runs whatever host code it has. So this
process only prepares the inputs and reads the outputs back; a child (``translate.verify.sandbox``: scrubbed
environment, its own folder, resource limits, a deadline that kills its process group) builds the library with
``nvcc -shared``, loads it with ctypes, and runs each case twice (outputs poisoned differently each time), exactly
as ``translate.verify.runner.candidate_run`` does. The child imports numpy, ctypes and this package's ``build``,
``abi``, ``driver`` and ``runner`` modules, never numba, the registry or the kernel's module.

Parent: ``run_candidate(cu, launcher, cases, ...)`` -> ``CandidateRuns``; ``build(cu, ...)`` for a build alone (the
parallel builds of ``python -m translate.verify --all``). Child: verification's one child, ``python -m
translate.verify.worker``, given a ``candidate`` job (``translate.verify.protocol``); the arrays go both ways as
``.npz`` files in its working folder.

The child's answers are data, checked like any input: outputs must have the case's shapes and dtypes, texts are
cut short, and what reaches a model is built from numbers only (see ``translate.backends.llm``).
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from . import abi, driver, sandbox
from .build import nvcc_command
from .runner import RunResult, SharedPoisoner, candidate_run

#: the wall-clock and CPU limits of a child that builds (nvcc) and of one that runs the cases
BUILD_LIMITS = sandbox.Limits(wall_seconds=900, cpu_seconds=900)
RUN_LIMITS = sandbox.Limits(wall_seconds=600, cpu_seconds=600)
#: the longest text read back from a child into a result
MAX_TEXT = 20_000
MAX_ERROR = 300
#: the largest answer read back (the build log is the longest part)
MAX_ANSWER = 10 * MAX_TEXT + 1_000_000


@dataclass
class CandidateRuns:
    """What the child did: built (or not), loaded (or not), and the two runs of each case."""

    stage: str = ""  # where it stopped: "" (all ran), "build", "load", "child" (killed, crashed, no answer)
    error: str = ""  # a one-line reason when ``stage`` is set
    build_log: str = ""  # nvcc's output when the build failed
    so: Path | None = None  # the library the child built (inside the working folder)
    pairs: list[tuple[RunResult, RunResult]] = field(default_factory=list)  # per case: run "a", run "b"


def run_candidate(cu: str | os.PathLike, launcher: Mapping[str, Any], cases: Sequence[Any], *,
                  outputs: Sequence[int], accumulates: Sequence[int] = (), arch: str, workdir: str | os.PathLike,
                  nvcc_flags: Sequence[str] = (), so: str | os.PathLike | None = None, poison_shared: bool = True,
                  limits: sandbox.Limits = RUN_LIMITS) -> CandidateRuns:
    """Build ``cu`` (unless ``so`` is given), load it and run every case twice, in a sandboxed child working in
    ``workdir`` (which must exist; the library stays there). ``cases`` are ``numbakern.registry.Case``s."""
    workdir = Path(workdir)
    job = {"kind": "candidate", "cu": str(Path(cu).resolve()), "so": str(Path(so).resolve()) if so else None,
           "arch": arch, "nvcc_flags": list(nvcc_flags), "launcher": dict(launcher),
           "outputs": [int(i) for i in outputs], "accumulates": [int(i) for i in accumulates],
           "poison_shared": bool(poison_shared), "cases": []}
    arrays: dict[str, np.ndarray] = {}
    for k, case in enumerate(cases):
        entry = {"grid": list(case.launch.grid), "block": list(case.launch.block),
                 "shared_bytes": int(case.launch.shared_bytes), "args": []}
        for i, a in enumerate(case.args):
            if isinstance(a, np.ndarray):
                arrays[f"c{k}_a{i}"] = a
                entry["args"].append({"array": f"c{k}_a{i}"})
            else:
                entry["args"].append({"scalar": a.item() if hasattr(a, "item") else a})
        job["cases"].append(entry)
    np.savez(workdir / "args.npz", **arrays)  # pyright: ignore[reportArgumentType] - numpy's stub: arrays by name
    done = sandbox.run(job=job, workdir=workdir, limits=limits_for_outputs(limits, cases, outputs),
                       read_only=[p for p in (job["cu"], job["so"]) if p], max_answer=MAX_ANSWER)
    result = _read_answer(workdir, cases, outputs, done)
    if so and not result.stage:
        result.so = Path(so)
    return result


def limits_for_outputs(limits: sandbox.Limits, cases: Sequence[Any], outputs: Sequence[int]) -> sandbox.Limits:
    """``limits`` with a file-size limit that fits the child's ``outputs.npz``: every output of every case, twice
    (runs "a" and "b"), and room for the archive's headers. A large case (a 2-D stencil or transpose at full size)
    writes more than the default limit."""
    needed = sum(2 * case.args[i].nbytes for case in cases for i in outputs if isinstance(case.args[i], np.ndarray))
    needed += 64 << 20
    return replace(limits, file_bytes=needed) if needed > limits.file_bytes else limits


def build(cu: str | os.PathLike, *, arch: str, workdir: str | os.PathLike, nvcc_flags: Sequence[str] = (),
          limits: sandbox.Limits = BUILD_LIMITS) -> CandidateRuns:
    """Only the build, sandboxed: ``.so`` set on success, else ``stage == "build"`` and the log."""
    workdir = Path(workdir)
    job = {"kind": "candidate", "cu": str(Path(cu).resolve()), "so": None, "arch": arch,
           "nvcc_flags": list(nvcc_flags), "build_only": True}
    done = sandbox.run(job=job, workdir=workdir, limits=limits, read_only=[job["cu"]], max_answer=MAX_ANSWER)
    return _read_answer(workdir, [], [], done)


def _read_answer(workdir: Path, cases: Sequence[Any], outputs: Sequence[int], done: sandbox.Completed) -> CandidateRuns:
    answer = done.answer
    if answer is None:
        tail = _short(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "", MAX_ERROR)
        return CandidateRuns("child", f"the candidate's process gave no answer ({done.describe()})"
                             + (f": {tail}" if tail else ""))
    stage = str(answer.get("stage", ""))
    result = CandidateRuns(stage, _short(str(answer.get("error", "")), MAX_ERROR),
                           str(answer.get("build_log", ""))[-MAX_TEXT:])
    so = answer.get("so")
    if isinstance(so, str) and Path(so).resolve().is_relative_to(workdir.resolve()):
        result.so = Path(so)
    if stage:
        return result
    if not cases:  # a build alone
        return result if done.ok and result.so else CandidateRuns("child", f"the build failed ({done.describe()})")
    runs = answer.get("runs")
    if not isinstance(runs, list) or len(runs) != len(cases):
        return CandidateRuns("child", f"the candidate's process ran {len(runs) if isinstance(runs, list) else 0} "
                             f"of {len(cases)} cases ({done.describe()})")
    try:
        archive = zipfile.ZipFile(workdir / "outputs.npz")
    except (OSError, zipfile.BadZipFile) as exc:
        return CandidateRuns("child", f"the candidate's outputs cannot be read: {_short(str(exc), 120)}")
    with archive:
        for k, (case, run) in enumerate(zip(cases, runs)):
            a, b = (_run_result(archive, k, name, case, outputs, run.get(name) if isinstance(run, dict) else None)
                    for name in ("a", "b"))
            result.pairs.append((a, b))
    return result


def _run_result(archive: zipfile.ZipFile, k: int, name: str, case: Any, outputs: Sequence[int], run: Any) -> RunResult:
    """One run as the child reported it, every array checked against the case's shape and dtype."""
    if not isinstance(run, dict):
        return RunResult(error="the candidate's process reported nothing for this run")
    if run.get("error"):
        return RunResult(error=_short(str(run["error"]), MAX_ERROR))
    out = RunResult()
    for i in outputs:
        got = _read_array(archive, f"c{k}_{name}_out{i}", case.args[i])
        if got is None:
            return RunResult(error=f"the candidate's process returned no valid output for argument {i}")
        out.outputs[i] = got
    shas = run.get("input_sha256") or {}
    out.input_sha_after = {int(i): str(h)[:64] for i, h in shas.items() if str(i).isdigit()}
    return out


def _read_array(archive: zipfile.ZipFile, key: str, like: np.ndarray) -> np.ndarray | None:
    """The array ``key`` of the child's ``.npz`` if it has exactly ``like``'s shape and dtype, else None; the
    header is read first, so a forged one cannot make this process allocate or inflate more than ``like``."""
    try:
        info = archive.getinfo(key + ".npy")
        if info.file_size > like.nbytes + 4096:
            return None
        with archive.open(info) as f:
            version = np.lib.format.read_magic(f)
            if version not in ((1, 0), (2, 0)):
                return None
            read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                           else np.lib.format.read_array_header_2_0)
            shape, fortran, dtype = read_header(f)
            if tuple(shape) != like.shape or dtype != like.dtype or fortran or dtype.hasobject:
                return None
            data = f.read(like.nbytes + 1)
    except (KeyError, OSError, ValueError, zipfile.BadZipFile):
        return None
    if len(data) != like.nbytes:
        return None
    return np.frombuffer(data, dtype=like.dtype).reshape(like.shape).copy()


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------------------------------------------
# the child


def serve(job: dict) -> dict:
    """Build, load, run (the ``candidate`` job of ``translate.verify.protocol``); the answer, with ``outputs.npz``
    written in the working folder. Runs inside the sandbox."""
    workdir = Path.cwd()
    answer: dict[str, Any] = {}
    try:
        so = job.get("so") or _child_build(job, workdir, answer)
        if so is not None:
            answer["so"] = so
            if not job.get("build_only"):
                _child_run(job, workdir, so, answer)
    except Exception as exc:  # noqa: BLE001 - the parent reads the stage and the error
        answer.setdefault("stage", "child")
        answer.setdefault("error", f"{type(exc).__name__}: {exc}")
    return answer


def _child_build(job: dict, workdir: Path, answer: dict) -> str | None:
    out = workdir / f"{Path(job['cu']).stem}.so"
    try:
        command = nvcc_command(Path(job["cu"]), out, arch=job["arch"], extra=job.get("nvcc_flags", ()))
        proc = subprocess.run(command, capture_output=True, text=True, cwd=workdir)
    except (FileNotFoundError, OSError) as exc:
        answer.update(stage="build", error=f"nvcc could not run: {exc}")
        return None
    if proc.returncode != 0:
        log = (proc.stdout + proc.stderr).strip()
        answer.update(stage="build", error=f"nvcc failed for {Path(job['cu']).name} (exit status {proc.returncode})",
                      build_log=log[-MAX_TEXT:])
        return None
    return str(out)


def _child_run(job: dict, workdir: Path, so: str, answer: dict) -> None:
    try:
        lib = ctypes.CDLL(so)  # the candidate's static initialisers run here, in the sandbox
        fn = abi.bind(lib, job["launcher"])
    except (OSError, abi.AbiError) as exc:
        answer.update(stage="load", error=f"the library did not load: {exc}")
        return
    try:
        driver.init()
    except (OSError, driver.CudaError) as exc:
        answer.update(stage="load", error=f"no CUDA device for the candidate: {exc}")
        return
    shared = SharedPoisoner.get(job["arch"]) if job.get("poison_shared") else None
    spec = SimpleNamespace(outputs=tuple(job["outputs"]), accumulates=tuple(job.get("accumulates", ())))
    arrays = np.load(workdir / "args.npz", allow_pickle=False)
    outputs: dict[str, np.ndarray] = {}
    runs = []
    for k, entry in enumerate(job["cases"]):
        args = [arrays[a["array"]] if "array" in a else a["scalar"] for a in entry["args"]]
        case = SimpleNamespace(args=args, launch=SimpleNamespace(grid=tuple(entry["grid"]), block=tuple(entry["block"]),
                                                                 shared_bytes=int(entry["shared_bytes"])))
        pair = {}
        for name in ("a", "b"):
            run = candidate_run(fn, job["launcher"], spec, case, name, shared)
            pair[name] = {"error": run.error, "input_sha256": {str(i): h for i, h in run.input_sha_after.items()}}
            for i, value in run.outputs.items():
                outputs[f"c{k}_{name}_out{i}"] = value
        runs.append(pair)
    np.savez(workdir / "outputs.npz", **outputs)  # pyright: ignore[reportArgumentType] - as above
    answer["runs"] = runs
