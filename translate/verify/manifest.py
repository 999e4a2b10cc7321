"""Reading ``generated_cuda/manifest.json`` and writing verification records into it.

Under an exclusive lock on ``manifest.json.lock``: re-read the file, check that the ``.cu`` on disk is still the one
that was verified (``file_sha256``), then store the record through the translator's
``translate.manifest.set_verification`` (atomic: temp file + ``os.replace``), or, where that is missing, write it
the same way here -- other entries are never lost.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping

DEFAULT_DIR = Path("generated_cuda")


def manifest_path(directory: str | os.PathLike | None = None) -> Path:
    return Path(directory or DEFAULT_DIR) / "manifest.json"


def load(path: str | os.PathLike) -> dict[str, Any]:
    path = Path(path)
    if not path.exists():
        return {"version": 1, "files": {}}
    with open(path) as f:
        return json.load(f)


def entry_for(manifest: Mapping[str, Any], kernel: str) -> tuple[str, Mapping[str, Any]] | None:
    """``(file name, entry)`` of a registered kernel: by ``registry_name``, else the file ``<kernel>.cu``."""
    files = manifest.get("files", {})
    for name, entry in sorted(files.items()):
        if entry.get("registry_name") == kernel:
            return name, entry
    if f"{kernel}.cu" in files:
        return f"{kernel}.cu", files[f"{kernel}.cu"]
    return None


@contextlib.contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _write_atomic(path: Path, data: Mapping[str, Any]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".manifest-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=2, sort_keys=True)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def record_verification(path: str | os.PathLike, file_name: str, record: Mapping[str, Any], *,
                        check_file: bool = True) -> bool:
    """Set ``files[file_name]["verification"] = record``; False (nothing written) when the entry is gone or the
    ``.cu`` changed since it was verified."""
    path = Path(path)
    with _locked(path):
        manifest = load(path)
        entry = manifest.get("files", {}).get(file_name)
        if entry is None:
            return False
        if check_file and record.get("file_sha256"):
            cu = path.parent / file_name
            current = _sha256(cu) if cu.exists() else None
            if current != record["file_sha256"] or entry.get("file_sha256") not in (None, record["file_sha256"]):
                return False
        helper = _translator_helper()
        if helper is not None:  # the translator's own atomic writer: translate.manifest.set_verification
            helper(str(path.parent), file_name, dict(record))
            return True
        entry["verification"] = dict(record)
        entry["updated"] = _now()
        _write_atomic(path, manifest)
    return True


def apply_records(path: str | os.PathLike, records: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Apply ``{"file": name, "record": {...}}`` items (what ``--records-out`` writes); ``{file: outcome}``."""
    outcome = {}
    for item in records:
        ok = record_verification(path, item["file"], item["record"])
        outcome[item["file"]] = "recorded" if ok else "skipped (entry missing or .cu changed since verification)"
    return outcome


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def _translator_helper():
    """``translate.manifest.set_verification(out_dir, filename, record)`` when the translator provides it."""
    try:
        from translate import manifest as tm  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - not written yet, or broken: fall back to our own writer
        return None
    return getattr(tm, "set_verification", None)
