"""Python stand-ins for GPU intrinsics (``numbakern.mma`` in simulator mode), and what the simulator does with them.

A stand-in is registered with ``stands_for``:

- the front end compiles the intrinsic itself where the kernel calls the stand-in (``cudasim.recognize`` sends the
  helper process ``module.name`` instead of the Python function), so typing sees the intrinsic's real signature;
- the checkers report the array accesses a stand-in makes on the kernel's behalf at the kernel's line that called
  it (``errors.site_of`` skips the frames of the files in ``HELPER_FILES``).
"""

from __future__ import annotations

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


def stands_for(module: str, name: str, filename: str):
    """Register a function as the simulator's stand-in for ``module.name`` on a GPU, defined in ``filename``."""
    HELPER_FILES.add(filename)

    def register(fn):
        setattr(fn, INTRINSIC_ATTR, (module, name))
        return fn

    return register


#: ``(module, name)`` -> the simulator's model of a GPU intrinsic, ``model(launch, frame, *args)``: registered by the
#: simulator stage (``numbakern.sim.hopper``) for the stand-ins ``simulated`` makes
MODELS: dict[tuple[str, str], object] = {}
#: module -> ``factory(name)``: the model of an intrinsic that module makes on demand (one per wgmma shape), or None
MODEL_FACTORIES: dict[str, object] = {}


def register_model(module: str, name: str, model) -> None:
    MODELS[(module, name)] = model


def model_of(module: str, name: str):
    model = MODELS.get((module, name))
    if model is None and module in MODEL_FACTORIES:
        model = MODELS[(module, name)] = MODEL_FACTORIES[module](name)
    return model


def simulated(module: str, name: str):
    """The simulator's stand-in for ``module.name`` on a GPU when its model lives in the simulator stage: a call
    runs ``MODELS[(module, name)]`` on the running launch, with the caller's frame (the kernel's line)."""

    def stand_in(*args):
        launch = active_launch()
        model = model_of(module, name)
        if launch is None or model is None:
            raise RuntimeError(f"{module}.{name}: this intrinsic runs only inside a kernel launched on numbakern's "
                               "simulator engine (not from host code, and not on the stock simulator: "
                               "NUMBAKERN_SIM_ENGINE=stock)")
        return model(launch, sys._getframe(1), *args)

    stand_in.__name__ = stand_in.__qualname__ = name
    stand_in.__module__ = module
    setattr(stand_in, INTRINSIC_ATTR, (module, name))
    return stand_in


HELPER_FILES.add(__file__)  # a stand-in's frame is never the kernel's line
