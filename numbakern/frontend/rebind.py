"""Modules written for numba-cuda, loaded with numba-cuda-mlir's ``cuda`` instead (an environment without numba).

The two front ends share one ``cuda`` API, so a kernel module differs only in where ``cuda`` comes from. In an
environment with numba-cuda-mlir and no numba-cuda, ``install()`` makes the named packages' modules (numbakern's
own kernel library, and any listed in ``NUMBAKERN_MLIR_MODULES``, comma separated) import it from
``numba_cuda_mlir``: the line ``from numba import cuda`` is read as ``from numba_cuda_mlir import cuda`` and
nothing else changes. Where numba-cuda is installed nothing is rebound, unless ``NUMBAKERN_FRONTEND=numba-cuda-mlir``
asks for it.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import re
import sys

from .choice import mlir_installed, numba_cuda_installed

MODULES_ENV = "NUMBAKERN_MLIR_MODULES"
LIBRARY = ("numbakern.kernels",)
_IMPORT = re.compile(rb"^from numba import cuda$", re.MULTILINE)
MLIR_IMPORT = b"from numba_cuda_mlir import cuda"


def rebound_packages() -> tuple[str, ...]:
    extra = [p.strip() for p in os.environ.get(MODULES_ENV, "").split(",") if p.strip()]
    return LIBRARY + tuple(extra)


def rewrite(source: bytes) -> bytes:
    return _IMPORT.sub(MLIR_IMPORT, source)


class _Loader(importlib.machinery.SourceFileLoader):
    def get_data(self, path):
        data = super().get_data(path)
        return rewrite(data) if path.endswith(".py") else data

    def get_code(self, fullname):
        # always from the (rewritten) source: the module's cached bytecode was compiled from the file as it is
        return self.source_to_code(self.get_data(self.path), self.path)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if not any(fullname == p or fullname.startswith(p + ".") for p in rebound_packages()):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.origin is None or not isinstance(spec.loader, importlib.machinery.SourceFileLoader):
            return spec
        spec.loader = _Loader(fullname, spec.origin)
        return spec


_finder = _Finder()


#: ``numba-cuda-mlir`` rebinds the listed packages even where numba-cuda is installed (to compare the front ends)
FRONTEND_ENV = "NUMBAKERN_FRONTEND"


def needed() -> bool:
    if not mlir_installed():
        return False
    return not numba_cuda_installed() or os.environ.get(FRONTEND_ENV, "").strip() == "numba-cuda-mlir"


def install() -> bool:
    """Rebind the listed packages if this environment has numba-cuda-mlir only; returns whether it does."""
    if not needed():
        return False
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
    return True
