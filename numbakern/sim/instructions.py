"""The simulator's side of numbakern's declared instructions: it registers a model on each Op that has one
(``op.register("sim", model)``, ``model(launch, frame, *args)``: ``tensorcore`` and ``memory_ops`` hold them) and
installs ``intrinsics.dispatch`` as what a call of an instruction's function runs in Python. ``install`` is
idempotent; ``numbakern.sim.install`` calls it.

The Hopper instructions (``numbakern.intrinsics.hopper``) get theirs when ``numbakern.sim.hopper`` is imported (a
subpackage built on the simulator's modules, so the entry points import it, beside ``numbakern.sim.install``).
"""

from __future__ import annotations

from ..intrinsics import memory, op, tensorcore
from . import intrinsics, memory_ops
from . import tensorcore as tensorcore_models

_installed = False


def install() -> None:
    global _installed
    if _installed:
        return
    _installed = True
    for mma in tensorcore.MMA.values():
        mma.register("sim", tensorcore_models.mma_model(mma.shape))
    for ldmatrix in tensorcore.LDMATRIX.values():
        ldmatrix.register("sim", tensorcore_models.ldmatrix_model(*ldmatrix.shape))
    for name, model in tensorcore_models.SCALARS.items():
        op.OPS[f"{tensorcore.MODULE}.{name}"].register("sim", model)
    for instruction in memory.OPS:
        instruction.register("sim", memory_ops.MODELS[instruction.name])
    op.on_declare(_compiled_by_name)
    # the frames of an instruction's function and of the models are never the kernel's line
    intrinsics.HELPER_FILES.update({op.FUNCTION_FILE, op.__file__, tensorcore_models.__file__, memory_ops.__file__})
    op.install_simulator(intrinsics.dispatch)


def _compiled_by_name(declared: op.Op) -> None:
    """The front end compiles the instruction itself where a kernel calls its function (``cudasim.recognize``)."""
    if declared.function is not None:
        setattr(declared.function, intrinsics.INTRINSIC_ATTR, (declared.module, declared.name))
