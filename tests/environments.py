"""Environments for the subprocesses the tests start, as a user's shell would have them.

A "clean" environment keeps only what finds programs and packages: PATH, HOME and, where numbakern and its
dependencies were put on the path instead of installed (the GPU machine installs wheels with ``pip --target`` and
sets PYTHONPATH), that PYTHONPATH: dropping it would test a different Python installation, not a cleaner one. It
keeps ``CUDA_VISIBLE_DEVICES`` too: under ``pytest --gpu -n auto`` it is how the plugin gives a worker its own GPU,
and a child without it would compute on the first GPU, beside another worker's tests. And it keeps where numbakern's
cache is (``NUMBAKERN_CACHE_DIR``, ``XDG_CACHE_HOME``): a child of a run made with an empty cache
(``scripts/time_suite.py``, a first run) starts from that cache too, not from the user's warm one, which would make
a first run's time look shorter than it is (a test about the cache gives its child a folder of its own).
"""

from __future__ import annotations

import os

from numbakern.frontend.cache import CACHE_ENV


def with_path_first(env: dict[str, str], *folders: os.PathLike | str) -> dict[str, str]:
    """``env`` with ``folders`` first on PYTHONPATH, before whatever PYTHONPATH it already had."""
    kept = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {**env, "PYTHONPATH": os.pathsep.join([*map(str, folders), *kept])}


#: what a clean environment keeps of this one's where it is set (PATH and HOME are always there)
KEPT = ("PYTHONPATH", "CUDA_VISIBLE_DEVICES", CACHE_ENV, "XDG_CACHE_HOME")


def clean(home: os.PathLike | str, **extra: str) -> dict[str, str]:
    """PATH, HOME (``home`` when this process has none), the ``KEPT`` variables that are set, then ``extra``."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", str(home))}
    for kept in KEPT:
        if kept in os.environ:
            env[kept] = os.environ[kept]
    return {**env, **extra}


def pytest_plugin_args() -> list[str]:
    """``-p numbakern.pytest_plugin`` where numbakern is on the path but not installed (its pytest11 entry point
    is then missing, and pytest would not load the plugin by itself); nothing where it is installed."""
    from importlib.metadata import entry_points

    installed = any(p.value == "numbakern.pytest_plugin" for p in entry_points(group="pytest11"))
    return [] if installed else ["-p", "numbakern.pytest_plugin"]
