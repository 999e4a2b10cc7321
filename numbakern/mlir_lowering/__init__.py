"""numbakern's intrinsics on numba-cuda-mlir: the objects a kernel calls (``vload4``, ``copy_async4``,
``numbakern.mma``'s functions, ``unroll``...), typed and lowered by numba-cuda-mlir, so that one kernel source
compiles on both front ends.

numba-cuda-mlir learns to type and lower the very objects a numba-cuda kernel calls, through its extension API
(``support``). ``register(family)`` waits until numba-cuda-mlir's ``cuda`` module is imported, so a process that
never uses numba-cuda-mlir never loads it; in the simulator nothing is compiled and nothing is registered. The
families: ``instructions`` (every instruction declared in ``numbakern.intrinsics``, from its Op: its typing rule
and its PTX), ``unroll`` (the range itself, where a loop was not expanded) and ``fences``
(``cuda.threadfence()`` and its kin, which numba-cuda-mlir 0.6 types but cannot lower). ``import numbakern``
registers them.
"""

from __future__ import annotations

import importlib
import warnings

from .. import mode
from ..frontend.choice import CUDA_MODULES, NUMBA_CUDA_MLIR, mlir_installed
from ..intrinsics.op import when_imported

MLIR_CUDA = CUDA_MODULES[NUMBA_CUDA_MLIR]
FAMILIES = ("instructions", "unroll", "fences")

#: registrations waiting for numba-cuda-mlir to be imported: (family, objects)
_pending: list[tuple[str, dict]] = []


def register(family: str, **objects) -> None:
    """numba-cuda-mlir types and lowers ``objects`` (keyword: the intrinsic's name) with ``family``'s rules, now if
    its ``cuda`` module is loaded, else once it is; nothing in the simulator or without numba-cuda-mlir."""
    if family not in FAMILIES:
        raise ValueError(f"register: family must be one of {', '.join(FAMILIES)}, got {family!r}")
    if mode.in_simulator() or not mlir_installed():
        return
    _pending.append((family, objects))
    if len(_pending) == 1:
        when_imported(MLIR_CUDA, _flush)


def _flush() -> None:
    if not _pending:
        return
    from numba_cuda_mlir import extending

    while _pending:
        family, objects = _pending.pop(0)
        try:
            importlib.import_module(f"{__name__}.{family}").register(**objects)
        except Exception as e:  # noqa: BLE001 - an extension API that moved must not break importing numba-cuda-mlir
            warnings.warn(f"numbakern: numba-cuda-mlir {_version()} did not take numbakern's {family} intrinsics "
                          f"({type(e).__name__}: {e}); kernels that call them will not compile with it",
                          stacklevel=2)
    extending.refresh_registries()


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("numba-cuda-mlir")
    except metadata.PackageNotFoundError:
        return "(unknown version)"
