"""Side-by-side timing of flagship matmul configs (and, optionally, an older flagship) against cuBLAS and Triton.

For choosing the default config and the autotuner's candidates: checks every config on odd shapes against a
float64 product first, then times each at the benchmark sizes (CUDA events, TF32 off) and prints a table last.

    python scripts/perf_flagship_variants.py --out DIR [--baseline FILE.py] [--budget-s 0.3]
        [--configs JSON] [--with-c] [--no-triton] [--baseline-configs JSON]

``--baseline`` names a Python file with a ``matmul_flagship(bm, bn, bk, tm, tn)`` factory (an earlier version of
the kernel, e.g. extracted with ``git show``, or ``scripts/perf_flagship_unrolled.py``), timed with the default config
(or ``--baseline-configs``) as "baseline". ``--with-c`` also times the hand CUDA C translation of each config
(``bench_matmul.CUDA_C`` through NVRTC).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "variants_out"))
    ap.add_argument("--baseline", default=None)
    ap.add_argument("--budget-s", type=float, default=0.3)
    ap.add_argument("--sizes", default="4096x4096x4096,5120x256x5120,1024x1024x1024,2048x2048x2048,8192x8192x8192")
    ap.add_argument("--configs", default=None, help="JSON list of flagship configs (default: the autotuner's)")
    ap.add_argument("--with-c", action="store_true", help="also time the hand CUDA C translation of each config")
    ap.add_argument("--no-triton", action="store_true")
    ap.add_argument("--baseline-configs", default=None, help="JSON list of configs for --baseline (default: the default)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",")]

    import torch
    from numba import cuda

    import bench_matmul as bm
    import numbakern.kernels.matmul  # noqa: F401  (import order: matmul imports matmul_fast)
    from numbakern.kernels import matmul_fast as mf

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    dev = torch.cuda.get_device_name(0)
    log = bm.log
    log(f"device: {dev}")

    def numba_variant(factory, config):
        def make(a, b, o, h, k, w):
            A, B, O = (cuda.as_cuda_array(x) for x in (a, b, o))
            cfg = mf.flagship_launch(config, h, w)
            kern = factory(**config)
            return lambda: kern[cfg.grid, cfg.block](A, B, O)
        return make

    configs = json.loads(args.configs) if args.configs else list(mf.CONFIGS)
    variants = []
    for c in configs:
        variants.append(("new {bm}x{bn}x{bk}/{tm}x{tn}".format(**c), numba_variant(mf.matmul_flagship, c)))
    if args.with_c:  # the hand translation (bench_matmul.CUDA_C) of the same configs, through NVRTC
        import cupy as cp
        import numpy as np

        names = ["matmul_flagship_c<{bm},{bn},{bk},{tm},{tn}>".format(**c) for c in configs]
        module = cp.RawModule(code=bm.CUDA_C, options=("-std=c++17",), name_expressions=names)

        def c_variant(fn, config):
            def make(a, b, o, h, k, w):
                cfg = mf.flagship_launch(config, h, w)
                argt = (np.uint64(a.data_ptr()), np.int64(h), np.int64(k), np.uint64(b.data_ptr()), np.int64(k),
                        np.int64(w), np.uint64(o.data_ptr()), np.int64(h), np.int64(w))
                return lambda: fn(cfg.grid, cfg.block, argt)
            return make
        for c, n in zip(configs, names):
            fn = module.get_function(n)
            log(f"{n}: {getattr(fn, 'num_regs', '?')} registers, {getattr(fn, 'local_size_bytes', '?')} bytes local")
            variants.append(("C {bm}x{bn}x{bk}/{tm}x{tn}".format(**c), c_variant(fn, c)))
    if args.baseline:
        spec = importlib.util.spec_from_file_location("flagship_baseline", args.baseline)
        base = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(base)
        for c in (json.loads(args.baseline_configs) if args.baseline_configs else [mf.DEFAULT_CONFIG]):
            variants.append(("baseline {bm}x{bn}x{bk}/{tm}x{tn}".format(**c), numba_variant(base.matmul_flagship, c)))
    tri = None if args.no_triton else bm.triton_variant()
    if tri is not None:
        variants.append(("triton", tri))
    variants.append(("cublas", lambda a, b, o, h, k, w: (lambda: torch.matmul(a, b, out=o))))

    g = torch.Generator(device="cuda").manual_seed(3)
    bad = 0
    for (h, k, w) in bm.CHECK_SIZES + [(1024, 1024, 1024), (1000, 777, 1031)]:
        a = torch.randn(h, k, device="cuda", generator=g)
        b = torch.randn(k, w, device="cuda", generator=g)
        ref = a.double() @ b.double()
        for name, make in variants:
            o = torch.full((h, w), float("nan"), device="cuda")
            make(a, b, o, h, k, w)()
            torch.cuda.synchronize()
            err = (torch.linalg.norm(o.double() - ref) / max(torch.linalg.norm(ref).item(), 1e-30)).item()
            if not err < 1e-5:
                bad += 1
                log(f"CHECK FAIL {name} {h}x{k}x{w}: rel err {err}")
    log(f"correctness: {bad} failures")

    res = {}
    for (h, k, w) in sizes:
        a = torch.randn(h, k, device="cuda", generator=g)
        b = torch.randn(k, w, device="cuda", generator=g)
        for name, make in variants:
            o = torch.empty((h, w), device="cuda")
            run = make(a, b, o, h, k, w)
            run()
            torch.cuda.synchronize()
            ms = bm.time_it(run, args.budget_s)
            res[(name, (h, k, w))] = ms
            log(f"  {h}x{k}x{w} {name:<28} {ms:8.3f} ms {2e-9 * h * k * w / ms:8.1f} TFLOP/s")
    with open(os.path.join(args.out, "variants.json"), "w") as f:
        json.dump({"device": dev, "correctness_failures": bad,
                   "ms": {f"{n}|{h}x{k}x{w}": v for (n, (h, k, w)), v in res.items()}}, f, indent=1)
    log(f"## flagship variants, {dev}; ms (% of cuBLAS)")
    log("| variant | " + " | ".join(f"{h}x{k}x{w}" for h, k, w in sizes) + " |")
    for name, _ in variants:
        cells = [f"{res[(name, s)]:.3f} ({100 * res[('cublas', s)] / res[(name, s)]:.0f}%)" for s in sizes]
        log(f"| {name} | " + " | ".join(cells) + " |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
