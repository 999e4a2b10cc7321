"""Facts on disk, one JSON file per request key, so a warm test run never starts the helper process; and, beside
them, what a consumer made of the facts (``load_bytes``/``store_bytes``: the simulator's rewritten code).

The directory is ``$NUMBAKERN_CACHE_DIR/frontend`` (default: ``$XDG_CACHE_HOME/numbakern`` or
``~/.cache/numbakern``). Writes are atomic (a temporary file renamed into place), so a reader never sees half a
file and concurrent writers of one key (pytest-xdist workers) leave one whole copy. A file that cannot be read is a
miss.
"""

from __future__ import annotations

import json
import os
import tempfile

CACHE_ENV = "NUMBAKERN_CACHE_DIR"


def cache_dir() -> str:
    root = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "numbakern")
    return os.path.join(root, "frontend")


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


def load_bytes(name: str) -> bytes | None:
    try:
        with open(os.path.join(cache_dir(), name), "rb") as f:
            return f.read()
    except OSError:
        return None


def store_bytes(name: str, data: bytes) -> None:
    directory = cache_dir()
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, os.path.join(directory, name))
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass  # a read-only or full disk costs a re-typing next time, nothing more
