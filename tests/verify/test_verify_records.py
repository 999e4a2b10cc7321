"""Reports, manifest records and sanitizer summaries (CPU only)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from translate import manifest as mf
from translate.verify.harness import CaseResult, VerifyResult
from translate.verify.report import case_line, result_block, summary_table
from translate.verify.runner import poison_value, poisoned
from translate.verify.sanitize import parse_summary


def _result(ok=True):
    good = CaseResult("matmul_tiled", {"h": 33, "k": 70, "w": 45}, 1, "normal", True, [], 1e-6, 2e-7)
    bad = CaseResult("matmul_tiled", {"h": 1, "k": 1, "w": 1}, 0, "large", False, ["vs_numba", "repeat"], float("inf"),
                     float("inf"), ["vs_numba: out (run 1) vs Numba: 1 elements differ", "repeat: differ at 1"])
    r = VerifyResult("matmul_tiled", "launch_matmul_tiled", "generated_cuda/matmul_tiled.cu", "ab" * 32, ok,
                     [good] if ok else [good, bad], device={"device": "NVIDIA H200", "compute_capability": "9.0",
                                                            "driver": "13.0", "runtime": "13.0"},
                                                                date="2026-11-22T03:00:00Z")
    r.sanitizer = {"memcheck": "ok", "racecheck": "ok", "initcheck": "ok", "synccheck": "ok"}
    return r


def test_record_has_the_contract_fields():
    rec = _result().to_record()
    for key in ("ok", "device", "compute_capability", "driver", "runtime", "date", "cases", "max_abs_error",
                "max_rel_error", "sanitizer", "file_sha256"):
        assert key in rec
    assert rec["ok"] is True and rec["cases"] == 1 and rec["max_abs_error"] == pytest.approx(1e-6)
    json.dumps(_result(ok=False).to_record())  # infinities become strings: still valid JSON


def test_reports_name_the_failing_checks():
    r = _result(ok=False)
    text = result_block(r)
    assert "FAIL" in text and "vs_numba" in text and "h=1,k=1,w=1 seed=0 large" in text
    assert "repeat×1" in text
    assert "PASS" in summary_table([_result()]) and "FAIL" in summary_table([r])
    assert case_line(r.cases[0]).startswith("ok")


def test_poison_values_differ_between_runs():
    assert np.isnan(poison_value(np.float32, "a")) and np.isfinite(poison_value(np.float32, "b"))
    assert poison_value(np.int32, "a") != poison_value(np.int32, "b")
    assert poison_value(np.uint8, "a") != poison_value(np.uint8, "b")
    assert poisoned(np.zeros((2, 3), np.float64), "b").shape == (2, 3)


def _manifest(tmp_path: Path) -> Path:
    d = tmp_path / "generated_cuda"
    d.mkdir()
    (d / "a.cu").write_text("// a\n")
    (d / "b.cu").write_text("// b\n")
    def sha(name):
        return hashlib.sha256((d / name).read_bytes()).hexdigest()

    data = {"version": 1, "files": {
        "a.cu": {"registry_name": "a", "file_sha256": sha("a.cu"), "verification": None, "launchers": []},
        "b.cu": {"registry_name": "b", "file_sha256": sha("b.cu"), "verification": None, "launchers": []}}}
    (d / "manifest.json").write_text(json.dumps(data))
    return d


def test_records_are_written_atomically_and_keep_other_entries(tmp_path):
    folder = _manifest(tmp_path)
    sha = hashlib.sha256(b"// a\n").hexdigest()
    assert mf.record_verification(folder, "a.cu", {"ok": True, "file_sha256": sha})
    data = json.loads((folder / "manifest.json").read_text())
    assert data["files"]["a.cu"]["verification"] == {"ok": True, "file_sha256": sha}
    assert data["files"]["b.cu"]["verification"] is None and data["version"] == 1
    assert sorted(p.name for p in folder.iterdir()) == ["a.cu", "b.cu", "manifest.json"]  # no temp or lock files


def test_records_for_a_changed_file_are_refused(tmp_path):
    folder = _manifest(tmp_path)
    outcome = mf.apply_records(folder, [{"file": "a.cu", "record": {"ok": True, "file_sha256": "0" * 64}},
                                        {"file": "gone.cu", "record": {"ok": True}}])
    assert outcome["a.cu"].startswith("skipped") and outcome["gone.cu"].startswith("skipped")
    assert json.loads((folder / "manifest.json").read_text())["files"]["a.cu"]["verification"] is None


def test_records_for_a_folder_without_a_manifest_are_skipped(tmp_path):
    assert mf.apply_records(tmp_path / "missing", [{"file": "a.cu", "record": {"ok": True}}])["a.cu"].startswith(
        "skipped")
    assert not (tmp_path / "missing").exists()


def test_entry_lookup_by_registry_name():
    manifest = {"version": 1, "files": {"x.cu": {"registry_name": "matmul"}, "vector_add.cu": {"registry_name": None}}}
    assert mf.entry_for(manifest, "matmul")[0] == "x.cu"
    assert mf.entry_for(manifest, "vector_add")[0] == "vector_add.cu"
    assert mf.entry_for(manifest, "nope") is None


@pytest.mark.parametrize("tool, rc, output, expected", [
    ("memcheck", 0, "SANCASE-DONE ok\n========= ERROR SUMMARY: 0 errors\n", "ok"),
    ("racecheck", 0, "SANCASE-DONE ok\n========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n",
     "ok"),
    ("racecheck", 86, "========= Error: Race reported between Write access at k+0x10\nSANCASE-DONE ok\n"
                      "========= RACECHECK SUMMARY: 3 hazards displayed (3 errors, 0 warnings)\n", "3 error(s)"),
    ("memcheck", 86, "========= Invalid __global__ write of size 4 bytes\nSANCASE-DONE ok\n"
                     "========= ERROR SUMMARY: 1 error\n", "1 error(s)"),
    ("initcheck", 1, "Traceback ...\nImportError: x\n", "the sanitized run failed"),
])
def test_sanitizer_summaries(tool, rc, output, expected):
    assert parse_summary(tool, rc, output).startswith(expected)


def test_a_standalone_case_keeps_numpy_scalars_as_numbers(tmp_path, rng):
    """An attention case's scale is a np.float32: the standalone runner's case file must hold it (as a number)."""
    import json
    from types import SimpleNamespace

    import numpy as np

    from translate.verify.standalone import write_case

    x = rng.random(7, dtype=np.float32)
    scale = np.float32(rng.random())
    case = SimpleNamespace(args=(x, scale, np.int64(7), 3),
                           launch=SimpleNamespace(grid=(1, 1, 1), block=(32, 1, 1), shared_bytes=0))
    write_case(tmp_path / "case.npz", cu="k.cu", launcher={"symbol": "launch_k"}, case=case,
               expected={0: x * 2}, scale=None, rtol=1e-6, atol=0.0, outputs=(0,))
    with np.load(tmp_path / "case.npz") as z:
        meta = json.loads(str(z["meta"]))
        np.testing.assert_array_equal(z["arg0"], x)
    assert meta["scalars"] == {"1": float(scale), "2": 7, "3": 3}


def test_a_run_that_could_not_complete_keeps_an_earlier_verification(tmp_path):
    """A run that broke before any case failed (a full disk, a killed child) is no verdict on the file: it does not
    undo a verification of the same file; a failed comparison does, and so does any record for a new file."""
    folder = _manifest(tmp_path)
    sha = hashlib.sha256(b"// a\n").hexdigest()
    good = {"ok": True, "file_sha256": sha, "date": "2026-11-23T08:13:40Z", "error": None, "failed_cases": 0}
    broken = {"ok": False, "file_sha256": sha, "error": "OSError: [Errno 27] File too large", "failed_cases": 0}
    wrong = {"ok": False, "file_sha256": sha, "error": None, "failed_cases": 3}
    assert mf.apply_records(folder, [{"file": "a.cu", "record": good}]) == {"a.cu": "recorded"}
    outcome = mf.apply_records(folder, [{"file": "a.cu", "record": broken}])["a.cu"]
    assert outcome.startswith("kept the verification of 2026-11-23T08:13:40Z") and "File too large" in outcome
    assert json.loads((folder / "manifest.json").read_text())["files"]["a.cu"]["verification"] == good
    assert mf.apply_records(folder, [{"file": "a.cu", "record": wrong}]) == {"a.cu": "recorded"}
    assert json.loads((folder / "manifest.json").read_text())["files"]["a.cu"]["verification"] == wrong
    b_sha = hashlib.sha256(b"// b\n").hexdigest()
    assert mf.apply_records(folder, [{"file": "b.cu", "record": {**broken, "file_sha256": b_sha}}]) == {
        "b.cu": "recorded"}


def test_the_sanitized_process_says_how_long_each_kernel_took():
    from translate.verify.sanitize import item_seconds

    output = ("SANCASE a {'n': 1}: ran\nSANCASE-TIME a 1.250\nSANCASE b {'n': 1}: ran\nSANCASE-TIME b 0.5\n"
              "SANCASE-DONE ok\n========= ERROR SUMMARY: 0 errors\n")
    assert item_seconds(output) == {"a": 1.25, "b": 0.5}
    assert item_seconds("SANCASE-DONE ok\n") == {}


def test_the_sanitized_processs_cases_never_start_numbas_driver(monkeypatch):
    # histogram and the reductions size their grid by the device's multiprocessors. Asked through Numba inside the
    # process compute-sanitizer watches, after a candidate's runtime holds the context, the driver's start was
    # reported to memcheck as CUDA API errors (an H100, 2026-11-26): a false finding, and each kernel of the batch
    # run again alone to attribute it. The count comes from the parent instead.
    import numpy as np

    from numbakern import mode, registry
    from numbakern.kernels import collectives
    from translate.verify.cases import smallest_sizes

    def no_driver():
        raise AssertionError("a case asked Numba's driver")

    specs = [registry.get(name) for name in ("histogram", "reduce_sum", "reduce_max_rows")]  # (loaded as usual)
    monkeypatch.setattr(collectives, "_device_multiprocessors", no_driver)
    monkeypatch.setattr(mode, "in_simulator", lambda: False)
    monkeypatch.setenv(collectives.MULTIPROCESSORS_ENV, "132")
    asked = []
    for spec in specs:
        for si, size in enumerate(smallest_sizes(spec)):
            case = spec.make_case(size, np.random.default_rng([0, si]), "normal")
            asked.append(case.launch.grid)
    assert asked and collectives.multiprocessors() == 132
    monkeypatch.setenv(collectives.MULTIPROCESSORS_ENV, "many")
    with pytest.raises(ValueError, match="NUMBAKERN_MULTIPROCESSORS must be a positive whole number.*'many'"):
        collectives.multiprocessors()


def test_the_sanitizer_passes_the_multiprocessors_only_from_a_real_device(monkeypatch):
    from numbakern import mode
    from numbakern.kernels import collectives
    from translate.verify import sanitize

    monkeypatch.setattr(mode, "in_simulator", lambda: True)
    assert sanitize._device_facts() == {}
    monkeypatch.setattr(mode, "in_simulator", lambda: False)
    monkeypatch.delenv(collectives.MULTIPROCESSORS_ENV, raising=False)
    monkeypatch.setattr(collectives, "_device_multiprocessors", lambda: 114)
    assert sanitize._device_facts() == {"NUMBAKERN_MULTIPROCESSORS": "114"}


def test_a_part_of_a_verification_makes_the_same_cases_as_the_whole_run():
    from numbakern.registry import get
    from translate.verify.cases import cases_for

    spec = get("vector_add")
    whole = {(spec.verify_sizes.index(size), seed, dist): case for size, seed, dist, case in cases_for(spec)}
    wanted = [(1, 2, spec.distributions[-1]), (3, 0, spec.distributions[0])]
    part = list(cases_for(spec, only=wanted))
    assert [(spec.verify_sizes.index(size), seed, dist) for size, seed, dist, _ in part] == sorted(wanted)
    for size, seed, dist, case in part:
        for a, b in zip(case.args, whole[(spec.verify_sizes.index(size), seed, dist)].args):
            np.testing.assert_array_equal(a, b)  # the same inputs as in the whole run, not re-drawn
