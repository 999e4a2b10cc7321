"""numba-cuda-mlir places a dynamic shared array over a static one: a minimal reproduction (numba-cuda-mlir and numpy
only; no numbakern), for its issue tracker.

    python scripts/mlir_shared_memory_repro.py          # on a machine with a GPU
    python scripts/mlir_shared_memory_repro.py --ptx    # also print the kernel's shared-memory declarations

One block of 32 threads; thread t stores -1 in ``static[t]`` (a 32-float static shared array), then, after a
barrier, ``t`` in ``dynamic[t]`` (a dynamic shared array of 32 floats: 128 bytes at launch); after a second barrier
it reads both back. Expected: ``static`` all -1, ``dynamic`` 0..31. Exit status 0 when that is what the GPU
returns, 1 when not (docs/frontends.md has the analysis: the dynamic array is declared as a one-byte static
``.shared`` variable instead of an ``.extern .shared`` array).
"""

from __future__ import annotations

import argparse
import re
import sys

import numpy as np
from numba_cuda_mlir import cuda

THREADS = 32


@cuda.jit
def static_then_dynamic(out):
    static = cuda.shared.array(THREADS, np.float32)
    dynamic = cuda.shared.array(0, np.float32)
    t = cuda.threadIdx.x
    static[t] = np.float32(-1)
    cuda.syncthreads()
    dynamic[t] = np.float32(t)
    cuda.syncthreads()
    out[0, t] = static[t]
    out[1, t] = dynamic[t]


def run() -> tuple[np.ndarray, np.ndarray]:
    """``(expected, actual)``: rows ``static`` and ``dynamic`` as the kernel reads them back."""
    out = np.full((2, THREADS), np.nan, np.float32)
    static_then_dynamic[1, THREADS, 0, THREADS * 4](out)
    expected = np.stack([np.full(THREADS, -1, np.float32), np.arange(THREADS, dtype=np.float32)])
    return expected, out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ptx", action="store_true", help="print the PTX's shared-memory declarations")
    args = parser.parse_args(argv)
    import numba_cuda_mlir

    expected, out = run()
    print(f"numba-cuda-mlir {numba_cuda_mlir.__version__}, device {cuda.get_current_device().name}")
    for row, name in enumerate(("static ", "dynamic")):
        print(f"{name} expected {expected[row].astype(int).tolist()}")
        print(f"{name} actual   {out[row].astype(int).tolist() if np.all(np.isfinite(out[row])) else out[row]}")
    if args.ptx:
        ptx, _ = cuda.compile_ptx(static_then_dynamic.py_func, "void(float32[:, ::1])")
        for line in ptx.splitlines():
            if re.search(r"\.shared\b", line) and not line.lstrip().startswith(("ld.", "st.", "//")):
                print("ptx:", line.strip())
    ok = bool(np.array_equal(out, expected))
    print("OK: the arrays are apart" if ok else "WRONG: the static array reads the dynamic array's data")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
