"""``cuda.threadfence()``, ``cuda.threadfence_block()`` and ``cuda.threadfence_system()`` on numba-cuda-mlir 0.6,
which types them but has no lowering for them ("NotImplemented lowering call to ...stubs.threadfence"): a memory
barrier at GPU, block or system scope (``nvvm.memory.barrier``, PTX ``membar.gl`` / ``membar.cta`` /
``membar.sys``, what numba-cuda emits for them). Registered only where numba-cuda-mlir has no lowering of its own,
so a version that adds one keeps it."""

from __future__ import annotations

from numba_cuda_mlir._mlir.dialects import nvvm
from numba_cuda_mlir.numba_cuda import stubs

from .support import extending, signature, types

SCOPES = {
    stubs.threadfence: nvvm.MemScopeKind.GPU,
    stubs.threadfence_block: nvvm.MemScopeKind.CTA,
    stubs.threadfence_system: nvvm.MemScopeKind.SYS,
}


def _lowered(stub) -> bool:
    from numba_cuda_mlir.descriptor import mlir_target

    try:
        mlir_target.target_context.get_function(stub, signature(types.none))
    except NotImplementedError:
        return False
    return True


def register() -> None:
    for stub, scope in SCOPES.items():
        if not _lowered(stub):
            extending.lowering_registry.lower(stub)(
                lambda builder, target, args, kwargs, scope=scope: nvvm.memory_barrier(scope))
