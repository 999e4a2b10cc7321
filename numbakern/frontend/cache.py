"""Facts on disk, one JSON file per request key, so a warm test run never starts the helper process.

The directory is ``$NUMBAKERN_CACHE_DIR/frontend`` (default: ``$XDG_CACHE_HOME/numbakern`` or
``~/.cache/numbakern``). Writes are atomic (a temporary file renamed into place), so a reader never sees half a
file and concurrent writers of one key leave one whole copy. A file that cannot be read is a miss.
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
    try:
        with open(_path(key), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def store(key: str, facts: dict) -> None:
    directory = cache_dir()
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(facts, f, separators=(",", ":"))
            os.replace(tmp, _path(key))
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass  # a read-only or full disk costs a re-typing next time, nothing more


def _path(key: str) -> str:
    return os.path.join(cache_dir(), key + ".json")
