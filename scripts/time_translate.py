"""Time translate + NVRTC compile of one kernel after imports (target: <= 0.5 s). Median of several runs.

    python scripts/time_translate.py [KERNEL] [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ["NUMBA_ENABLE_CUDASIM"] = "0"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("kernel", nargs="?", default="matmul_tiled")
    p.add_argument("--runs", type=int, default=7)
    args = p.parse_args()
    t0 = time.perf_counter()
    from numba import cuda  # noqa: F401

    import numbakern.registry  # noqa: F401  (imports, not timed below)
    from translate.api import translate_kernel

    imports = time.perf_counter() - t0
    times, phases = [], []
    for _ in range(args.runs):
        t = time.perf_counter()
        r = translate_kernel(args.kernel, write=False)
        times.append(time.perf_counter() - t)
        phases.append(r.seconds)
        assert r.compile["ok"]
    med = statistics.median(times)
    print(f"imports: {imports:.2f} s (not counted)")
    print(f"first run (numba/NVRTC warm-up): {times[0]:.3f} s")
    for k in phases[0]:
        print(f"  {k:9s} median {statistics.median(p[k] for p in phases):.3f} s")
    print(f"translate + NVRTC compile of {args.kernel}: median {med:.3f} s over {args.runs} runs "
          f"({'OK' if med <= 0.5 else 'OVER'} the 0.5 s target)")
    return 0 if med <= 0.5 else 1


if __name__ == "__main__":
    sys.exit(main())
