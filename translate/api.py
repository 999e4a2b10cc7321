"""translate's Python entry points: the same work as the ``translate`` command, from any process.

    from translate.api import translate_kernel, check
    result = translate_kernel("matmul_tiled")       # -> TranslationResult, written into the project's folder
    problems = check()                              # -> [] when every file of the project is current

They read the project of the current folder (``[tool.numbakern]`` in a ``pyproject.toml`` here or above; else
numbakern's own library) exactly as the ``translate`` command does (``translate.project_kernels``), and raise the
documented exception types, in this process or through the helper process below.

Translation needs numba's real CUDA front end (no GPU). A process that imported numba in simulator mode (the test
suite on a machine without a GPU) has only the simulator, so here, and only here, the work goes to the front end's
helper process (``translate.remote``); results and errors come back the same either way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from numbakern import mode

from . import remote
from .request import JSONValue, TranslateOptions, TranslationResult

#: compile-time constants: one value, or a list of values (one launcher each)
Constants = Mapping[str, int | float | bool | Sequence[int | float | bool]]


def translate_kernel(target: str, signature: str | None = None, constants: Constants | None = None,
                     backend: str = "ast", out_dir: str | None = None, arch: str | None = None, write: bool = True,
                     backend_options: Mapping[str, JSONValue] | None = None, force: bool = False,
                     verify: bool = False, project_dir: str | None = None) -> TranslationResult:
    """Translate one kernel and, with ``write``, write ``out_dir/<name>.cu`` and its manifest entry — what
    ``translate KERNEL`` does in ``project_dir`` (default: the current folder). ``target``: a kernel name (inside a
    project, the project's kernel of that name), ``package.module:kernel`` or ``path/file.py:kernel``; ``out_dir``
    and ``arch`` default to the project's (``[tool.numbakern] out`` and ``arch``; outside a project numbakern's
    library, ``generated_cuda`` and ``sm_90``).

    ``constants``: compile-time constants, one value or a list (one launcher each). ``backend_options`` are plain
    JSON values for the backend (the llm backend: model, base_url, max_turns, timeout, max_retries; its key comes
    from the environment only). ``verify``: the backend verifies its candidates on the GPU (the llm backend's repair
    loop). A file verified on a GPU is not replaced by different, unverified C for the same kernel source unless
    ``force``.

    Raises ``TranslationError`` (located), ``CompileError``, ``manifest.ManifestError``,
    ``project_kernels.UnknownKernel`` (a ``KeyError``: no kernel of that name) or ``numbakern.project.ProjectError``
    (a ``ValueError``: an unusable ``[tool.numbakern]``)."""
    project_dir = os.path.abspath(project_dir or os.getcwd())
    if mode.in_simulator():
        return TranslationResult(**remote.call(
            "translate_kernel", target=target, signature=signature, constants=_constant_lists(constants),
            backend=backend, out_dir=out_dir and os.path.abspath(out_dir), arch=arch, write=write,
            backend_options=dict(backend_options or {}), force=force, verify=verify, project_dir=project_dir))
    from . import project_kernels  # numba's CUDA target: a simulator-mode process must not import it (above)

    return project_kernels.translate_kernel(
        target, signature=signature, constants=_constant_lists(constants), backend=backend, out_dir=out_dir,
        arch=arch, write=write, backend_options=dict(backend_options or {}), force=force, verify=verify,
        project_dir=project_dir)


def translate(target: str, *, signature: str | None = None, constants: Constants | None = None,
              opts: TranslateOptions, out_dir: str | None) -> TranslationResult:
    """``translate_kernel`` of a target already named as translate resolves it (``project_kernels.target_for``),
    with the options made already (the ``translate`` command makes them once)."""
    constants = _constant_lists(constants)
    if mode.in_simulator():
        result = remote.call("translate", target=target, signature=signature, constants=constants,
                             opts=opts.to_json(), out_dir=out_dir and os.path.abspath(out_dir))
        return TranslationResult(**result)
    from . import pipeline  # numba's CUDA target: a simulator-mode process must not import it (above)

    return pipeline.translate(target, signature=signature, constants=constants, opts=opts, out_dir=out_dir)


def check(out_dir: str | None = None, registry: bool | None = None, expected: Sequence[str] | None = None,
          project_dir: str | None = None) -> list[dict]:
    """``translate --check`` in ``project_dir`` (default: the current folder): a list of ``{"file", "problem",
    "detail"}`` for ``out_dir`` (default: the project's folder), empty when every file is current.

    The project's own folder must hold a file for each of the project's kernels (numbakern's library's folder: for
    each library kernel); another folder is checked for the files its manifest lists. ``expected`` (registry names
    or ``module:kernel`` targets) and ``registry`` (every library kernel must have a file) override that. Only the
    kernel modules of the project are imported, whatever the manifest names. Raises ``manifest.ManifestError``."""
    project_dir = os.path.abspath(project_dir or os.getcwd())
    if mode.in_simulator():
        return remote.call("check", out_dir=out_dir and os.path.abspath(out_dir), library_kernels=registry,
                           expected=None if expected is None else list(expected), project_dir=project_dir)
    from . import project_kernels  # the kernels' modules under numba's CUDA target (see translate_kernel)

    return project_kernels.check(out_dir=out_dir, library_kernels=registry, expected=expected, project_dir=project_dir)


def _constant_lists(constants: Constants | None) -> dict[str, list]:
    return {k: (list(v) if isinstance(v, (list, tuple)) else [v]) for k, v in (constants or {}).items()}
