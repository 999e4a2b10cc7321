"""Worker processes spread over GPUs: each with ``CUDA_VISIBLE_DEVICES`` set to its GPU alone, each taking the next
job in the list as soon as it is free.

A worker is a long-lived child (``argv``, e.g. ``python -m translate.verify.worker``) that speaks
``translate.verify.protocol``: one JSON job a line on its stdin, one JSON answer a line on its stdout; whatever else
it prints goes to its stderr, which comes out here line by line behind the worker's slot (``[GPU 1#0] ...``). A
worker that dies answers its job with ``{"error": ...}`` and is started again for the next one.

``slots_for`` lays out the slots (``per_gpu[i]`` workers on GPU ``i``), GPU by GPU in turn, so that the first jobs,
the largest, go to different GPUs; ``Pool.run`` hands out the jobs in their order. The parent never initialises
CUDA: the GPUs come from ``numbakern.gpus``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from numbakern.gpus import VISIBLE_ENV, Gpu

from . import protocol

J = TypeVar("J")

#: the thread-count variables of the math libraries a worker may load (numpy's BLAS, OpenMP)
THREAD_ENVS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


@dataclass(frozen=True)
class Slot:
    """One worker process's place: its GPU and its number among that GPU's workers."""

    gpu: Gpu
    number: int

    @property
    def label(self) -> str:
        return f"GPU {self.gpu.index}#{self.number}"


def slots_for(gpus: Sequence[Gpu], per_gpu: Mapping[int, int]) -> list[Slot]:
    """``per_gpu[gpu.index]`` slots on each GPU, interleaved: GPU 0#0, GPU 1#0, GPU 0#1, ..."""
    most = max((per_gpu[g.index] for g in gpus), default=0)
    return [Slot(g, k) for k in range(most) for g in gpus if k < per_gpu[g.index]]


def worker_env(gpu: Gpu, threads: int, extra: Mapping[str, str] | None = None,
               environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A worker's environment: this one's, with its GPU alone visible, ``threads`` threads for the math libraries
    (the workers share the host's cores), unbuffered output, and this package importable wherever it was run from."""
    env = dict(os.environ if environ is None else environ)
    env[VISIBLE_ENV] = gpu.token
    for name in THREAD_ENVS:
        env[name] = str(max(1, threads))
    here = str(Path(__file__).resolve().parents[2])  # the folder that holds the translate package
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


class _Worker:
    """One running worker process of a slot."""

    def __init__(self, argv: Sequence[str], env: Mapping[str, str], slot: Slot, cwd: str | None,
                 on_stderr: Callable[[Slot, str], None]):
        self.proc = subprocess.Popen(list(argv), env=dict(env), cwd=cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self.forward = threading.Thread(target=self._forward, args=(slot, on_stderr), daemon=True)
        self.forward.start()

    def _forward(self, slot: Slot, on_stderr: Callable[[Slot, str], None]) -> None:
        for line in self.proc.stderr or ():
            on_stderr(slot, line)

    def ask(self, message: Mapping[str, Any]) -> dict[str, Any]:
        """Send one job, wait for its answer; ``{"error": ...}`` when the worker died on the way."""
        try:
            stdin, stdout = self.proc.stdin, self.proc.stdout
            assert stdin is not None and stdout is not None  # (opened with PIPE)
            stdin.write(protocol.encode(message))
            stdin.flush()
            line = stdout.readline()
        except (BrokenPipeError, OSError, ValueError):
            line = ""
        if not line:
            rc = self.proc.wait()
            self.forward.join(timeout=5)
            return {"error": f"the worker process exited (status {rc}) before it answered"}
        answer = protocol.decode(line)
        return answer if answer is not None else {"error": f"the worker answered something that is not a JSON object: "
                                                           f"{line[:200]!r}"}

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def end_input(self) -> None:
        """No more jobs: the worker's loop ends when it reads the end of its input."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass

    def close(self, timeout: float = 30.0) -> None:
        self.end_input()
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.forward.join(timeout=5)

    def kill(self) -> None:
        if self.alive:
            self.proc.kill()


def _stderr_line(slot: Slot, line: str) -> None:
    sys.stderr.write(f"[{slot.label}] {line}" if line.endswith("\n") else f"[{slot.label}] {line}\n")
    sys.stderr.flush()


class Pool(Generic[J]):
    """Runs jobs on worker processes, one per slot. ``argv``: the worker's command; ``env_for(slot)``: its
    environment (default ``worker_env`` with one math thread per core a worker has)."""

    def __init__(self, argv: Sequence[str], slots: Sequence[Slot], *, cwd: str | None = None,
                 env_for: Callable[[Slot], Mapping[str, str]] | None = None,
                 on_stderr: Callable[[Slot, str], None] = _stderr_line):
        if not slots:
            raise ValueError("a pool needs at least one slot")
        self.argv, self.slots, self.cwd, self.on_stderr = list(argv), list(slots), cwd, on_stderr
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        threads = max(1, cores // len(self.slots))
        self.env_for = env_for or (lambda slot: worker_env(slot.gpu, threads))
        self._cond = threading.Condition()
        self._workers: dict[Slot, _Worker] = {}
        self._stop = False

    def wake(self) -> None:
        """Tell the slots that a job may have become ready (``run``'s ``ready``)."""
        with self._cond:
            self._cond.notify_all()

    def run(self, jobs: Sequence[J], message: Callable[[J, Slot], Mapping[str, Any]],
            done: Callable[[J, Slot, dict[str, Any], float], None], *,
            ready: Callable[[J], bool | None] = lambda job: True,
            skipped: Callable[[J], None] = lambda job: None) -> None:
        """Run ``jobs`` in their order, each on the first free slot: ``message(job, slot)`` is what the worker is
        sent, ``done(job, slot, answer, seconds)`` is called with its answer (one call at a time). A job waits while
        ``ready(job)`` is False, and is dropped (``skipped(job)``) when it is None."""
        pending = list(jobs)
        report = threading.Lock()
        failures: list[BaseException] = []

        def take() -> J | None:
            with self._cond:
                while pending and not self._stop:
                    for k, job in enumerate(pending):
                        state = ready(job)
                        if state is None:
                            del pending[k]
                            with report:
                                skipped(job)
                            break
                        if state:
                            return pending.pop(k)
                    else:
                        self._cond.wait(timeout=0.5)
                return None

        def serve(slot: Slot) -> None:
            try:
                while (job := take()) is not None:
                    worker = self._workers.get(slot)
                    if worker is None or not worker.alive:
                        worker = self._workers[slot] = _Worker(self.argv, self.env_for(slot), slot, self.cwd,
                                                               self.on_stderr)
                    t0 = time.perf_counter()
                    answer = worker.ask(message(job, slot))
                    with report:
                        done(job, slot, answer, time.perf_counter() - t0)
                # nothing left for this slot: its worker ends now, beside the others still working (a worker's exit,
                # its CUDA context torn down, takes a second or two; one after another at the end they added up)
                worker = self._workers.pop(slot, None)
                if worker is not None:
                    worker.close()
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                failures.append(exc)
                with self._cond:
                    self._stop = True
                    self._cond.notify_all()

        threads = [threading.Thread(target=serve, args=(slot,), daemon=True) for slot in self.slots]
        for t in threads:
            t.start()
        try:
            for t in threads:
                while t.is_alive():
                    t.join(timeout=0.2)  # (a join without a timeout would not see Ctrl-C)
        except BaseException:
            with self._cond:
                self._stop = True
                self._cond.notify_all()
            for worker in list(self._workers.values()):  # (a slot's thread may be adding one)
                worker.kill()
            raise
        finally:
            workers = list(self._workers.values())
            for worker in workers:  # all told to end first, then waited for: they exit side by side
                worker.end_input()
            for worker in workers:
                worker.close()
            self._workers.clear()
        if failures:
            raise failures[0]
