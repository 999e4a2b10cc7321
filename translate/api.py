"""translate's Python entry points: the same work as the ``translate`` command, from any process.

    from translate.api import translate_kernel, check
    result = translate_kernel("matmul_tiled", out_dir="generated_cuda")      # -> TranslationResult
    problems = check("generated_cuda")                                      # -> [] when every file is current

Translation needs numba's real CUDA front end (no GPU). A process that imported numba in simulator mode (the test
suite on a machine without a GPU) has only the simulator, so here, and only here, the work goes to the front end's
helper process (``translate.remote``); results and errors come back the same either way.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from numbakern import mode
from numbakern import registry as kernel_registry

from . import remote
from .request import JSONValue, TranslateOptions, TranslationResult

DEFAULT_OUT = "generated_cuda"

#: compile-time constants: one value, or a list of values (one launcher each)
Constants = Mapping[str, int | float | bool | Sequence[int | float | bool]]


def translate_kernel(target: str, signature: str | None = None, constants: Constants | None = None,
                     backend: str = "ast", out_dir: str = DEFAULT_OUT, arch: str = "sm_90", write: bool = True,
                     backend_options: Mapping[str, JSONValue] | None = None, force: bool = False,
                     verify: bool = False) -> TranslationResult:
    """Translate one kernel (a registry name, ``package.module:kernel`` or ``path/file.py:kernel``) and, with
    ``write``, write ``out_dir/<name>.cu`` and its manifest entry. Raises ``TranslationError`` (located),
    ``CompileError`` or ``manifest.ManifestError``.

    ``constants``: compile-time constants, one value or a list (one launcher each). ``backend_options`` are plain
    JSON values for the backend (the llm backend: model, base_url, max_turns, timeout, max_retries; its key comes
    from the environment only). ``verify``: the backend verifies its candidates on the GPU (the llm backend's repair
    loop). A file verified on a GPU is not replaced by different, unverified C for the same kernel source unless
    ``force``."""
    opts = TranslateOptions(backend=backend, backend_options=dict(backend_options or {}), arch=arch, verify=verify,
                            force=force)
    return translate(target, signature=signature, constants=constants, opts=opts, out_dir=out_dir if write else None)


def translate(target: str, *, signature: str | None = None, constants: Constants | None = None,
              opts: TranslateOptions, out_dir: str | None) -> TranslationResult:
    """``translate_kernel`` with the options made already (the ``translate`` command makes them once)."""
    constants = {k: (list(v) if isinstance(v, (list, tuple)) else [v]) for k, v in (constants or {}).items()}
    if mode.in_simulator():
        result = remote.call("translate", target=target, signature=signature, constants=constants,
                             opts=opts.to_json(), out_dir=out_dir and os.path.abspath(out_dir))
        return TranslationResult(**result)
    from . import pipeline  # numba's CUDA target: a simulator-mode process must not import it (above)

    return pipeline.translate(target, signature=signature, constants=constants, opts=opts, out_dir=out_dir)


def check(out_dir: str = DEFAULT_OUT, registry: bool = True, expected: Sequence[str] | None = None,
          project_dir: str | None = None) -> list[dict]:
    """``translate --check``: a list of ``{"file", "problem", "detail"}`` for ``out_dir``, empty when every file is
    current; ``registry``: every registered library kernel must have a file there; ``expected``: these kernels
    must (registry names or ``module:kernel`` targets, a user project's). Only the kernel modules of the project of
    ``project_dir`` (default: the current folder) are imported, whatever the manifest names. Raises
    ``manifest.ManifestError``."""
    expected = list(expected or ()) + ([spec.name for spec in kernel_registry.all_specs()] if registry else [])
    project_dir = os.path.abspath(project_dir or os.getcwd())
    if mode.in_simulator():
        return remote.call("check", out_dir=os.path.abspath(out_dir), expected=expected, project_dir=project_dir)
    from numbakern import project as projects

    from . import check as freshness  # the kernels' modules under numba's CUDA target (see translate_kernel)

    return freshness.check(out_dir, expected, projects.find(project_dir))
