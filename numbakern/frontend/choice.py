"""The two front ends a kernel can be written against, and which of them this environment has.

- ``numba-cuda`` (``from numba import cuda``): numba's CUDA target; numbakern's simulator builds on its simulator
  mode, and its compiler types kernels for the simulator and for ``translate``.
- ``numba-cuda-mlir`` (``from numba_cuda_mlir import cuda``): the same ``cuda`` API compiled through MLIR. It has no
  simulator: numbakern's simulator runs its kernels itself (``numbakern.sim.mlirsim``), in an environment that may
  have no numba at all.

Nothing here imports either package: asking which ones are installed must not fix numba's CUDA mode.
"""

from __future__ import annotations

import importlib.util
import sys

NUMBA_CUDA = "numba-cuda"
NUMBA_CUDA_MLIR = "numba-cuda-mlir"
#: the module a kernel imports ``cuda`` from, per front end
CUDA_MODULES = {NUMBA_CUDA: "numba.cuda", NUMBA_CUDA_MLIR: "numba_cuda_mlir.cuda"}


def _installed(top_level: str) -> bool:
    try:
        return importlib.util.find_spec(top_level) is not None
    except (ImportError, ValueError):
        return False


def numba_cuda_installed() -> bool:
    """numba-cuda is importable (its distribution's own top-level package, so numba itself is not imported)."""
    return _installed("numba_cuda")


def mlir_installed() -> bool:
    return _installed("numba_cuda_mlir")


def installed() -> list[str]:
    """The front ends this environment can import, numba-cuda first."""
    return [name for name, present in ((NUMBA_CUDA, numba_cuda_installed()), (NUMBA_CUDA_MLIR, mlir_installed()))
            if present]


def loaded_cuda_modules() -> list:
    """The ``cuda`` modules of the front ends this process has imported (a kernel's ``cuda`` global is one)."""
    return [sys.modules[name] for name in CUDA_MODULES.values() if name in sys.modules]


def is_mlir_kernel(kernel) -> bool:
    """A kernel object of numba-cuda-mlir: its own dispatcher, or numbakern's simulated one."""
    module = type(kernel).__module__
    return module.startswith("numba_cuda_mlir.") or module == "numbakern.sim.mlirsim"


def cuda_module_of(kernel):
    """The ``cuda`` module of the front end a kernel object belongs to (its host API: ``to_device``...)."""
    import importlib

    return importlib.import_module(CUDA_MODULES[NUMBA_CUDA_MLIR if is_mlir_kernel(kernel) else NUMBA_CUDA])


#: the ``cuda.jit`` options a rebuilt numba-cuda-mlir kernel keeps (its dispatcher holds many more, with defaults)
MLIR_JIT_OPTIONS = ("device", "debug", "fastmath", "lineinfo", "opt", "max_registers", "launch_bounds")


def mlir_rejit(kernel, pyfunc):
    """A numba-cuda-mlir dispatcher for ``pyfunc`` with ``kernel``'s options (an unrolled kernel's rebuild)."""
    from numba_cuda_mlir import cuda

    options = getattr(kernel, "targetoptions", None) or {}
    return cuda.jit(**{k: options[k] for k in MLIR_JIT_OPTIONS if options.get(k) not in (None, False)})(pyfunc)
