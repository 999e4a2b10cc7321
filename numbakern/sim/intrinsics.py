"""Python stand-ins for GPU intrinsics (``numbakern.mma`` in simulator mode), and what the simulator does with them.

A stand-in is registered with ``stands_for``:

- the front end compiles the intrinsic itself where the kernel calls the stand-in (``cudasim.recognize`` sends the
  helper process ``module.name`` instead of the Python function), so typing sees the intrinsic's real signature;
- the checkers report the array accesses a stand-in makes on the kernel's behalf at the kernel's line that called
  it (``errors.site_of`` skips the frames of the files in ``HELPER_FILES``).
"""

from __future__ import annotations

#: the attribute naming the GPU intrinsic a stand-in simulates: ``(module, name)``
INTRINSIC_ATTR = "__numbakern_intrinsic__"

#: source files of stand-ins: their frames are never the kernel's line
HELPER_FILES: set[str] = set()


def stands_for(module: str, name: str, filename: str):
    """Register a function as the simulator's stand-in for ``module.name`` on a GPU, defined in ``filename``."""
    HELPER_FILES.add(filename)

    def register(fn):
        setattr(fn, INTRINSIC_ATTR, (module, name))
        return fn

    return register
