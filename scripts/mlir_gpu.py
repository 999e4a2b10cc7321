"""numba-cuda-mlir on a GPU: the library's kernels run for real, and their translations are checked against them.

Needs numba-cuda-mlir and numpy only (no numba, no numba-cuda), and nvcc for the translated C. On the GPU machine:

    mkdir -p /tmp/site2 && tar xJf .mlirpkg/*.tar.xz -C /tmp/site2 && export PYTHONPATH=/tmp/site2:$PWD
    python3 scripts/mlir_gpu.py --out $OUT/mlir_gpu.json [--kernels matmul_tiled,softmax]

The library is loaded with numba-cuda-mlir's ``cuda`` (``NUMBAKERN_FRONTEND=numba-cuda-mlir``, the source itself
unchanged). For each kernel, on seeded inputs at its first two verification sizes:

1. numba-cuda-mlir compiles and runs it; its outputs are checked against the spec's float64 numpy reference;
2. ``generated_cuda/<kernel>.cu`` is built with nvcc and called through its ``extern "C"`` launcher (ctypes and
   translate.verify's driver, no numba) on the same inputs; its outputs are compared with numba-cuda-mlir's, with
   the spec's tolerance;
3. both are timed at the kernel's first benchmark size: the mean of ``--repeat`` launches after one warm-up,
   wall clock around the launches and a device synchronise, the same way for both.

Then numba-cuda-mlir's dynamic shared memory (``shared_memory_facts``). Prints
``kernel | mlir runs | mlir vs numpy | C vs mlir max err | mlir ms | C ms`` and writes the rows as JSON
(``--out``), which the benchmark can merge as a numba-cuda-mlir column. Without a GPU (a local smoke test) only
step 1 runs, in numbakern's simulator, at the smallest simulator size.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
import time
import traceback
from pathlib import Path

os.environ.setdefault("NUMBAKERN_FRONTEND", "numba-cuda-mlir")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GENERATED = ROOT / "generated_cuda"


def _load_library():
    """The library's specs, each module imported on its own: a module numba-cuda-mlir rejects is one failure."""
    import importlib

    from numbakern import registry

    failed = {}
    for module in registry.KERNEL_MODULES:
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

    def run(self, spec, case, repeat: int = 0) -> tuple[dict, float | None]:
        from translate.verify import abi, driver

        args = case.fresh_args()
        buffers = {i: driver.DeviceArray.from_host(a) for i, a in enumerate(args) if isinstance(a, np.ndarray)}
        call = [buffers.get(i, a) for i, a in enumerate(args)]
        cfg = case.launch

        def launch():
            err = abi.launch(self.fn, self.launcher, call, cfg.grid, cfg.block, cfg.shared_bytes)
            if err:
                raise RuntimeError(f"the C launcher returned cudaError {err}")

        launch()
        driver.synchronize()
        outputs = {i: buffers[i].to_host() for i in spec.outputs}
        ms = None
        if repeat:
            start = time.perf_counter()
            for _ in range(repeat):
                launch()
            driver.synchronize()
            ms = (time.perf_counter() - start) * 1e3 / repeat
        for b in buffers.values():
            b.free()
        return outputs, ms


def mlir_time(spec, case, repeat: int) -> float:
    from numbakern.frontend.choice import cuda_module_of

    cuda = cuda_module_of(spec.kernel)
    args = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in case.fresh_args()]
    cfg = case.launch
    spec.kernel[cfg.grid, cfg.block, 0, cfg.shared_bytes](*args)  # warm-up (and compile)
    cuda.synchronize()
    start = time.perf_counter()
    for _ in range(repeat):
        spec.kernel[cfg.grid, cfg.block, 0, cfg.shared_bytes](*args)
    cuda.synchronize()
    return (time.perf_counter() - start) * 1e3 / repeat


def check_kernel(spec, on_gpu: bool, arch: str | None, seed: int, repeat: int) -> dict:
    import numbakern

    row: dict = {"kernel": spec.name, "mlir_runs": False, "mlir_vs_numpy": None, "c_vs_mlir_max_err": None,
                 "c_vs_mlir_ok": None, "mlir_ms": None, "c_ms": None, "error": None}
    sizes = spec.verify_sizes[:2] if on_gpu else spec.test_sizes[:1]
    rng = np.random.default_rng(seed)
    stage = "numba-cuda-mlir"
    try:
        c_kernel = None
        worst, c_ok, mlir_ok = 0.0, True, True
        for size in sizes:
            case = spec.make_case(size, rng, "normal")
            stage = "numba-cuda-mlir"
            got = numbakern.run_case(spec, case)
            row["mlir_runs"] = True
            mlir_ok = mlir_ok and all(r.ok for r in spec.check(case, got).values())
            if not on_gpu:
                continue
            stage = "translated C"
            c_kernel = c_kernel or CKernel(spec, arch)
            c_out, _ = c_kernel.run(spec, case)
            scale = spec.error_scale(*case.args) if spec.error_scale else {}
            for i in spec.outputs:
                ok, err = _close(c_out[i], got[i], (scale or {}).get(i), spec.rtol, spec.atol)
                c_ok, worst = c_ok and ok, max(worst, err)
        row["mlir_vs_numpy"] = "ok" if mlir_ok else "MISMATCH"
        if on_gpu:
            row["c_vs_mlir_max_err"], row["c_vs_mlir_ok"] = worst, c_ok
            bench = (spec.bench_sizes or spec.verify_sizes[-1:])[0]
            case = spec.make_case(bench, rng, "normal")
            stage = "timing numba-cuda-mlir"
            row["mlir_ms"] = round(mlir_time(spec, case, repeat), 4)
            stage = "timing translated C"
            row["c_ms"] = round(c_kernel.run(spec, case, repeat)[1], 4)
            row["bench_size"] = bench
    except Exception as e:  # noqa: BLE001 - one kernel's failure is its row, the others still run
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        row["error"] = f"{stage}: {type(e).__name__}: {first}"[:400]
        row["traceback"] = traceback.format_exc()[-2000:]
    return row


cuda = None  # numba_cuda_mlir.cuda, imported after numbakern (kernels read it as a module global)


def _mlir_cuda():
    global cuda
    import numba_cuda_mlir.cuda

    cuda = numba_cuda_mlir.cuda


def shared_memory_facts(seed: int) -> list[dict]:
    """numba-cuda-mlir's dynamic shared memory, checked on the device against numpy: ``cuda.shared.array(0,
    np.float32)`` beside a static array (they must not overlap), float32 stores to it (dropped at opt > 0 by
    0.4.0), at 400 bytes and at 65 KB (above the 48 KB that needs an opt-in on the GPU)."""
    _mlir_cuda()

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

    rows = []
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default="", help="comma-separated library kernel names (default: all)")
    parser.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "mlir_gpu.json"))
    parser.add_argument("--seed", type=int, default=20_261_123)
    parser.add_argument("--repeat", type=int, default=20, help="timed launches per kernel")
    args = parser.parse_args(argv)

    import numba_cuda_mlir

    import numbakern
    from numbakern import mode

    on_gpu = not mode.in_simulator()
    arch = None
    if on_gpu:
        from translate.verify import driver

        arch = driver.device_info()["arch"]
    specs, failed = _load_library()
    wanted = {k.strip() for k in args.kernels.split(",") if k.strip()}
    if wanted:
        unknown = wanted - {s.name for s in specs}
        if unknown:
            parser.error(f"--kernels: no library kernel named {', '.join(sorted(unknown))}")
        specs = [s for s in specs if s.name in wanted]
    if on_gpu:
        prebuild(specs, arch)
    rows = [check_kernel(spec, on_gpu, arch, args.seed, args.repeat) for spec in specs]
    facts = shared_memory_facts(args.seed)

    print(f"numba-cuda-mlir {numba_cuda_mlir.__version__}, numpy {np.__version__}, "
          f"{'GPU ' + arch if on_gpu else 'no GPU: simulator, mlir step only'}; seed {args.seed}")
    print(f"{'kernel':26} | mlir runs | mlir vs numpy | C vs mlir max err | mlir ms  | C ms")
    for r in rows:
        err = "-" if r["c_vs_mlir_max_err"] is None else f"{r['c_vs_mlir_max_err']:.3g}" + (
            "" if r["c_vs_mlir_ok"] else " FAIL")
        ms = lambda v: "-" if v is None else f"{v:.4f}"  # noqa: E731
        print(f"{r['kernel']:26} | {'yes' if r['mlir_runs'] else 'NO':9} | {str(r['mlir_vs_numpy'] or '-'):13} | "
              f"{err:17} | {ms(r['mlir_ms']):8} | {ms(r['c_ms'])}")
        if r["error"]:
            print(f"    {r['error']}")
    for module, why in failed.items():
        print(f"module {module} did not load: {why}")
    for f in facts:
        print(f"{f['fact']}: {'ok' if f['ok'] else 'FAIL'}"
              + (f" (max err {f['max_abs_error']:.3g})" if "max_abs_error" in f else "")
              + (f" {f['error']}" if f["error"] else ""))
    report = {
        "numba_cuda_mlir": numba_cuda_mlir.__version__, "numpy": np.__version__, "gpu": on_gpu, "arch": arch,
        "seed": args.seed, "repeat": args.repeat, "numba_imported": "numba" in sys.modules,
        "modules_failed": failed, "kernels": rows, "shared_memory_facts": facts, "numbakern": numbakern.__version__,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(json.dumps(report, indent=1, default=str))
    os.replace(tmp, out)
    print(f"wrote {out}; numba imported: {report['numba_imported']}")
    good = all(r["mlir_runs"] and r["mlir_vs_numpy"] == "ok" and r["c_vs_mlir_ok"] is not False for r in rows)
    good = good and all(f["ok"] for f in facts)
    return 0 if good and not failed and not report["numba_imported"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
