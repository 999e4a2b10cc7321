"""numbakern's intrinsics on numba-cuda-mlir: the objects a kernel calls (``vload4``, ``copy_async4``,
``numbakern.mma``'s functions, ``unroll``...), typed and lowered by numba-cuda-mlir, so that one kernel source
compiles on both front ends.

Each intrinsic module (``numbakern.vector_io``, ``numbakern.async_copy``, ``numbakern.mma``, ``numbakern.unroll``)
chooses its objects as before (numba-cuda ``@intrinsic``s where numba-cuda compiles kernels, plain Python where it
does not or in the simulator) and hands them to ``register``. On a GPU target, numba-cuda-mlir then learns to type
and lower those same objects through its extension API (``support``): a kernel written against numba-cuda-mlir
calls exactly what a numba-cuda kernel calls. The registration waits until numba-cuda-mlir's ``cuda`` module is
imported, so a process that never uses numba-cuda-mlir never loads it; in the simulator nothing is compiled and
nothing is registered.

One module per family holds the typing checks and the MLIR each call becomes: ``vector_io`` (``llvm.load`` of a
``vector<4xf32>``), ``async_copy`` (``nvvm.cp.async.*``), ``mma`` (``nvvm.mma.sync``, ``nvvm.ldmatrix``, ``cvt``),
``unroll`` (the range itself, where a loop was not expanded); and ``fences``: ``cuda.threadfence()`` and its kin,
which numba-cuda-mlir 0.6 types but cannot lower (``import numbakern`` registers them).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

from .. import mode
from ..frontend.choice import CUDA_MODULES, NUMBA_CUDA_MLIR, mlir_installed

MLIR_CUDA = CUDA_MODULES[NUMBA_CUDA_MLIR]
FAMILIES = ("vector_io", "async_copy", "mma", "hopper", "unroll", "fences")

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
    if MLIR_CUDA in sys.modules:
        _flush()
    elif _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


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


class _AfterImport(importlib.abc.MetaPathFinder):
    """Registers the waiting intrinsics right after ``numba_cuda_mlir.cuda`` is first imported."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != MLIR_CUDA:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_register(module):
            exec_module(module)
            # as the import system does next: numba-cuda-mlir's registries reach the module as an attribute
            parent, _, child = fullname.rpartition(".")
            setattr(sys.modules[parent], child, module)
            _flush()

        spec.loader.exec_module = exec_and_register
        return spec


_finder = _AfterImport()
