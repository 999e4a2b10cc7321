"""The benchmark with a numba-cuda-mlir column: ``bench.py``'s CSV merged with ``mlir_gpu.py``'s JSON (no GPU needed).

    python scripts/bench_mlir.py --mlir $OUT/mlir_gpu.json [--bench docs/bench/bench.csv] [--out DIR]

The two runs cannot share a process on the GPU machine (numba-cuda and numba-cuda-mlir travel in separate calls).
Both time the same way, the median of CUDA-event samples (``benchkit.median_ms``): ``bench.py`` the Numba kernel and
its translated C, ``mlir_gpu.py`` the numba-cuda-mlir kernel and the same C again, at each benchmark size. The table
puts numba-cuda-mlir beside the C of its own run (their ratio is like for like, free of run-to-run drift), next to
bench.py's Numba and C columns for the same kernel and size. Writes ``bench_mlir.csv`` and ``bench_mlir.md`` to
``--out`` and prints the Markdown table.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIELDS = ["kernel", "size", "numba_ms", "c_ms", "mlir_ms", "mlir_run_c_ms", "mlir_vs_c", "mlir_note"]


def refusal(row: dict) -> str:
    """Why numba-cuda-mlir did not run a kernel, in one phrase: the name its typing could not resolve where there is
    one (a numba-cuda intrinsic it was not taught), else its error line."""
    found = re.search(r"Untyped global name '(\w+)'", row.get("traceback") or "")
    if found:
        return f"numba-cuda-mlir cannot type `{found.group(1)}` (a numba-cuda intrinsic)"
    return row.get("error") or ""


def merge(bench_rows: list[dict], mlir: dict) -> list[dict]:
    by_kernel = {r["kernel"]: r for r in mlir.get("kernels", [])}
    rows = []
    for b in bench_rows:
        m = by_kernel.get(b["kernel"])
        if m is None:
            continue
        timings = m.get("timings") or [{"size": m.get("bench_size"), "mlir_ms": m.get("mlir_ms"),
                                         "c_ms": m.get("c_ms")}]
        by_size = {"×".join(str(v) for v in (t.get("size") or {}).values()): t for t in timings}
        timed = by_size.get(b["size"])
        mlir_ms = timed.get("mlir_ms") if timed else None
        c_ms = timed.get("c_ms") if timed else None
        sizes = ", ".join(s for s in by_size if s) or "-"
        note = refusal(m) or ("" if timed else f"mlir_gpu.py timed size {sizes}")
        if m.get("c_vs_mlir_ok") is False:
            note = (note + "; " if note else "") + f"C differs from numba-cuda-mlir ({m['c_vs_mlir_max_err']:.3g})"
        rows.append({"kernel": b["kernel"], "size": b["size"], "numba_ms": b.get("numba_ms"), "c_ms": b.get("c_ms"),
                     "mlir_ms": mlir_ms, "mlir_run_c_ms": c_ms,
                     "mlir_vs_c": round(c_ms / mlir_ms, 3) if mlir_ms and c_ms else None, "mlir_note": note})
    return rows


def markdown(rows: list[dict], mlir: dict) -> str:
    def ms(v):
        return "-" if v in (None, "") else f"{float(v):.4f}"

    lines = [f"numba-cuda-mlir {mlir.get('numba_cuda_mlir')} on {mlir.get('arch')}, numpy {mlir.get('numpy')}. "
             "Numba and C: bench.py; numba-cuda-mlir and C (same run): mlir_gpu.py; all the median of CUDA-event "
             "samples. C / mlir > 1: numba-cuda-mlir is faster.", "",
             "| kernel | size | Numba ms | C ms | numba-cuda-mlir ms | C ms (same run) | C / mlir | note |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio = "-" if r["mlir_vs_c"] is None else f"{r['mlir_vs_c']:.2f}"
        lines.append(f"| {r['kernel']} | {r['size']} | {ms(r['numba_ms'])} | {ms(r['c_ms'])} | {ms(r['mlir_ms'])} | "
                     f"{ms(r['mlir_run_c_ms'])} | {ratio} | {r['mlir_note']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mlir", required=True, help="mlir_gpu.py's JSON")
    parser.add_argument("--bench", default=str(ROOT / "docs" / "bench" / "bench.csv"), help="bench.py's CSV")
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    args = parser.parse_args(argv)
    mlir = json.loads(Path(args.mlir).read_text())
    with open(args.bench, newline="") as f:
        bench_rows = list(csv.DictReader(f))
    rows = merge(bench_rows, mlir)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in (("bench_mlir.md", markdown(rows, mlir)), ("bench_mlir.csv", None)):
        tmp = out / (name + ".tmp")
        if text is None:
            with open(tmp, "w", newline="") as f:
                writer = csv.DictWriter(f, FIELDS)
                writer.writeheader()
                writer.writerows(rows)
        else:
            tmp.write_text(text)
        os.replace(tmp, out / name)
    print(markdown(rows, mlir))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
