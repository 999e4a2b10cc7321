"""numba-cuda-mlir's own front end, typing only, on a machine without a driver (the helper process, where
numba-cuda-mlir is the typer: ``typer``).

``compile_typed`` runs numba-cuda-mlir's compiler pipeline (its ``get_compiler_class``, the passes a launch on a
GPU runs) up to its MLIR backend and stops there: bytecode to IR, its own inlining of small device functions, its
type inference (``MLIRTypeInference``), the rewrites and IR legalisation after it. What that leaves is what
numba-cuda's compile result holds at lowering (typemap, calltypes, the typed IR), in numba-cuda-mlir's copy of
numba's IR and types, so ``facts``, ``decompile`` and ``rejections`` read it unchanged. A kernel numba-cuda-mlir's
typing rejects raises its error here.

What a compile would ask a GPU machine, answered here (``mlir_target_active``): the current device's compute
capability (``numba_cuda_mlir.tools._cached_cc``, the value its dispatcher caches from the driver), and the typing
registries its target loads on first use (``mlir_target.ensure_initialized()``). A device function the pipeline does
not inline is typed on the same path (its dispatcher's device-callee compile is answered by ``compile_typed``), so
nothing is lowered: MLIR lowering asks NVRTC for the toolkit version, which a machine without CUDA may not have.
What typing alone does not see: a construct numba-cuda-mlir types and then cannot lower (its lowering's refusal is
the GPU's error, not the simulator's), and a cooperative launch, which its lowering records; the latter is read off
the types here (a ``GridGroup`` value: ``cuda.cg.this_grid()``).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from typing import Any

from .typed_result import typing_only

_lock = threading.RLock()

#: numba-cuda-mlir's modules that ``compile_typed`` runs (0.6's layout)
STAGES = ("numba_cuda_mlir.mlir_compiler", "numba_cuda_mlir.descriptor", "numba_cuda_mlir.tools",
          "numba_cuda_mlir.numba_cuda.core.typeinfer", "numba_cuda_mlir.numba_cuda.core.compiler_machinery")


@functools.cache
def missing_stages() -> str | None:
    """Why numba-cuda-mlir's typing cannot run here (a version without the modules it is run from), or None."""
    import importlib.util

    try:
        missing = [m for m in STAGES if importlib.util.find_spec(m) is None]
    except (ImportError, ValueError) as e:
        return f"numba-cuda-mlir's typing stages cannot be found ({e})"
    return f"this numba-cuda-mlir has no {', '.join(missing)} to type kernels with" if missing else None


@contextlib.contextmanager
def mlir_target_active(cc):
    """numba-cuda-mlir's target active for typing, its device lookup answered with ``cc``, device callees typed
    only (``compile_typed``)."""
    from numba_cuda_mlir import tools as mlir_tools
    from numba_cuda_mlir.descriptor import MLIRDispatcher, mlir_target
    from numba_cuda_mlir.lowering_utilities import context as mlir_ctx
    from numba_cuda_mlir.numba_cuda.core.target_extension import target_override

    with _lock:
        mlir_target.ensure_initialized()  # its typing registries (`bool`, `len`, the operators...)
        tools: Any = mlir_tools  # (its module attributes are set at run time)
        saved_cc, saved_callee = tools._cached_cc, MLIRDispatcher.__dict__["_compile_device_callee"]
        if saved_cc is None:
            tools._cached_cc = tuple(cc)
        MLIRDispatcher._compile_device_callee = _typed_device_callee
        try:
            with target_override("numba_cuda_mlir"), mlir_ctx.get_context():
                yield
        finally:
            tools._cached_cc = saved_cc
            MLIRDispatcher._compile_device_callee = saved_callee


def _typed_device_callee(self, sig, abi_name=None):
    """``MLIRDispatcher._compile_device_callee`` (a device function the kernel calls and the pipeline did not
    inline), typed only: its result stands in its dispatcher's overloads, as the compiled one would."""
    from numba_cuda_mlir.numba_cuda.core import sigutils
    from numba_cuda_mlir.tools import resolve_target_options

    argtypes, return_type = sigutils.normalize_signature(sig)
    found = self.overloads.get(argtypes)
    if found is None:
        options = resolve_target_options(dict(self.targetoptions))
        found = self.overloads[argtypes] = compile_typed(self.py_func, argtypes, return_type,
                                                         targetoptions=options)
    return found


def compile_typed(pyfunc, argtypes: tuple, return_type=None, cc=None, targetoptions: dict | None = None):
    """numba-cuda-mlir's typing of ``pyfunc`` for ``argtypes`` (``return_type`` None: inferred, as for a device
    function), under ``mlir_target_active``: a ``TypedFunction``; raises numba-cuda-mlir's error if it rejects the
    function."""
    from numba_cuda_mlir.ast_transforms import apply_ast_transforms
    from numba_cuda_mlir.descriptor import mlir_target
    from numba_cuda_mlir.memory_management.config import is_nrt_enabled
    from numba_cuda_mlir.numba_cuda.compiler import compile_extra
    from numba_cuda_mlir.numba_cuda.core.options import ParallelOptions
    from numba_cuda_mlir.numba_cuda.flags import CUDAFlags

    options = dict(targetoptions or {})
    if cc is not None:
        options["chip"] = f"sm_{cc[0]}{cc[1]}"
    pyfunc, _ = apply_ast_transforms(pyfunc, options, argtypes)
    # the flags numba-cuda-mlir's own compile_mlir sets
    flags = CUDAFlags()
    flags.no_compile = flags.no_cpython_wrapper = flags.no_cfunc_wrapper = True
    flags.nrt = is_nrt_enabled()
    flags.auto_parallel = ParallelOptions(options.get("parallel", False))
    flags.nvvm_options = {}
    flags.dbg_directives_only = options.get("lineinfo", False)
    flags.debuginfo = options.get("debug", False) or flags.dbg_directives_only
    flags.error_model = "python"
    return compile_extra(mlir_target.typing_context, mlir_target.target_context, pyfunc, args=tuple(argtypes),
                         return_type=return_type, flags=flags, locals={},
                         pipeline_class=_typing_pipeline(options))


def _typing_pipeline(options: dict):
    """numba-cuda-mlir's compiler class for these target options, its passes up to (not including) its MLIR
    backend, then one that makes the ``TypedFunction``."""
    from numba_cuda_mlir.mlir_compiler import MLIRBackend, get_compiler_class
    from numba_cuda_mlir.numba_cuda.core import compiler_machinery
    from numba_cuda_mlir.numba_cuda.types import GridGroup

    return typing_only(get_compiler_class(options), MLIRBackend, compiler_machinery, GridGroup, "numba-cuda-mlir")
