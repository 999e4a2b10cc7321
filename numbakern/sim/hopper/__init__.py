"""Hopper's asynchronous machine in the simulator: mbarriers, the bulk tensor copy engine (TMA), warpgroup MMA
(wgmma), named barriers and setmaxnreg, with the checkers of asynchronous pipelines.

``numbakern.mma.hopper``'s intrinsics are, in simulator mode, stand-ins (``numbakern.sim.intrinsics.simulated``)
that run the models registered here (``models``) on the running launch. The state of a block's machine and the
order its checks read are in ``state``; the copies in ``tma``; the MMAs in ``wgmma``; operand layouts in ``layout``;
shared-memory addresses in ``window``.
"""

from __future__ import annotations

from . import models
from .state import AsyncHazardError, SwizzleMismatchError

models.register()

__all__ = ["AsyncHazardError", "SwizzleMismatchError"]
