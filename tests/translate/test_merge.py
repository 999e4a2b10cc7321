"""translate --merge DIR...: other hosts' verification records merged into a folder's manifest, for the same file
bytes only; conflicts and damaged inputs refused one line each; merges at the same time lose nothing."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import shutil
import sys
from pathlib import Path

import pytest

from tests import forked
from translate import manifest
from translate.merge import merge

FILES = ("a.cu", "b.cu", "c.cu")


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_folder(path: Path, texts=None) -> Path:
    path.mkdir(parents=True)
    files = {}
    for name in FILES:
        (path / name).write_text((texts or {}).get(name, f"// {name}\n"))
        files[name] = {"registry_name": name[:-3], "file_sha256": sha(path / name), "verification": None,
                       "launchers": []}
    (path / "manifest.json").write_text(json.dumps({"version": 1, "files": files}))
    return path


def record(folder: Path, name: str, ok: bool = True, date: str = "2026-11-26T10:00:00Z", **extra) -> dict:
    rec = {"ok": ok, "device": "NVIDIA H100 80GB HBM3", "date": date, "cases": 48, "failed_cases": 0 if ok else 3,
           "file_sha256": sha(folder / name), "error": None, "seconds": {"cases": 12.5}, **extra}
    manifest.set_verification(folder, name, rec)
    return rec


def verification(folder: Path, name: str):
    return json.loads((folder / "manifest.json").read_text())["files"][name]["verification"]


def shard(tmp_path: Path, label: str, records: dict, texts=None) -> Path:
    """Another host's copy of the folder, with its records."""
    folder = make_folder(tmp_path / label, texts)
    for name, kwargs in records.items():
        record(folder, name, **kwargs)
    return folder


def test_records_of_the_same_bytes_are_merged_and_nothing_else_changes(tmp_path):
    mine = make_folder(tmp_path / "gen")
    one = shard(tmp_path, "shard1", {"a.cu": {}})
    two = shard(tmp_path, "shard2", {"b.cu": {"ok": False}})
    before = json.loads((mine / "manifest.json").read_text())
    outcomes = merge(mine, [one, two])
    assert [(o.file, o.merged, o.refused) for o in outcomes] == [("a.cu", True, False), ("b.cu", True, False)]
    assert verification(mine, "a.cu") == verification(one, "a.cu")
    assert verification(mine, "b.cu")["ok"] is False and verification(mine, "c.cu") is None
    after = json.loads((mine / "manifest.json").read_text())
    for name in FILES:  # only the verification (and the entry's date) changed
        strip = {"verification", "updated"}
        assert {k: v for k, v in after["files"][name].items() if k not in strip} == \
            {k: v for k, v in before["files"][name].items() if k not in strip}
    again = merge(mine, [one, two])  # merging twice changes nothing
    assert not any(o.merged or o.refused for o in again) and "same record is here already" in again[0].what


def test_a_record_of_other_bytes_is_refused(tmp_path):
    mine = make_folder(tmp_path / "gen")
    other = shard(tmp_path, "shard1", {"a.cu": {}, "b.cu": {}}, texts={"a.cu": "// another translation\n"})
    outcomes = {o.file: o for o in merge(mine, [other])}
    assert outcomes["a.cu"].refused and "other bytes" in outcomes["a.cu"].what
    assert outcomes["b.cu"].merged
    assert verification(mine, "a.cu") is None
    assert outcomes["a.cu"].line().startswith(f"refused: {other}: a.cu: its record is of other bytes (")


def test_contradicting_records_are_refused(tmp_path):
    mine = make_folder(tmp_path / "gen")
    passes = shard(tmp_path, "shard1", {"a.cu": {}})
    fails = shard(tmp_path, "shard2", {"a.cu": {"ok": False}})
    outcomes = merge(mine, [passes, fails])
    assert [o.refused for o in outcomes] == [True, True] and "contradict" in outcomes[0].what
    assert "PASS" in outcomes[0].what and "FAIL" in outcomes[0].what
    assert verification(mine, "a.cu") is None  # nothing written
    # and against the record the folder has already
    record(mine, "b.cu", ok=True, date="2026-11-20T00:00:00Z")
    later_fail = shard(tmp_path, "shard3", {"b.cu": {"ok": False}})
    (outcome,) = merge(mine, [later_fail])
    assert outcome.refused and "this folder: PASS" in outcome.what and verification(mine, "b.cu")["ok"] is True


def test_a_run_that_could_not_complete_contradicts_nothing(tmp_path):
    mine = make_folder(tmp_path / "gen")
    record(mine, "a.cu", ok=True, date="2026-11-20T00:00:00Z")
    broken = shard(tmp_path, "shard1", {"a.cu": {"ok": False, "error": "no CUDA device", "failed_cases": 0}})
    (outcome,) = merge(mine, [broken])
    assert not outcome.refused and not outcome.merged and "kept this folder's PASS" in outcome.what
    assert verification(mine, "a.cu")["date"] == "2026-11-20T00:00:00Z"
    fresh = make_folder(tmp_path / "fresh")  # with nothing better known, the failed run is recorded
    (outcome,) = merge(fresh, [broken])
    assert outcome.merged and verification(fresh, "a.cu")["error"] == "no CUDA device"


def test_the_newest_of_agreeing_records_is_kept(tmp_path):
    mine = make_folder(tmp_path / "gen")
    old = shard(tmp_path, "old", {"a.cu": {"date": "2026-11-01T00:00:00Z"}})
    new = shard(tmp_path, "new", {"a.cu": {"date": "2026-11-25T00:00:00Z"}})
    outcomes = merge(mine, [new, old])
    assert verification(mine, "a.cu")["date"] == "2026-11-25T00:00:00Z"
    assert [o.merged for o in outcomes] == [False, True] or [o.merged for o in outcomes] == [True, False]
    record(mine, "b.cu", date="2026-11-30T00:00:00Z")  # newer here than what comes in
    (outcome,) = merge(mine, [shard(tmp_path, "older", {"b.cu": {"date": "2026-11-02T00:00:00Z"}})])
    assert not outcome.merged and "newer" in outcome.what


@pytest.mark.parametrize("damage, message", [
    ("", "is empty"), ("{not json", "is not valid JSON"), ('{"version": 1, "files": []}', "not an object"),
    (None, "does not exist"),
])
def test_a_damaged_input_is_refused_and_the_others_still_merge(tmp_path, damage, message):
    mine = make_folder(tmp_path / "gen")
    good = shard(tmp_path, "good", {"a.cu": {}})
    bad = tmp_path / "bad"
    bad.mkdir()
    if damage is not None:
        (bad / "manifest.json").write_text(damage)
    outcomes = merge(mine, [bad, good])
    assert outcomes[0].refused and outcomes[0].file == "" and message in outcomes[0].what
    assert outcomes[1].merged and verification(mine, "a.cu")["ok"] is True
    assert (bad / "manifest.json").exists() == (damage is not None)  # an input is never rewritten


def test_a_manifest_file_may_be_named_instead_of_its_folder(tmp_path):
    mine = make_folder(tmp_path / "gen")
    good = shard(tmp_path, "good", {"c.cu": {}})
    assert merge(mine, [good / "manifest.json"])[0].merged


def test_files_this_folder_does_not_have_are_skipped(tmp_path):
    mine = make_folder(tmp_path / "gen")
    other = shard(tmp_path, "shard1", {"a.cu": {}, "b.cu": {}})
    data = json.loads((mine / "manifest.json").read_text())
    del data["files"]["a.cu"]
    (mine / "manifest.json").write_text(json.dumps(data))
    (mine / "b.cu").unlink()
    outcomes = {o.file: o for o in merge(mine, [other])}
    assert "not in" in outcomes["a.cu"].what and "is missing" in outcomes["b.cu"].what
    assert not any(o.refused or o.merged for o in outcomes.values())


def _merge_one(args):
    mine, source = args
    return [o.merged for o in merge(mine, [source])]


def test_merges_at_the_same_time_lose_nothing(tmp_path):
    names = [f"k{i}.cu" for i in range(8)]
    mine = tmp_path / "gen"
    mine.mkdir()
    entries = {}
    for name in names:
        (mine / name).write_text(f"// {name}\n")
        entries[name] = {"file_sha256": sha(mine / name), "verification": None, "launchers": []}
    (mine / "manifest.json").write_text(json.dumps({"version": 1, "files": entries}))
    sources = []
    for i, name in enumerate(names):  # shard i verified file i
        source = tmp_path / f"shard{i}"
        shutil.copytree(mine, source)
        record(source, name, date=f"2026-11-26T10:00:0{i}Z")
        sources.append(source)
    with multiprocessing.get_context("spawn").Pool(8) as workers:
        assert workers.map(_merge_one, [(mine, s) for s in sources]) == [[True]] * 8
    for i, name in enumerate(names):
        assert verification(mine, name)["date"] == f"2026-11-26T10:00:0{i}Z"
    assert not [p for p in os.listdir(mine) if p.startswith(manifest.TEMP_PREFIX)]


def translate_merge(cwd: Path, *args):
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    return forked.run([sys.executable, "-m", "translate", "--merge", *map(str, args)], cwd=cwd, env=env)


def test_the_command_prints_a_line_each_and_fails_on_a_conflict(tmp_path):
    mine = make_folder(tmp_path / "gen")
    good = shard(tmp_path, "good", {"a.cu": {}})
    other = shard(tmp_path, "other", {"b.cu": {}}, texts={"b.cu": "// not ours\n"})
    done = translate_merge(tmp_path, good, "--out", "gen")
    assert done.returncode == 0, done.stderr
    assert f"merged: {good}: a.cu: PASS on NVIDIA H100 80GB HBM3" in done.stdout
    assert "translate --merge -> gen/: 1 merged, 0 kept, 0 refused" in done.stdout
    done = translate_merge(tmp_path, other, good, "--out", "gen", "--json")
    assert done.returncode == 1
    document = json.loads(done.stdout)
    assert document["summary"] == {"merged": 0, "kept": 1, "refused": 1}
    assert [o["file"] for o in document["outcomes"] if o["refused"]] == ["b.cu"]
    done = translate_merge(tmp_path, other, "--out", "gen")
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "refused:" in done.stderr
    assert translate_merge(tmp_path, tmp_path / "nowhere", "--out", "gen").returncode == 2
    assert verification(mine, "b.cu") is None
