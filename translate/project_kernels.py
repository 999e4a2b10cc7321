"""Which kernels a project means: the one place the ``translate`` command and ``translate.api`` ask.

A name means the same to both: a bare name inside a user's project is the project's kernel of that name (never a
library kernel of the same name), else a library kernel; ``module:kernel`` and ``path/file.py:kernel`` are
themselves. The project's kernel modules are imported as ``translate`` imports a kernel's module (a kernel that
compiles at import records its signature instead: there may be no GPU). Importing numbakern's kernel library costs
seconds, so it happens only for a project that includes it or for a name only the library can mean.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import sys
import traceback

from numbakern import registry
from numbakern.project import Project

from .errors import UnknownKernel
from .targets import recording_signatures

__all__ = ["UnknownKernel", "expected_in", "import_failure", "prune", "specs", "target_for", "target_name",
           "targets_of"]


def specs(project: Project) -> list:
    """The project's kernels (``Project.specs``), their modules imported as translate imports a kernel's module."""
    with recording_signatures():
        return project.specs()


def target_name(spec) -> str:
    """What ``translate`` resolves to ``spec``'s kernel: a library kernel by its registry name, a user's where its
    module binds it (``module:kernel``)."""
    if spec.namespace == registry.LIBRARY:
        return spec.name
    return registry.kernel_target(spec) or spec.qualified_name


def targets_of(project: Project) -> list[str]:
    """Every kernel of the project (``--all``), as translate names them."""
    return [target_name(spec) for spec in specs(project)]


def target_for(project: Project, name: str) -> str:
    """What ``name`` means in ``project``: the project's own kernel for a bare name it declares, else ``name``;
    ``UnknownKernel`` for a bare name nobody declares."""
    if ":" in name:
        return name
    if not project.is_library:
        for spec in specs(project):
            if spec.name == name:
                return target_name(spec)
    try:
        registry.get(name)
    except registry.AmbiguousKernelName:
        return name  # the translation's own error names both
    except KeyError:
        raise UnknownKernel(unknown_kernel_message(name, project)) from None
    if not (project.is_library or project.include_library):
        # the project's tools work on the project's kernels: its folder holds nothing its --check cannot check
        raise UnknownKernel(f"'{name}' is a kernel of numbakern's library, which project {project.name} does not "
                            f"include (include-library = false in {project.pyproject}): set include-library = true "
                            "to translate library kernels in this project")
    return name


def unknown_kernel_message(name: str, project: Project) -> str:
    known = sorted({s.name for s in registry.all_specs()} |
                   ({s.name for s in specs(project)} if not project.is_library else set()))
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
    where = "numbakern's library" if project.is_library else f"project {project.name} or numbakern's library"
    quoted = [repr(c) for c in close]
    hint = f"; did you mean {' or '.join(filter(None, (', '.join(quoted[:-1]), quoted[-1])))}?" if close else ""
    return f"no kernel named {name!r} in {where}{hint} (translate --list shows them)"


def import_failure(project: Project, e: BaseException) -> str:
    """One line for a kernel module of ``project`` that failed to import: the project, the error, and the line of
    the project's own file where it happened."""
    root = str(project.root) + os.sep
    mine = [f for f in traceback.extract_tb(e.__traceback__) if f.filename.startswith(root)]
    where = f" at {os.path.relpath(mine[-1].filename)}:{mine[-1].lineno}" if mine else ""
    return f"importing the kernels of {project.pyproject or 'numbakern'} failed{where}: {type(e).__name__}: {e}"


def expected_in(project: Project, out_dir: str) -> tuple[list[str], bool]:
    """What ``translate --check`` of ``out_dir`` expects there: ``(targets, library)``. The project's own folder must
    hold a file for each of its kernels (the library's folder: each library kernel, ``library`` True); any other
    folder is checked for the files its manifest lists."""
    own = os.path.realpath(out_dir) == os.path.realpath(project.out_dir)
    if not own:
        return [], False
    if project.is_library:
        return [spec.name for spec in registry.all_specs()], True
    return targets_of(project), False


def translate_kernel(target: str, *, signature, constants: dict, backend: str, out_dir: str | None, arch: str | None,
                     write: bool, backend_options: dict, force: bool, verify: bool, project_dir: str):
    """``translate.api.translate_kernel`` in a process with numba's real CUDA target (this one, or its helper)."""
    from numbakern import project as projects

    from . import pipeline  # the spine, which imports every stage: only for a translation
    from .request import TranslateOptions

    project = projects.find(project_dir)
    opts = TranslateOptions(backend=backend, backend_options=backend_options, arch=arch or project.arch,
                            verify=verify, force=force)
    out = (out_dir if out_dir is not None else str(project.out_dir)) if write else None
    return pipeline.translate(target_for(project, target), signature=signature, constants=constants, opts=opts,
                              out_dir=out)


def prune(project: Project, out_dir: str) -> tuple[list[dict], list[dict]]:
    """``translate --prune``: remove from ``out_dir`` the files and entries of kernels that no longer exist in
    ``project`` (``translate.check.gone``). A file that a kernel of the project writes now is never removed, whatever
    its entry says (the entry is data: one could name a kernel that is gone for a file that is not). Returns
    ``(removed, kept)``, as ``gone`` lists them."""
    from . import check as freshness  # the spine's check: only for a prune
    from . import manifest  # (with it)

    found = freshness.gone(out_dir, project)  # (file targets are relative to the current folder, as translate wrote)
    current = files_of_kernels(project)
    kept = [g for g in found if g["file"] in current]
    removed = set(manifest.remove(out_dir, [g["file"] for g in found if g["file"] not in current]))
    return [g for g in found if g["file"] in removed], kept


def files_of_kernels(project: Project) -> set[str]:
    """The file names the project's kernels write: its declared kernels' (and the library's, if it includes it),
    and those of every ``@cuda.jit`` kernel its kernel modules bind, declared or not."""
    found = specs(project)
    names = {f"{spec.name}.cu" for spec in found}
    names |= {f"{getattr(spec.kernel, 'py_func', spec.kernel).__name__}.cu" for spec in found}
    for module in list(sys.modules.values()):
        if not any(getattr(module, "__name__", "") == m or getattr(module, "__name__", "").startswith(m + ".")
                   for m in project.kernel_modules):
            continue
        for value in vars(module).values():
            function = getattr(value, "py_func", None)
            if function is not None and not (getattr(value, "targetoptions", None) or {}).get("device"):
                names.add(f"{getattr(function, '__name__', '')}.cu")
    return names


def check(*, out_dir: str | None, library_kernels: bool | None, expected, project_dir: str) -> list[dict]:
    """``translate.api.check`` (its ``registry`` is ``library_kernels``) in a process with numba's real CUDA target
    (this one, or its helper)."""
    from numbakern import project as projects

    from . import check as freshness  # the spine's check: only for a check

    project = projects.find(project_dir)
    out = os.path.abspath(out_dir) if out_dir is not None else str(project.out_dir)
    found, library = expected_in(project, out)
    wanted = list(expected) if expected is not None else (found if not library else [])
    if library_kernels if library_kernels is not None else library:
        wanted += [spec.name for spec in registry.all_specs()]
    # a manifest's file targets (my_kernel.py:scale) are relative to the folder translate ran in: the project's
    with contextlib.chdir(project_dir):
        return freshness.check(out, wanted, project)
