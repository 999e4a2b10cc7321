"""numbakern: author CUDA kernels in Python with Numba, test them in a fast checking simulator, ship them as CUDA C.

Importing numbakern chooses where kernels run (``switch.select``): on a machine without a GPU, and unless
``NUMBA_ENABLE_CUDASIM`` says otherwise, a plain script's ``@cuda.jit`` launches run in numbakern's simulator, even
when ``from numba import cuda`` came first. In simulator mode the import installs numbakern's simulator engine.
"""

from __future__ import annotations

from . import mode, switch

# before anything below can import numba: the target must be chosen first
switch.select()

from ._version import __version__ as __version__
from .compare import Comparison, compare
from .declare import RandomInputs, declare
from .launch import (
    LaunchConfig,
    array_info,
    cdiv,
    check_array,
    check_matmul_shapes,
    check_same_device,
    dynamic_shared_bytes,
    grid_for,
    launch_config,
    to_kernel_arg,
)
from .profiler import profile
from .registry import Case, KernelSpec, Work, all_specs, get, project_specs, register, run_case
from .specialize import constants_of, specialize

if mode.in_simulator():
    from . import sim

    sim.install()

# with numba-cuda-mlir and no numba-cuda, the kernel library takes its `cuda` from numba-cuda-mlir
from .frontend import rebind as _rebind

_rebind.install()

# numba-cuda-mlir 0.6 types cuda.threadfence() and its kin but has no lowering for them: numbakern adds one
from . import mlir_lowering as _mlir_lowering

_mlir_lowering.register("fences")

__all__ = [
    "Case", "Comparison", "KernelSpec", "LaunchConfig", "RandomInputs", "Work", "all_specs", "array_info", "cdiv",
    "check_array", "check_matmul_shapes", "check_same_device", "compare", "constants_of", "declare",
    "dynamic_shared_bytes", "get", "grid_for", "launch_config", "profile", "project_specs", "register", "run_case",
    "specialize", "to_kernel_arg",
]
