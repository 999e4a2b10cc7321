#!/usr/bin/env python
"""Where ``matmul_3xtf32``'s Hopper path (Bᵀ, the tf32 split, the wgmma product) overtakes its mma.sync kernel, by
shape, on a GPU of compute capability 9.0: the measurements behind ``matmul_3xtf32.wgmma_pays``.

    python scripts/tf32x3_crossover.py

Per shape: each path's median time per call (``numbakern.bench.do_bench``: CUDA events, warm-up, back-to-back
calls, so a path's host time counts where it exceeds its GPU time), their ratio and ``wgmma_pays``'s choice; then
each path's host time per call at 5120×256×5120. Prints the device and date first. Exit status 2 without such a GPU.
"""

from __future__ import annotations

import time

import benchkit  # this script's folder

TOOL = "tf32x3_crossover.py"
SHAPES = [(5120, 256, 5120), (4096, 256, 4096), (4096, 512, 4096), (4096, 1024, 4096), (4096, 2048, 4096),
          (1024, 1024, 1024), (2048, 2048, 2048), (1024, 4096, 1024), (512, 8192, 512), (8192, 1024, 8192),
          (4096, 4096, 4096)]


def main() -> int:
    torch = benchkit.require_gpu(TOOL)
    if torch.cuda.get_device_capability() != (9, 0):
        raise benchkit.NoGPU(TOOL, "needs a GPU of compute capability 9.0 (the wgmma path)")
    from numbakern.bench import do_bench
    from numbakern.kernels.matmul_3xtf32 import matmul_3xtf32, wgmma_pays

    print(f"{benchkit.device_line(torch)}, {benchkit.today()}")
    print("| h×k×w | wgmma path (ms) | mma.sync (ms) | ratio | wgmma_pays |")
    print("|---|---:|---:|---:|---|")
    gen = torch.Generator(device="cuda").manual_seed(0)
    for h, k, w in SHAPES:
        a = torch.rand(h, k, device="cuda", generator=gen)
        b = torch.rand(k, w, device="cuda", generator=gen)
        out = torch.empty(h, w, device="cuda")
        wgmma, mma = (do_bench(lambda a=a, b=b, out=out, kernel=kernel: matmul_3xtf32(a, b, out, kernel=kernel), 0.6)
                      for kernel in ("wgmma", "pipelined"))
        print(f"| {h}×{k}×{w} | {wgmma:.3f} | {mma:.3f} | {wgmma / mma:.2f} | {wgmma_pays(h, k, w)} |", flush=True)
    h, k, w = 5120, 256, 5120
    a, b = torch.rand(h, k, device="cuda"), torch.rand(k, w, device="cuda")
    out = torch.empty(h, w, device="cuda")
    for kernel in ("wgmma", "pipelined"):
        matmul_3xtf32(a, b, out, kernel=kernel)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(50):
            matmul_3xtf32(a, b, out, kernel=kernel)
        host = (time.perf_counter() - start) / 50
        torch.cuda.synchronize()
        print(f"host time per call at {h}×{k}×{w}, {kernel}: {host * 1e3:.3f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
