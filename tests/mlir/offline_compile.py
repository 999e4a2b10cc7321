"""Compile kernels with numba-cuda-mlir on a machine without a GPU: tests/mlir runs this file as a script and reads
its JSON.

    python tests/mlir/offline_compile.py intrinsics   # tests/mlir/intrinsic_kernels.py, one kernel per intrinsic
    python tests/mlir/offline_compile.py library      # every library kernel, at its first test size's types
    python tests/mlir/offline_compile.py refusals     # calls numba-cuda-mlir must refuse, with numbakern's message

numba-cuda-mlir's compiler runs for real (``NUMBA_ENABLE_CUDASIM=0``: numbakern keeps the GPU target), with two
stand-ins for what it would ask a GPU machine: the current device's compute capability (``tools._cached_cc``, 9.0:
the H100/H200 the library is verified on), and, where NVRTC is missing (an environment with numba-cuda-mlir and no
CUDA toolkit wheels), the toolkit version that chooses the PTX ISA. With libNVVM and libdevice present (numba-cuda's
``[cu13]`` wheels) each kernel goes all the way to PTX, through the same LLVM 7 NVVM path a launch on an sm_90 GPU
takes; without them, to numba-cuda-mlir's MLIR (typing and lowering done, NVVM not). The library is loaded with
numba-cuda-mlir's ``cuda`` (``NUMBAKERN_FRONTEND``), the intrinsics module too (``NUMBAKERN_MLIR_MODULES``).

Prints ``{"output": "ptx" | "mlir", "kernels": {name: {"text": ..., "seconds": ...} | {"error": ...}}}``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CC = (9, 0)

os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
os.environ["NUMBAKERN_FRONTEND"] = "numba-cuda-mlir"
os.environ["NUMBAKERN_MLIR_MODULES"] = "tests.mlir.intrinsic_kernels"
sys.path.insert(0, str(ROOT))


def stand_in_for_the_gpu() -> None:
    import numba_cuda_mlir.tools as tools

    tools._cached_cc = CC
    try:
        tools.get_cuda_runtime_version()
    except Exception:  # noqa: BLE001 - no NVRTC here: the version a CUDA 13.0 toolkit reports
        tools.get_cuda_runtime_version = lambda: (13, 0)


def nvvm_available() -> bool:
    try:
        from numba_cuda_mlir.numba_cuda.cudadrv.nvvm import NVVM, LibDevice

        NVVM()
        LibDevice()
        return True
    except Exception:  # noqa: BLE001 - no libNVVM or libdevice: MLIR only
        return False


def compile_one(kernel, signature, ptx: bool) -> dict:
    from numba_cuda_mlir import cuda

    options = getattr(kernel, "targetoptions", {}) or {}
    start = time.perf_counter()
    try:
        if ptx:
            keep = {k: options[k] for k in ("fastmath", "launch_bounds", "lineinfo") if options.get(k)}
            text = cuda.compile_ptx(kernel.py_func, signature, cc=CC, **keep)[0]
        else:
            text = cuda.compile_mlir(kernel.py_func, signature)
    except Exception as e:  # noqa: BLE001 - numba-cuda-mlir's refusal is this kernel's result
        return {"error": f"{type(e).__name__}: {str(e).strip()}"[:4000]}
    return {"text": text, "seconds": round(time.perf_counter() - start, 2)}


def intrinsic_kernels(ptx: bool, table: str = "KERNELS") -> dict:
    from tests.mlir import intrinsic_kernels

    kernels = getattr(intrinsic_kernels, table)
    return {name: compile_one(kernel, sig, ptx) for name, (kernel, sig) in kernels.items()}


def library_kernels(ptx: bool) -> dict:
    import importlib

    import numpy as np
    from numba_cuda_mlir.numba_cuda.typing.typeof import typeof

    from numbakern import registry
    from numbakern.kernels import collectives

    collectives._device_multiprocessors = lambda: 132  # an H100's, for the launch shapes of grid-filling kernels
    for module in registry.KERNEL_MODULES + registry.PREVIEW_MODULES:
        importlib.import_module(module)
    out = {}
    for name, spec in sorted(registry._REGISTRY.items()):
        try:
            case = spec.make_case(spec.test_sizes[0], np.random.default_rng(20261126), "normal")
            signature = tuple(typeof(a) for a in case.fresh_args())
        except Exception as e:  # noqa: BLE001
            out[name] = {"error": f"making its case: {type(e).__name__}: {e}"[:600]}
            continue
        out[name] = compile_one(spec.kernel, signature, ptx)
    return out


def main(argv: list[str]) -> int:
    which = argv[0] if argv else ""
    if which not in ("intrinsics", "library", "refusals"):
        print("usage: offline_compile.py intrinsics|library|refusals", file=sys.stderr)
        return 2
    import numbakern  # noqa: F401 - first: it keeps the GPU target and rebinds the modules

    stand_in_for_the_gpu()
    ptx = nvvm_available()
    if which == "library":
        kernels = library_kernels(ptx)
    else:
        kernels = intrinsic_kernels(ptx, "KERNELS" if which == "intrinsics" else "REFUSED")
    json.dump({"output": "ptx" if ptx else "mlir", "numba_imported": "numba" in sys.modules, "kernels": kernels},
              sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
