"""The front end a kernel's function is written against, and the numba-cuda view of it that ``translate`` types.

numba-cuda and numba-cuda-mlir share one ``cuda`` API and one typing (numba-cuda-mlir carries numba-cuda's type
inference, ``numba_cuda_mlir.numba_cuda``). numba-cuda-mlir's own compile pipeline asks the CUDA driver for the
GPU, so ``translate`` types a numba-cuda-mlir kernel with numba-cuda's front end on the same source: the function
is rebuilt with the same code, constants and closure, its ``cuda`` global bound to ``numba.cuda`` and each
numba-cuda-mlir device function it calls rebuilt the same way as a numba-cuda device function. The generated C is
then the C of the same source written against numba-cuda (tests/mlir/test_translate_mlir.py checks it, kernel by
kernel). The manifest records ``frontend`` for such a file, and ``translate --check`` reports a file whose kernel
moved from one front end to the other.
"""

from __future__ import annotations

import sys
import types as pytypes

from . import closures
from .choice import CUDA_MODULES, NUMBA_CUDA, NUMBA_CUDA_MLIR

MLIR_CUDA = CUDA_MODULES[NUMBA_CUDA_MLIR]


#: a numba-cuda-mlir device function's options that its numba-cuda view keeps (the rest change no generated code)
_INLINING = ("forceinline", "inline")


def _mlir_cuda():
    return sys.modules.get(MLIR_CUDA)


def _mlir_device_function(value):
    """The Python function of a numba-cuda-mlir device function (its dispatcher, or numbakern's simulated one)."""
    cls = type(value)
    if cls.__module__.startswith("numba_cuda_mlir.") and cls.__name__ == "MLIRDispatcher":
        if (getattr(value, "targetoptions", None) or {}).get("device"):
            return value.py_func
    if cls.__module__ == "numbakern.sim.mlirsim" and getattr(value, "_device", False):
        return value.fn
    return None


def frontend_of(pyfunc) -> str:
    """``numba-cuda-mlir`` when the function reads numba-cuda-mlir's ``cuda`` (directly or in a device function it
    calls), else ``numba-cuda``."""
    module = _mlir_cuda()
    if module is None:
        return NUMBA_CUDA
    values = [pyfunc.__globals__.get(name) for name in _global_names(pyfunc.__code__)]
    values += closures.closure_values(pyfunc).values()
    if any(value is module or _mlir_device_function(value) is not None for value in values):
        return NUMBA_CUDA_MLIR
    return NUMBA_CUDA


def numba_cuda_view(pyfunc, _made: dict | None = None):
    """``pyfunc`` itself for a numba-cuda kernel; for a numba-cuda-mlir one, the same function bound to numba-cuda
    (see the module doc)."""
    if not isinstance(pyfunc, pytypes.FunctionType) or frontend_of(pyfunc) == NUMBA_CUDA:
        return pyfunc
    # numba's CUDA target is chosen when numbakern is imported, before this may import numba.cuda
    from numba import cuda

    made = {} if _made is None else _made
    if id(pyfunc) in made:
        return made[id(pyfunc)]
    module = _mlir_cuda()

    def rebound(value):
        if value is module:
            return cuda
        device = _mlir_device_function(value)
        if device is not None:
            # the inlining it asks for goes with it: translate writes a forced inline as __forceinline__
            options = getattr(value, "targetoptions", None) or {}
            inlining = {k: options[k] for k in _INLINING if options.get(k) not in (None, False, "never")}
            return cuda.jit(device=True, **inlining)(numba_cuda_view(device, made))
        return value

    globs = dict(pyfunc.__globals__)
    overrides = {}
    for name, value in closures.closure_values(pyfunc).items():
        new = rebound(value)
        if new is not value:
            overrides[name] = new
    rebuilt = closures.with_closure(pyfunc, overrides, namespace=globs)
    made[id(pyfunc)] = rebuilt
    for name in _global_names(pyfunc.__code__):
        if name in globs:
            globs[name] = rebound(globs[name])
    rebuilt.__kwdefaults__ = pyfunc.__kwdefaults__
    rebuilt.__qualname__ = pyfunc.__qualname__
    rebuilt.__module__ = pyfunc.__module__
    rebuilt.__doc__ = pyfunc.__doc__
    rebuilt.__dict__.update(pyfunc.__dict__)
    return rebuilt


def _global_names(code) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, pytypes.CodeType):
            names |= _global_names(const)
    return names
