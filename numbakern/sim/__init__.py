"""numbakern's CUDA simulator: a fast engine for numba-cuda's simulator mode (``NUMBA_ENABLE_CUDASIM=1``) that
types every launch with numba-cuda's own front end and computes with Numba's types, with checkers for races,
reads of uninitialised memory, out-of-bounds (and computed negative) indices, divergent barriers and deadlocks, and the
warp intrinsics and cooperative groups the stock simulator lacks.

Importing numbakern in simulator mode calls ``install()``; from then on every ``@cuda.jit`` launch in the process
runs here. See docs/simulator.md.
"""

from __future__ import annotations

import contextlib
import os

from .config import (
    CHECK_NAMES,
    CHECKS_ENV,
    DEADLOCK_ENV,
    ENGINE_ENV,
    SHUFFLE_ENV,
    TYPING_ENV,
    Settings,
    checks,
    configure,
    current,
    deadlock_after,
    shuffled,
    typing,
)
from .errors import (
    BarrierDivergenceError,
    DeadlockError,
    LaunchError,
    MisalignedAccessError,
    OutOfBoundsError,
    RaceError,
    SimulationError,
    TypingError,
    UninitializedReadError,
)

__all__ = [
    "CHECKS_ENV",
    "CHECK_NAMES",
    "DEADLOCK_ENV",
    "ENGINE_ENV",
    "SHUFFLE_ENV",
    "TYPING_ENV",
    "BarrierDivergenceError",
    "DeadlockError",
    "LaunchError",
    "MisalignedAccessError",
    "OutOfBoundsError",
    "RaceError",
    "Settings",
    "SimulationError",
    "TypingError",
    "UninitializedReadError",
    "active_engine",
    "allow_negative_indices",
    "checks",
    "configure",
    "current",
    "deadlock_after",
    "install",
    "shuffled",
    "typing",
    "uninstall",
    "use_engine",
]


def install() -> None:
    """Run every later ``@cuda.jit`` launch in this process on numbakern's engine (idempotent; simulator mode only).

    With ``NUMBAKERN_SIM_ENGINE=stock`` numba-cuda's launches stay on the stock engine (still accepting numpy scalar
    dtypes); numba-cuda-mlir kernels have no other engine than numbakern's.
    """
    from ..frontend.choice import numba_cuda_installed
    from . import engine, stock_patch

    if numba_cuda_installed():
        stock_patch.apply()
    if os.environ.get(ENGINE_ENV, "numbakern").strip().lower() == "stock":
        engine.disable()
    else:
        engine.enable()


def uninstall() -> None:
    """Back to the stock simulator's engine (numpy scalar dtypes keep working there)."""
    from . import engine

    engine.disable()


def active_engine() -> str:
    """``"numbakern"`` or ``"stock"``: which engine launches run on now."""
    from . import engine

    return "numbakern" if engine.enabled() else "stock"


@contextlib.contextmanager
def use_engine(name: str):
    """Context manager: run the enclosed launches on ``"numbakern"``'s engine or the ``"stock"`` one."""
    if name not in ("numbakern", "stock"):
        raise ValueError(f"unknown simulator engine {name!r}; expected 'numbakern' or 'stock'")
    from . import engine as engines

    before = active_engine()
    (engines.enable if name == "numbakern" else engines.disable)()
    try:
        yield
    finally:
        (engines.enable if before == "numbakern" else engines.disable)()


def allow_negative_indices(kernel=None):
    """Opt out of reporting computed negative indices (they then wrap around, as in numpy and Numba; a literal one,
    ``x[-1]``, is never reported).

    ``allow_negative_indices(kernel)`` marks one kernel for all its launches and returns it (usable as a decorator
    above ``@cuda.jit``); ``with allow_negative_indices():`` covers the launches in the block.
    """
    if kernel is None:
        from .config import negative_indices_allowed

        return negative_indices_allowed()
    from .engine import NEGATIVE_OK_ATTR

    setattr(kernel, NEGATIVE_OK_ATTR, True)
    return kernel
