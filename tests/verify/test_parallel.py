"""A verification spread over (fake) GPUs, CPU only: the parent's plan, its jobs on worker processes that stand in
for the GPU ones (they answer as translate.verify.worker does, from the job alone), the parts of a kernel put back
together in the order of a whole run, the streamed output naming the GPUs, and the records in the manifest."""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import sys
import textwrap
from argparse import Namespace
from pathlib import Path

import pytest

from numbakern.gpus import fake_list
from numbakern.registry import get
from translate.verify import cli as verify_cli
from translate.verify import parallel, schedule
from translate.verify.sanitize import TOOLS

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ("vector_add", "transpose", "conv2d_5x5")

# answers like translate.verify.worker, without a GPU: every case passes but the one named in FAIL_CASE; each case
# says which GPU (CUDA_VISIBLE_DEVICES) ran it
FAKE_WORKER = textwrap.dedent("""
    import hashlib, json, os, sys
    meta = json.load(open(os.environ["FAKE_META"]))
    for line in sys.stdin:
        job = json.loads(line)
        gpu = os.environ["CUDA_VISIBLE_DEVICES"]
        if job["kind"] == "sanitize":
            names = [item["candidate"]["label"] for item in job["items"]]
            print(json.dumps({"status": {n: "ok" for n in names}, "item_seconds": {n: 0.25 for n in names},
                              "seconds": 1.0}), flush=True)
            continue
        name, cu = job["candidate"]["label"], job["candidate"]["cu"]
        sizes, dists = meta[name]
        units = job["units"] or [[si, seed, d] for si in range(len(sizes)) for seed in job["seeds"] for d in dists]
        cases = []
        for si, seed, dist in units:
            bad = [si, seed, dist] == meta.get("FAIL_CASE")
            cases.append({"kernel": name, "size": sizes[si], "seed": seed, "dist": dist, "ok": not bad,
                          "failed": ["vs_numba"] if bad else [], "max_abs_error": 0.0, "max_rel_error": 0.0,
                          "messages": [f"ran on {gpu}"], "first_mismatches": []})
        result = {"kernel": name, "candidate": "launch", "cu": cu, "ok": True, "cases": cases, "error": "",
                  "stage": "", "build_log": "", "sanitizer": None, "device": {"device": f"fake {gpu}"},
                  "date": "2026-11-26T00:00:00Z", "seconds": None,
                  "file_sha256": hashlib.sha256(open(cu, "rb").read()).hexdigest()}
        print(json.dumps({"result": result, "seconds": 3.0 + len(units) * 0.01}), flush=True)
""")


@pytest.fixture
def folder(tmp_path):
    """Three of the library's kernels' files and entries, in a folder of their own."""
    out = tmp_path / "gen"
    out.mkdir()
    data = json.loads((ROOT / "generated_cuda" / "manifest.json").read_text())
    files = {f"{k}.cu": data["files"][f"{k}.cu"] for k in KERNELS}
    for name in files:
        shutil.copy(ROOT / "generated_cuda" / name, out / name)
    (out / "manifest.json").write_text(json.dumps({"version": 1, "files": files}))
    return out


@pytest.fixture
def fake_worker(tmp_path, monkeypatch):
    meta = {k: ([dict(s) for s in get(k).verify_sizes], list(get(k).distributions)) for k in KERNELS}
    meta["FAIL_CASE"] = [len(get("conv2d_5x5").verify_sizes) - 1, 2, "large"]
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    (tmp_path / "fake_worker.py").write_text(FAKE_WORKER)
    monkeypatch.setenv("FAKE_META", str(tmp_path / "meta.json"))
    return [sys.executable, str(tmp_path / "fake_worker.py")]


def found_in(folder):
    out = {}
    for k in KERNELS:
        file_name, cand = verify_cli.candidate_for(get(k), folder)
        out[k] = (get(k), file_name, cand)
    return out


def test_the_plan_spreads_over_every_gpu_with_several_workers_each():
    specs = [get(k) for k in KERNELS]
    plan = parallel.make_plan(specs, {}, gpus=fake_list("2"), seeds=3, tools=TOOLS, cpus=32)
    assert [(s.gpu.index, s.number) for s in plan.slots[:4]] == [(0, 0), (1, 0), (0, 1), (1, 1)]
    assert len(plan.slots) == 32 // schedule.CORES_PER_WORKER == 16
    assert "2 GPUs × 8 worker processes" in plan.describe() and "16 at once" in plan.describe()
    one = parallel.make_plan(specs, {}, gpus=fake_list("1"), seeds=3, tools=TOOLS, cpus=8)
    assert len(one.slots) == 4 and "8 CPU cores for 1 GPU" in one.describe()


def test_a_spread_run_puts_each_kernel_together_and_records_it(folder, fake_worker):
    out = io.StringIO()
    results, recorded = parallel.verify_on_gpus(found_in(folder), directory=folder, gpus=fake_list("2"), seeds=3,
                                                sanitize=True, jobs_per_gpu=2, out=out, worker_argv=fake_worker)
    text = out.getvalue()
    assert sorted(results) == sorted(KERNELS)
    for k in KERNELS:
        spec, r = get(k), results[k]
        # every case once, in the order of a whole run (size, seed, distribution), whichever part ran it
        expected = [(dict(size), seed, dist) for size in spec.verify_sizes for seed in range(3)
                    for dist in spec.distributions]
        assert [(c.size, c.seed, c.dist) for c in r.cases] == expected
        assert {c.messages[0] for c in r.cases} <= {"ran on 0", "ran on 1"}
        assert r.sanitizer == {tool: "ok" for tool in TOOLS}
        assert f"== {k} <- " in text
    conv = results["conv2d_5x5"]
    assert not conv.ok and conv.n_failed == 1 and results["vector_add"].ok and results["transpose"].ok
    # the work went to both GPUs, and conv2d_5x5, the largest, was cut into parts
    assert {c.messages[0] for r in results.values() for c in r.cases} == {"ran on 0", "ran on 1"}
    plan = parallel.make_plan([get(k) for k in KERNELS], {}, gpus=fake_list("2"), seeds=3, tools=TOOLS,
                              jobs_per_gpu=2)
    assert max(j.parts for j in plan.jobs if j.kernels == ("conv2d_5x5",)) > 1
    assert "verification on GPU 0 (fake GPU), GPU 1 (fake GPU)" in text and "2 GPUs × 2 worker processes" in text
    assert "compute-sanitizer racecheck over" in text and "on GPU" in text
    assert re.search(r"^timeline: \d+ s wall, \d+ jobs, slots busy \d+% of 4 x", text, re.M), text[-500:]
    assert "sanitizer still to run" in text or "sanitizer ok" in text
    # the records, with the seconds the next run plans with, each written as its kernel finished
    assert recorded == {f"{k}.cu": "recorded" for k in KERNELS}
    data = json.loads((folder / "manifest.json").read_text())
    for k in KERNELS:
        record = data["files"][f"{k}.cu"]["verification"]
        assert record["file_sha256"] == hashlib.sha256((folder / f"{k}.cu").read_bytes()).hexdigest()
        assert record["seconds"]["cases"] >= 0 and record["seconds"]["sanitize"] == {t: 0.25 for t in TOOLS}
        assert record["cases"] == len(results[k].cases) and record["device"] == results[k].device["device"]
    assert data["files"]["conv2d_5x5.cu"]["verification"]["ok"] is False


def test_a_part_whose_worker_died_fails_its_kernel(folder, tmp_path):
    dying = tmp_path / "dying.py"
    dying.write_text("import sys, os\nfor line in sys.stdin:\n    os._exit(9)\n")
    out = io.StringIO()
    results, _ = parallel.verify_on_gpus(found_in(folder), directory=folder, gpus=fake_list("1"), seeds=3,
                                         jobs_per_gpu=1, record=False, out=out,
                                         worker_argv=[sys.executable, str(dying)])
    assert all(not r.ok and "exited (status 9)" in r.error for r in results.values())
    assert all(r.file_sha256 for r in results.values())  # a record of the very file, not of any bytes
    before = json.loads((folder / "manifest.json").read_text())
    assert before["files"]["vector_add.cu"]["verification"]["ok"] is True  # record=False: nothing written


def test_verify_kernels_spreads_when_given_gpus_and_writes_the_records_out(folder, fake_worker, tmp_path,
                                                                          monkeypatch):
    monkeypatch.setattr("translate.verify.protocol.ARGV", tuple(fake_worker))
    out = io.StringIO()
    results = verify_cli.verify_kernels(specs=[get(k) for k in KERNELS], directory=folder, gpus=fake_list("2"),
                                        record=False, records_out=tmp_path / "records.json", out=out)
    assert [r.kernel for r in results] == list(KERNELS)
    records = json.loads((tmp_path / "records.json").read_text())
    assert [r["file"] for r in records] == [f"{k}.cu" for k in KERNELS]
    table = out.getvalue().split("kernel                   verdict")[1].splitlines()[2:2 + len(KERNELS)]
    assert [row.split()[:2] for row in table] == [["vector_add", "PASS"], ["transpose", "PASS"],
                                                  ["conv2d_5x5", "FAIL"]]


@pytest.mark.parametrize("gpus, per_gpu, message", [("3", "auto", "--gpus 3: only 2 GPUs are visible"),
                                                    ("all", "many", "--jobs-per-gpu must be")])
def test_bad_gpu_options_are_one_line_and_status_2(gpus, per_gpu, message, monkeypatch, capsys, folder):
    monkeypatch.setenv("NUMBAKERN_FAKE_GPUS", "2")
    monkeypatch.setattr(verify_cli, "preflight", lambda: "")
    args = Namespace(gpus=gpus, jobs_per_gpu=per_gpu, seeds=3, sanitize=False, record=False, records_out=None,
                     verify_log=None, verbose_cases=False, shard=None)
    assert verify_cli.run(args, ["vector_add"], directory=folder) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_verify_all_with_a_shard_verifies_that_share_of_the_library(monkeypatch):
    from numbakern.registry import all_specs
    from translate.verify import shards

    chosen = []
    monkeypatch.setattr(verify_cli, "preflight", lambda: "")
    monkeypatch.setattr(verify_cli, "verify_kernels", lambda specs, **options: chosen.append(specs) or [])
    args = Namespace(gpus="all", jobs_per_gpu="auto", seeds=3, sanitize=True, record=False, records_out=None,
                     verify_log=None, verbose_cases=False, shard=None)
    everyone = all_specs()
    for i in (1, 2, 3):
        verify_cli.run(Namespace(**{**vars(args), "shard": f"{i}/3"}), None, directory=ROOT / "generated_cuda")
    names = [[s.name for s in specs] for specs in chosen]
    assert sorted(sum(names, [])) == sorted(s.name for s in everyone) and all(names)
    # the split depends on the kernels and the manifest alone (shard_specs takes no option of the run)
    alone = verify_cli.shard_specs(everyone, shards.parse("2/3"), ROOT / "generated_cuda")
    assert [s.name for s in alone] == names[1]


# answers as above, and says which library each job was given
ECHO_SO = FAKE_WORKER.replace('"messages": [f"ran on {gpu}"]', '"messages": [f"ran on {gpu}", str(job["so"])]').replace(
    'names = [item["candidate"]["label"] for item in job["items"]]',
    'names = [item["candidate"]["label"] for item in job["items"]]\n'
    '        assert all(item["so"] and os.path.exists(item["so"]) for item in job["items"]), job')


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="builds the candidates with nvcc (no GPU needed)")
def test_the_candidates_are_built_here_for_the_gpus_arch_and_a_job_waits_for_its_own(folder, fake_worker, tmp_path):
    Path(fake_worker[1]).write_text(ECHO_SO)
    (folder / "transpose.cu").write_text("this is not CUDA C\n")  # its build fails: its cases still run, and say so
    found = {k: v for k, v in found_in(folder).items() if k != "conv2d_5x5"}
    gpus = fake_list('[{"name": "H100", "compute_capability": "9.0"}, {"name": "H100", "compute_capability": "9.0"}]')
    out = io.StringIO()
    results, _ = parallel.verify_on_gpus(found, directory=folder, gpus=gpus, seeds=1, sanitize=True,
                                         jobs_per_gpu=1, record=False, out=out, worker_argv=fake_worker)
    given = {c.messages[1] for c in results["vector_add"].cases}
    assert len(given) == 1 and given.pop().endswith("-sm_90/vector_add.so")  # built here, for sm_90
    assert {c.messages[1] for c in results["transpose"].cases} == {"None"}  # no library: the worker builds, reports
    # the sanitizer ran on what built, and only on that
    assert results["vector_add"].sanitizer == {tool: "ok" for tool in TOOLS}
    assert results["transpose"].sanitizer is None
    assert "over 1 kernel on GPU" in out.getvalue()


def test_the_timeline_names_the_jobs_that_set_the_wall_time():
    spans = [parallel.Span("cases of a", "GPU 0#0", 0.0, 10.0), parallel.Span("memcheck over 3", "GPU 1#0", 2.0, 50.0),
             parallel.Span("cases of b", "GPU 0#1", 1.0, 30.0)]
    line = parallel.timeline(spans, slots=2, wall=50.0, last=2)
    # (10 + 48 + 29) s of jobs over 2 slots x 50 s
    assert line.startswith("timeline: 50 s wall, 3 jobs, slots busy 87% of 2 x 50 s; first job done at 10 s")
    assert line.endswith("last to finish: memcheck over 3 [GPU 1#0] 2-50 s; cases of b [GPU 0#1] 1-30 s")


def test_a_batch_shares_its_time_outside_the_kernels_cases_among_them():
    # 12 kernels' cases took 43 s of a 77 s batch: each is charged its own seconds and a twelfth of the other 34
    items = {f"k{i}": 43.0 / 12 for i in range(12)}
    shares = parallel.batch_shares(items, 77.0)
    assert set(shares) == set(items)
    assert all(s == pytest.approx(43.0 / 12 + 34.0 / 12) for s in shares.values())
    assert sum(shares.values()) == pytest.approx(77.0)
    uneven = parallel.batch_shares({"first": 3.75, "next": 0.01}, 6.0)
    assert uneven == {"first": pytest.approx(3.75 + 1.12), "next": pytest.approx(0.01 + 1.12)}
    # a batch the clock saw end before its items add up (clocks of two processes): no negative share
    assert parallel.batch_shares({"a": 2.0, "b": 2.0}, 3.0) == {"a": 2.0, "b": 2.0}
    assert parallel.batch_shares({}, 5.0) == {}
