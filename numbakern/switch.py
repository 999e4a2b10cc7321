"""Putting a process whose ``numba.cuda`` was already imported for the real GPU onto the simulator.

numba reads ``NUMBA_ENABLE_CUDASIM`` once, when ``numba.cuda`` is first imported, and isort puts
``from numba import cuda`` before ``from numbakern import ...``. So on a machine without a GPU, ``import numbakern``
often finds numba.cuda already set up for a GPU that is not there. ``to_simulator`` switches it in place: the
config is re-read and ``numba.cuda`` (and its simulator package, which points numba's submodule names at the
simulator's) re-executed in the *same* module objects, so the ``cuda`` a script already holds now has the
simulator's ``jit``, ``shared``, ``to_device`` and so on. Kernels decorated after the switch are simulator kernels.

Kernels decorated *before* it (a module that defines kernels without importing numbakern, imported first) are
real ``CUDADispatcher`` objects. Their launches (``k[grid, block](...)``, ``k.configure(...)``, ``k.forall(n)``)
and device-function calls are sent to a simulator kernel made from the same Python function, once per dispatcher.

``select`` is what ``import numbakern`` does: it chooses the target for the process (see ``numbakern.mode``).

``explain_driver_errors`` covers the real target when it fails: the user forced it (``NUMBA_ENABLE_CUDASIM=0``) on
a machine with no CUDA driver, or a driver is installed but has no usable device. numba's ``CudaSupportError`` then
carries a note naming the fix.
"""

from __future__ import annotations

import importlib
import os
import sys

from . import mode

#: the attribute under which a real dispatcher keeps the simulator kernel its launches go to
SIMULATED_ATTR = "_numbakern_simulated"
#: set on numba's CUDADispatcher class once its launches are redirected
REDIRECTED_ATTR = "_numbakern_redirected"
#: set on numba's Driver class once its errors carry numbakern's note
NOTED_ATTR = "_numbakern_noted"

#: the note on numba's driver errors: the user forced the real target / numbakern chose it because of the driver
FORCED_NOTE = (
    f"numbakern: {mode.SIM_ENV}=0 in the environment forces numba's real GPU target, and this machine has no "
    f"usable CUDA driver. Unset {mode.SIM_ENV} (numbakern then runs kernels in its simulator when there is no GPU) "
    "or run on a machine with an NVIDIA GPU."
)
CHOSEN_NOTE = (
    "numbakern: a CUDA driver library is installed, so kernels run on the GPU, but numba cannot use it (no device, "
    f"or a driver older than the CUDA it needs). Set {mode.SIM_ENV}=1 to run them in numbakern's simulator."
)


def to_simulator() -> None:
    """Switch an already imported ``numba.cuda`` from the real target to the simulator (idempotent)."""
    from numba.cuda.core import config

    if config.ENABLE_CUDASIM:
        return
    real_dispatcher = getattr(sys.modules.get("numba.cuda.dispatcher"), "CUDADispatcher", None)
    os.environ[mode.SIM_ENV] = "1"
    config.reload_config()
    if not config.ENABLE_CUDASIM:  # reload_config re-reads only when the environment changed; make sure
        config.ENABLE_CUDASIM = 1
    import numba.cuda
    import numba.cuda.simulator

    importlib.reload(numba.cuda.simulator)  # re-points numba.cuda.cudadrv, .dispatcher, ... at the simulator's
    importlib.reload(numba.cuda)
    if real_dispatcher is not None:
        _redirect_launches(real_dispatcher)


def _simulated(dispatcher):
    """The simulator kernel that stands in for a real dispatcher (made once, kept on the dispatcher)."""
    kernel = dispatcher.__dict__.get(SIMULATED_ATTR)
    if kernel is None:
        from numba.cuda.simulator.kernel import FakeCUDAKernel

        options = dispatcher.targetoptions
        kernel = FakeCUDAKernel(
            dispatcher.py_func,
            device=bool(options.get("device", False)),
            fastmath=bool(options.get("fastmath", False)),
            extensions=options.get("extensions") or (),
            debug=bool(options.get("debug", False)),
        )
        dispatcher.__dict__[SIMULATED_ATTR] = kernel
    return kernel


def _redirect_launches(dispatcher_class) -> None:
    if getattr(dispatcher_class, REDIRECTED_ATTR, False):
        return

    def __getitem__(self, launch):
        return _simulated(self)[launch]

    def configure(self, griddim, blockdim, stream=0, sharedmem=0):
        return _simulated(self)[griddim, blockdim, stream, sharedmem]

    def forall(self, ntasks, tpb=0, stream=0, sharedmem=0):
        return _simulated(self).forall(ntasks, tpb, stream, sharedmem)

    def __call__(self, *args, **kwargs):
        # a device function called from a simulated kernel (a kernel called unconfigured fails there as in numba)
        return _simulated(self)(*args, **kwargs)

    dispatcher_class.__getitem__ = __getitem__
    dispatcher_class.configure = configure
    dispatcher_class.forall = forall
    dispatcher_class.__call__ = __call__
    setattr(dispatcher_class, REDIRECTED_ATTR, True)


def explain_driver_errors(forced: bool) -> None:
    """Add ``FORCED_NOTE`` (``forced``) or ``CHOSEN_NOTE`` to numba's ``CudaSupportError`` when the CUDA driver
    cannot be used (idempotent)."""
    from .frontend import rebind
    from .frontend.choice import numba_cuda_installed

    if not numba_cuda_installed():
        return  # numba-cuda-mlir only: its own driver errors stand
    if rebind.needed() and "numba" not in sys.modules:
        # the kernels run on numba-cuda-mlir (NUMBAKERN_FRONTEND): importing numba here, only to annotate an error
        # it would never raise, would load a second CUDA target into a process that does not use it
        return
    from numba.cuda.cudadrv import driver
    from numba.cuda.cudadrv.error import CudaSupportError

    cls = driver.Driver
    if getattr(cls, NOTED_ATTR, False):
        return
    note = FORCED_NOTE if forced else CHOSEN_NOTE
    plain_getattr = cls.__getattr__

    def __getattr__(self, name):
        try:
            return plain_getattr(self, name)
        except CudaSupportError as e:
            if note not in getattr(e, "__notes__", ()):
                e.add_note(note)
            raise

    cls.__getattr__ = __getattr__
    setattr(cls, NOTED_ATTR, True)


def select() -> str:
    """Choose the CUDA target for this process, as ``import numbakern`` does; returns which one and why.

    - ``NUMBA_ENABLE_CUDASIM`` set by the user: respected (``=1`` also switches a numba.cuda already imported for
      the GPU; ``=0`` on a machine with no driver makes numba's driver error name the fix);
    - unset, with a CUDA driver (and ``CUDA_VISIBLE_DEVICES`` not hiding every device): the GPU, nothing changed,
      CUDA not initialised here; should the driver turn out unusable, numba's error names the fix;
    - unset, without one: the simulator, switching an already imported numba.cuda in place, and ``mode.SCRIPT_NOTE``
      once on stderr.
    """
    if mode.under_pytest():
        return "chosen by the pytest plugin"
    if mode.sim_forbidden():
        explain_driver_errors(forced=True)
        return "GPU (NUMBA_ENABLE_CUDASIM=0)"
    if mode.sim_requested():
        if mode.numba_cuda_imported() and not mode.in_simulator():
            to_simulator()
        return "simulator (NUMBA_ENABLE_CUDASIM=1)"
    if mode.driver_library_found() and not mode.devices_hidden():
        explain_driver_errors(forced=False)
        return "GPU"
    os.environ[mode.SIM_ENV] = "1"
    if mode.numba_cuda_imported():
        to_simulator()
    sys.stderr.write(mode.SCRIPT_NOTE + "\n")
    return "simulator (no GPU found)"
