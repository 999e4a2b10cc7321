"""``translate --merge DIR...``: the GPU verification records of other folders' manifests -- the shards of a CI
matrix or of a cluster's job array, each verified on its own host -- merged into this folder's manifest.

A record is merged only onto the very file it verified: the record's ``file_sha256`` must be the bytes of this
folder's file (and of its entry). Everything else is refused, one line each, and nothing of it is written:

- a record of other bytes than this folder's file (the other host translated something else);
- records that contradict each other for the same bytes: one passes and another fails, among the inputs or
  against the record this folder already has (a flaky kernel, or hosts that differ: a person must look). A record
  of a run that could not complete (an error before any case failed) contradicts nothing: a verification of the
  same bytes is kept over it;
- an input whose manifest is missing or damaged (the rest are still merged).

Among agreeing records of the same bytes the newest (``date``) is kept. The whole merge is one read-modify-write of
this folder's manifest under its lock (``manifest.change``), so merges and verifications into the folder at the same
time never lose each other's records.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import manifest, trust


@dataclass(frozen=True)
class Outcome:
    source: str       # the input as given (a folder, or its manifest.json)
    file: str         # the file name ("" for a problem with the whole input)
    what: str         # what happened, in words
    refused: bool     # a conflict or an unusable input: the command fails
    merged: bool = False

    def line(self) -> str:
        where = f"{self.source}: {self.file}" if self.file else self.source
        return f"{'refused' if self.refused else 'merged' if self.merged else 'kept'}: {where}: {self.what}"


def read_source(path: str | os.PathLike) -> dict:
    """An input's manifest: ``path`` is a folder with a ``manifest.json`` or the file itself; ``ManifestError`` (one
    line) when there is none or it is damaged."""
    folder = os.path.dirname(path) if os.path.basename(os.fspath(path)) == manifest.MANIFEST and \
        not os.path.isdir(path) else path
    if not os.path.exists(manifest.manifest_path(folder)):
        raise manifest.ManifestError(f"{manifest.manifest_path(folder)} does not exist: nothing to merge from "
                                     f"{os.fspath(path)}")
    return manifest.load(folder)


def _decisive(record: Mapping[str, Any]) -> bool:
    """A record that says whether the file passes: not one of a run that could not complete."""
    return record["ok"] is True or bool(record.get("failed_cases")) or not record.get("error")


def _verdict(record: Mapping[str, Any]) -> str:
    if record["ok"] is True:
        return "PASS"
    return "FAIL" if _decisive(record) else f"could not run ({trust.printable(record.get('error'), 80)})"


def _about(record: Mapping[str, Any]) -> str:
    """What a record claims, every field as text (never terminal control sequences: ``trust.printable``)."""
    device = trust.printable(record.get("device") or "an unknown device", 80)
    return f"{_verdict(record)} on {device}, {trust.printable(record.get('date') or 'no date', 40)}"


def _short(sha: str | None) -> str:
    return (sha or "none")[:12]


def merge(out_dir: str | os.PathLike, sources: Sequence[str | os.PathLike]) -> list[Outcome]:
    """Merge the verification records of ``sources`` into ``out_dir``'s manifest; one ``Outcome`` per record
    offered (and per unusable input). Raises ``ManifestError`` only for ``out_dir``'s own manifest."""
    outcomes: list[Outcome] = []
    offers: dict[str, list[tuple[str, dict]]] = {}
    for source in sources:
        label = os.fspath(source)
        try:
            data = read_source(source)
        except manifest.ManifestError as e:
            outcomes.append(Outcome(label, "", str(e), refused=True))
            continue
        for file_name, entry in sorted(data["files"].items()):
            record = entry.get("verification")
            if record in (None, {}):
                continue
            problem = trust.record_problem(record)
            if problem is not None:  # "ok": "false" is no verdict, and never takes the place of one
                outcomes.append(Outcome(label, file_name, f"not a verification record ({problem}): not merged",
                                        refused=True))
                continue
            offers.setdefault(file_name, []).append((label, record))
    if not offers:
        return outcomes
    if not os.path.isdir(out_dir):
        return outcomes + [Outcome(src, name, f"no folder {os.fspath(out_dir)} to merge into", refused=True)
                           for name, items in offers.items() for src, _ in items]
    real = manifest.folder(out_dir)

    def edit(data: dict) -> None:
        for file_name, items in sorted(offers.items()):
            outcomes.extend(_merge_file(data, real, os.fspath(out_dir), file_name, items))

    manifest.change(out_dir, edit, create=False)
    return outcomes


def _merge_file(data: dict, real: str, shown: str, file_name: str, items: list[tuple[str, dict]]) -> list[Outcome]:
    entry = data["files"].get(file_name)
    if entry is None:
        return [Outcome(src, file_name, f"not in {manifest.manifest_path(shown)}: skipped", refused=False)
                for src, _ in items]
    here = manifest.sha256_file(os.path.join(real, file_name))
    if here is None:
        return [Outcome(src, file_name, f"{os.path.join(shown, file_name)} is missing: skipped", refused=False)
                for src, _ in items]
    out: list[Outcome] = []
    same: list[tuple[str, dict]] = []
    for src, record in items:
        sha = record.get("file_sha256")
        if sha != here or entry.get("file_sha256") not in (None, here):
            out.append(Outcome(src, file_name, f"its record is of other bytes ({_short(sha)}) than "
                               f"{os.path.join(shown, file_name)} ({_short(here)}): not merged", refused=True))
        else:
            same.append((src, record))
    if not same:
        return out
    existing = trust.record(entry.get("verification")) or {}  # a malformed record here is no record
    mine = [("this folder", existing)] if existing.get("file_sha256") == here else []
    decisive = [(src, r) for src, r in same + mine if _decisive(r)]
    if len({r["ok"] for _, r in decisive}) > 1:
        sides = "; ".join(f"{src}: {_about(r)}" for src, r in decisive)
        return out + [Outcome(src, file_name, f"records of the same bytes contradict each other ({sides}): "
                              "not merged", refused=True) for src, _ in same]
    # the newest decisive record, else (only runs that could not complete) the newest of those
    pool = [(src, r) for src, r in same if _decisive(r)] or same
    src, newest = max(pool, key=lambda item: (str(item[1].get("date") or ""), item[0]))
    if mine and _decisive(existing) and not _decisive(newest):
        return out + [Outcome(s, file_name, f"kept this folder's {_about(existing)} over {_about(r)}",
                              refused=False) for s, r in same]
    if mine and str(existing.get("date") or "") > str(newest.get("date") or "") and _decisive(existing):
        return out + [Outcome(s, file_name, f"this folder's record is newer ({_about(existing)})", refused=False)
                      for s, _ in same]
    for s, _ in same:
        if s != src:
            out.append(Outcome(s, file_name, f"an agreeing newer record came from {src}", refused=False))
    if dict(newest) == existing:
        out.append(Outcome(src, file_name, f"the same record is here already ({_about(newest)})", refused=False))
        return out
    entry["verification"] = dict(newest)
    entry["updated"] = manifest.now()
    out.append(Outcome(src, file_name, _about(newest), refused=False, merged=True))
    return out
