"""numba-cuda-mlir on a GPU: the library's kernels run for real, are checked against numpy and their translated C, and
are timed beside it.

Needs numba-cuda-mlir and numpy only (no numba, no numba-cuda, no torch), and nvcc for the translated C. On the GPU
machine:

    mkdir -p /tmp/site2 && tar xJf .mlirpkg/*.tar.xz -C /tmp/site2 && export PYTHONPATH=/tmp/site2:$PWD
    python3 scripts/mlir_gpu.py --out $OUT/mlir_gpu.json [--kernels matmul_tiled,softmax] [--sizes first]

The library is loaded with numba-cuda-mlir's ``cuda`` (``NUMBAKERN_FRONTEND=numba-cuda-mlir``, the source itself
unchanged; numbakern's intrinsics are typed and lowered by ``numbakern.mlir_lowering``): the 35 kernels of
``all_specs()`` and the preview ``matmul_bf16``. For each kernel, on seeded inputs at its first two verification
sizes:

1. numba-cuda-mlir compiles and runs it; its outputs are checked against the spec's float64 numpy reference;
2. ``generated_cuda/<kernel>.cu`` is built with nvcc and called through its ``extern "C"`` launcher (ctypes and
   translate.verify's driver, no numba) on the same inputs; its outputs are compared with numba-cuda-mlir's, with
   the spec's tolerance (a kernel translate does not know yet, ``matmul_bf16``, has no C column);
3. both are timed at each of the kernel's benchmark sizes (``--sizes first``: the first only) as ``bench.py`` times
   the Numba and C columns: the median of CUDA-event samples (``benchkit.median_ms``; numba-cuda-mlir's events here,
   torch's there).

Then numba-cuda-mlir's dynamic shared memory: ``scripts/mlir_shared_memory_repro.py`` (a static and a dynamic array
in one kernel) and a dynamic array beside a static one at 400 bytes and at 65 KB. Writes the rows as JSON
(``--out``; ``scripts/bench_mlir.py`` merges it into the benchmark as a numba-cuda-mlir column) and prints, last, one
line per kernel: ``kernel | runs | vs numpy | C vs mlir | size | mlir ms | C ms | C/mlir``. Without a GPU (a local
smoke test) only step 1 runs, in numbakern's simulator, at the smallest simulator size.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import traceback
from pathlib import Path

os.environ.setdefault("NUMBAKERN_FRONTEND", "numba-cuda-mlir")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ROOT / "generated_cuda"
sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchkit, the repro


def _load_library():
    """The library's specs (previews included), each module imported on its own: a module numba-cuda-mlir rejects is
    one failure."""
    import importlib

    from numbakern import registry

    failed = {}
    for module in registry.KERNEL_MODULES + registry.PREVIEW_MODULES:
        try:
            importlib.import_module(module)
        except Exception as e:  # noqa: BLE001 - whatever numba-cuda-mlir raises, it is this module's result
            failed[module] = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
    specs = [registry._REGISTRY[name] for name in sorted(registry._REGISTRY)]
    return specs, failed


def _close(got, want, scale, rtol: float, atol: float) -> tuple[bool, float]:
    g, w = np.asarray(got, np.float64), np.asarray(want, np.float64)
    exact = np.asarray(got).dtype.kind in "iub"
    s = np.abs(w) if scale is None else np.abs(np.asarray(scale, np.float64))
    err = np.abs(g - w)
    tol = 0.0 if exact else atol + rtol * s
    ok = bool(np.all(err <= tol))  # NaN (an element never written) is never <=
    return ok, float(np.nanmax(np.where(np.isnan(err), np.inf, err), initial=0.0))


def _translation(spec):
    """``(.cu path, launcher, nvcc flags)`` of a library kernel's translation, from generated_cuda's manifest."""
    from translate import manifest
    from translate.verify.abi import select_launcher

    found = manifest.entry_for(manifest.load(GENERATED), spec.name)
    if found is None:
        raise LookupError(f"{spec.name}: no translation in {GENERATED}")
    file_name, entry = found
    launcher = select_launcher(entry.get("launchers", ()), getattr(spec, "constants", {}) or {})
    return GENERATED / file_name, launcher, tuple((entry.get("build") or {}).get("nvcc_flags") or ())


def prebuild(specs, arch: str) -> None:
    """nvcc every translation at once (a fresh machine has no build cache; one at a time takes minutes). A failure
    is left for the kernel's own row, where the build is tried again and reported."""
    from concurrent.futures import ThreadPoolExecutor

    from translate.verify.build import build_shared_library

    def build(spec):
        try:
            cu, _, flags = _translation(spec)
            build_shared_library(cu, arch=arch, extra_flags=flags)
        except Exception:  # noqa: BLE001 - reported by the kernel's row
            pass

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as pool:
        list(pool.map(build, specs))


class CKernel:
    """The translated kernel, built with nvcc, launched through its extern "C" launcher."""

    def __init__(self, spec, arch: str):
        from translate.verify.abi import bind
        from translate.verify.build import build_shared_library

        cu, self.launcher, flags = _translation(spec)
        so = build_shared_library(cu, arch=arch, extra_flags=flags)
        self.fn = bind(ctypes.CDLL(str(so)), self.launcher)

    def prepare(self, case):
        """``(launch, buffers)``: a zero-argument launch of the kernel on device copies of the case's arguments."""
        from translate.verify import abi, driver

        args = case.fresh_args()
        buffers = {i: driver.DeviceArray.from_host(a) for i, a in enumerate(args) if isinstance(a, np.ndarray)}
        call = [buffers.get(i, a) for i, a in enumerate(args)]
        cfg = case.launch

        def launch():
            err = abi.launch(self.fn, self.launcher, call, cfg.grid, cfg.block, cfg.shared_bytes)
            if err:
                raise RuntimeError(f"the C launcher returned cudaError {err}")

        return launch, buffers

    def run(self, spec, case) -> dict:
        from translate.verify import driver

        launch, buffers = self.prepare(case)
        launch()
        driver.synchronize()
        outputs = {i: buffers[i].to_host() for i in spec.outputs}
        for b in buffers.values():
            b.free()
        return outputs


class _MlirEvents:
    """numba-cuda-mlir's CUDA events and device synchronise, as ``numbakern.bench.Events`` (for
    ``benchkit.median_ms``: this process has no torch beside numba-cuda-mlir)."""

    def __init__(self):
        self.cuda = _mlir_cuda()

    def pair(self):
        return self.cuda.event(timing=True), self.cuda.event(timing=True)

    def record(self, event):
        event.record()

    def elapsed_ms(self, start, end):
        end.synchronize()
        return start.elapsed_time(end)

    def synchronize(self):
        self.cuda.synchronize()


def _events():
    return _MlirEvents()


def mlir_ms(spec, case, budget: float) -> float:
    import benchkit

    from numbakern.frontend.choice import cuda_module_of

    cuda = cuda_module_of(spec.kernel)
    args = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in case.fresh_args()]
    cfg = case.launch
    configured = spec.kernel[cfg.grid, cfg.block, 0, cfg.shared_bytes]
    return benchkit.median_ms(lambda: configured(*args), budget, events=_events())


def c_ms(c_kernel: CKernel, case, budget: float) -> float:
    import benchkit

    launch, buffers = c_kernel.prepare(case)
    try:
        return benchkit.median_ms(launch, budget, events=_events())
    finally:
        for b in buffers.values():
            b.free()


def check_kernel(spec, on_gpu: bool, arch: str | None, seed: int, budget: float, all_sizes: bool) -> dict:
    import numbakern
    from numbakern.frontend.choice import is_mlir_kernel

    row: dict = {"kernel": spec.name, "frontend": "numba-cuda-mlir" if is_mlir_kernel(spec.kernel) else "numba-cuda",
                 "mlir_runs": False, "mlir_vs_numpy": None, "c_vs_mlir_max_err": None,
                 "c_vs_mlir_ok": None, "timings": [], "bench_size": None, "mlir_ms": None, "c_ms": None,
                 "error": None, "note": None}
    sizes = spec.verify_sizes[:2] if on_gpu else spec.test_sizes[:1]
    rng = np.random.default_rng(seed)
    stage = "numba-cuda-mlir"
    try:
        c_kernel = None
        worst, c_ok, mlir_ok = 0.0, True, True
        if on_gpu:
            try:
                c_kernel = CKernel(spec, arch)
            except LookupError as e:  # translate does not know this kernel yet: no C column, not a failure
                row["note"] = str(e)
        for size in sizes:
            case = spec.make_case(size, rng, "normal")
            stage = "numba-cuda-mlir"
            got = numbakern.run_case(spec, case)
            row["mlir_runs"] = True
            mlir_ok = mlir_ok and all(r.ok for r in spec.check(case, got).values())
            if c_kernel is None:
                continue
            stage = "translated C"
            c_out = c_kernel.run(spec, case)
            scale = spec.error_scale(*case.args) if spec.error_scale else {}
            for i in spec.outputs:
                ok, err = _close(c_out[i], got[i], (scale or {}).get(i), spec.rtol, spec.atol)
                c_ok, worst = c_ok and ok, max(worst, err)
        row["mlir_vs_numpy"] = "ok" if mlir_ok else "MISMATCH"
        if c_kernel is not None:
            row["c_vs_mlir_max_err"], row["c_vs_mlir_ok"] = worst, c_ok
        if on_gpu:
            bench_sizes = spec.bench_sizes or spec.verify_sizes[-1:]
            for bench in bench_sizes if all_sizes else bench_sizes[:1]:
                case = spec.make_case(bench, rng, "uniform")
                stage = f"timing numba-cuda-mlir at {bench}"
                timing = {"size": bench, "mlir_ms": round(mlir_ms(spec, case, budget), 4), "c_ms": None}
                if c_kernel is not None:
                    stage = f"timing translated C at {bench}"
                    timing["c_ms"] = round(c_ms(c_kernel, case, budget), 4)
                row["timings"].append(timing)
            first = row["timings"][0]
            row["bench_size"], row["mlir_ms"], row["c_ms"] = first["size"], first["mlir_ms"], first["c_ms"]
    except Exception as e:  # noqa: BLE001 - one kernel's failure is its row, the others still run
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        row["error"] = f"{stage}: {type(e).__name__}: {first}"[:400]
        row["traceback"] = traceback.format_exc()[-3000:]
    return row


cuda = None  # numba_cuda_mlir.cuda, imported after numbakern (kernels read it as a module global)


def _mlir_cuda():
    global cuda
    import numba_cuda_mlir.cuda

    cuda = numba_cuda_mlir.cuda
    return cuda


def shared_memory_facts(seed: int) -> list[dict]:
    """numba-cuda-mlir's dynamic shared memory, checked on the device against numpy: the minimal reproduction
    (``mlir_shared_memory_repro``), then ``cuda.shared.array(0, np.float32)`` beside a static array (they must not
    overlap), float32 stores to it (dropped at opt > 0 by 0.4.0), at 400 bytes and at 65 KB (above the 48 KB that
    needs an opt-in on the GPU)."""
    import mlir_shared_memory_repro as repro

    _mlir_cuda()
    rows = []
    row = {"fact": "mlir_shared_memory_repro: static[t] = -1, dynamic[t] = t, read back", "ok": False, "error": None}
    try:
        expected, actual = repro.run()
        row.update(ok=bool(np.array_equal(expected, actual)), expected=expected.tolist(), actual=actual.tolist(),
                   max_abs_error=float(np.nanmax(np.abs(actual - expected))))
    except Exception as e:  # noqa: BLE001 - numba-cuda-mlir's refusal is the finding
        row["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:400]
    rows.append(row)

    @cuda.jit
    def dynamic_and_static(out, x, n):
        static = cuda.shared.array(32, np.float32)
        dynamic = cuda.shared.array(0, np.float32)
        t = cuda.threadIdx.x
        if t < 32:
            static[t] = np.float32(-1)
        j = t
        while j < n:
            dynamic[j] = x[j]
            j += cuda.blockDim.x
        cuda.syncthreads()
        j = t
        while j < n:
            out[j] = dynamic[n - 1 - j] + static[j % 32]
            j += cuda.blockDim.x

    rng = np.random.default_rng(seed)
    for n in (100, 16384 + 77):
        x = rng.standard_normal(n).astype(np.float32)
        row = {"fact": f"dynamic shared float32 beside a static array, {n * 4} bytes", "ok": False, "error": None}
        try:
            d_out = cuda.device_array(n, np.float32)
            dynamic_and_static[1, 128, 0, n * 4](d_out, cuda.to_device(x), n)
            cuda.synchronize()
            got = d_out.copy_to_host()
            err = float(np.max(np.abs(got.astype(np.float64) - (x[::-1].astype(np.float64) - 1.0))))
            row.update(ok=err <= 1e-6, max_abs_error=err)
        except Exception as e:  # noqa: BLE001 - numba-cuda-mlir's refusal is the finding
            row["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:400]
        rows.append(row)
    return rows


def _size_text(size) -> str:
    return "×".join(str(v) for v in (size or {}).values()) or "-"


def table(rows: list[dict]) -> list[str]:
    """The short table printed last: one line per kernel and timed size."""
    def ms(v):
        return "-" if v is None else f"{v:.4f}"

    lines = [f"{'kernel':24} | runs | vs numpy | C vs mlir    | {'size':16} | mlir ms   | C ms      | C/mlir"]
    for r in rows:
        if r["c_vs_mlir_max_err"] is None:
            c = "-" if r["error"] else "no C"
        else:
            c = f"{r['c_vs_mlir_max_err']:.2g}" + ("" if r["c_vs_mlir_ok"] else " FAIL")
        head = f"{r['kernel']:24} | {'yes' if r['mlir_runs'] else 'NO':4} | {str(r['mlir_vs_numpy'] or '-'):8} | {c:12}"
        for t in r["timings"] or [{"size": None, "mlir_ms": None, "c_ms": None}]:
            ratio = f"{t['c_ms'] / t['mlir_ms']:.2f}" if t["c_ms"] and t["mlir_ms"] else "-"
            lines.append(f"{head} | {_size_text(t['size']):16} | {ms(t['mlir_ms']):9} | {ms(t['c_ms']):9} | {ratio}")
            head = f"{'':24} | {'':4} | {'':8} | {'':12}"
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default="", help="comma-separated library kernel names (default: all)")
    parser.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "mlir_gpu.json"))
    parser.add_argument("--seed", type=int, default=20_261_123)
    parser.add_argument("--sizes", choices=("all", "first"), default="all", help="benchmark sizes timed per kernel")
    parser.add_argument("--budget", type=float, default=0.3, help="seconds of samples per timing")
    args = parser.parse_args(argv)

    import numba_cuda_mlir

    import numbakern
    from numbakern import mode

    on_gpu = not mode.in_simulator()
    arch = device = None
    if on_gpu:
        from translate.verify import driver

        info = driver.device_info()
        arch, device = info["arch"], info["device"]
    specs, failed = _load_library()
    wanted = {k.strip() for k in args.kernels.split(",") if k.strip()}
    if wanted:
        unknown = wanted - {s.name for s in specs}
        if unknown:
            parser.error(f"--kernels: no library kernel named {', '.join(sorted(unknown))}")
        specs = [s for s in specs if s.name in wanted]
    if on_gpu:
        prebuild(specs, arch)
    rows = []
    for spec in specs:
        rows.append(check_kernel(spec, on_gpu, arch, args.seed, args.budget, args.sizes == "all"))
        r = rows[-1]
        print(f"{spec.name}: runs {r['mlir_runs']}, vs numpy {r['mlir_vs_numpy']}, C {r['c_vs_mlir_ok']}"
              + (f"  {r['error']}" if r["error"] else ""), flush=True)
    facts = shared_memory_facts(args.seed) if on_gpu else []

    report = {
        "numba_cuda_mlir": numba_cuda_mlir.__version__, "numpy": np.__version__, "gpu": on_gpu, "arch": arch,
        "device": device, "seed": args.seed, "timing": "median of CUDA-event samples (benchkit.median_ms)",
        "budget_s": args.budget, "numba_imported": "numba" in sys.modules, "modules_failed": failed,
        "kernels": rows, "shared_memory_facts": facts, "numbakern": numbakern.__version__,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(json.dumps(report, indent=1, default=str))
    os.replace(tmp, out)

    print()
    for module, why in failed.items():
        print(f"module {module} did not load: {why}")
    for r in rows:
        if r["error"]:
            print(f"{r['kernel']}: {r['error']}")
    for f in facts:
        print(f"{f['fact']}: {'ok' if f['ok'] else 'WRONG'}"
              + (f" (max err {f['max_abs_error']:.3g})" if "max_abs_error" in f else "")
              + (f" {f['error']}" if f["error"] else ""))
    print(f"wrote {out}; numba imported: {report['numba_imported']}")
    good_rows = [r for r in rows if r["frontend"] == "numba-cuda-mlir" and r["mlir_runs"] and r["mlir_vs_numpy"] == "ok"
                 and r["c_vs_mlir_ok"] is not False and not r["error"]]
    print(f"\nnumba-cuda-mlir {numba_cuda_mlir.__version__}, numpy {np.__version__}, "
          f"{device + ' ' + arch if on_gpu else 'no GPU: simulator, mlir step only'}; seed {args.seed}; "
          f"{len(good_rows)} of {len(rows)} kernels run and verify")
    print("\n".join(table(rows)))
    return 0 if len(good_rows) == len(rows) and not failed and not report["numba_imported"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
