"""Which front end's adapter answers the engine's questions about a kernel object and its arguments.

``cudasim`` for numba-cuda's simulator kernels, ``mlirsim`` for numba-cuda-mlir's; each is imported only when a
kernel of its front end shows up, so an environment without numba runs without ever importing it.
"""

from __future__ import annotations

import sys

from ..frontend.choice import loaded_cuda_modules

_MLIRSIM = __package__ + ".mlirsim"


def adapter_of(kernel):
    """The adapter module (``cudasim`` or ``mlirsim``) for a kernel or device-function object."""
    if type(kernel).__module__ == _MLIRSIM:
        from . import mlirsim

        return mlirsim
    from . import cudasim

    return cudasim


def cuda_modules() -> list:
    """The ``cuda`` modules a running kernel's globals may hold, which the engine's module stands in for, and the
    packages they belong to (``import numba as nb`` ... ``nb.cuda.grid(1)``): the engine's module stands in for
    those too (its ``cuda`` is itself)."""
    modules = loaded_cuda_modules()
    packages = [sys.modules.get(m.__name__.rpartition(".")[0]) for m in modules]
    return modules + [p for p in packages if p is not None]


def device_function(obj):
    """``(python function, options)`` for a device-function object of either front end, else None."""
    if type(obj).__module__ == _MLIRSIM:
        from . import mlirsim

        return mlirsim.device_function(obj)
    if "numba.cuda" in sys.modules:
        from . import cudasim

        return cudasim.device_function(obj)
    return None
