"""Python stand-ins for GPU intrinsics (``numbakern.mma`` in simulator mode), and what the simulator does with them.

A stand-in is registered with ``stands_for``:

- the front end compiles the intrinsic itself where the kernel calls the stand-in (``cudasim.recognize`` sends the
  helper process ``module.name`` instead of the Python function), so typing sees the intrinsic's real signature;
- the checkers report the array accesses a stand-in makes on the kernel's behalf at the kernel's line that called
  it (``errors.site_of`` skips the frames of the files in ``HELPER_FILES``).
"""

from __future__ import annotations

import contextlib
import sys

#: the attribute naming the GPU intrinsic a stand-in simulates: ``(module, name)``
INTRINSIC_ATTR = "__numbakern_intrinsic__"

#: source files of stand-ins: their frames are never the kernel's line
HELPER_FILES: set[str] = set()

#: the profiler's recorder while a profiled launch runs (``numbakern.profiler``), else None: told what a stand-in's
#: instruction touches when the stand-in does not touch it there and then (``cp.async`` lands at a later wait)
_observer = None

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


def stands_for(module: str, name: str, filename: str):
    """Register a function as the simulator's stand-in for ``module.name`` on a GPU, defined in ``filename``."""
    HELPER_FILES.add(filename)

    def register(fn):
        setattr(fn, INTRINSIC_ATTR, (module, name))
        return fn

    return register


def install_observer(observer):
    """Make ``observer`` (``issue(instruction, accesses, frame)``, ``land(bool)``) the one told of instructions, or
    None; returns the one before."""
    global _observer
    previous, _observer = _observer, observer
    return previous


def observe(instruction: str, accesses) -> None:
    """The running lane issues ``instruction`` (``"cp.async"``), which touches ``accesses``: ``(array, index, bytes,
    "ld" | "st")`` per side (index None and 0 bytes: the lane takes part and moves nothing)."""
    if _observer is not None:
        _observer.issue(instruction, accesses, sys._getframe(1))


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
