"""The seam between numbakern's declared instructions (``numbakern.intrinsics``) and the running simulator.

A call of an instruction's function in a simulated kernel runs ``dispatch``, which the simulator installs
(``numbakern.sim.instructions``): the model registered on the instruction's Op, with the running launch and the
kernel's frame.

- The front end compiles the instruction itself where the kernel calls its function (``cudasim.recognize`` sends
  the helper process ``module.name``, the attribute ``INTRINSIC_ATTR``), so typing sees its real signature.
- The checkers report the array accesses a model makes on the kernel's behalf at the kernel's line that called it
  (``errors.site_of`` skips the frames of the files in ``HELPER_FILES``).
- A profiler is told what an asynchronous instruction touches when it is issued (``observe``), and the accesses
  that carry it out later are not counted again (``landing``).
"""

from __future__ import annotations

import contextlib
import sys

#: the attribute naming the GPU intrinsic a stand-in simulates: ``(module, name)``
INTRINSIC_ATTR = "__numbakern_intrinsic__"

#: source files of stand-ins: their frames are never the kernel's line
HELPER_FILES: set[str] = set()

#: where the engine keeps the launch running now (it installs itself: stand-ins, which the kernel library imports
#: before any simulator exists, reach the running launch through this seam, not through an import of the engine)
_launch_source = None


def install_launch_source(source) -> None:
    """The engine's ``() -> the running launch or None``."""
    global _launch_source
    _launch_source = source


def active_launch():
    """The simulated launch running now; None outside a kernel (or with no engine installed)."""
    return _launch_source() if _launch_source is not None else None


def dispatch(op, frame, args):
    """A kernel calls ``op``'s function: run the simulator's model of it (``model(launch, frame, *args)``)."""
    model = op.emitters.get("sim")
    if model is None:
        raise NotImplementedError(f"{op.qualname}: the simulator has no model of this instruction; kernels using it "
                                  "run on a GPU only")
    return model(active_launch(), frame, *args)


#: the profiler's recorder while a profiled launch runs (``numbakern.profiler``), else None: told what an
#: instruction touches when it does not touch it there and then (``cp.async`` lands at a later wait)
_observer = None


def install_observer(observer):
    """Make ``observer`` (``issue(instruction, accesses, frame)``, ``land(bool)``) the one told of instructions, or
    None; returns the one before."""
    global _observer
    previous, _observer = _observer, observer
    return previous


def observe(instruction: str, accesses, frame=None) -> None:
    """The running lane issues ``instruction`` (``"cp.async"``), which touches ``accesses``: ``(array, index, bytes,
    "ld" | "st")`` per side (index None and 0 bytes: the lane takes part and moves nothing)."""
    if _observer is not None:
        _observer.issue(instruction, accesses, frame if frame is not None else sys._getframe(1))


@contextlib.contextmanager
def landing():
    """The accesses inside carry out instructions already observed when issued: not counted again."""
    if _observer is None:
        yield
        return
    observer = _observer
    observer.land(True)
    try:
        yield
    finally:
        observer.land(False)


HELPER_FILES.add(__file__)  # dispatch's frame is never the kernel's line
