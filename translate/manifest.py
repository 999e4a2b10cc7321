"""The manifest of a folder of generated files, ``<folder>/manifest.json`` (schema: docs/design/translate-contract.md,
section 2), and the only code that reads or writes it.

- ``load`` returns the checked manifest (an empty one when there is none). A damaged manifest (empty, half-written,
  not JSON, ``"files"`` that is not a table, a folder in its place) or one written by a newer numbakern raises
  ``ManifestError``: one line naming the file and what to do. Such a file is never rewritten.
- Every change is a read-modify-write under an exclusive lock on the folder (``fcntl.flock``), so processes that
  translate or verify into one folder at the same time never lose each other's entries; the file is replaced
  atomically (temp file + ``os.replace``), as every generated file is.
- ``write_translation`` writes a ``.cu`` and its entry so that the two agree after a kill at any point: the new
  entry is first recorded as *pending*, then the ``.cu`` is replaced, then the entry takes its place. Whoever reads a
  manifest with a pending entry settles it: the entry is taken when its file is on disk, dropped when the old file
  still is.
- ``record_verification`` stores a GPU verification record, only for the very file that was verified.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import hashlib
import json
import os
import stat
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from . import trust
from .errors import TranslationError
from .trust import DETERMINISTIC_BACKEND, UntrustedEntry, check_file_name, passed

MANIFEST = "manifest.json"
VERSION = 1
#: the top-level key of entries whose files may or may not have reached the disk (see the module docstring)
PENDING = "pending"
#: no manifest is larger (the library's is ~100 KB); a larger file is refused before it is read
MAX_MANIFEST_BYTES = 64 << 20
#: the prefix of the temporary files of atomic writes; under the folder's exclusive lock any such file is an orphan
TEMP_PREFIX = ".tmp-"

T = TypeVar("T")


class ManifestError(Exception):
    """A manifest that cannot be used; the message is one line: the file, what is wrong, what to do."""


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def sha256_file(path: str | os.PathLike) -> str | None:
    """The sha256 of the file's bytes (read in blocks: a huge file costs time, not memory), None when there is no
    such file or it is not a regular file."""
    try:
        # O_NONBLOCK: opening a FIFO planted where a file should be must not wait for a writer
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    with open(fd, "rb") as f:
        h = hashlib.sha256()
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
        return h.hexdigest()


def now() -> str:
    return _dt.datetime.now(_dt.UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def folder(out_dir: str | os.PathLike) -> str:
    """The output folder as an absolute path, ``..`` taken away the way the system would follow it
    (``a/missing/../../d`` is ``./d``), so that making it creates no folder on the way."""
    return os.path.realpath(out_dir)


def manifest_path(out_dir: str | os.PathLike) -> str:
    return os.path.join(out_dir, MANIFEST)


_umask_lock = threading.Lock()


def file_mode() -> int:
    """The mode an ordinary new file gets under the process's umask (0644 under 022): ``mkstemp`` makes its file
    0600 whatever the umask, and a generated file is meant to be read by whoever reads the project."""
    return 0o666 & ~_umask()


def _umask() -> int:
    try:  # Linux says it without changing it (another thread may be creating files)
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _umask_lock:  # elsewhere it can only be read by setting it: put it straight back
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` through a temp file in the same folder and ``os.replace``: readers see the old file
    or the new one, never a part. The file gets the umask's ordinary mode (``file_mode``)."""
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=TEMP_PREFIX, suffix=os.path.basename(path))
    try:
        os.fchmod(fd, file_mode())
        with os.fdopen(fd, "w", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


# -- reading ---------------------------------------------------------------------------------------------------


def load(out_dir: str | os.PathLike) -> dict:
    """``out_dir``'s manifest, checked and with pending entries settled (in memory); ``{"version": 1, "files": {}}``
    when there is none. Raises ``ManifestError``."""
    data = _read(manifest_path(folder(out_dir)), shown=manifest_path(out_dir))
    _settle(data, folder(out_dir))
    return data


@dataclass(frozen=True)
class FileState:
    """One listed file as ``snapshot`` found it: its sha256, or why it has none (missing, a link, not a file)."""

    sha256: str | None
    problem: str | None = None  # "missing", or a sentence: why the name does not hold a plain file


def snapshot(out_dir: str | os.PathLike) -> tuple[dict, dict[str, FileState]]:
    """``out_dir``'s manifest (as ``load``) and the state of every file it lists, read together under the folder's
    shared lock: a writer that replaces a file and its entry is never seen half done. A name that is a symbolic link,
    a folder or any other non-file is reported, never followed or read."""
    real = folder(out_dir)
    if not os.path.isdir(real):
        return load(out_dir), {}
    with _locked(real, shared=True):
        data = load(out_dir)
        return data, {name: _file_state(os.path.join(real, name)) for name in data["files"]}


def _file_state(path: str) -> FileState:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return FileState(None, "missing")
    if stat.S_ISLNK(st.st_mode):
        return FileState(None, f"is a symbolic link (to {os.readlink(path)}), not a generated file")
    if not stat.S_ISREG(st.st_mode):
        return FileState(None, "is a folder, not a generated file" if stat.S_ISDIR(st.st_mode) else
                         "is not a regular file")
    return FileState(sha256_file(path))


def entry_for(data: Mapping[str, Any], kernel: str) -> tuple[str, dict] | None:
    """``(file name, entry)`` of a registered kernel: by ``registry_name``, else the file ``<kernel>.cu``."""
    files = data["files"]
    for name, entry in sorted(files.items()):
        if entry.get("registry_name") == kernel:
            return name, entry
    if f"{kernel}.cu" in files:
        return f"{kernel}.cu", files[f"{kernel}.cu"]
    return None


def _restore(path: str) -> str:
    return f"restore it (e.g. `git checkout -- {path}`), or delete it and translate the kernels again"


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", type(None): "null", bool: "a boolean"}.get(
        type(value), "a number")


def _read(real: str, shown: str | None = None) -> dict:
    """The manifest at ``real``, checked; every problem is one ``ManifestError`` line naming it as ``shown`` (the
    path as the user gave it)."""
    path = shown or real
    if os.path.isdir(real):
        raise ManifestError(f"{path} is a folder, not a manifest file: move it away (translate then writes a new "
                            "manifest)")
    if os.path.islink(real):
        raise ManifestError(f"{path} is a symbolic link, not a manifest file: {_restore(path)}")
    try:
        # O_NONBLOCK: a FIFO planted as the manifest must not wait for a writer
        with open(os.open(real, os.O_RDONLY | os.O_NONBLOCK), encoding="utf-8") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise ManifestError(f"{path} is not a regular file: {_restore(path)}")
            if os.fstat(f.fileno()).st_size > MAX_MANIFEST_BYTES:
                raise ManifestError(f"{path} is larger than {MAX_MANIFEST_BYTES >> 20} MiB, which no manifest "
                                    f"is: {_restore(path)}")
            text = f.read()
    except FileNotFoundError:
        return {"version": VERSION, "files": {}}
    except (OSError, UnicodeDecodeError) as e:
        raise ManifestError(f"{path} cannot be read ({getattr(e, 'strerror', None) or e}): {_restore(path)}") from None
    if not text.strip():
        raise ManifestError(f"{path} is empty (a write cut short?): {_restore(path)}")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ManifestError(f"{path} is not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}): "
                            f"{_restore(path)}") from None
    if not isinstance(data, dict):
        raise ManifestError(f"{path} holds {_kind(data)}, not a manifest object: {_restore(path)}")
    version = data.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ManifestError(f"{path} has no valid \"version\" (found {json.dumps(version)}): {_restore(path)}")
    if version > VERSION:
        raise ManifestError(f"{path} is manifest version {version}, written by a newer numbakern (this one reads "
                            f"version {VERSION}): upgrade numbakern to use it; the file was left as it is")
    for key in ("files", PENDING):
        table = data.get(key, {} if key == PENDING else None)
        if not isinstance(table, dict):
            raise ManifestError(f"{path}: \"{key}\" is {_kind(table)}, not an object of entries: {_restore(path)}")
        for name, entry in table.items():
            try:
                check_file_name(name)
            except UntrustedEntry as e:
                raise ManifestError(f"{path}: {e}: {_restore(path)}") from None
            if not isinstance(entry, dict):
                raise ManifestError(f"{path}: the entry for {name!r} is {_kind(entry)}, not an object: "
                                    f"{_restore(path)}")
    return data


def _settle(data: dict, out_dir: str | os.PathLike) -> bool:
    """Settle the entries a writer left pending: take an entry whose file is on disk, drop one whose file is not
    (the old entry still describes the old file). True when there was anything to settle."""
    pending = data.pop(PENDING, None) or {}
    for filename, entry in pending.items():
        if sha256_file(os.path.join(out_dir, filename)) == entry.get("file_sha256"):
            data["files"][filename] = entry
    return bool(pending)


# -- changing --------------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(out_dir: str, shared: bool = False) -> Iterator[None]:
    """A lock on the folder itself (no lock file left behind; the manifest is replaced, the folder stays): exclusive,
    held until a read-modify-write is done, or ``shared`` for readers that must not see a write half done. Under
    the exclusive lock, temporary files that a killed writer left behind are removed (no live writer has any)."""
    fd = os.open(out_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        if not shared:
            _remove_orphans(out_dir)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _remove_orphans(out_dir: str) -> None:
    for name in os.listdir(out_dir):
        if name.startswith(TEMP_PREFIX):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(out_dir, name))


def _save(out_dir: str, data: dict) -> None:
    data["version"] = VERSION
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    if len(text.encode()) > MAX_MANIFEST_BYTES:  # what would be written must be what can be read back
        raise ManifestError(f"{manifest_path(out_dir)} would be larger than {MAX_MANIFEST_BYTES >> 20} MiB, which no "
                            "manifest is: the change was not written")
    atomic_write(manifest_path(out_dir), text)


def change(out_dir: str | os.PathLike, edit: Callable[[dict], T], *, create: bool = True) -> T:
    """Run ``edit(data)`` on ``out_dir``'s manifest under the folder's lock and save what it changed; returns what
    ``edit`` returns. ``create``: make the folder when it is missing."""
    out = folder(out_dir)
    if create:
        os.makedirs(out, exist_ok=True)
    with _locked(out):
        data = _read(manifest_path(out), shown=manifest_path(out_dir))
        settled = _settle(data, out)
        before = json.dumps(data, sort_keys=True)
        result = edit(data)
        if settled or json.dumps(data, sort_keys=True) != before:
            _save(out, data)
    return result


def update_entry(out_dir: str | os.PathLike, filename: str, entry: dict) -> dict:
    """Insert or replace one file's entry (see ``merged_entry``). Returns the stored entry."""
    def edit(data: dict) -> dict:
        data["files"][filename] = merged_entry(data["files"].get(filename), entry)
        return data["files"][filename]

    return change(out_dir, edit)


def write_translation(out_dir: str | os.PathLike, filename: str, code: str, entry: dict, *, force: bool = False
                      ) -> dict:
    """Write ``code`` to ``out_dir/filename`` and its ``entry`` into the manifest, so that the two agree whenever
    the process is killed (see the module docstring). A verified file of an unchanged kernel is not replaced by
    different code unless ``force`` (``TranslationError``). Returns the stored entry."""
    try:
        check_file_name(filename)  # what a manifest may list (a name no command could read back is never written)
    except UntrustedEntry:
        raise TranslationError(f"{filename!r} cannot be a generated file's name: file names are ASCII letters, digits "
                               "and _ . + -, at most 200 characters (rename the kernel)", filename=filename) from None
    out = folder(out_dir)
    path = os.path.join(out, filename)
    os.makedirs(out, exist_ok=True)
    with _locked(out):
        data = _read(manifest_path(out), shown=manifest_path(out_dir))
        settled = _settle(data, out)
        old = data["files"].get(filename)
        new = merged_entry(old, entry)
        if not force and replaces_verified(old, new):
            raise TranslationError(
                f"{filename} was verified on a GPU and its kernel has not changed; the new "
                f"{new['backend']['name']} translation differs and is not verified, so it was not written "
                "(pass --force to replace the verified file)", filename=os.path.join(out_dir, filename))
        state = _file_state(path)
        shown = os.path.join(out_dir, filename)
        if state.problem not in (None, "missing"):
            raise TranslationError(f"{shown} {state.problem}: move it away, then translate again", filename=shown)
        edited = old is not None and state.sha256 is not None and state.sha256 != old.get("file_sha256")
        if edited and not force and state.sha256 != new["file_sha256"]:
            raise TranslationError(
                f"{filename} was edited by hand since translate wrote it (translate --check reports it as edited); "
                "the new translation was not written over your edits: move them into the kernel, or pass --force "
                "to replace the file", filename=shown)
        file_changes = state.sha256 != new["file_sha256"]
        if file_changes:
            data[PENDING] = {filename: new}
            _save(out, data)
            atomic_write(path, code)
            del data[PENDING]
        if file_changes or settled or old != new:
            data["files"][filename] = new
            _save(out, data)
    return new


def remove(out_dir: str | os.PathLike, filenames: Iterable[str]) -> list[str]:
    """Remove the entries ``filenames`` and their files from ``out_dir``, under the folder's lock: the manifest
    without them is saved first, then the files are unlinked (a kill in between leaves only unlisted files, which
    nothing reads). A name that holds a folder is left there. Returns the names removed."""
    out = folder(out_dir)
    with _locked(out):
        data = _read(manifest_path(out), shown=manifest_path(out_dir))
        _settle(data, out)
        removed = [name for name in filenames if data["files"].pop(name, None) is not None]
        if removed:
            _save(out, data)
        for name in removed:
            path = os.path.join(out, name)
            if not os.path.isdir(path) or os.path.islink(path):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
    return removed


def merged_entry(old: dict | None, entry: dict) -> dict:
    """``entry`` as it is stored over ``old``: ``created`` kept; the verification kept while it still applies (same
    kernel source, same file bytes); a missing resource report kept for the same file; and an identical
    re-translation changes nothing, not even the date."""
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
        entry["updated"] = old.get("updated", stamp)
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
    return passed(old.get("verification"), new.get("file_sha256")) and old.get("source_sha256") == new.get(
        "source_sha256")


def replaces_verified(old: dict | None, new: dict) -> bool:
    """True when ``new``, a translation nothing can derive again (a model's), would replace a file the manifest
    records as verified, of an unchanged kernel, with different C. The deterministic translation is never held
    back: a record is only a claim (anyone who edits the manifest can write one), and that translation is what
    ``translate --check`` derives for the kernel whatever the manifest says."""
    if (new.get("backend") or {}).get("name") == DETERMINISTIC_BACKEND:
        return False
    if not old or not passed(old.get("verification")):
        return False
    return old.get("source_sha256") == new.get("source_sha256") and not _verification_applies(old, new)


# -- verification records --------------------------------------------------------------------------------------


def record_verification(out_dir: str | os.PathLike, filename: str, record: Mapping[str, Any], *,
                        check_file: bool = True) -> bool:
    """Store ``record`` as the file's ``verification``; False (nothing written) when ``store_verification`` does
    not record it."""
    return store_verification(out_dir, filename, record, check_file=check_file) == "recorded"


def store_verification(out_dir: str | os.PathLike, filename: str, record: Mapping[str, Any], *,
                       check_file: bool = True) -> str:
    """Store ``record`` as the file's ``verification``; what happened, in words: ``"recorded"``, or why not — the
    entry is gone, with ``check_file`` the ``.cu`` changed since it was verified (the record's ``file_sha256``), or
    the record is of a run that could not complete (an error before any case failed) and the same file is verified
    already (a broken run does not undo a verification; a failed comparison does)."""
    outcome = "skipped (no manifest)"

    def edit(data: dict) -> bool:
        nonlocal outcome
        entry = data["files"].get(filename)
        if entry is None:
            outcome = "skipped (entry missing)"
            return False
        if trust.record(record) is None:
            outcome = f"skipped (not a verification record: {trust.record_problem(record)})"
            return False
        if check_file and record.get("file_sha256"):
            current = sha256_file(os.path.join(folder(out_dir), filename))
            if current != record["file_sha256"] or entry.get("file_sha256") not in (None, record["file_sha256"]):
                outcome = "skipped (.cu changed since verification)"
                return False
        earlier = entry.get("verification") or {}
        could_not_run = not record["ok"] and record.get("error") and not record.get("failed_cases")
        if could_not_run and passed(earlier, record["file_sha256"]):
            outcome = f"kept the verification of {earlier.get('date', 'an earlier run')} (this run: {record['error']})"
            return False
        entry["verification"] = dict(record)
        entry["updated"] = now()
        outcome = "recorded"
        return True

    if os.path.isdir(out_dir):
        change(out_dir, edit, create=False)
    return outcome


def set_verification(out_dir: str | os.PathLike, filename: str, record: Mapping[str, Any]) -> None:
    """Store ``record`` as the file's ``verification`` whatever the file holds; ``KeyError`` without an entry."""
    if not record_verification(out_dir, filename, record, check_file=False):
        raise KeyError(f"{filename} is not in {manifest_path(out_dir)}")


def apply_records(out_dir: str | os.PathLike, records: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Apply ``{"file": name, "record": {...}}`` items (what ``--records-out`` writes); ``{file: outcome}``."""
    return {item["file"]: store_verification(out_dir, item["file"], item["record"]) for item in records}
