"""``generated_cuda/manifest.json`` (schema: docs/design/translate-contract.md, section 2). Writes are atomic
(temp file + ``os.replace``); files are written the same way, so a failed translation never leaves a
half-written file or replaces a good one."""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import tempfile

MANIFEST = "manifest.json"
VERSION = 1


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def atomic_write(path: str, text: str) -> None:
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(fd, "w", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load(out_dir: str) -> dict:
    path = os.path.join(out_dir, MANIFEST)
    if not os.path.exists(path):
        return {"version": VERSION, "files": {}}
    with open(path) as f:
        data = json.load(f)
    data.setdefault("files", {})
    return data


def save(out_dir: str, data: dict) -> None:
    atomic_write(os.path.join(out_dir, MANIFEST), json.dumps(data, indent=2, sort_keys=True) + "\n")


def update_entry(out_dir: str, filename: str, entry: dict) -> dict:
    """Insert or replace one file's entry (keeps ``created``, and keeps a verification record while the kernel
    source is unchanged). Returns the stored entry."""
    data = load(out_dir)
    old = data["files"].get(filename)
    entry = dict(entry)
    stamp = now()
    entry["updated"] = stamp
    entry["created"] = old.get("created", stamp) if old else stamp
    if old and entry.get("verification") is None and _verification_applies(old, entry):
        entry["verification"] = old["verification"]
    entry.setdefault("verification", None)
    if old and old.get("file_sha256") == entry.get("file_sha256"):
        _keep_known_resources(old.get("compile") or {}, entry.get("compile") or {})
    if old and _without_times(old) == _without_times(entry):
        entry["updated"] = old.get("updated", stamp)  # an identical re-translation changes nothing, not even the date
    data["files"][filename] = entry
    data["version"] = VERSION
    save(out_dir, data)
    return entry


def _keep_known_resources(old: dict, new: dict) -> None:
    # ptxas' resource report is not always there (NVRTC 13.0 on the GPU machine printed it only for the first of
    # two identical compiles in a process): for the same file and arch, a missing report keeps the known one.
    if old.get("arch") == new.get("arch"):
        for key in ("registers", "shared_bytes"):
            if new.get(key) is None and old.get(key) is not None:
                new[key] = old[key]


def _without_times(entry: dict) -> dict:
    return {k: v for k, v in entry.items() if k not in ("created", "updated")}


def _verification_applies(old: dict, new: dict) -> bool:
    """An old verification still holds for a new entry that has the same kernel source and the same file bytes."""
    record = old.get("verification") or {}
    return bool(record) and old.get("source_sha256") == new.get("source_sha256") \
        and record.get("file_sha256", old.get("file_sha256")) == new.get("file_sha256")


def replaces_verified(out_dir: str, filename: str, entry: dict) -> bool:
    """True when writing ``entry`` would replace a verified file, of an unchanged kernel, with different C."""
    old = load(out_dir)["files"].get(filename)
    if not old or not (old.get("verification") or {}).get("ok"):
        return False
    return old.get("source_sha256") == entry.get("source_sha256") and not _verification_applies(old, entry)


def set_verification(out_dir: str, filename: str, record: dict) -> None:
    """For verification: store ``record`` as the file's ``verification`` (atomic)."""
    data = load(out_dir)
    if filename not in data["files"]:
        raise KeyError(f"{filename} is not in {os.path.join(out_dir, MANIFEST)}")
    data["files"][filename]["verification"] = record
    data["files"][filename]["updated"] = now()
    save(out_dir, data)
