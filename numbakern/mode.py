"""Which CUDA target numba will use: the simulator or a real GPU.

The simulator is chosen by ``NUMBA_ENABLE_CUDASIM=1``, and numba reads that variable once, when ``numba.cuda`` is
first imported. This module answers questions about the mode without importing numba, so that the pytest plugin
can still choose the mode before anything else imports numba.
"""

from __future__ import annotations

import functools
import os
import sys

SIM_ENV = "NUMBA_ENABLE_CUDASIM"


def sim_requested() -> bool:
    """True when the environment asks numba for the simulator."""
    return os.environ.get(SIM_ENV, "0").strip() not in ("", "0")


@functools.cache
def gpu_available() -> bool:
    """True when a CUDA driver reports at least one device.

    Asks the driver through cuda-bindings (a dependency of numba-cuda) rather than numba, which would fix the mode.
    """
    try:
        from cuda.bindings import driver
    except ImportError:
        return False
    try:
        (err,) = driver.cuInit(0)
        if err != driver.CUresult.CUDA_SUCCESS:
            return False
        err, count = driver.cuDeviceGetCount()
        return err == driver.CUresult.CUDA_SUCCESS and count > 0
    except Exception:  # no libcuda.so at all
        return False


def numba_cuda_imported() -> bool:
    return "numba.cuda" in sys.modules


def in_simulator() -> bool:
    """True when kernels launched from this process run in the simulator.

    Once numba.cuda is imported its own config is the truth; before that, the environment decides.
    """
    if numba_cuda_imported():
        from numba.cuda.core import config

        return bool(config.ENABLE_CUDASIM)
    return sim_requested()
