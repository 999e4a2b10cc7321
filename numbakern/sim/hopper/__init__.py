"""Hopper's asynchronous machine in the simulator: mbarriers, the bulk tensor copy engine (TMA), warpgroup MMA
(wgmma), named barriers and setmaxnreg, with the checkers of asynchronous pipelines.

A kernel's call of one of ``numbakern.mma.hopper``'s instructions runs, in the simulator, the model registered on
its Op (``models``, registered when this package is imported: ``import numbakern`` in simulator mode and numbakern's
pytest plugin import it) on the running launch. The state of a block's machine and the order its checks read are in
``state``; the copies in ``tma``; the MMAs in ``wgmma``; operand layouts in ``layout``; shared-memory addresses in
``window``.
"""

from __future__ import annotations

from . import models
from .state import AsyncHazardError, SwizzleMismatchError

models.register()

__all__ = ["AsyncHazardError", "SwizzleMismatchError"]
