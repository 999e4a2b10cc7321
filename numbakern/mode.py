"""Which CUDA target numba will use: the simulator or a real GPU.

The simulator is chosen by ``NUMBA_ENABLE_CUDASIM=1``, and numba reads that variable once, when ``numba.cuda`` is
first imported. This module answers questions about the mode without importing numba, so that the pytest plugin
can still choose the mode before anything else imports numba.

``numbakern.switch.select()`` is what ``import numbakern`` does for a script: with ``NUMBA_ENABLE_CUDASIM`` unset,
a machine without a CUDA driver gets the simulator (and one note on stderr), a machine with one keeps the GPU. Under
pytest the plugin chooses.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys

SIM_ENV = "NUMBA_ENABLE_CUDASIM"

#: printed once on stderr when ``switch.select()`` puts a script on the simulator because there is no GPU
SCRIPT_NOTE = (
    f"numbakern: no CUDA GPU here (no CUDA driver, or CUDA_VISIBLE_DEVICES hides every device), so @cuda.jit "
    f"kernels run in numbakern's CUDA simulator "
    f"(NUMBAKERN_SIM_CHECKS=all turns its checkers on; {SIM_ENV}=1 chooses the simulator yourself and silences "
    f"this note)"
)


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


def driver_library_found() -> bool:
    """True when a CUDA driver library loads, looked for where numba-cuda's driver loader looks. Loading it does not
    initialise CUDA (``gpu_available`` does), so a process that forks later is unaffected, as with numba alone."""
    if sys.platform == "win32":
        names = ["nvcuda.dll", os.path.join("\\windows\\system32", "nvcuda.dll")]
    elif sys.platform == "darwin":
        names = ["libcuda.dylib", "/usr/local/cuda/lib/libcuda.dylib"]
    else:
        names = ["libcuda.so", "libcuda.so.1", *(f"{d}/{n}" for d in ("/usr/lib", "/usr/lib64")
                                                  for n in ("libcuda.so", "libcuda.so.1"))]
    for name in names:
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            continue
    return False


def devices_hidden() -> bool:
    """True when ``CUDA_VISIBLE_DEVICES`` hides every device (``""`` or ``-1``)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return visible is not None and (visible.strip() == "" or visible.strip().startswith("-1"))


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


def sim_forbidden() -> bool:
    """True when the environment explicitly asks numba for the real GPU target (``NUMBA_ENABLE_CUDASIM=0``)."""
    return os.environ.get(SIM_ENV, "").strip() == "0"


def under_pytest() -> bool:
    """True inside a running pytest process, where numbakern's plugin chooses the mode (from its own options)."""
    return "PYTEST_VERSION" in os.environ and "_pytest.config" in sys.modules
