"""Files numbakern writes for itself and reads back: the front end's facts, one JSON file per request key
(``load``/``store``), so a warm test run never starts the helper process; beside them what a consumer made of the
facts (``load_bytes``/``store_bytes``: the simulator's rewritten code, which it executes); and, in an area of their
own, ``translate --check``'s derivations (``area="derivations"``).

The folder of an area is ``$NUMBAKERN_CACHE_DIR/<area>`` (default root: ``$XDG_CACHE_HOME/numbakern`` or
``~/.cache/numbakern``). What is read back is run, or decides a check, so the cache is the user's alone:

- every folder made on the way is made 0700 whatever the umask, and an area's folder of the user's that others may
  enter (one made under ``umask 000`` by an older numbakern) is closed to 0700 before it is used. An area or root
  folder owned by someone else, or one others may write (the root: unless it has the sticky bit), turns the cache
  off: nothing is read or written there, and one line on stderr says why;
- an entry is read only when it is a regular file, not a link, owned by the user and writable by no one else;
- each entry begins with the sha256 of its area, its name and its content: an entry copied or renamed under another
  key is a miss.

Writes are atomic (a temporary file renamed into place), so a reader never sees half a file and concurrent writers
of one key (pytest-xdist workers) leave one whole copy. A file that cannot be read or fails a check is a miss.
``making(name)`` lets processes that miss the same key at once make its entry once: the first makes it, the others
wait on the key's lock file (an empty ``<name>.lock``, ``flock``ed) and then read what it stored.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
import tempfile

try:
    import fcntl
except ImportError:  # not on Windows: concurrent misses of one key are then each made, as before
    fcntl = None  # type: ignore[assignment]

CACHE_ENV = "NUMBAKERN_CACHE_DIR"
#: the front end's facts and the simulator's rewritten code
FRONTEND = "frontend"
#: the first line of every entry, then the hex sha256 that binds it to its key
_MAGIC = b"numbakern-cache-1\n"
_DIGEST = 64
#: folder -> why the cache may not use it (decided once per process, so the warning comes once)
_refused: dict[str, str] = {}


def cache_root() -> str:
    return os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "numbakern")


def cache_dir(area: str = FRONTEND) -> str:
    return os.path.join(cache_root(), area)


def load(key: str) -> dict | None:
    data = load_bytes(key + ".json")
    if data is None:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


def store(key: str, facts: dict) -> None:
    store_bytes(key + ".json", json.dumps(facts, separators=(",", ":")).encode())


def load_bytes(name: str, area: str = FRONTEND) -> bytes | None:
    """The content stored as ``name`` in ``area``, or None (a miss) when there is none or it fails a check."""
    directory = _usable(area, create=False)
    if directory is None:
        return None
    try:
        # no link followed; a FIFO planted under the name must not block the read
        fd = os.open(os.path.join(directory, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not _mine_alone(os.fstat(f.fileno())):
            return None
        try:
            blob = f.read()
        except OSError:
            return None
    head, digest, data = blob[:len(_MAGIC)], blob[len(_MAGIC):len(_MAGIC) + _DIGEST], blob[len(_MAGIC) + _DIGEST:]
    if head != _MAGIC or digest != _binding(area, name, data).encode():
        return None
    return data


def store_bytes(name: str, data: bytes, area: str = FRONTEND) -> None:
    """Store ``data`` as ``name`` in ``area`` (nothing when the cache is off or the disk refuses)."""
    directory = _usable(area, create=True)
    if directory is None:
        return
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")  # 0600 whatever the umask
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC + _binding(area, name, data).encode() + data)
            os.replace(tmp, os.path.join(directory, name))
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass  # a read-only or full disk costs a re-typing next time, nothing more


@contextlib.contextmanager
def making(name: str, area: str = FRONTEND):
    """Held while this process makes the entry ``name``: a second process making the same entry waits here until
    the first has stored it, then finds it with ``load_bytes`` instead of making it again (typing a tensor-core
    kernel takes seconds; two pytest-xdist workers often reach the same kernel together). Without a usable cache,
    or where the lock cannot be taken, nothing is held."""
    directory = _usable(area, create=True)
    fd = None
    if directory is not None and fcntl is not None:
        try:
            fd = os.open(os.path.join(directory, name + ".lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            if fd is not None:
                os.close(fd)
            fd = None
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)  # releases the lock; the empty file stays (removing it would race with a waiter)


def _mine_alone(st: os.stat_result) -> bool:
    """A regular file owned by the user that no one else may write (``translate.verify.build`` applies the same rule
    to the shared libraries it caches)."""
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _binding(area: str, name: str, data: bytes) -> str:
    return hashlib.sha256(b"\0".join((area.encode(), name.encode(), data))).hexdigest()


def _usable(area: str, create: bool) -> str | None:
    """The area's folder when the cache may use it (made, when ``create``, 0700 at every level it makes)."""
    root, directory = cache_root(), cache_dir(area)
    if directory in _refused:
        return None
    if not os.path.isdir(directory):
        if not create:
            return None
        try:
            _make_private(directory)
        except OSError:
            return None
    problem = _open_to_others(root, sticky_ok=True) or _open_to_others(directory, close=True)
    if problem:
        _refused[directory] = problem
        sys.stderr.write(f"numbakern: warning: the cache in {directory} is not used: {problem} (what it holds is "
                         f"run; set {CACHE_ENV} to a folder of your own)\n")
        return None
    return directory


def _make_private(directory: str) -> None:
    missing = []
    path = os.path.abspath(directory)
    while not os.path.isdir(path):
        missing.append(path)
        path = os.path.dirname(path)
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)  # the umask can only take bits away
        except FileExistsError:
            pass


def _open_to_others(path: str, *, sticky_ok: bool = False, close: bool = False) -> str | None:
    """Why someone else could change what is in the folder ``path`` (None when no one but the user can); with
    ``close``, a folder of the user's that others may enter is made 0700 first."""
    try:
        st = os.stat(path)
    except OSError as e:
        return f"{path} cannot be examined ({e.strerror})"
    if st.st_uid != os.geteuid():
        return f"{path} is owned by uid {st.st_uid}, not by you (uid {os.geteuid()})"
    if close and st.st_mode & 0o077:
        try:
            os.chmod(path, 0o700)
            return None
        except OSError as e:
            return f"{path} is open to others (mode {stat.filemode(st.st_mode)}) and cannot be closed ({e.strerror})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not (sticky_ok and st.st_mode & stat.S_ISVTX):
        return f"{path} can be written by others (mode {stat.filemode(st.st_mode)})"
    return None
