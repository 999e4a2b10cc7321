"""Read what Numba generates for the matmul kernels, without a GPU: PTX instruction mix and ptxas resource usage.

Backs the code-generation claims of docs/performance.md. For each kernel variant it compiles PTX for sm_90 with
``numba.cuda.compile_ptx`` (Numba's variants) or ``nvcc -ptx`` (the lecture's CUDA C), assembles it with
``ptxas -v`` for registers / spills / stack, and counts, over the whole kernel:

- ``selp.b64`` / ``setp.lt.s64``: the negative-index wraparound selects (``i < 0 ? i + n : i``),
- 64-bit integer ops (``mul.lo.s64``, ``add.s64``, ``shl.b64``, ``mad.lo.s64``...) vs 32-bit ones,
- ``fma.rn.f32`` vs separate ``mul.f32`` + ``add.f32``,
- shared loads (``ld.shared``, and how many are 16-byte ``.v4``), global loads (``ld.global``, ``.nc``), local
  memory traffic (``ld.local``/``st.local``: a register array that spilled to memory),
- kernel parameters (Numba passes meminfo, parent, nitems, itemsize, data, shape and strides per array).

Usage: python scripts/perf_ptx.py [--out DIR]  (writes each .ptx there and prints a table; --json for a record)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time


CC = (9, 0)
SIG = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])"

LECTURE_CUDA_C = r"""
extern "C" __global__ void matmul_naive_c(const float* m, const float* n, float* out, int h, int w, int k) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < h && c < w) {
        float o = 0;
        for (int i = 0; i < k; ++i) o += m[r * k + i] * n[i * w + c];
        out[r * w + c] = o;
    }
}
template <int tw>
__global__ void matmul_tiled_static_c(const float* m, const float* n, float* out, int h, int w, int k) {
    __shared__ float ms[tw][tw], ns[tw][tw];
    int ir = threadIdx.y, ic = threadIdx.x, r = blockIdx.y * blockDim.y + ir, c = blockIdx.x * blockDim.x + ic;
    float p = 0.0f;
    for (int ph = 0; ph < (k + tw - 1) / tw; ++ph) {
        int idx = ph * tw;
        ms[ir][ic] = r < h && idx + ic < k ? m[r * k + idx + ic] : 0.0f;
        ns[ir][ic] = c < w && idx + ir < k ? n[(ir + idx) * w + c] : 0.0f;
        __syncthreads();
        for (int i = 0; i < tw; ++i) p += ms[ir][i] * ns[i][ic];
        __syncthreads();
    }
    if (r < h && c < w) out[r * w + c] = p;
}
template __global__ void matmul_tiled_static_c<16>(const float*, const float*, float*, int, int, int);
"""

PATTERNS = {
    "wrap_selp64": r"\bselp\.b64\b",
    "setp_lt_s64": r"\bsetp\.lt\.s64\b",
    "int64_ops": r"\b(?:add|sub|mul\.lo|mul\.wide|mad\.lo|shl|shr|and|or)\.(?:s64|u64|b64)\b",
    "int32_ops": r"\b(?:add|sub|mul\.lo|mad\.lo|shl|shr|and|or)\.(?:s32|u32|b32)\b",
    "fma_f32": r"\bfma\.rn(?:\.ftz)?\.f32\b",
    "mul_f32": r"\bmul\.(?:rn\.)?(?:ftz\.)?f32\b",
    "add_f32": r"\badd\.(?:rn\.)?(?:ftz\.)?f32\b",
    "ld_shared": r"\bld\.shared\.",
    "ld_shared_v4": r"\bld\.shared\.v4\.",
    "ld_global": r"\bld\.global\.",
    "ld_global_nc": r"\bld\.global\.nc\.",
    "local_ldst": r"\b(?:ld|st)\.local\.",
}


def count(ptx: str) -> dict[str, int]:
    body = "\n".join(l for l in ptx.splitlines() if not l.strip().startswith("//"))
    out = {k: len(re.findall(p, body)) for k, p in PATTERNS.items()}
    m = re.search(r"\.entry\s+\S+\s*\((.*?)\)", body, re.S)
    out["params"] = m.group(1).count(".param") if m else -1
    return out


def ptxas(ptx: str, name: str) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "k.ptx")
        with open(p, "w") as f:
            # numba-cuda's NVVM wheel (13.5) stamps .version 9.5; the ptxas here (13.0) reads up to 9.0, and these
            # kernels use nothing newer, so lower the stamp for the resource report
            f.write(re.sub(r"^\.version \d+\.\d+", ".version 9.0", ptx, count=1, flags=re.M))
        r = subprocess.run(["ptxas", "-arch=sm_90", "-v", p, "-o", os.path.join(d, "k.cubin")],
                           capture_output=True, text=True)
    text = r.stdout + r.stderr
    res = {}
    for key, pat in (("registers", r"Used (\d+) registers"), ("stack", r"(\d+) bytes stack frame"),
                     ("spill_st", r"(\d+) bytes spill stores"), ("spill_ld", r"(\d+) bytes spill loads"),
                     ("smem", r"(\d+) bytes smem")):
        m = re.search(pat, text)
        res[key] = int(m.group(1)) if m else (-1 if r.returncode else 0)
    return res


def numba_variants():

    from numbakern.kernels import matmul, matmul_fast

    yield "naive (numba)", matmul.matmul_naive.py_func, SIG, {}
    yield "lecture tiled, run-time tw (numba)", matmul.matmul_tiled.py_func, \
        "void(float32[:, ::1], float32[:, ::1], float32[:, ::1], int64)", {}
    yield "tiled, constant tw=16 (numba)", matmul.matmul_tiled_static(16).py_func, SIG, {}
    yield "tiled, constant tw, fastmath only (numba)", matmul.matmul_tiled_static(16).py_func, SIG, {"fastmath": True}
    yield "tiled_fast tw=16: u32 subscripts+fastmath+launch_bounds", matmul_fast.matmul_tiled_fast(16).py_func, SIG, \
        {"fastmath": True, "launch_bounds": (256,)}
    yield "tiled_fast tw=16, no fastmath/launch_bounds", matmul_fast.matmul_tiled_fast(16).py_func, SIG, {}
    for cfg in matmul_fast.CONFIGS[:2]:
        k = matmul_fast.matmul_flagship(**cfg)
        nt = matmul_fast.flagship_threads(cfg)
        tag = "{bm}x{bn}x{bk}/{tm}x{tn}".format(**cfg)
        yield f"flagship {tag} (numba)", k.py_func, SIG, {"fastmath": True, "launch_bounds": (nt,)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None, help="directory for the .ptx files")
    ap.add_argument("--json", default=None, help="write the rows as JSON here")
    ap.add_argument("--only", default=None, help="substring filter on variant names")
    args = ap.parse_args()
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "0")
    from numba import cuda

    rows = []
    for name, fn, sig, opts in numba_variants():
        if args.only and args.only not in name:
            continue
        t0 = time.perf_counter()
        ptx, _ = cuda.compile_ptx(fn, sig, cc=CC, **{k: v for k, v in opts.items()})
        dt = time.perf_counter() - t0
        row = {"variant": name, "compile_s": round(dt, 2), **count(ptx), **ptxas(ptx, name)}
        rows.append(row)
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, re.sub(r"[^A-Za-z0-9]+", "_", name)[:60] + ".ptx"), "w") as f:
                f.write(ptx)
    # the lecture's CUDA C, through nvcc, for comparison
    if not args.only or "CUDA C" in args.only:
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "lecture.cu")
            with open(src, "w") as f:
                f.write(LECTURE_CUDA_C)
            subprocess.run(["nvcc", "-arch=sm_90", "-ptx", src, "-o", os.path.join(d, "l.ptx")], check=True)
            full = open(os.path.join(d, "l.ptx")).read()
        for entry in re.split(r"(?=\.visible \.entry|\.weak \.entry)", full)[1:]:
            nm = re.search(r"\.entry\s+([A-Za-z0-9_]+)", entry)
            label = ("naive (CUDA C)" if "naive" in nm.group(1) else "lecture static tw=16 (CUDA C)")
            header = re.split(r"(?=\.visible \.entry|\.weak \.entry)", full)[0]
            ptx = header + entry
            rows.append({"variant": label, "compile_s": 0.0, **count(entry), **ptxas(ptx, label)})
            if args.out:
                with open(os.path.join(args.out, re.sub(r"[^A-Za-z0-9]+", "_", label) + ".ptx"), "w") as f:
                    f.write(ptx)

    cols = ["registers", "spill_st", "stack", "params", "wrap_selp64", "setp_lt_s64", "int64_ops", "int32_ops",
            "fma_f32", "mul_f32", "ld_shared", "ld_shared_v4", "ld_global", "ld_global_nc", "local_ldst", "compile_s"]
    w = max(len(r["variant"]) for r in rows)
    print(f"{'variant':<{w}} " + " ".join(f"{c[:11]:>11}" for c in cols))
    for r in rows:
        print(f"{r['variant']:<{w}} " + " ".join(f"{r.get(c, ''):>11}" for c in cols))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
