"""Numba's real CUDA target, made ready for typing without a GPU: the one place that chooses the compute capability
kernels are typed for and answers numba's questions about the device.

``cuda_typing`` is what every use of numba's compiler or typing context in this package runs under (the helper's
typing of a kernel for the simulator, the translator's typing and its operator queries, ``translate``'s import of a
module with device functions compiled for a signature). Only a process with numba's real CUDA target uses it: one
in simulator mode asks the helper process (``client``).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from . import typer

#: the compute capability kernels are typed and lowered for (typing does not depend on it for the supported
#: constructs)
TYPING_CC = (9, 0)


@contextlib.contextmanager
def cuda_typing(cc=TYPING_CC):
    """Numba's CUDA target active, the current-device lookup answered without a driver (typing a call to a
    ``@cuda.jit(device=True)`` function makes numba ask the device for its compute capability), and numba's
    front-end DEBUG logging off. Where numba-cuda-mlir is the typer: its target, answered likewise
    (``mlir_typing.mlir_target_active``)."""
    if typer.is_mlir():
        from .mlir_typing import mlir_target_active

        with mlir_target_active(cc):
            yield
        return
    # numba is imported when typing starts: importing this package must not choose numba's CUDA mode
    from numba.cuda import dispatcher, utils

    class _Device:
        compute_capability = cc

    module: Any = dispatcher  # (its attributes are set at run time)
    saved = getattr(module, "get_current_device", None)  # None under the simulator (NUMBA_ENABLE_CUDASIM)
    if saved is not None:
        module.get_current_device = lambda: _Device()
    try:
        with _debug_logging_off(), utils.numba_target_override():
            yield
    finally:
        if saved is not None:
            module.get_current_device = saved


@contextlib.contextmanager
def _debug_logging_off():
    # numba-cuda 0.30's _lazy_pformat passes numba core's `lazy_func` keyword on to pprint.pformat, so its front end
    # raises TypeError whenever DEBUG logging is enabled for it (e.g. a root logger at DEBUG): keep it at INFO here.
    logger = logging.getLogger("numba.cuda.core")
    if logger.getEffectiveLevel() >= logging.INFO:  # DEBUG is off already (setLevel would clear logging's caches)
        yield
        return
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.setLevel(level)


def typing_context():
    """Numba's CUDA typing context (one per process; numba-cuda's: the translator's)."""
    # numba's real CUDA target, only once typing starts (see cuda_typing)
    from numba.cuda.descriptor import cuda_target

    return cuda_target.typing_context
