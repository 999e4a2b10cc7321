"""A user's project: which modules hold its kernels and where their CUDA C goes, from ``pyproject.toml``::

    [tool.numbakern]
    kernels = ["mykernels.softmax", "mykernels.stencil"]   # modules that declare kernels (a package: all its modules)
    out = "generated_cuda"                                  # the project's .cu files and manifest.json
    arch = "sm_90"                                          # NVRTC / nvcc target
    include-library = false                                 # also numbakern's own library kernels

``load(path)`` reads one project; ``find(start)`` walks up from a folder to the first ``pyproject.toml`` with a
``[tool.numbakern]`` table and, when there is none, returns numbakern's own library as the project (its kernels,
``generated_cuda/`` in the current folder): what the tools did before projects existed.

A project's kernel modules are imported, so they run as whoever runs the tools: ``find`` stops at a folder or a
``pyproject.toml`` that someone else could have written (``ownership_problem``: owned by another user, or writable by
others without the sticky bit), as git stops at a repository another user owns (``safe.directory``,
CVE-2022-24765). A ``[tool.numbakern]`` project there or above is refused with a ``ProjectError`` that says why;
``NUMBAKERN_SAFE_DIRECTORIES`` (folders separated by ``:``, or ``*``) names folders the user trusts all the same.

``Project.specs()`` imports the kernel modules (from the project's root, as ``python -m`` would, when they are not
installed) and returns the kernels they declare; ``Project.spec(name)`` finds one by name in this project only, so a
user kernel named like a library kernel is never confused with it. ``Project.ref(name)`` is what another process
passes to ``numbakern.registry.from_ref`` to get the same spec.
"""

from __future__ import annotations

import grp
import importlib
import importlib.util
import os
import pkgutil
import pwd
import re
import stat
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import registry
from .registry import KernelSpec

PYPROJECT = "pyproject.toml"
TABLE = "tool.numbakern"
DEFAULT_OUT = "generated_cuda"
DEFAULT_ARCH = "sm_90"
#: the keys of [tool.numbakern], with the type each must have
KEYS = {"kernels": list, "out": str, "arch": str, "include-library": bool}
ARCH_PATTERN = re.compile(r"^(sm|compute)_\d+[af]?$")
#: folders whose projects are used although someone else could write them (git's safe.directory): ":"-separated
SAFE_ENV = "NUMBAKERN_SAFE_DIRECTORIES"


class ProjectError(ValueError):
    """A ``[tool.numbakern]`` table that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class Project:
    root: Path                       # the folder of pyproject.toml (the current folder for the library default)
    pyproject: Path | None           # None: no [tool.numbakern] found, numbakern's library defaults
    name: str
    kernel_modules: tuple[str, ...]
    out_dir: Path                    # absolute
    arch: str
    include_library: bool

    @property
    def is_library(self) -> bool:
        """True for numbakern's own library standing in as the project (no ``[tool.numbakern]`` found)."""
        return self.pyproject is None

    def import_kernels(self) -> None:
        """Import the kernel modules (a package: all its modules); the project's root goes on ``sys.path`` when
        one is not importable, as ``python -m`` from the root would have it."""
        for module in self.kernel_modules:
            top = module.split(".")[0]
            if top in sys.stdlib_module_names:
                raise ProjectError(
                    f"{self._where('kernels')}: '{module}' is Python's standard library module, which no project "
                    f"declares kernels in (and which shadows a module of yours of that name): rename your module")
            if top not in sys.modules and importlib.util.find_spec(top) is None and str(self.root) not in sys.path:
                sys.path.insert(0, str(self.root))
            try:
                imported = importlib.import_module(module)
            except ModuleNotFoundError as e:
                if e.name and module.startswith(e.name):
                    raise ProjectError(
                        f"{self._where('kernels')}: cannot import '{module}' ({e}); list modules importable from "
                        f"{self.root}, or install the project (pip install -e {self.root})"
                    ) from None
                raise
            for sub in pkgutil.walk_packages(getattr(imported, "__path__", ()), prefix=module + "."):
                if sub.name.rsplit(".", 1)[-1] != "__main__":  # a package's script (python -m), not its kernels
                    importlib.import_module(sub.name)

    def specs(self) -> list[KernelSpec]:
        """The project's kernels by name: those its modules declare, and the library's if ``include-library``."""
        self.import_kernels()
        found = registry.project_specs(self.kernel_modules)
        if self.include_library:
            found = [*registry.all_specs(), *found]
        by_name: dict[str, KernelSpec] = {}
        for spec in found:
            other = by_name.get(spec.name)
            if other is not None:
                raise ProjectError(
                    f"{self._where('kernels')}: two kernels named '{spec.name}' ({other.qualified_name} and "
                    f"{spec.qualified_name}) would both write {spec.name}.cu; rename one (declare(..., name=...))"
                    + (" or set include-library = false" if self.include_library else "")
                )
            by_name[spec.name] = spec
        return [by_name[n] for n in sorted(by_name)]

    def spec(self, name: str) -> KernelSpec:
        """The project's kernel called ``name``; a ``KeyError`` listing the project's kernels if there is none."""
        specs = {s.name: s for s in self.specs()}
        try:
            return specs[name]
        except KeyError:
            raise KeyError(f"project {self.name} ({self.pyproject or 'numbakern library'}) has no kernel named "
                           f"'{name}'; its kernels: {', '.join(specs) or 'none'}") from None

    def ref(self, name: str) -> dict[str, str]:
        """What ``numbakern.registry.from_ref`` needs to re-create the spec ``name`` in another process."""
        return registry.spec_ref(self.spec(name))

    def _where(self, key: str) -> str:
        return f"[{TABLE}] {key} in {self.pyproject}" if self.pyproject else f"numbakern's library ({key})"


def load(path: str | os.PathLike = ".") -> Project:
    """The project whose ``pyproject.toml`` is ``path`` (or is in the folder ``path``); it must have
    ``[tool.numbakern]``."""
    path = Path(path).resolve()
    file = path / PYPROJECT if path.is_dir() else path
    if not file.is_file():
        raise ProjectError(f"no {PYPROJECT} at {file}")
    table, name = _read(file)
    if table is None:
        raise ProjectError(f"{file} has no [{TABLE}] table (kernels = [...], out = ..., arch = ...)")
    return _from_table(file, table, name)


def find(start: str | os.PathLike = ".") -> Project:
    """The project of the folder ``start``: the nearest ``pyproject.toml`` upwards with a ``[tool.numbakern]``
    table, or numbakern's library (``generated_cuda/`` in ``start``) when there is none. The walk stops at a folder
    or file someone else could have written (see the module docstring): a ``ProjectError`` when a project lies
    there or above, numbakern's library when none does."""
    start = Path(start).resolve()
    for folder in (start, *start.parents):
        file = folder / PYPROJECT
        problem = ownership_problem(folder) or (ownership_problem(file) if file.is_file() else None)
        if problem is not None and not _declared_safe(folder):
            refused = _project_at_or_above(folder)
            if refused is None:
                break
            raise ProjectError(
                f"not using the project {refused}: {problem}. numbakern imports a project's kernel modules (they "
                "run as you), so it reads [tool.numbakern] only where no one else can change what it imports "
                f"(like git's safe.directory). Own the folder yourself, or add {folder} to {SAFE_ENV} if you trust "
                "whoever can write there")
        if file.is_file():
            table, name = _read(file)
            if table is not None:
                return _from_table(file, table, name)
    return library(start / DEFAULT_OUT)


def ownership_problem(path: Path) -> str | None:
    """Why someone else could have written ``path`` (None when no one but you, or root, can): it is owned by another
    user, or others may write it (a folder with the sticky bit, as /tmp, lets them add files but not replace
    yours; a group that is only your own, as a user private group, is you)."""
    try:
        st = os.stat(path)
    except OSError as e:
        return f"{path} cannot be examined ({e.strerror})"
    me = os.geteuid()
    if st.st_uid not in (me, 0):
        return f"{path} is owned by {_user(st.st_uid)}, not by you, {_user(me)}"
    sticky_folder = stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX
    if st.st_mode & stat.S_IWOTH and not sticky_folder:
        return f"{path} can be written by every user (mode {stat.filemode(st.st_mode)})"
    if st.st_mode & stat.S_IWGRP and not sticky_folder and not _private_group(st.st_gid, st.st_uid):
        return f"{path} can be written by the group {_group(st.st_gid)} (mode {stat.filemode(st.st_mode)})"
    return None


def _private_group(gid: int, uid: int) -> bool:
    """A user private group: named as its owner and with no other members."""
    try:
        group, owner = grp.getgrgid(gid), pwd.getpwuid(uid)
    except KeyError:
        return False
    return group.gr_name == owner.pw_name and not [m for m in group.gr_mem if m != owner.pw_name]


def _user(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _group(gid: int) -> str:
    try:
        return f"{grp.getgrgid(gid).gr_name} (gid {gid})"
    except KeyError:
        return f"gid {gid}"


def _declared_safe(folder: Path) -> bool:
    listed = [p for p in os.environ.get(SAFE_ENV, "").split(os.pathsep) if p]
    return "*" in listed or any(Path(p).resolve() == folder for p in listed)


def _project_at_or_above(folder: Path) -> Path | None:
    """The first ``pyproject.toml`` with ``[tool.numbakern]`` at or above ``folder`` (read as data, nothing
    imported; an unreadable one counts as none)."""
    for above in (folder, *folder.parents):
        file = above / PYPROJECT
        try:
            if file.is_file() and file.stat().st_size < (1 << 20) and _read(file)[0] is not None:
                return file
        except (OSError, ProjectError):
            continue
    return None


def library(out_dir: str | os.PathLike = DEFAULT_OUT, arch: str = DEFAULT_ARCH) -> Project:
    """numbakern's own kernels as a project (``registry.KERNEL_MODULES``, output in ``out_dir``)."""
    out = Path(out_dir).resolve()
    return Project(root=out.parent, pyproject=None, name="numbakern", kernel_modules=tuple(registry.KERNEL_MODULES),
                   out_dir=out, arch=arch, include_library=True)


def _read(file: Path) -> tuple[dict[str, Any] | None, str]:
    try:
        with open(file, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ProjectError(f"{file}: not valid TOML: {e}") from None
    table = data.get("tool", {}).get("numbakern")
    name = str(data.get("project", {}).get("name") or file.parent.name)
    if table is not None and not isinstance(table, dict):
        raise ProjectError(f"{file}: [{TABLE}] must be a table")
    return table, name


def _from_table(file: Path, table: dict[str, Any], name: str) -> Project:
    where = f"[{TABLE}] in {file}"
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise ProjectError(f"{where}: unknown key(s) {', '.join(unknown)}; the keys are {', '.join(KEYS)}")
    for key, kind in KEYS.items():
        if key in table and not isinstance(table[key], kind):
            raise ProjectError(f"{where}: '{key}' must be a {kind.__name__}, got {type(table[key]).__name__} "
                               f"{table[key]!r}")
    modules = tuple(table.get("kernels", ()))
    bad = [m for m in modules if not isinstance(m, str) or not all(p.isidentifier() for p in m.split("."))]
    if bad:
        raise ProjectError(f"{where}: 'kernels' must list module names such as \"mypackage.kernels\", got {bad}")
    include_library = table.get("include-library", False)
    if not modules and not include_library:
        raise ProjectError(f"{where}: 'kernels' must list the modules that declare your kernels "
                           "(e.g. kernels = [\"mypackage.kernels\"])")
    arch = table.get("arch", DEFAULT_ARCH)
    if not ARCH_PATTERN.match(arch):
        raise ProjectError(f"{where}: 'arch' must look like \"sm_90\", got {arch!r}")
    root = file.parent
    out = Path(table.get("out", DEFAULT_OUT))
    return Project(root=root, pyproject=file, name=name, kernel_modules=modules,
                   out_dir=(out if out.is_absolute() else root / out).resolve(), arch=arch,
                   include_library=include_library)
