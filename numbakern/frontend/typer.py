"""Which copy of numba-cuda's front end types kernels here, and its modules.

numba-cuda's own (``numba.cuda``) where numba-cuda is installed; else the copy numba-cuda-mlir carries of it
(``numba_cuda_mlir.numba_cuda``: the same typing, IR and types, under another package), run by numba-cuda-mlir's
own compiler passes up to its type inference (``mlir_typing``). Everything in this package that reads numba's IR
or types takes its modules from here, so the same facts, decompiled Python and rejections come from either.

One choice per environment, not per kernel: with both front ends installed numba-cuda types numba-cuda-mlir kernels
too (``mlir_view``), as it always has. Nothing here imports either package until a module is asked for.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

from .choice import NUMBA_CUDA, NUMBA_CUDA_MLIR, mlir_installed, numba_cuda_installed

#: the package that holds numba-cuda's front end, per typer
ROOTS = {NUMBA_CUDA: "numba.cuda", NUMBA_CUDA_MLIR: "numba_cuda_mlir.numba_cuda"}
#: the ``cuda`` module a device function is rebuilt with in the helper, per typer
CUDA = {NUMBA_CUDA: ("numba", "cuda"), NUMBA_CUDA_MLIR: ("numba_cuda_mlir", "cuda")}


@functools.cache
def name() -> str | None:
    """``"numba-cuda"``, ``"numba-cuda-mlir"`` (installed without numba-cuda), or None (neither)."""
    if numba_cuda_installed():
        return NUMBA_CUDA
    if mlir_installed():
        return NUMBA_CUDA_MLIR
    return None


def is_mlir() -> bool:
    return name() == NUMBA_CUDA_MLIR


def module(path: str = "") -> Any:
    """The typer's module ``path`` (``"core.ir"``, ``"types"``, ``"typing.typeof"``...), or its root package (its
    attributes are set at run time: Any to the type checker)."""
    root = ROOTS[_installed()]
    return importlib.import_module(f"{root}.{path}" if path else root)


def cuda_module() -> Any:
    """The ``cuda`` module whose ``jit`` the typer compiles with."""
    return importlib.import_module(".".join(CUDA[_installed()]))


def _installed() -> str:
    found = name()
    if found is None:
        raise ImportError("neither numba-cuda nor numba-cuda-mlir is installed: nothing can type a kernel")
    return found


def version() -> str:
    """The typer's name and version, for cache keys."""
    if is_mlir():
        from numba_cuda_mlir import __version__
    else:
        from numba_cuda import __version__
    return f"{name()} {__version__}"
