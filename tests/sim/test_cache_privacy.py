"""The simulator's typing cache holds code it runs, so it is the user's alone (issue 38, finding 5): its folders are
made 0700 whatever the umask, an entry that is not the user's or that others may write is never read, and an entry
copied under another key does not run there (``numbakern.frontend.cache``)."""

from __future__ import annotations

import os
import shutil
import stat

import numpy as np
import pytest
from numba import cuda

from numbakern.frontend import cache, client
from numbakern.sim import kerneltypes, typedcache

OTHER_UID = 65534


@cuda.jit
def doubled(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] * 2


@cuda.jit
def shifted(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = x[i] + 7


def _forget_in_memory():
    """As a new process starts: nothing typed in memory."""
    kerneltypes._memo.clear()
    client._memory.clear()
    typedcache._memory.clear()


def _run(kernel, x):
    out = np.full_like(x, np.nan)
    kernel[2, 32](x, out)
    return out


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    root = tmp_path / "a" / "b"
    monkeypatch.setenv(cache.CACHE_ENV, str(root))
    _forget_in_memory()
    yield root
    _forget_in_memory()


def _entries(folder):
    return {p.name for p in (folder / "frontend").glob("*.code")}


def _chown_or_skip(path):
    try:
        os.chown(path, OTHER_UID, -1)
    except PermissionError:
        pytest.skip(f"this process (uid {os.geteuid()}) cannot chown to uid {OTHER_UID} (only root or CAP_CHOWN can)")


def test_the_cache_folders_are_private_under_umask_000(fresh_cache, rng):
    x = rng.random(50).astype(np.float32)
    old = os.umask(0)
    try:
        np.testing.assert_array_equal(_run(doubled, x), x * 2)
    finally:
        os.umask(old)
    for folder in (fresh_cache.parent, fresh_cache, fresh_cache / "frontend"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    for entry in (fresh_cache / "frontend").iterdir():
        assert stat.S_IMODE(entry.stat().st_mode) == 0o600, entry


def test_a_folder_an_older_numbakern_left_open_is_closed(fresh_cache, rng):
    (fresh_cache / "frontend").mkdir(parents=True)
    os.chmod(fresh_cache / "frontend", 0o777)
    x = rng.random(50).astype(np.float32)
    np.testing.assert_array_equal(_run(doubled, x), x * 2)
    assert stat.S_IMODE((fresh_cache / "frontend").stat().st_mode) == 0o700


def test_an_entry_copied_under_another_key_does_not_run(fresh_cache, rng):
    x = rng.random(50).astype(np.float32)
    _run(doubled, x)
    (planted,) = _entries(fresh_cache)
    _run(shifted, x)
    (target,) = _entries(fresh_cache) - {planted}
    shutil.copyfile(fresh_cache / "frontend" / planted, fresh_cache / "frontend" / target)
    _forget_in_memory()
    disk = typedcache.stats["disk"]
    np.testing.assert_array_equal(_run(shifted, x), x + 7)  # not doubled's code
    assert typedcache.stats["disk"] == disk, "the planted entry was read as the kernel's own"


@pytest.mark.parametrize("how", ["writable by others", "owned by another user", "a link"])
def test_an_entry_someone_else_could_have_written_is_not_read(fresh_cache, rng, how):
    x = rng.random(50).astype(np.float32)
    _run(doubled, x)
    (name,) = _entries(fresh_cache)
    entry = fresh_cache / "frontend" / name
    if how == "writable by others":
        os.chmod(entry, 0o666)
    elif how == "owned by another user":
        _chown_or_skip(entry)
    else:
        moved = fresh_cache / "elsewhere.code"
        entry.rename(moved)
        entry.symlink_to(moved)
    _forget_in_memory()
    disk = typedcache.stats["disk"]
    np.testing.assert_array_equal(_run(doubled, x), x * 2)
    assert typedcache.stats["disk"] == disk, f"an entry {how} was read"


def test_a_cache_folder_of_another_user_is_not_used(fresh_cache, rng, capfd):
    (fresh_cache / "frontend").mkdir(parents=True)
    _chown_or_skip(fresh_cache / "frontend")
    x = rng.random(50).astype(np.float32)
    np.testing.assert_array_equal(_run(doubled, x), x * 2)
    np.testing.assert_array_equal(_run(shifted, x), x + 7)
    assert not list((fresh_cache / "frontend").iterdir()), "something was written into another user's folder"
    err = capfd.readouterr().err
    assert err.count("numbakern: warning: the cache in") == 1, err
    assert f"is owned by uid {OTHER_UID}, not by you" in err and cache.CACHE_ENV in err
