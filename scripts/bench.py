#!/usr/bin/env python
"""Benchmark every registered kernel: the Numba kernel, its translated CUDA C and the torch/cuBLAS equivalent.

    python scripts/bench.py [--out docs/bench] [--kernels matmul_tiled ...] [--budget 0.8]

For each kernel and each of its ``bench_sizes`` (the lecture's 5120×256 @ 256×5120 and 4096³ for the matmuls), the
three implementations run on the same device tensors, timed with CUDA events on the default stream: one warm-up
(which also compiles the Numba kernel), a few more, then the median over repeated samples (each sample a batch of
launches long enough to hide launch overhead; fewer samples for slow kernels, at least 5). fp32 matmuls run with TF32
off. The translated C is the ``.cu`` from ``generated_cuda/`` (the manifest's launcher, built with ``nvcc -shared``
and called through ctypes), or the hand-written fixture in ``tests/verify/defects/`` where none is generated yet
(the ``c source`` column says which). Writes ``bench.csv``, ``bench.md`` and (if matplotlib is installed)
``bench.png`` to ``--out``, and prints the table with the device and the date.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402


def timed(fn, budget_s: float, min_reps: int = 5, max_reps: int = 200) -> tuple[float, int, int]:
    """Median milliseconds per call of ``fn`` (CUDA events on stream 0), the number of samples, launches per sample."""
    from translate.verify import driver

    start, end = driver.Event(), driver.Event()
    fn()
    driver.synchronize()  # warm-up (and JIT compile for Numba)
    start.record(); fn(); end.record()
    est = max(driver.Event.elapsed_ms(start, end), 1e-3)
    for _ in range(min(3, max(1, int(50 / est)))):
        fn()
    driver.synchronize()
    inner = max(1, min(100, int(1.0 / est)))  # batch short kernels to ~1 ms per sample
    reps = max(min_reps, min(max_reps, int(budget_s * 1000 / (est * inner))))
    samples = []
    for _ in range(reps):
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        samples.append(driver.Event.elapsed_ms(start, end) / inner)
    return statistics.median(samples), reps, inner


def torch_equivalent(spec, t, args):
    """The torch/cuBLAS operation a kernel computes, on the same tensors (None when there is none)."""
    import torch

    arrays = [a for a in args if isinstance(a, torch.Tensor)]
    if spec.name == "matmul_flagship_async":  # out = mt.T @ n: cuBLAS takes the transposed operand as it is
        mt, n, out = arrays[:3]
        return lambda: torch.matmul(mt.t(), n, out=out), "torch.matmul of mt.t() (cuBLAS, TF32 off)"
    if spec.family == "matmul":
        m, n, out = arrays[:3]
        return lambda: torch.matmul(m, n, out=out), "torch.matmul (cuBLAS, TF32 off)"
    if spec.name == "vector_add":
        a, b, out = arrays
        return lambda: torch.add(a, b, out=out), "torch.add"
    if spec.family == "reduce":
        return lambda: torch.sum(arrays[0]), "torch.sum"
    if spec.family == "transpose":
        return lambda: arrays[0].t().contiguous(), ".t().contiguous()"
    if spec.family == "attention":
        q, k, v = arrays[:3]
        causal, scale = bool(spec.constants.get("causal")), float(args[4])
        sdpa = torch.nn.functional.scaled_dot_product_attention
        fn = lambda: sdpa(q, k, v, is_causal=causal, scale=scale)  # noqa: E731
        return fn, f"F.scaled_dot_product_attention ({sdpa_kernels(fn)})"
    return None, ""


def sdpa_kernels(fn) -> str:
    """The CUDA kernels one call of ``fn`` launches, from the torch profiler (which SDPA backend ran)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    try:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        names = sorted({e.key for e in prof.key_averages() if e.device_type.name == "CUDA" and e.key}, key=len)
    except Exception as e:  # noqa: BLE001 - a profiler that cannot trace here: say so in the row
        return f"profiler unavailable: {type(e).__name__}"
    return "; ".join(n[:80] for n in names[:4]) or "no CUDA kernel seen"


_TRITON: dict = {}


def extra_impls(spec, tensors, args) -> dict:
    """More implementations timed beside the three: Triton (ieee) for the matmuls (skipped cleanly where Triton is
    not installed), each explicit torch SDPA backend for attention. name -> (zero-arg launch, label)."""
    import torch

    out = {}
    arrays = [a for a in tensors if isinstance(a, torch.Tensor)]
    if spec.family == "matmul" and spec.name != "matmul_flagship_async":
        try:
            import triton  # noqa: F401
        except ImportError:
            return out
        if "triton" not in _TRITON:  # one autotuned Triton kernel for every matmul row
            from scripts.bench_matmul import triton_variant

            _TRITON["triton"] = triton_variant()
        make = _TRITON["triton"]
        if make is not None:
            m, n, o = arrays[:3]
            out["triton"] = (make(m, n, o, m.shape[0], m.shape[1], n.shape[1]), "Triton tl.dot ieee, autotuned")
    if spec.family == "attention":
        from torch.nn.attention import SDPBackend, sdpa_kernel

        q, k, v = arrays[:3]
        causal, scale = bool(spec.constants.get("causal")), float(args[4])
        for backend in (SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH):
            def run(backend=backend):
                with sdpa_kernel(backend):
                    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)
            try:
                run()
            except RuntimeError as e:  # a backend that does not take fp32 / this shape
                print(f"{spec.name}: torch SDPA backend {backend.name} unavailable: {str(e)[:120]}", flush=True)
                continue
            out[f"sdpa_{backend.name.lower()}"] = (run, f"SDPA {backend.name} ({sdpa_kernels(run)})")
    return out


def candidate(spec):
    from translate.verify.cli import candidate_for
    from translate.verify.harness import Candidate

    try:
        return candidate_for(spec, ROOT / "generated_cuda")[1], "generated"
    except Exception:  # noqa: BLE001
        fixture = ROOT / "tests" / "verify" / "defects" / f"{spec.name}.cu"
        launchers = json.loads((fixture.parent / "launchers.json").read_text())
        if fixture.exists() and spec.name in launchers:
            return Candidate(fixture, launchers[spec.name], label=spec.name), "fixture"
    return None, ""


def bench_one(spec, size, budget, arch):
    import ctypes

    import torch
    from numba import cuda

    from translate.verify import abi

    case = spec.make_case(size, np.random.default_rng(0), "uniform")
    tensors = [torch.from_numpy(a).cuda() if isinstance(a, np.ndarray) else a for a in case.args]
    initial = [t.clone() if isinstance(t, torch.Tensor) else None for t in tensors]
    cfg = case.launch
    nargs = [cuda.as_cuda_array(t) if isinstance(t, torch.Tensor) else t for t in tensors]
    numba_kernel = spec.kernel[cfg.grid, cfg.block, 0, cfg.shared_bytes]
    impls = {"numba": lambda: numba_kernel(*nargs)}
    cand, source = candidate(spec)
    if cand is not None:
        fn = abi.bind(ctypes.CDLL(str(cand.build(arch))), cand.launcher)
        carrs = [abi.ArrayArg(t.data_ptr(), tuple(t.shape), np.dtype(str(t.dtype).removeprefix("torch.")))
                 if isinstance(t, torch.Tensor) else t for t in tensors]
        cargs = abi.call_args(cand.launcher, carrs, cfg.grid, cfg.block, cfg.shared_bytes)
        impls["c"] = lambda: fn(*cargs)
    torch_fn, torch_name = torch_equivalent(spec, torch, tensors)
    if torch_fn is not None:
        impls["torch"] = torch_fn
    extras = extra_impls(spec, tensors, case.args)

    # agreement of the C with Numba on this size (outputs reset before each run)
    def reset():
        for i in spec.outputs:
            if i in getattr(spec, "accumulates", ()):
                tensors[i].copy_(initial[i])
            else:
                tensors[i].fill_(float("nan"))

    agree = float("nan")
    if "c" in impls:
        reset(); impls["c"](); torch.cuda.synchronize()
        c_out = {i: tensors[i].double().clone() for i in spec.outputs}
        reset(); impls["numba"](); torch.cuda.synchronize()
        agree = max(float(((c_out[i] - tensors[i].double()).abs().max() / tensors[i].double().abs().max().clamp_min(1e-30)).item())
                    for i in spec.outputs)

    row = {"kernel": spec.name, "size": "×".join(str(v) for v in size.values()), "size_keys": ",".join(size),
           "c_source": source, "torch_op": torch_name}
    work = spec.work(size)
    use_flops = work.flops > 0 and (work.bytes == 0 or work.flops / work.bytes >= 4)
    row["metric"] = "GFLOP/s" if use_flops else "GB/s"
    for name in ("numba", "c", "torch"):
        if name not in impls:
            row[f"{name}_ms"] = row[f"{name}_rate"] = float("nan")
            continue
        ms, reps, inner = timed(impls[name], budget)
        row[f"{name}_ms"] = ms
        row[f"{name}_rate"] = (work.flops if use_flops else work.bytes) / (ms * 1e-3) / 1e9
        row[f"{name}_samples"] = f"{reps}x{inner}"
    for name, (fn, label) in extras.items():
        ms, reps, inner = timed(fn, budget)
        row[f"{name}_ms"] = ms
        row[f"{name}_samples"] = f"{reps}x{inner}"
        row[f"{name}_label"] = label
    row["c_vs_numba"] = row["numba_ms"] / row["c_ms"]
    row["torch_vs_c"] = row["c_ms"] / row["torch_ms"]
    row["torch_vs_numba"] = row["numba_ms"] / row["torch_ms"]
    row["c_numba_max_rel_diff"] = agree
    del tensors, nargs, initial
    torch.cuda.empty_cache()
    return row


def markdown(rows, header: str) -> str:
    lines = [header, "",
             "| kernel | size | unit | Numba | translated C | torch/cuBLAS | C speed-up over Numba | C time / torch time |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        f = lambda ms, rate: "n/a" if ms != ms else f"{ms:.3f} ms ({rate:,.0f})"
        lines.append(f"| {r['kernel']} | {r['size']} | {r['metric']} | {f(r['numba_ms'], r['numba_rate'])} | "
                     f"{f(r['c_ms'], r['c_rate'])} | {f(r['torch_ms'], r['torch_rate'])} | {r['c_vs_numba']:.2f}× | "
                     f"{r['torch_vs_c']:.2f} |")
    extra = [r for r in rows if any(k.endswith("_label") for k in r)]
    if extra:  # Triton beside the matmuls, each torch SDPA backend beside attention (times in ms)
        lines += ["", "| kernel | size | Numba | translated C | torch | other implementations in the same run |",
                  "|---|---|---:|---:|---:|---|"]
        for r in extra:
            others = "; ".join(f"{r[k]}: {r[k[:-6] + '_ms']:.3f}" for k in sorted(r) if k.endswith("_label"))
            lines.append(f"| {r['kernel']} | {r['size']} | {r['numba_ms']:.3f} | {r['c_ms']:.3f} | "
                         f"{r['torch_ms']:.3f} ({r['torch_op']}) | {others} |")
    return "\n".join(lines) + "\n"


def chart(rows, path: Path, title: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    labels = [f"{r['kernel']}\n{r['size']}" for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(8, 1.3 * len(rows)), 5))
    for k, (name, label) in enumerate((("numba", "Numba"), ("c", "translated C"), ("torch", "torch/cuBLAS"))):
        # relative to torch: bars comparable across GFLOP/s and GB/s kernels
        rel = [r[f"{name}_rate"] / r["torch_rate"] if r["torch_rate"] == r["torch_rate"] else float("nan") for r in rows]
        ax.bar(x + (k - 1) * 0.27, rel, 0.27, label=label)
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_ylabel("throughput relative to torch/cuBLAS")
    ax.set_yscale("log")
    ax.set_title(title, fontsize=9)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=str(ROOT / "docs" / "bench"), help="directory for bench.csv/.md/.png")
    parser.add_argument("--kernels", nargs="*", help="registered kernel names (default: all)")
    parser.add_argument("--budget", type=float, default=0.8, help="seconds of timed samples per implementation and size")
    parser.add_argument("--families", nargs="*", help="kernel families (matmul, attention, ...; default: all)")
    args = parser.parse_args(argv)

    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    from numbakern.registry import all_specs, get
    from translate.verify.harness import device_facts

    info = device_facts()
    date = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    header = (f"Measured on {info['device']} (cc {info['compute_capability']}, driver {info['driver']}, CUDA runtime "
              f"{info['runtime']}, torch {torch.__version__}), {date}, with `python scripts/bench.py`; median of CUDA-event "
              "timings, fp32, TF32 off.")
    print(header, flush=True)
    specs = [get(k) for k in args.kernels] if args.kernels else all_specs()
    if args.families:
        specs = [s for s in specs if s.family in args.families]
    rows = []
    t0 = time.perf_counter()
    for spec in specs:
        for size in spec.bench_sizes:
            r = bench_one(spec, size, args.budget, info["arch"])
            rows.append(r)
            print(f"{r['kernel']:<22} {r['size']:<16} numba {r['numba_ms']:9.4f} ms  C {r['c_ms']:9.4f} ms  "
                  f"torch {r['torch_ms']:9.4f} ms  C/numba speed-up {r['c_vs_numba']:6.2f}x  [{r['c_source']}] "
                  f"C-vs-numba rel diff {r['c_numba_max_rel_diff']:.1e}", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fields = ["kernel", "size", "size_keys", "metric", "numba_ms", "c_ms", "torch_ms", "numba_rate", "c_rate",
              "torch_rate", "c_vs_numba", "torch_vs_c", "torch_vs_numba", "c_numba_max_rel_diff", "c_source",
              "torch_op", "numba_samples", "c_samples", "torch_samples", "triton_ms", "triton_label",
              "sdpa_efficient_attention_ms", "sdpa_efficient_attention_label", "sdpa_math_ms", "sdpa_math_label"]
    with open(out / "bench.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)
        f.write(f"# {header}\n")
    md = markdown(rows, header)
    (out / "bench.md").write_text(md)
    png = chart(rows, out / "bench.png", f"{info['device']}, {date}: throughput relative to torch/cuBLAS "
                                           "(python scripts/bench.py; fp32, TF32 off)")
    print(md)
    print(f"wrote {out / 'bench.csv'}, {out / 'bench.md'}" + (f", {out / 'bench.png'}" if png else " (no matplotlib: no PNG)")
          + f" in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
