"""Worker processes over (fake) GPUs: each with its GPU alone in CUDA_VISIBLE_DEVICES, never more at once on a
GPU than its slots, a dead worker's job answered with an error and the worker started again; and the worker's
jobs and answers (translate.verify.worker), CPU only."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import pytest

from numbakern.gpus import fake_list
from translate.verify import protocol, worker
from translate.verify.harness import Candidate, CaseResult, VerifyResult
from translate.verify.pool import Pool, slots_for, worker_env


def run_whoami(gpus, per_gpu, jobs=12, sleep=0.2, argv=protocol.ARGV):
    slots = slots_for(gpus, {g.index: per_gpu for g in gpus})
    answers = []
    pool = Pool(argv, slots)
    pool.run(list(range(jobs)), lambda job, slot: {"kind": "whoami", "sleep": sleep},
             lambda job, slot, answer, seconds: answers.append((job, slot, answer)))
    return slots, answers


@pytest.mark.parametrize("n_gpus, per_gpu", [(1, 1), (1, 3), (2, 2), (8, 1)])
def test_each_worker_sees_only_its_own_gpu(n_gpus, per_gpu):
    gpus = fake_list(str(n_gpus))
    slots, answers = run_whoami(gpus, per_gpu, jobs=max(6, 2 * len(gpus) * per_gpu))
    assert sorted(job for job, _, _ in answers) == list(range(len(answers)))  # every job answered once
    pids_of_gpu: dict[str, set[int]] = {}
    for _, slot, answer in answers:
        assert answer["cuda_visible_devices"] == slot.gpu.token, answer
        pids_of_gpu.setdefault(slot.gpu.token, set()).add(answer["pid"])
    # one long-lived process per slot, and every GPU used
    assert sorted(pids_of_gpu) == sorted(g.token for g in gpus)
    assert all(len(pids) == per_gpu for pids in pids_of_gpu.values()), pids_of_gpu
    # the math libraries share the cores between the workers
    cores = len(os.sched_getaffinity(0))
    assert {answer["threads"] for _, _, answer in answers} == {str(max(1, cores // len(slots)))}


def test_a_workers_environment():
    env = worker_env(fake_list('[{"name": "x", "token": "GPU-77"}]')[0], 3, {"EXTRA": "1"},
                     environ={"PATH": "/bin", "CUDA_VISIBLE_DEVICES": "0,1", "PYTHONPATH": "/mine"})
    assert env["CUDA_VISIBLE_DEVICES"] == "GPU-77" and env["OMP_NUM_THREADS"] == env["OPENBLAS_NUM_THREADS"] == "3"
    assert env["PYTHONPATH"].endswith(os.pathsep + "/mine") and env["EXTRA"] == "1" and env["PATH"] == "/bin"


def test_a_gpu_never_runs_more_jobs_at_once_than_its_slots():
    gpus = fake_list("2")
    _, answers = run_whoami(gpus, per_gpu=2, jobs=24, sleep=0.3)
    most = []
    for gpu in gpus:
        spans = sorted((a["started"], a["ended"]) for _, slot, a in answers if slot.gpu == gpu)
        most.append(max(sum(s <= t < e for s, e in spans) for t, _ in spans))
    assert max(most) == 2 and all(n <= 2 for n in most), most  # both slots of a GPU busy together, never three


DYING_WORKER = r"""
import json, os, sys
for line in sys.stdin:
    job = json.loads(line)
    if job.get("die"):
        os._exit(3)
    print(json.dumps({"pid": os.getpid(), "job": job["n"]}), flush=True)
"""


def test_a_worker_that_dies_answers_its_job_with_an_error_and_is_started_again():
    gpus = fake_list("1")
    answers = {}
    pool = Pool([sys.executable, "-c", DYING_WORKER], slots_for(gpus, {0: 1}))
    pool.run(list(range(4)), lambda n, slot: {"n": n, "die": n == 1},
             lambda n, slot, answer, seconds: answers.__setitem__(n, answer))
    assert "exited (status 3)" in answers[1]["error"]
    assert [answers[n]["job"] for n in (0, 2, 3)] == [0, 2, 3]
    assert answers[0]["pid"] != answers[2]["pid"] == answers[3]["pid"]


def test_jobs_wait_until_ready_and_skipped_ones_are_reported():
    gpus = fake_list("1")
    gate = threading.Event()
    order, skipped = [], []
    pool = Pool(protocol.ARGV, slots_for(gpus, {0: 1}))

    def ready(job):
        if job == "never":
            return None
        return gate.is_set() or job != "late"

    def done(job, slot, answer, seconds):
        order.append(job)
        if job == "early":
            gate.set()
            pool.wake()

    pool.run(["late", "early", "never"], lambda job, slot: {"kind": "whoami"}, done, ready=ready,
             skipped=skipped.append)
    assert order == ["early", "late"] and skipped == ["never"]


def test_a_job_the_worker_cannot_do_is_answered_not_fatal():
    assert "unknown job kind" in protocol.handle({"kind": "dance"})["error"]
    answer = protocol.handle({"kind": "cases", "spec": "no_such_kernel", "candidate": {}})
    assert "error" in answer and "traceback" in answer


def test_a_result_crosses_the_pipe_unchanged(tmp_path):
    case = CaseResult("k", {"n": 33}, 1, "normal", False, ["vs_numba"], float("inf"), float("nan"), ["vs_numba: x"],
                      [((1, 2), 3.0, 4.0)])
    result = VerifyResult("k", "launch_k", "k.cu", "ab" * 32, False, [case], device={"device": "H100"},
                          date="2026-11-26T00:00:00Z", sanitizer={"memcheck": "ok"}, seconds={"cases": 1.5})
    back = worker.result_from_json(json.loads(json.dumps(worker.result_to_json(result))))
    assert back.cases[0].first_mismatches == [((1, 2), 3.0, 4.0)]
    assert repr(back) == repr(result)  # (NaN != NaN: compare what they print)


def test_a_cases_job_runs_verify_on_just_its_cases(monkeypatch, tmp_path):
    from translate.verify import harness

    seen = {}

    def fake_verify(spec, cand, *, seeds, prebuilt, only):
        seen.update(spec=spec.name, cu=cand.cu, seeds=seeds, prebuilt=prebuilt, only=only, flags=cand.nvcc_flags)
        return VerifyResult(spec.name, "launch", str(cand.cu), "00", True)

    monkeypatch.setattr(harness, "verify", fake_verify)
    cu = tmp_path / "vector_add.cu"
    cu.write_text("// c\n")
    message = {"kind": "cases", "spec": "vector_add", "so": "/x.so", "seeds": [0, 1], "units": [[1, 0, "normal"]],
               "candidate": worker.candidate_message(Candidate(cu, {"symbol": "launch"}, "vector_add", ("-O1",)))}
    answer = protocol.handle(json.loads(json.dumps(message)))
    assert answer["result"]["ok"] and answer["seconds"] >= 0
    assert seen == {"spec": "vector_add", "cu": Path(cu).resolve(), "seeds": (0, 1), "prebuilt": "/x.so",
                    "only": [(1, 0, "normal")], "flags": ("-O1",)}


EXITING_WORKER = r"""
import json, os, sys, time
for line in sys.stdin:
    job = json.loads(line)
    time.sleep(job["sleep"])
    print(json.dumps({"pid": os.getpid(), "ended": time.time()}), flush=True)
time.sleep(0.3)  # a worker's exit takes time (its CUDA context): the others' exits must not wait for this one
with open(os.environ["EXITS"], "a") as f:
    f.write(f"{os.getpid()} {time.time()}\n")
"""


def test_a_worker_ends_as_soon_as_its_slot_has_no_more_jobs(tmp_path, monkeypatch):
    exits = tmp_path / "exits"
    monkeypatch.setenv("EXITS", str(exits))
    gpus = fake_list("4")
    answers = {}
    pool = Pool([sys.executable, "-c", EXITING_WORKER], slots_for(gpus, {g.index: 1 for g in gpus}))
    pool.run([2.0, 0.1, 0.1, 0.1], lambda s, slot: {"sleep": s}, lambda s, slot, a, sec: answers.__setitem__(
        a["pid"], a["ended"]))
    ended = {int(p): float(t) for p, t in (line.split() for line in exits.read_text().splitlines())}
    long_job_end = max(answers.values())
    # the three quick slots' workers were gone while the long job still ran
    assert sum(t < long_job_end for t in ended.values()) == 3, (ended, long_job_end)
    assert len(ended) == 4  # and the last one too, before run returned
