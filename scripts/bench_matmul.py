"""fp32 matmul benchmark for issue 7: Numba kernels, their CUDA C counterparts, cuBLAS and Triton, on one GPU.

Checks every variant first (fresh random inputs, NaN-poisoned output, ‖out − ref‖/‖ref‖ against a float64
product, odd shapes that no tile size divides), then times them with CUDA events (warm-up, median of repeats,
several launches per event pair for short kernels) at the lecture's shape and at 1024³, 2048³, 4096³, 8192³,
with TF32 off everywhere. Writes ``matmul_bench.csv``, ``matmul_bench.json``, ``matmul_bench.png`` and SASS
statistics under ``--out`` and prints a table last.

Variants: Numba naive / lecture tiled (run-time tw) / tiled with constant tw / tiled_fast (numbakern habits) /
flagship (default config and the autotuned one); CUDA C naive / lecture static-shared / a line-by-line
translation of the flagship (``matmul_flagship_c`` in ``CUDA_C`` below, hand-written to the translator's contract shape) and
``generated_cuda/matmul_flagship.cu`` when the translator has produced it; cuBLAS (torch.matmul); Triton
(``tl.dot(..., input_precision="ieee")``, small autotune).

Run on the GPU machine:  python scripts/bench_matmul.py --out $OUT

``--quick`` times only the flagship candidates side by side (a few minutes): the 16-byte flagship and
``matmul_pipelined`` (cp.async pipeline, unrolled k-steps) in Numba, what ``matmul_fast`` picks between them, their
translated ``generated_cuda/*.cu``, Triton (ieee) and cuBLAS, at every size, with a table of % of cuBLAS and of
Triton printed last.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
import traceback

import numpy as np

SIZES = [(5120, 256, 5120), (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192)]
CHECK_SIZES = [(1, 1, 1), (33, 70, 45), (127, 131, 257), (509, 263, 383), (7, 1021, 3), (129, 9, 131), (256, 256, 256),
               (36, 68, 44), (508, 263, 384)]

CUDA_C = r"""
typedef long long i64;  // (NVRTC has no <stdint.h>)
extern "C" __global__ void matmul_naive_c(const float* m, const float* n, float* out, int h, int w, int k) {
    int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < h && c < w) {
        float o = 0;
        for (int i = 0; i < k; ++i) o += m[r * k + i] * n[i * w + c];
        out[r * w + c] = o;
    }
}

// the lecture's static-shared tiled kernel
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

// the flagship, translated line by line from numbakern/kernels/matmul_fast.py (int64 shapes, as the contract has)
template <int bm, int bn, int bk, int tm, int tn>
__global__ void __launch_bounds__((bm / tm) * (bn / tn),
                                  (bm / tm) * (bn / tn) >= 256 && tm * tn <= 64 ? 512 / ((bm / tm) * (bn / tn)) : 1)
matmul_flagship_c(const float* __restrict__ m, i64 m_shape0, i64 m_shape1,
                  const float* __restrict__ n, i64 n_shape0, i64 n_shape1,
                  float* __restrict__ out, i64 out_shape0, i64 out_shape1) {
    constexpr int nt = (bm / tm) * (bn / tn), tx_count = bn / tn, ty_count = bm / tm;
    constexpr int wx0 = tx_count < 8 ? tx_count : 8, wy0 = ty_count < 32 / wx0 ? ty_count : 32 / wx0;
    constexpr bool fits = tx_count % wx0 == 0 && ty_count % wy0 == 0;
    constexpr int wx = fits ? wx0 : tx_count, wy = fits ? wy0 : 1, wxy = wx * wy, warps_x = tx_count / wx;
    constexpr int vm = tm < 4 ? tm : 4, vn = tn < 4 ? tn : 4;
    constexpr int gm = bm / (tm / vm), gn = bn / (tn / vn);
    constexpr int la = (bm * bk) / nt, lb = (bk * bn) / nt, la_step = nt / bk, lb_step = nt / bn;
    constexpr int pa = bm % 32 == 0 ? bm + 4 : bm;
    const unsigned tid = threadIdx.x;
    const unsigned wq = tid / wxy, lq = tid % wxy;
    const unsigned a_base = (wq / warps_x * wy + lq / wx) * vm, b_base = (wq % warps_x * wx + lq % wx) * vn;
    const unsigned la_r = tid / bk, la_c = tid % bk, lb_r = tid / bn, lb_c = tid % bn;
    const i64 row0 = (i64)blockIdx.y * bm, col0 = (i64)blockIdx.x * bn;
    const i64 h = m_shape0, k = m_shape1, w = n_shape1;
    __shared__ __align__(16) float a_s[2][bk][pa];
    __shared__ __align__(16) float b_s[2][bk][bn];
    float acc[tm * tn], a_f0[tm], b_f0[tn], a_f1[tm], b_f1[tn], a_ld[la], b_ld[lb];
#pragma unroll
    for (int i = 0; i < tm * tn; ++i) acc[i] = 0.0f;
    const i64 ntiles = (k + bk - 1) / bk;
#pragma unroll
    for (int i = 0; i < la; ++i) {
        i64 gr = row0 + la_r + i * la_step;
        a_ld[i] = gr < h && la_c < k ? m[gr * k + la_c] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < lb; ++i) {
        i64 gc = col0 + lb_c;
        b_ld[i] = lb_r + i * lb_step < k && gc < w ? n[(i64)(lb_r + i * lb_step) * w + gc] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < la; ++i) a_s[0][la_c][la_r + i * la_step] = a_ld[i];
#pragma unroll
    for (int i = 0; i < lb; ++i) b_s[0][lb_r + i * lb_step][lb_c] = b_ld[i];
    __syncthreads();
    for (i64 t = 0; t < ntiles; ++t) {
        const int cur = t & 1;
        const i64 k_next = (t + 1) * bk;
        const bool more = t + 1 < ntiles;
        if (more) {
#pragma unroll
            for (int i = 0; i < la; ++i) {
                i64 gr = row0 + la_r + i * la_step, gk = k_next + la_c;
                a_ld[i] = gr < h && gk < k ? m[gr * k + gk] : 0.0f;
            }
#pragma unroll
            for (int i = 0; i < lb; ++i) {
                i64 gk = k_next + lb_r + i * lb_step, gc = col0 + lb_c;
                b_ld[i] = gk < k && gc < w ? n[gk * w + gc] : 0.0f;
            }
        }
#pragma unroll
        for (int i = 0; i < tm; ++i) a_f0[i] = a_s[cur][0][a_base + (i / vm) * gm + i % vm];
#pragma unroll
        for (int j = 0; j < tn; ++j) b_f0[j] = b_s[cur][0][b_base + (j / vn) * gn + j % vn];
        for (unsigned k2 = 0; k2 < bk / 2; ++k2) {  // (no unroll pragma: Numba's loop stays rolled too)
            const unsigned kk = k2 * 2;
#pragma unroll
            for (int i = 0; i < tm; ++i) a_f1[i] = a_s[cur][kk + 1][a_base + (i / vm) * gm + i % vm];
#pragma unroll
            for (int j = 0; j < tn; ++j) b_f1[j] = b_s[cur][kk + 1][b_base + (j / vn) * gn + j % vn];
#pragma unroll
            for (int i = 0; i < tm; ++i)
#pragma unroll
                for (int j = 0; j < tn; ++j) acc[i * tn + j] += a_f0[i] * b_f0[j];
            if (kk + 2 < bk) {
#pragma unroll
                for (int i = 0; i < tm; ++i) a_f0[i] = a_s[cur][kk + 2][a_base + (i / vm) * gm + i % vm];
#pragma unroll
                for (int j = 0; j < tn; ++j) b_f0[j] = b_s[cur][kk + 2][b_base + (j / vn) * gn + j % vn];
            }
#pragma unroll
            for (int i = 0; i < tm; ++i)
#pragma unroll
                for (int j = 0; j < tn; ++j) acc[i * tn + j] += a_f1[i] * b_f1[j];
        }
        if (more) {
            const int nxt = cur ^ 1;
#pragma unroll
            for (int i = 0; i < la; ++i) a_s[nxt][la_c][la_r + i * la_step] = a_ld[i];
#pragma unroll
            for (int i = 0; i < lb; ++i) b_s[nxt][lb_r + i * lb_step][lb_c] = b_ld[i];
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < tm; ++i) {
        i64 r = row0 + a_base + (i / vm) * gm + i % vm;
        if (r < h) {
#pragma unroll
            for (int j = 0; j < tn; ++j) {
                i64 c = col0 + b_base + (j / vn) * gn + j % vn;
                if (c < w) out[r * w + c] = acc[i * tn + j];
            }
        }
    }
}
"""


def log(*a):
    print(*a, flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "bench_out"))
    ap.add_argument("--sizes", default=None, help="e.g. 1024x1024x1024,4096x4096x4096 (h x k x w)")
    ap.add_argument("--budget-s", type=float, default=1.0, help="target seconds of timing per variant and size")
    ap.add_argument("--skip-slow-above", type=int, default=4096,
                    help="skip naive/lecture kernels for products larger than this cubed")
    ap.add_argument("--quick", action="store_true",
                    help="only the flagship candidates, Triton and cuBLAS; no SASS statistics")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    sizes = SIZES if not args.sizes else [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",")]

    import torch
    import cupy as cp
    from numba import cuda

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")

    from numbakern.kernels import matmul as mm
    from numbakern.kernels import matmul_fast as mf
    from numbakern import autotune

    dev = torch.cuda.get_device_name(0)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    log(f"device: {dev}; date {date}; torch {torch.__version__}; cupy {cp.__version__}")
    os.environ.setdefault(autotune.CACHE_ENV, os.path.join(args.out, "cache"))

    # ---- CUDA C through NVRTC (cupy)
    flagship_cfgs = [mf.DEFAULT_CONFIG] + [c for c in mf.CONFIGS if c != mf.DEFAULT_CONFIG]
    names = ["matmul_tiled_static_c<16>"] + [
        "matmul_flagship_c<{bm},{bn},{bk},{tm},{tn}>".format(**c) for c in flagship_cfgs]
    module = cp.RawModule(code=CUDA_C, options=("-std=c++17",), name_expressions=names)
    c_naive = module.get_function("matmul_naive_c")
    c_static = module.get_function(names[0])
    c_flag = {json.dumps(c, sort_keys=True): module.get_function(n) for c, n in zip(flagship_cfgs, names[1:])}

    def cptr(t):
        return t.data_ptr()

    # ---- variants: each is (name, family, make_runner(a, b, out, h, k, w) -> zero-arg launch function)
    def numba_arr(t):
        return cuda.as_cuda_array(t)

    def v_numba_naive(a, b, o, h, k, w):
        A, B, O = map(numba_arr, (a, b, o))
        cfg = mm.launch_config((w, h), (16, 16))
        return lambda: mm.matmul_naive[cfg.grid, cfg.block](A, B, O)

    def v_numba_tiled(a, b, o, h, k, w):
        A, B, O = map(numba_arr, (a, b, o))
        cfg = mm.launch_config((w, h), (16, 16), 2 * 16 * 16 * 4)
        return lambda: mm.matmul_tiled[cfg.grid, cfg.block, 0, cfg.shared_bytes](A, B, O, 16)

    def v_numba_static(a, b, o, h, k, w):
        A, B, O = map(numba_arr, (a, b, o))
        cfg = mm.launch_config((w, h), (16, 16))
        kern = mm.matmul_tiled_static(16)
        return lambda: kern[cfg.grid, cfg.block](A, B, O)

    def v_numba_tiled_fast(a, b, o, h, k, w):
        A, B, O = map(numba_arr, (a, b, o))
        cfg = mm.launch_config((w, h), (16, 16))
        kern = mf.matmul_tiled_fast(16)
        return lambda: kern[cfg.grid, cfg.block](A, B, O)

    def flagship_runner(config):
        def make(a, b, o, h, k, w):
            A, B, O = map(numba_arr, (a, b, o))
            cfg = mf.flagship_launch(config, h, w)
            kern = mf.matmul_flagship(**config)
            return lambda: kern[cfg.grid, cfg.block](A, B, O)
        return make

    tuned: dict[tuple, dict] = {}

    def v_flagship_tuned(a, b, o, h, k, w):
        # what matmul_fast runs: the vec=True candidates when the matrices allow 16-byte accesses
        A, B, O = map(numba_arr, (a, b, o))
        config = (mf.vec_autotuner if mf.vec_ready(A, B, O) else mf.autotuner).select(A, B, O)
        tuned[(h, k, w)] = config
        cfg = mf.flagship_launch(config, h, w)
        kern = mf.matmul_flagship(**config)
        return lambda: kern[cfg.grid, cfg.block](A, B, O)

    def v_c_naive(a, b, o, h, k, w):
        grid = ((w + 15) // 16, (h + 15) // 16)
        args = (cptr(a), cptr(b), cptr(o), np.int32(h), np.int32(w), np.int32(k))
        argt = tuple(np.uint64(x) if i < 3 else x for i, x in enumerate(args))
        return lambda: c_naive(grid, (16, 16), argt)

    def v_c_static(a, b, o, h, k, w):
        grid = ((w + 15) // 16, (h + 15) // 16)
        argt = (np.uint64(cptr(a)), np.uint64(cptr(b)), np.uint64(cptr(o)), np.int32(h), np.int32(w), np.int32(k))
        return lambda: c_static(grid, (16, 16), argt)

    def c_flagship_runner(config):
        fn = c_flag[json.dumps(config, sort_keys=True)]

        def make(a, b, o, h, k, w):
            cfg = mf.flagship_launch(config, h, w)
            argt = (np.uint64(cptr(a)), np.int64(h), np.int64(k), np.uint64(cptr(b)), np.int64(k), np.int64(w),
                    np.uint64(cptr(o)), np.int64(h), np.int64(w))
            return lambda: fn(cfg.grid, cfg.block, argt)
        return make

    from numbakern.kernels import matmul_async as ma

    def v_async(a, b, o, h, k, w):
        # numbakern's transpose kernel into a scratch A^T made once, then the cp.async kernel: what a caller pays
        A, B, O = map(numba_arr, (a, b, o))
        mt = cuda.device_array((k, h), np.float32)
        return lambda: ma.matmul_via_async(A, B, O, ma.ASYNC_CONFIG, mt=mt)

    def v_c_async(transposed):
        gen = generated_flagship("matmul_flagship_async")

        def make(a, b, o, h, k, w):
            at = torch.empty(k, h, device="cuda")
            run = gen(at, b, o, h, k, w)
            if transposed:  # A^T handed in: the kernel alone
                at.copy_(a.t())
                return run
            A, At = numba_arr(a), numba_arr(at)
            tgrid = (max(1, -(-k // 32)), max(1, -(-h // 32)))

            def with_transpose():
                transpose_kernel[tgrid, (32, 8)](A, At)
                run()
            return with_transpose
        return make if gen is not None else None

    from numbakern.kernels.transpose import transpose as transpose_kernel

    def v_cublas(a, b, o, h, k, w):
        return lambda: torch.matmul(a, b, out=o)

    variants = [
        ("numba naive", "numba", v_numba_naive, True),
        ("numba lecture tiled (run-time tw=16)", "numba", v_numba_tiled, True),
        ("numba tiled, constant tw=16", "numba", v_numba_static, True),
        ("numba tiled_fast tw=16 (numbakern)", "numba", v_numba_tiled_fast, False),
        ("numba flagship default 128x128x8/8x8", "numba", flagship_runner(mf.DEFAULT_CONFIG), False),
        ("numba flagship vec default 128x128x16/8x8 group 8 (k, w % 4 == 0)", "numba",
         flagship_runner(mf.VEC_DEFAULT_CONFIG), False),
        ("numba flagship autotuned", "numba", v_flagship_tuned, False),
        ("CUDA C naive", "cuda_c", v_c_naive, True),
        ("CUDA C lecture static tw=16", "cuda_c", v_c_static, True),
        ("CUDA C flagship translation, default cfg", "cuda_c", c_flagship_runner(mf.DEFAULT_CONFIG), False),
    ]
    variants.insert(7, ("numba flagship_async 128x128x16/8x8 + numbakern transpose (h, w % 4 == 0)", "numba",
                        v_async, False))
    for kernel in ("matmul_flagship", "matmul_flagship_vec"):
        gen = generated_flagship(kernel)
        if gen is not None:
            variants.append((f"CUDA C generated_cuda/{kernel}.cu", "cuda_c", gen, False))
        else:
            log(f"generated_cuda/{kernel}.cu: not present (translator output not available); skipped")
    for transposed, tag in ((False, " + numbakern transpose"), (True, ", A^T given")):
        make = v_c_async(transposed)
        if make is not None:
            variants.append((f"CUDA C generated_cuda/matmul_flagship_async.cu{tag} (h, w % 4 == 0)", "cuda_c", make,
                             False))
    from numbakern.kernels import matmul_pipe as mp

    def pipelined_runner(config):
        def make(a, b, o, h, k, w):
            A, B, O = map(numba_arr, (a, b, o))
            cfg = mp.pipe_launch(config, h, w)
            kern = mp.matmul_pipelined(**config)
            return lambda: kern[cfg.grid, cfg.block](A, B, O)
        return make

    def v_fast_ready(a, b, o, h, k, w):
        # what matmul_fast runs on 16-byte-ready matrices: the pipelined and the 16-byte flagship tuned together
        A, B, O = map(numba_arr, (a, b, o))
        config = mp.ready_autotuner.select(A, B, O)
        tuned[(h, k, w)] = config
        cfg = mp.either_launch(config, A, B, O)
        kern = mp.either_kernel(**config)
        return lambda: kern[cfg.grid, cfg.block](A, B, O)

    variants.insert(8, ("numba pipelined 128x128x16/8x8 2 stages group 8 (w % 4 == 0)", "numba",
                        pipelined_runner(mp.PIPE_DEFAULT_CONFIG), False))
    variants.insert(9, ("numba matmul_fast autotuned: pipelined | vec (k, w % 4 == 0)", "numba", v_fast_ready, False))
    gen = generated_flagship("matmul_pipelined")
    if gen is not None:
        variants.append(("CUDA C generated_cuda/matmul_pipelined.cu (w % 4 == 0)", "cuda_c", gen, False))
    hand = hand_async_variant(cp)
    if hand is not None:  # the reference design point: hand CUDA C, cp.async on A^T, fully unrolled k-loop
        variants.append(("hand CUDA C sgemm_async 128x128x16/8x8 2 stages, A^T given (h, w % 4 == 0)", "cuda_c", hand,
                         False))
    if args.quick:
        keep = ("numba flagship vec default", "numba pipelined", "numba matmul_fast autotuned",
                "generated_cuda/matmul_flagship_vec.cu", "generated_cuda/matmul_pipelined.cu", "hand CUDA C sgemm_async")
        variants = [v for v in variants if any(key in v[0] for key in keep)]
    tri = triton_variant()
    if tri is not None:
        variants.append(("Triton fp32 (ieee), autotuned", "triton", tri, False))
    variants.append(("cuBLAS (torch.matmul, TF32 off)", "cublas", v_cublas, False))

    # ---- correctness
    rows_check = []
    gen_t = torch.Generator(device="cuda").manual_seed(7)
    for (h, k, w) in CHECK_SIZES + sizes[:1] + [(1024, 1024, 1024)]:
        a = torch.randn(h, k, device="cuda", generator=gen_t)
        b = torch.randn(k, w, device="cuda", generator=gen_t)
        ref = (a.double() @ b.double())
        for name, fam, make, slow in variants:
            if skips(name, h, k, w):
                continue  # the 16-byte kernels' preconditions
            o = torch.full((h, w), float("nan"), device="cuda")
            try:
                run = make(a, b, o, h, k, w)
                run()
                torch.cuda.synchronize()
                err = (torch.linalg.norm(o.double() - ref) / max(torch.linalg.norm(ref).item(), 1e-30)).item()
                nan = bool(torch.isnan(o).any().item())
                ok = (not nan) and err < 1e-5
            except Exception as e:
                err, nan, ok = float("nan"), True, False
                log(f"CHECK FAILED to run: {name} {h}x{k}x{w}: {type(e).__name__}: {e}")
            rows_check.append({"variant": name, "shape": f"{h}x{k}x{w}", "rel_err": err, "nan": nan, "ok": ok})
            if not ok:
                log(f"CHECK FAIL {name} {h}x{k}x{w}: rel_err={err} nan={nan}")
    n_ok = sum(r["ok"] for r in rows_check)
    log(f"correctness: {n_ok}/{len(rows_check)} checks pass (rel. Frobenius error vs float64 < 1e-5, no NaN left)")

    # ---- timing
    results = []
    for (h, k, w) in sizes:
        a = torch.randn(h, k, device="cuda", generator=gen_t)
        b = torch.randn(k, w, device="cuda", generator=gen_t)
        ref = a.double() @ b.double() if h * w * k <= 4096 ** 3 else None
        flops = 2.0 * h * k * w
        for name, fam, make, slow in variants:
            if slow and h * k * w > args.skip_slow_above ** 3:
                continue
            if skips(name, h, k, w):
                continue
            o = torch.full((h, w), float("nan"), device="cuda")
            try:
                t0 = time.perf_counter()
                run = make(a, b, o, h, k, w)
                run()
                torch.cuda.synchronize()
                setup = time.perf_counter() - t0
                ms = time_it(run, args.budget_s)
                err = float("nan")
                if ref is not None:
                    err = (torch.linalg.norm(o.double() - ref) / torch.linalg.norm(ref)).item()
            except Exception as e:
                log(f"TIMING FAILED {name} {h}x{k}x{w}: {type(e).__name__}: {e}")
                traceback.print_exc()
                continue
            row = {"variant": name, "family": fam, "h": h, "k": k, "w": w, "ms": ms,
                   "gflops": flops / ms / 1e6, "rel_err": err, "setup_s": round(setup, 2)}
            if "autotuned" in name and name.startswith("numba") and (h, k, w) in tuned:
                row["config"] = config_label(tuned[(h, k, w)])
            results.append(row)
            log(f"  {h}x{k}x{w} {name:<45} {ms:9.3f} ms {row['gflops']:9.0f} GFLOP/s  err {err:.1e}")
        cub = [r for r in results if r["family"] == "cublas" and (r["h"], r["k"], r["w"]) == (h, k, w)]
        for r in results:
            if (r["h"], r["k"], r["w"]) == (h, k, w) and cub:
                r["pct_cublas"] = 100.0 * cub[0]["ms"] / r["ms"]

    # ---- SASS statistics of the Numba kernels and the CUDA C (backs docs/performance.md)
    sass = {} if args.quick else sass_stats(args.out, mf, mm, cuda)

    meta = {"device": dev, "date": date, "torch": torch.__version__, "cupy": cp.__version__,
            "autotune": {f"{h}x{k}x{w}": c for (h, k, w), c in tuned.items()},
            "autotune_timings_last": {"scalar": mf.autotuner.last_timings, "vec": mf.vec_autotuner.last_timings}}
    with open(os.path.join(args.out, "matmul_bench.json"), "w") as f:
        json.dump({"meta": meta, "results": results, "checks": rows_check, "sass": sass}, f, indent=1)
    with open(os.path.join(args.out, "matmul_bench.csv"), "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=["variant", "family", "h", "k", "w", "ms", "gflops", "pct_cublas",
                                           "rel_err", "setup_s", "config"])
        wr.writeheader()
        for r in results:
            wr.writerow(r)
    try:
        plot(results, os.path.join(args.out, "matmul_bench.png"), dev, date)
    except Exception as e:
        log(f"plot failed: {e}")

    # ---- the table, last
    log("")
    log(f"SASS: {json.dumps(sass)}")
    log(f"autotune choices: {meta['autotune']}")
    log(f"## fp32 matmul, {dev}, {date}, TF32 off; ms (GFLOP/s, % of cuBLAS)")
    shapes = [f"{h}x{k}x{w}" for (h, k, w) in sizes]
    log("| variant | " + " | ".join(shapes) + " |")
    log("|---|" + "---|" * len(shapes))
    for name, *_ in variants:
        cells = []
        for (h, k, w) in sizes:
            r = next((r for r in results if r["variant"] == name and (r["h"], r["k"], r["w"]) == (h, k, w)), None)
            cells.append("—" if r is None else f"{r['ms']:.3f} ({r['gflops']:.0f}, {r.get('pct_cublas', 0):.0f}%)")
        log(f"| {name} | " + " | ".join(cells) + " |")
    tri_rows = {(r["h"], r["k"], r["w"]): r for r in results if r["family"] == "triton"}
    if tri_rows:
        log("")
        log("## against the targets: % of cuBLAS (Numba >= 90%, C >= 95% at 4096^3) and time / Triton's (<= 1.00)")
        log("| variant | " + " | ".join(shapes) + " |")
        log("|---|" + "---|" * len(shapes))
        for name, fam, *_ in variants:
            if fam not in ("numba", "cuda_c"):
                continue
            cells = []
            for (h, k, w) in sizes:
                r = next((r for r in results if r["variant"] == name and (r["h"], r["k"], r["w"]) == (h, k, w)), None)
                t = tri_rows.get((h, k, w))
                cells.append("—" if r is None or t is None else
                             f"{r.get('pct_cublas', 0):.0f}% / {r['ms'] / t['ms']:.2f}")
            log(f"| {name} | " + " | ".join(cells) + " |")
    log(f"correctness: {n_ok}/{len(rows_check)} pass")
    return 0 if n_ok == len(rows_check) else 1


def time_it(run, budget_s: float) -> float:
    """Median ms per launch; several launches per event pair when one is short, so launch gaps stay out."""
    import torch

    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); run(); e.record(); e.synchronize()
    est = max(s.elapsed_time(e), 1e-3)
    inner = max(1, int(math.ceil(2.0 / est)))  # about 2 ms per sample at least
    samples = max(3, min(25, int(budget_s * 1e3 / (est * inner))))
    for _ in range(min(3, inner)):
        run()
    torch.cuda.synchronize()
    times = []
    for _ in range(samples):
        s.record()
        for _ in range(inner):
            run()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / inner)
    return statistics.median(times)


def triton_variant():
    try:
        import triton
        import triton.language as tl
    except Exception as e:
        log(f"triton unavailable: {e}")
        return None

    configs = [
        triton.Config({"BM": 128, "BN": 128, "BK": 32, "G": 8}, num_stages=3, num_warps=8),
        triton.Config({"BM": 128, "BN": 256, "BK": 32, "G": 8}, num_stages=3, num_warps=8),
        triton.Config({"BM": 128, "BN": 64, "BK": 32, "G": 8}, num_stages=4, num_warps=4),
        triton.Config({"BM": 64, "BN": 128, "BK": 32, "G": 8}, num_stages=4, num_warps=4),
        triton.Config({"BM": 128, "BN": 128, "BK": 16, "G": 8}, num_stages=4, num_warps=8),
    ]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def mm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, G: tl.constexpr):
        pid = tl.program_id(0)
        npm = tl.cdiv(M, BM)
        npn = tl.cdiv(N, BN)
        width = G * npn
        gid = pid // width
        first = gid * G
        gsz = min(npm - first, G)
        pm = first + (pid % width) % gsz
        pn = (pid % width) // gsz
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        a_p = a_ptr + rm[:, None] * sam + rk[None, :] * sak
        b_p = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for kk in range(0, tl.cdiv(K, BK)):
            kmask = rk < K - kk * BK
            a = tl.load(a_p, mask=(rm[:, None] < M) & kmask[None, :], other=0.0)
            b = tl.load(b_p, mask=kmask[:, None] & (rn[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc, input_precision="ieee")
            a_p += BK * sak
            b_p += BK * sbk
        c_p = c_ptr + rm[:, None] * scm + rn[None, :] * scn
        tl.store(c_p, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))

    def make(a, b, o, h, k, w):
        grid = lambda meta: (triton.cdiv(h, meta["BM"]) * triton.cdiv(w, meta["BN"]),)
        return lambda: mm_kernel[grid](a, b, o, h, w, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                       o.stride(0), o.stride(1))
    return make


def hand_async_variant(cp):
    """``sgemm_async<128,128,16,8,8,2>`` of ``scripts/perf_vec4.py`` (the hand CUDA C at 90-92% of cuBLAS in
    docs/performance.md), on an A^T made once; None if it cannot be built here."""
    try:
        import perf_vec4

        name = "sgemm_async<128,128,16,8,8,2>"
        fn = cp.RawModule(code=perf_vec4.CUDA_C, options=("-std=c++17", "--use_fast_math"),
                          name_expressions=[name]).get_function(name)
    except Exception as e:  # noqa: BLE001
        log(f"hand sgemm_async unavailable: {type(e).__name__}: {e}")
        return None

    def make(a, b, o, h, k, w):
        at = a.t().contiguous()
        grid = ((w + 127) // 128, (h + 127) // 128, 1)
        argt = (np.uint64(at.data_ptr()), np.uint64(b.data_ptr()), np.uint64(o.data_ptr()), np.int32(h), np.int32(k),
                np.int32(w))
        return lambda at=at: fn(grid, (256, 1, 1), argt)  # (at kept alive with the launch)
    return make


def skips(variant: str, h: int, k: int, w: int) -> bool:
    """The 16-byte-access variants run only on the shapes they accept: vec needs k and w multiples of 4, the
    cp.async kernel (on A^T) h and w."""
    if "async" in variant:
        return bool(h % 4 or w % 4)
    if "pipelined" in variant and "autotuned" not in variant:
        return bool(w % 4)
    return ("vec" in variant or "autotuned: pipelined" in variant) and bool(k % 4 or w % 4)


def config_label(c: dict) -> str:
    extra = (" vec" if c.get("vec") else "") + (f" group {c['group']}" if c.get("group", 1) > 1 else "")
    if c.get("kernel") == "pipelined":
        extra = f" pipelined {c.get('stages', 2)} stages" + extra
    return "{bm}x{bn}x{bk}/{tm}x{tn}".format(**c) + extra


def generated_flagship(kernel: str = "matmul_flagship"):
    """A runner for the translator's generated_cuda/<kernel>.cu (its first extern "C" launcher), or None."""
    path = os.path.join("generated_cuda", f"{kernel}.cu")
    if not os.path.exists(path):
        return None
    runners = generated_launchers(path, kernel)
    return runners[0][2] if runners else None


def generated_launchers(path: str, kernel: str) -> list:
    """(symbol, config, make-runner) for every launcher in a translated flagship file, built with nvcc."""
    import ctypes

    from numbakern.kernels import matmul_fast as mf

    src = open(path).read()
    syms = re.findall(r'extern "C"\s+cudaError_t\s+(launch_' + kernel + r'_\w*)\s*\(', src)
    if not syms:
        log(f"generated {kernel}: no launch_{kernel}_* symbol found")
        return []
    lib_path = os.path.join("/tmp", f"{kernel}_{abs(hash(path))}_gen.so")
    r = subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", path, "-o", lib_path],
                       capture_output=True, text=True)
    if r.returncode:
        log(f"generated {kernel}: nvcc failed:\n{r.stderr[-2000:]}")
        return []
    lib = ctypes.CDLL(lib_path)
    out = []
    for sym in syms:
        consts = dict((k, int(v)) for k, v in re.findall(r"_(bm|bn|bk|tm|tn|group|stages)(\d+)", sym))
        consts.update((k, bool(int(v))) for k, v in re.findall(r"_(vec)(\d+)", sym))
        config = {**mf.DEFAULT_CONFIG, **consts}
        if "stages" in config:  # matmul_pipelined: its own launch shape check (the same grid)
            config["vec"] = True
        fn = getattr(lib, sym)
        fn.restype = ctypes.c_int
        log(f"generated {kernel}: {sym} with config {config}")

        def make(a, b, o, h, k, w, fn=fn, sym=sym, config=config):
            cfg = mf.flagship_launch(config, h, w)
            vp, i64, u = ctypes.c_void_p, ctypes.c_int64, ctypes.c_uint
            argv = (vp(a.data_ptr()), i64(a.shape[0]), i64(a.shape[1]), vp(b.data_ptr()), i64(b.shape[0]),
                    i64(b.shape[1]), vp(o.data_ptr()), i64(o.shape[0]), i64(o.shape[1]), u(cfg.grid[0]),
                    u(cfg.grid[1]), u(1), u(cfg.block[0]), u(1), u(1), ctypes.c_size_t(0), vp(0))

            def run():
                err = fn(*argv)
                if err:
                    raise RuntimeError(f"{sym} returned cudaError {err}")
            return run
        out.append((sym, config, make))
    return out


def sass_stats(out_dir, mf, mm, cuda):
    """Instruction mix of the inner loops, from the SASS: Numba's (inspect_sass) and nvcc's (cuobjdump)."""
    kernels = {
        "numba tiled const tw=16": mm.matmul_tiled_static(16),
        "numba tiled_fast tw=16": mf.matmul_tiled_fast(16),
        "numba flagship 128x128x8/8x8": mf.matmul_flagship(**mf.DEFAULT_CONFIG),
        "numba flagship vec 128x128x16/8x8 group 8": mf.matmul_flagship(**mf.VEC_DEFAULT_CONFIG),
    }
    stats = {}
    texts = []
    for name, k in kernels.items():
        try:
            text = k.inspect_sass()
            text = text if isinstance(text, str) else next(iter(text.values()))
            regs = k.get_regs_per_thread() if hasattr(k, "get_regs_per_thread") else None
            if isinstance(regs, dict):
                regs = next(iter(regs.values()))
            stats[name] = {**sass_count(text), "registers": regs}
            texts.append(f"//// {name}\n{text}")
        except Exception as e:
            stats[name] = {"error": f"{type(e).__name__}: {e}"}
    try:
        src = os.path.join("/tmp", "bench_c.cu")
        with open(src, "w") as f:
            f.write(CUDA_C + "\ntemplate __global__ void matmul_tiled_static_c<16>(const float*, const float*, float*, int, int, int);\n"
                    "template __global__ void matmul_flagship_c<128,128,8,8,8>(const float*, i64, i64, const float*, i64, i64, float*, i64, i64);\n")
        subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-cubin", src, "-o", "/tmp/bench_c.cubin"], check=True)
        text = subprocess.run(["cuobjdump", "-sass", "/tmp/bench_c.cubin"], capture_output=True, text=True).stdout
        res = subprocess.run(["cuobjdump", "-res-usage", "/tmp/bench_c.cubin"], capture_output=True, text=True).stdout
        for part in re.split(r"(?=\s+Function : )", text):
            m = re.search(r"Function : (\S+)", part)
            if not m:
                continue
            nm = m.group(1)
            label = ("CUDA C naive" if "naive" in nm else "CUDA C lecture static tw=16" if "static" in nm
                     else "CUDA C flagship 128x128x8/8x8")
            stats[label] = sass_count(part)
        texts.append("//// CUDA C\n" + text + "\n" + res)
    except Exception as e:
        stats["CUDA C"] = {"error": f"{type(e).__name__}: {e}"}
    with open(os.path.join(out_dir, "matmul_sass.txt"), "w") as f:
        f.write("\n".join(texts))
    return stats


def sass_count(text: str) -> dict:
    ops = re.findall(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_]+)(?:\.[A-Z0-9_.]+)?", text, re.M)
    total = len(ops)
    c = {op: ops.count(op) for op in ("FFMA", "LDS", "LDG", "IMAD", "IADD3", "LEA", "ISETP", "SEL", "SHF", "LOP3",
                                      "BRA", "STL", "LDL", "MOV")}
    full = text
    c["LDS.128"] = len(re.findall(r"\bLDS\.128\b", full))
    c["IMAD.WIDE"] = len(re.findall(r"\bIMAD\.WIDE", full))
    c["total"] = total
    return c


def plot(results, path, dev, date):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shapes = []
    for r in results:
        s = f"{r['h']}x{r['k']}x{r['w']}"
        if s not in shapes:
            shapes.append(s)
    names = []
    for r in results:
        if r["variant"] not in names:
            names.append(r["variant"])
    fig, ax = plt.subplots(figsize=(13, 6))
    width = 0.8 / max(1, len(names))
    for i, nm in enumerate(names):
        ys = []
        for s in shapes:
            r = next((r for r in results if r["variant"] == nm and f"{r['h']}x{r['k']}x{r['w']}" == s), None)
            ys.append(r["gflops"] / 1e3 if r else 0)
        ax.bar([j + i * width for j in range(len(shapes))], ys, width, label=nm, color=plt.cm.tab20(i % 20))
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(shapes))])
    ax.set_xticklabels(shapes)
    ax.set_ylabel("TFLOP/s (fp32, TF32 off)")
    ax.set_title(f"fp32 matmul on {dev}, {date}")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
