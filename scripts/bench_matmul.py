#!/usr/bin/env python
"""The fp32 matmul study: numbakern's matmul kernels in Numba and as translated CUDA C, next to the lecture's
hand-written CUDA C, hand-written CUDA C of the flagship's two designs, Triton and cuBLAS.

    python scripts/bench_matmul.py [--sizes HxKxW,...] [--only REGEX] [--sweep] [--budget 0.5] [--out DIR]
    python scripts/bench_matmul.py --codegen [--out DIR]            # PTX and ptxas of each kernel: no GPU needed
    python scripts/bench_matmul.py --render docs/perf/matmul.csv    # Markdown and chart from a CSV: no GPU needed

Timing (needs a CUDA GPU, nvcc and torch; Triton when installed): every variant is first checked on shapes that no
tile size divides (1×1×1, 33×70×45, 7×1021×3, ...; only those its preconditions allow): fresh seeded ``randn``
inputs, the output poisoned with NaN, ‖out − ref‖/‖ref‖ < 1e-5 against a float64 product. Variants that fail are
reported and not timed, and the exit status is 1. Then each is timed at every size (default: the lecture's
5120×256×5120, 1024³, 2048³, 4096³, 8192³; the lecture's slow kernels only up to 4096³) with CUDA events, TF32 off.
Writes ``matmul.csv``, ``matmul.md`` and ``matmul.png`` to ``--out``.

The variants (``--only`` selects by regular expression; cuBLAS always runs, the percentages need it):

- lecture: the lecture's Numba kernels (naive, tiled with a run-time tile width, the same with a constant one,
  ``matmul_tiled_fast``) and its hand-written CUDA C (``scripts/reference/lecture.cu``);
- flagship: ``matmul_flagship`` (scalar and 16-byte ``vec``), ``matmul_pipelined``, what ``matmul_fast`` runs
  (autotuned; the chosen config is recorded), ``matmul_pipelined_at`` and ``matmul_flagship_async`` (with A^T
  given, and after numbakern's transpose of A), and their translations from ``generated_cuda/`` (built with nvcc,
  called through their ``extern "C"`` launchers; ``transpose.cu`` first for the row-major A);
- reference C: hand-written CUDA C of the same two designs with nothing between them and nvcc
  (``scripts/reference/sgemm.cu``): the 16-byte design with its k-loop unrolled; the cp.async design unrolled, with
  its k-steps rolled as Numba leaves them, and with its tile loop shaped as the Numba kernel writes it;
- peer: Triton (``input_precision="ieee"``, a small autotune) and cuBLAS (``torch.matmul``);
- sweep (``--sweep``): every other candidate of ``matmul_fast``'s autotuners (``matmul_flagship``,
  ``matmul_pipelined``, and the transpose of A with ``matmul_pipelined_at``'s kernel in its other configs).

``--codegen`` compiles the kernels for sm_90 without a GPU (Numba's ``compile_ptx`` with each kernel's own options,
nvcc for the C) and counts PTX instructions (64-bit integer work, negative-index wraparound selects, FMAs, shared
and global loads and their 16-byte forms, local memory) and ptxas' registers and spills; writes ``codegen.csv`` and
``codegen.md``.

``--out`` defaults to ``$OUT`` when set, else ``docs/perf`` (where the tables in docs/performance.md are refreshed
too). With ``$OUT`` set, everything printed also goes to ``$OUT/bench_matmul.log``. Exit status: 0 done, 1 a
variant failed its check, 2 no GPU (or no nvcc for ``--codegen``).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import benchkit  # this script's folder

TOOL = "bench_matmul.py"
RESULTS = benchkit.ROOT / "docs" / "perf"
DOC = benchkit.ROOT / "docs" / "performance.md"
REFERENCE = Path(__file__).resolve().parent / "reference"

SIZES = ((5120, 256, 5120), (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192))
#: correctness shapes: 1, primes, non-multiples of every tile size, and multiples of 4 for the 16-byte kernels
CHECK_SHAPES = ((1, 1, 1), (33, 70, 45), (127, 131, 257), (509, 263, 383), (7, 1021, 3), (129, 9, 131),
                (256, 256, 256), (4, 4, 4), (36, 68, 44), (508, 263, 384), (1028, 516, 1020), (1024, 1024, 1024))
#: the lecture's naive and run-time-tile kernels take seconds beyond this product size
SLOW_LIMIT = 4096 ** 3
FIELDS = ["group", "variant", "h", "k", "w", "ms", "gflops", "pct_cublas", "rel_err", "config"]
CUBLAS = "cuBLAS (torch.matmul)"
TRITON = "Triton (fp32 ieee, autotuned)"
#: --quick: the fastest designs of each kind and their peers (a few minutes on an H200)
QUICK = r"matmul_flagship .*vec|matmul_pipelined|matmul_fast|sgemm_async: the cp.async design|Triton"


def shape_label(h: int, k: int, w: int) -> str:
    return f"{h}×{k}×{w}"


def config_label(c: dict) -> str:
    extra = (" vec" if c.get("vec") else "") + (f" group {c['group']}" if c.get("group", 1) > 1 else "")
    if c.get("kernel") == "pipelined":
        extra = f" pipelined {c.get('stages', 2)} stages" + extra
    elif c.get("kernel") == "transposed":
        extra = f" transpose + pipelined on A^T, {c.get('stages', 2)} stages" + extra
    return "{bm}x{bn}x{bk}/{tm}x{tn}".format(**c) + extra


def pipe_label(c: dict) -> str:
    return config_label({**c, "kernel": "pipelined"})


# ---------------------------------------------------------------------------------------------------------------
# variants: a name, a group, which shapes it accepts, and make(a, b, out, h, k, w) -> a zero-argument launch


def any_shape(h, k, w):
    return True


def vec_shapes(h, k, w):  # 16-byte groups along k (A) and w (B, out)
    return k % 4 == 0 and w % 4 == 0


def async_shapes(h, k, w):  # 16-byte groups along h (A^T) and w
    return h % 4 == 0 and w % 4 == 0


def pipe_shapes(h, k, w):  # 16-byte groups along w (B, out); A is copied 4 bytes at a time
    return w % 4 == 0


@dataclass(frozen=True)
class Variant:
    group: str
    name: str
    make: Callable
    accepts: Callable[[int, int, int], bool] = any_shape
    slow: bool = False


@cache
def reference_launchers(cu: str) -> dict:
    symbols = re.findall(r'extern "C" cudaError_t (launch_\w+)\(', (REFERENCE / cu).read_text())
    return benchkit.load_launchers(REFERENCE / cu, symbols)


def reference_c(cu: str, symbol: str, transposed: bool = False):
    """A hand-written kernel through its launcher ``(a, b, c, h, k, w, stream)``; ``transposed``: it takes A^T."""
    def make(a, b, o, h, k, w):
        fn = reference_launchers(cu)[symbol]
        first = a.t().contiguous() if transposed else a

        def run():
            err = fn(first.data_ptr(), b.data_ptr(), o.data_ptr(), h, k, w, None)
            if err:
                raise RuntimeError(f"{symbol} returned cudaError {err}")
        return run
    return make


def numba_views(*tensors):
    from numba import cuda

    return [cuda.as_cuda_array(t) for t in tensors]


def numba_lecture(kernel: str):
    def make(a, b, o, h, k, w):
        from numbakern import launch_config
        from numbakern.kernels import matmul as mm
        from numbakern.kernels import matmul_fast as mf

        A, B, O = numba_views(a, b, o)
        if kernel == "tiled":  # the lecture's kernel: the tile width is an argument
            cfg = launch_config((w, h), (16, 16), 2 * 16 * 16 * 4)
            return lambda: mm.matmul_tiled[cfg.grid, cfg.block, 0, cfg.shared_bytes](A, B, O, 16)
        cfg = launch_config((w, h), (16, 16))
        kern = {"naive": mm.matmul_naive, "static": mm.matmul_tiled_static(16),
                "fast": mf.matmul_tiled_fast(16)}[kernel]
        return lambda: kern[cfg.grid, cfg.block](A, B, O)
    return make


def numba_flagship(config: dict):
    def make(a, b, o, h, k, w):
        from numbakern.kernels import matmul_fast as mf

        A, B, O = numba_views(a, b, o)
        cfg = mf.flagship_launch(config, h, w)
        kern = mf.matmul_flagship(**config)
        return lambda: kern[cfg.grid, cfg.block](A, B, O)
    return make


def numba_matmul_fast(chosen: dict):
    """What ``matmul_fast`` runs for these matrices (its autotuner's choice), launched directly; the choice is
    recorded in ``chosen``."""
    def make(a, b, o, h, k, w):
        from numbakern.kernels import matmul_fast as mf

        A, B, O = numba_views(a, b, o)
        tuner = mf.fast_autotuner(A, B, O) or mf.autotuner
        config = tuner.select(A, B, O)
        chosen[(h, k, w)] = config
        if tuner is mf.autotuner:
            cfg, kern = mf.flagship_launch(config, h, w), mf.matmul_flagship(**config)
        else:
            cfg, kern = mf.either_launch(config, A, B, O), mf.either_kernel(**config)
        return lambda: kern[cfg.grid, cfg.block](A, B, O)
    return make


def numba_pipelined(config: dict):
    """``matmul_pipelined``: a multi-stage cp.async pipeline, A transposed on its way into shared memory."""
    def make(a, b, o, h, k, w):
        from numbakern.kernels import matmul_pipe as mp

        A, B, O = numba_views(a, b, o)
        cfg = mp.pipe_launch(config, h, w)
        kern = mp.matmul_pipelined(**config)
        return lambda: kern[cfg.grid, cfg.block](A, B, O)
    return make


def numba_pipelined_at(transposed: bool, config: dict | None = None):
    """``matmul_pipelined(a_t=True)`` (default: its registered config) on A^T given, or after numbakern's transpose
    of A (what ``matmul_fast``'s "transposed" candidates run)."""
    def make(a, b, o, h, k, w):
        from numbakern.kernels import matmul_pipe as mp

        cfg = mp.pipe_launch(config or mp.AT_DEFAULT_CONFIG, h, w)
        if not transposed:
            A, B, O = numba_views(a, b, o)
            kern = mp.TransposedA(config or mp.AT_DEFAULT_CONFIG)
            return lambda: kern[cfg.grid, cfg.block](A, B, O)
        At, B, O = numba_views(a.t().contiguous(), b, o)
        kern = mp.matmul_pipelined(**(config or mp.AT_DEFAULT_CONFIG))
        return lambda: kern[cfg.grid, cfg.block](At, B, O)
    return make


def numba_async(transposed: bool):
    """``matmul_flagship_async``: after numbakern's transpose of A into a scratch A^T made once, or on A^T given."""
    def make(a, b, o, h, k, w):
        from numbakern.kernels import matmul_async as ma
        from numbakern.kernels import matmul_fast as mf

        if not transposed:
            A, B, O, At = numba_views(a, b, o, a.new_empty((k, h)))
            return lambda: ma.matmul_via_async(A, B, O, ma.ASYNC_CONFIG, mt=At)
        At, B, O = numba_views(a.t().contiguous(), b, o)
        cfg = mf.flagship_launch(ma.ASYNC_CONFIG, h, w)
        kern = ma.matmul_flagship_async(**ma.ASYNC_CONFIG)
        return lambda: kern[cfg.grid, cfg.block](At, B, O)
    return make


def translated(kernel: str, transposed: bool = False):
    """The translator's ``generated_cuda/<kernel>.cu`` in its registered config."""
    def make(a, b, o, h, k, w):
        from numbakern.kernels import matmul_fast as mf
        from numbakern.registry import get

        spec = get(kernel)
        if kernel.startswith("matmul_pipelined"):
            from numbakern.kernels import matmul_pipe as mp

            cfg = mp.pipe_launch(spec.constants, h, w)
        else:
            cfg = mf.flagship_launch(spec.constants, h, w)
        first = a.t().contiguous() if transposed else a
        return benchkit.translated_launch(spec, [first, b, o], cfg.grid, cfg.block)
    return make


def translated_transpose_then(kernel: str):
    """The translator's ``transpose.cu`` writing A^T into a scratch array, then its ``<kernel>.cu`` on A^T: the C
    counterpart of ``matmul_fast``'s transposed-A path."""
    def make(a, b, o, h, k, w):
        from numbakern.kernels import matmul_pipe as mp
        from numbakern.kernels.transpose import ROWS, TILE
        from numbakern.registry import get

        spec = get(kernel)
        at = a.new_empty((k, h))
        cfg = mp.pipe_launch(spec.constants, h, w)
        flip = benchkit.translated_launch(get("transpose"), [a, at], (-(-k // TILE), -(-h // TILE), 1),
                                          (TILE, ROWS, 1))
        product = benchkit.translated_launch(spec, [at, b, o], cfg.grid, cfg.block)

        def run():
            flip()
            product()
        return run
    return make


def cublas(a, b, o, h, k, w):
    import torch

    return lambda: torch.matmul(a, b, out=o)


def triton_variant():
    """Triton's fp32 matmul (``input_precision="ieee"``, grouped block order, a small autotune), or None."""
    try:
        import triton
        import triton.language as tl
    except ImportError as exc:
        print(f"Triton is not installed ({exc}): no Triton row", flush=True)
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
        first = (pid // width) * G
        gsz = min(npm - first, G)
        pm = first + (pid % width) % gsz
        pn = (pid % width) // gsz
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        a_p = a_ptr + rm[:, None] * sam + rk[None, :] * sak
        b_p = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for kk in range(tl.cdiv(K, BK)):
            kmask = rk < K - kk * BK
            a = tl.load(a_p, mask=(rm[:, None] < M) & kmask[None, :], other=0.0)
            b = tl.load(b_p, mask=kmask[:, None] & (rn[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc, input_precision="ieee")
            a_p += BK * sak
            b_p += BK * sbk
        c_p = c_ptr + rm[:, None] * scm + rn[None, :] * scn
        tl.store(c_p, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))

    def make(a, b, o, h, k, w):
        def grid(meta):
            return (triton.cdiv(h, meta["BM"]) * triton.cdiv(w, meta["BN"]),)
        return lambda: mm_kernel[grid](a, b, o, h, w, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                       o.stride(0), o.stride(1))
    return make


def all_variants(sweep: bool, chosen: dict) -> list[Variant]:
    from numbakern.kernels import matmul_fast as mf
    from numbakern.kernels import matmul_pipe as mp

    out = [
        Variant("lecture", "Numba naive", numba_lecture("naive"), slow=True),
        Variant("lecture", "Numba tiled, run-time tw=16 (the lecture's)", numba_lecture("tiled"), slow=True),
        Variant("lecture", "Numba tiled, constant tw=16", numba_lecture("static")),
        Variant("lecture", "Numba matmul_tiled_fast tw=16", numba_lecture("fast")),
        Variant("lecture", "CUDA C naive (lecture.cu)", reference_c("lecture.cu", "launch_matmul_naive_c"), slow=True),
        Variant("lecture", "CUDA C tiled, static shared tw=16 (lecture.cu)",
                reference_c("lecture.cu", "launch_matmul_tiled_static_c16")),
        Variant("flagship", f"Numba matmul_flagship {config_label(mf.DEFAULT_CONFIG)}",
                numba_flagship(mf.DEFAULT_CONFIG)),
        Variant("flagship", f"Numba matmul_flagship {config_label(mf.VEC_DEFAULT_CONFIG)}",
                numba_flagship(mf.VEC_DEFAULT_CONFIG), vec_shapes),
        Variant("flagship", f"Numba matmul_pipelined {pipe_label(mp.PIPE_DEFAULT_CONFIG)}",
                numba_pipelined(mp.PIPE_DEFAULT_CONFIG), pipe_shapes),
        Variant("flagship", "Numba matmul_fast (autotuned)", numba_matmul_fast(chosen)),
        Variant("flagship", f"Numba matmul_pipelined_at {pipe_label(mp.AT_DEFAULT_CONFIG)}, A^T given",
                numba_pipelined_at(True), async_shapes),
        Variant("flagship", "Numba transpose + matmul_pipelined_at", numba_pipelined_at(False), async_shapes),
        Variant("flagship", "Numba matmul_flagship_async, A^T given", numba_async(True), async_shapes),
        Variant("flagship", "Numba matmul_via_async (transpose + matmul_flagship_async)", numba_async(False),
                async_shapes),
        Variant("flagship", "translated C matmul_flagship.cu", translated("matmul_flagship")),
        Variant("flagship", "translated C matmul_flagship_vec.cu", translated("matmul_flagship_vec"), vec_shapes),
        Variant("flagship", "translated C matmul_pipelined.cu", translated("matmul_pipelined"), pipe_shapes),
        Variant("flagship", "translated C matmul_pipelined_at.cu, A^T given",
                translated("matmul_pipelined_at", transposed=True), async_shapes),
        Variant("flagship", "translated C transpose.cu + matmul_pipelined_at.cu",
                translated_transpose_then("matmul_pipelined_at"), async_shapes),
        Variant("flagship", "translated C matmul_flagship_async.cu, A^T given",
                translated("matmul_flagship_async", transposed=True), async_shapes),
        Variant("reference C", "CUDA C sgemm_vec4: the vec design, k-loop unrolled",
                reference_c("sgemm.cu", "launch_sgemm_vec4"), vec_shapes),
        Variant("reference C", "CUDA C sgemm_async: the cp.async design, unrolled, A^T given",
                reference_c("sgemm.cu", "launch_sgemm_async", transposed=True), async_shapes),
        Variant("reference C", "CUDA C sgemm_async, k-steps rolled as in Numba, A^T given",
                reference_c("sgemm.cu", "launch_sgemm_async_rolled", transposed=True), async_shapes),
        Variant("reference C", "CUDA C sgemm_async, Numba's tile loop, A^T given",
                reference_c("sgemm.cu", "launch_sgemm_async_numba_loop", transposed=True), async_shapes),
    ]
    tri = triton_variant()
    if tri is not None:
        out.append(Variant("peer", TRITON, tri))
    out.append(Variant("peer", CUBLAS, cublas))
    if sweep:  # the autotuners' other candidates (the defaults are timed above)
        for c in (*mf.CONFIGS, *mf.VEC_CONFIGS):
            if c in (mf.DEFAULT_CONFIG, mf.VEC_DEFAULT_CONFIG):
                continue
            out.append(Variant("sweep", f"Numba matmul_flagship {config_label(c)}", numba_flagship(c),
                               vec_shapes if c.get("vec") else any_shape))
        for c in mp.PIPE_CONFIGS[1:]:
            out.append(Variant("sweep", f"Numba matmul_pipelined {pipe_label(c)}", numba_pipelined(c), pipe_shapes))
        for c in mp.AT_CONFIGS[1:]:
            out.append(Variant("sweep", f"Numba transpose + matmul_pipelined_at {pipe_label(c)}",
                               numba_pipelined_at(False, c), async_shapes))
    return out


# ---------------------------------------------------------------------------------------------------------------
# checking and timing


def relative_error(torch, out, ref) -> float:
    return float((torch.linalg.norm(out.double() - ref) / torch.linalg.norm(ref).clamp_min(1e-30)).item())


def check(torch, variants: list[Variant], seed: int) -> tuple[set[str], int, int]:
    """Run every variant on the check shapes it accepts; the names that failed, checks passed, checks run."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    failed, passed, total = set(), 0, 0
    for h, k, w in CHECK_SHAPES:
        a = torch.randn(h, k, device="cuda", generator=gen)
        b = torch.randn(k, w, device="cuda", generator=gen)
        ref = a.double() @ b.double()
        for v in variants:
            if not v.accepts(h, k, w):
                continue
            total += 1
            o = torch.full((h, w), float("nan"), device="cuda")
            try:
                v.make(a, b, o, h, k, w)()
                torch.cuda.synchronize()
                err = relative_error(torch, o, ref)
            except Exception as exc:  # noqa: BLE001 - a variant that cannot run is a failed check, reported
                print(f"CHECK FAILED {v.name} {shape_label(h, k, w)}: {type(exc).__name__}: {exc}", flush=True)
                failed.add(v.name)
                continue
            if err < 1e-5:
                passed += 1
            else:
                failed.add(v.name)
                unwritten = " (NaN left in the output: elements never written)" if torch.isnan(o).any() else ""
                print(f"CHECK FAILED {v.name} {shape_label(h, k, w)}: relative error {err:.3g}{unwritten}", flush=True)
    return failed, passed, total


def time_all(torch, variants: list[Variant], sizes, budget: float, seed: int, chosen: dict,
             failed: set[str]) -> list[dict]:
    """One row per variant and size it accepts; a variant that fails to run is added to ``failed``."""
    gen = torch.Generator(device="cuda").manual_seed(seed + 1)
    rows = []
    for h, k, w in sizes:
        a = torch.randn(h, k, device="cuda", generator=gen)
        b = torch.randn(k, w, device="cuda", generator=gen)
        ref = a.double() @ b.double() if h * k * w <= SLOW_LIMIT else None
        size_rows = []
        for v in variants:
            if not v.accepts(h, k, w) or (v.slow and h * k * w > SLOW_LIMIT):
                continue
            o = torch.full((h, w), float("nan"), device="cuda")
            try:
                ms = benchkit.median_ms(v.make(a, b, o, h, k, w), budget)
            except Exception as exc:  # noqa: BLE001 - reported, counted, and the study goes on
                print(f"TIMING FAILED {v.name} {shape_label(h, k, w)}: {type(exc).__name__}: {exc}", flush=True)
                failed.add(v.name)
                continue
            err = relative_error(torch, o, ref) if ref is not None else float("nan")
            row = {"group": v.group, "variant": v.name, "h": h, "k": k, "w": w, "ms": ms,
                   "gflops": 2e-6 * h * k * w / ms, "rel_err": err,
                   "config": config_label(chosen[(h, k, w)])
                   if (h, k, w) in chosen and v.name.startswith("Numba matmul_fast") else ""}
            size_rows.append(row)
            print(f"  {shape_label(h, k, w):<16} {v.name:<62} {ms:9.3f} ms {row['gflops']:9.0f} GFLOP/s", flush=True)
        base = next((r["ms"] for r in size_rows if r["variant"] == CUBLAS), float("nan"))
        for r in size_rows:
            r["pct_cublas"] = 100.0 * base / r["ms"]
        rows += size_rows
        del a, b, ref
        torch.cuda.empty_cache()
    return rows


# ---------------------------------------------------------------------------------------------------------------
# results


def markdown(rows, provenance: str) -> str:
    sizes = list(dict.fromkeys((int(r["h"]), int(r["k"]), int(r["w"])) for r in rows))
    names = list(dict.fromkeys((r["group"], r["variant"]) for r in rows))
    cell = {(r["variant"], int(r["h"]), int(r["k"]), int(r["w"])): r for r in rows}
    lines = [provenance, "",
             ("Milliseconds per product (% of cuBLAS at that size); \"—\": not run (outside the kernel's precondition, "
              "or one of the lecture's slow kernels above 4096³)."), "",
             "| group | variant | " + " | ".join(shape_label(*s) for s in sizes) + " |",
             "|---|---|" + "---:|" * len(sizes)]
    for group, name in names:
        cells = []
        for s in sizes:
            r = cell.get((name, *s))
            ms, pct = (benchkit.number(r[k]) for k in ("ms", "pct_cublas")) if r else (0, 0)
            cells.append("—" if r is None else f"{ms:.3f} ({pct:.0f}%)")
        lines.append(f"| {group} | {name} | " + " | ".join(cells) + " |")
    triton = {s: cell.get((TRITON, *s)) for s in sizes}
    if any(triton.values()):  # the peer the targets name beside cuBLAS
        lines += ["", f"Time relative to {TRITON} at the same size (< 1.00: faster than Triton).", "",
                  "| variant | " + " | ".join(shape_label(*s) for s in sizes) + " |", "|---|" + "---:|" * len(sizes)]
        for group, name in names:
            if group not in ("flagship", "reference C"):
                continue
            cells = []
            for s in sizes:
                r, t = cell.get((name, *s)), triton[s]
                cells.append("—" if r is None or t is None
                             else f"{benchkit.number(r['ms']) / benchkit.number(t['ms']):.2f}")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    chosen = [f"{shape_label(int(r['h']), int(r['k']), int(r['w']))}: {r['config']}" for r in rows if r["config"]]
    if chosen:
        lines += ["", "`matmul_fast`'s autotuner chose: " + "; ".join(chosen) + "."]
    return "\n".join(lines) + "\n"


def chart(rows, path: Path, provenance: str) -> bool:
    sizes = list(dict.fromkeys((int(r["h"]), int(r["k"]), int(r["w"])) for r in rows))
    names = list(dict.fromkeys(r["variant"] for r in rows))
    pct = {(r["variant"], int(r["h"]), int(r["k"]), int(r["w"])): benchkit.number(r["pct_cublas"]) for r in rows}
    series = {shape_label(*s): [pct.get((n, *s), 0.0) for n in names] for s in sizes}
    return benchkit.bar_chart(path, names, series, "% of cuBLAS (fp32, TF32 off)",
                              f"python scripts/bench_matmul.py. {benchkit.where_and_when(provenance)}")


def publish(rows, provenance: str, out: Path) -> str:
    md = markdown(rows, provenance)
    benchkit.publish(out, "matmul", md, lambda png: chart(rows, png, provenance), DOC, RESULTS)
    return md


# ---------------------------------------------------------------------------------------------------------------
# --codegen: what the compilers make of each kernel, without a GPU

SIG = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])"
SIG_TW = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1], int64)"
PTX_COUNTS = {
    "wrap_selects": r"\bselp\.b64\b",  # i < 0 ? i + n : i at a subscript numba cannot prove non-negative
    "int64_ops": r"\b(?:add|sub|mul\.lo|mul\.wide|mad\.lo|shl|shr|and|or)\.(?:s64|u64|b64)\b",
    "int32_ops": r"\b(?:add|sub|mul\.lo|mad\.lo|shl|shr|and|or)\.(?:s32|u32|b32)\b",
    "fma_f32": r"\bfma\.rn(?:\.ftz)?\.f32\b",
    "ld_shared": r"\bld\.shared\.",
    "ld_shared_v4": r"\bld\.shared\.v4\.",
    "ld_global": r"\bld\.global\.",
    "ld_global_v4": r"\bld\.global\.(?:nc\.)?v4\.",
    "st_global_v4": r"\bst\.global\.v4\.",
    "local_ldst": r"\b(?:ld|st)\.local\.",
}
CODEGEN_FIELDS = ["kernel", "compiler", "params", *benchkit.PTXAS, *PTX_COUNTS]


def numba_codegen_kernels():
    """``(label, dispatcher, signature, option overrides)`` for every Numba kernel of the table."""
    from numbakern.kernels import matmul as mm
    from numbakern.kernels import matmul_async as ma
    from numbakern.kernels import matmul_fast as mf

    vec_plain = {**mf.VEC_DEFAULT_CONFIG, "group": 1}
    return [
        ("naive", mm.matmul_naive, SIG, {}),
        ("tiled, run-time tw (the lecture's)", mm.matmul_tiled, SIG_TW, {}),
        ("tiled, constant tw=16", mm.matmul_tiled_static(16), SIG, {}),
        ("tiled, constant tw=16, fastmath", mm.matmul_tiled_static(16), SIG, {"fastmath": True}),
        ("matmul_tiled_fast tw=16", mf.matmul_tiled_fast(16), SIG, {}),
        ("matmul_tiled_fast tw=16 without fastmath, launch_bounds", mf.matmul_tiled_fast(16), SIG,
         {"fastmath": False, "launch_bounds": None}),
        (f"matmul_flagship {config_label(mf.DEFAULT_CONFIG)}", mf.matmul_flagship(**mf.DEFAULT_CONFIG), SIG, {}),
        (f"matmul_flagship {config_label(vec_plain)}", mf.matmul_flagship(**vec_plain), SIG, {}),
        (f"matmul_flagship {config_label(mf.VEC_DEFAULT_CONFIG)}", mf.matmul_flagship(**mf.VEC_DEFAULT_CONFIG), SIG,
         {}),
        (f"matmul_flagship_async {config_label(ma.ASYNC_CONFIG)}", ma.matmul_flagship_async(**ma.ASYNC_CONFIG), SIG,
         {}),
    ]


#: C files of the table: (label prefix, path, nvcc flags); a file's kernels are told apart by their mangled names
C_SOURCES = (
    ("lecture.cu", REFERENCE / "lecture.cu", ()),
    ("sgemm.cu", REFERENCE / "sgemm.cu", ()),
    ("translated", benchkit.ROOT / "generated_cuda" / "matmul_tiled_fast.cu", "manifest"),
    ("translated", benchkit.ROOT / "generated_cuda" / "matmul_flagship.cu", "manifest"),
    ("translated", benchkit.ROOT / "generated_cuda" / "matmul_flagship_vec.cu", "manifest"),
    ("translated", benchkit.ROOT / "generated_cuda" / "matmul_flagship_async.cu", "manifest"),
)


def ptx_counts(ptx: str) -> dict:
    body = re.sub(r"//.*", "", ptx)  # comments (PTX has no string literals that could hold "//")
    out = {key: len(re.findall(pattern, body)) for key, pattern in PTX_COUNTS.items()}
    m = re.search(r"\.entry\s+\S+\s*\((.*?)\)", body, re.DOTALL)
    out["params"] = m.group(1).count(".param") if m else ""
    return out


def c_label(prefix: str, path: Path, entry: str) -> str:
    if prefix == "translated":
        return f"{path.name}"
    for tag in ("naive", "tiled_static", "vec4"):
        if tag in entry:
            return f"{prefix}: " + {"naive": "naive", "tiled_static": "tiled, static shared tw=16",
                                    "vec4": "sgemm_vec4 (unrolled)"}[tag]
    rolled, numba_loop = re.search(r"Lb(\d)ELb(\d)E", entry).groups()
    how = "k-steps rolled" if rolled == "1" else "Numba's tile loop" if numba_loop == "1" else "unrolled"
    return f"{prefix}: sgemm_async ({how})"


def codegen(out: Path) -> int:
    import json

    os.environ["NUMBA_ENABLE_CUDASIM"] = "0"  # compile_ptx needs the real front end (it needs no GPU)
    nvcc, ptxas = shutil.which("nvcc"), shutil.which("ptxas")
    if not nvcc or not ptxas:
        raise benchkit.NoGPU(TOOL, "--codegen needs nvcc and ptxas on PATH (a CUDA toolkit; no GPU needed)")
    from numba import cuda

    from numbakern.frontend.target import cuda_typing  # calls to device functions ask for the device's cc: answered

    rows = []
    for label, kernel, sig, overrides in numba_codegen_kernels():
        options = {k: kernel.targetoptions.get(k) for k in ("fastmath", "launch_bounds")}
        options.update(overrides)
        with cuda_typing():
            ptx, _ = cuda.compile_ptx(kernel.py_func, sig, cc=(9, 0), fastmath=bool(options["fastmath"]),
                                      launch_bounds=options["launch_bounds"])
        rows.append({"kernel": label, "compiler": "Numba", **ptx_counts(ptx), **benchkit.ptxas_report(ptx, ptxas)})
        print(f"  {label}", flush=True)
    manifest = json.loads((benchkit.ROOT / "generated_cuda" / "manifest.json").read_text())["files"]
    for prefix, path, flags in C_SOURCES:
        if flags == "manifest":
            flags = tuple((manifest[path.name].get("build") or {}).get("nvcc_flags") or ())
        with tempfile.TemporaryDirectory() as d:
            target = Path(d) / "k.ptx"
            subprocess.run([nvcc, "-arch=sm_90", "-ptx", *flags, str(path), "-o", str(target)], check=True)
            ptx = target.read_text()
        for entry, text in benchkit.split_entries(ptx):
            label = c_label(prefix, path, entry)
            rows.append({"kernel": label, "compiler": "nvcc", **ptx_counts(text), **benchkit.ptxas_report(text, ptxas)})
            print(f"  {label}", flush=True)
    import numba

    from translate.verify.build import nvcc_version

    provenance = (f"Compiled for sm_90 on {benchkit.today()} with `python scripts/bench_matmul.py --codegen`: numba "
                  f"{numba.__version__}, numba-cuda {benchkit.dist_version('numba-cuda')}, nvcc and ptxas "
                  f"{nvcc_version()}; counts of instructions in each kernel's PTX (static, not executed), registers "
                  "and spills from ptxas.")
    out.mkdir(parents=True, exist_ok=True)
    benchkit.write_csv(out / "codegen.csv", rows, CODEGEN_FIELDS, provenance)
    md = publish_codegen(rows, provenance, out)
    print("\n" + md)
    return 0



CODEGEN_COLUMNS = (("registers", "registers"), ("spill_stores", "spill stores (B)"), ("params", "params"),
                   ("wrap_selects", "64-bit selects"), ("int64_ops", "64-bit int ops"), ("int32_ops", "32-bit int ops"),
                   ("fma_f32", "FMAs"), ("ld_shared", "shared loads (16 B)"), ("ld_global", "global loads (16 B)"),
                   ("st_global_v4", "16 B global stores"), ("local_ldst", "local ld/st"))


def codegen_markdown(rows, provenance: str) -> str:
    lines = [provenance, "",
             "| kernel | compiler | " + " | ".join(title for _, title in CODEGEN_COLUMNS) + " |",
             "|---|---|" + "---:|" * len(CODEGEN_COLUMNS)]
    for r in rows:
        cells = []
        for key, _ in CODEGEN_COLUMNS:
            value = r[key]
            if key in ("ld_shared", "ld_global"):
                value = f"{r[key]} ({r[key + '_v4']})"
            cells.append(str(value))
        lines.append(f"| {r['kernel']} | {r['compiler']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def publish_codegen(rows, provenance: str, out: Path) -> str:
    md = codegen_markdown(rows, provenance)
    benchkit.publish(out, "codegen", md, None, DOC, RESULTS)
    return md


# ---------------------------------------------------------------------------------------------------------------


def parse_sizes(text: str) -> list[tuple[int, int, int]]:
    sizes = []
    for part in text.split(","):
        dims = part.strip().lower().split("x")
        if len(dims) != 3 or not all(d.isdigit() and int(d) > 0 for d in dims):
            raise argparse.ArgumentTypeError(
                f"a size is HxKxW with positive integers, e.g. 4096x4096x4096; got {part!r}")
        sizes.append(tuple(int(d) for d in dims))
    return sizes


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="folder for the results (default: $OUT, else docs/perf)")
    parser.add_argument("--sizes", type=parse_sizes, default=list(SIZES), metavar="HxKxW,...",
                        help="product sizes to time (default: 5120x256x5120,1024x1024x1024,...,8192x8192x8192)")
    parser.add_argument("--only", type=re.compile, metavar="REGEX", help="time only the variants whose name matches")
    parser.add_argument("--sweep", action="store_true", help="also time matmul_flagship in every autotuner config")
    parser.add_argument("--quick", action="store_true",
                        help=f"only the fastest Numba, translated and hand-written kernels beside Triton and cuBLAS "
                             f"(--only '{QUICK}')")
    parser.add_argument("--budget", type=float, default=0.5, help="seconds of timed samples per variant and size")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs (checks and timing)")
    task = parser.add_mutually_exclusive_group()
    task.add_argument("--codegen", action="store_true", help="the code-generation table instead (no GPU needed)")
    task.add_argument("--render", metavar="CSV", help="only rewrite matmul.md/.png (or codegen.md) from this CSV")
    args = parser.parse_args(argv)
    if args.budget <= 0:
        parser.error(f"--budget must be positive, got {args.budget}")
    if args.quick:
        if args.only is not None:
            parser.error("--quick and --only exclude each other")
        args.only = re.compile(QUICK)

    if args.render:
        rows, provenance = benchkit.read_csv(Path(args.render))
        print((publish_codegen if "compiler" in rows[0] else publish)(rows, provenance, Path(args.render).parent))
        return 0
    out = benchkit.out_dir(args.out, RESULTS)
    benchkit.log_to_out("bench_matmul")
    if args.codegen:
        return codegen(out)

    torch = benchkit.require_gpu(TOOL)
    from numbakern import autotune

    os.environ[autotune.CACHE_ENV] = tempfile.mkdtemp(prefix="numbakern-autotune-")  # tune afresh, on this GPU
    chosen: dict = {}
    variants = [v for v in all_variants(args.sweep, chosen)
                if v.name == CUBLAS or args.only is None or args.only.search(v.name)]
    print(f"{len(variants)} variants; checking them (seed {args.seed}) ...", flush=True)
    t0 = time.perf_counter()
    failed, passed, total = check(torch, variants, args.seed)
    not_timed = f"; not timed: {', '.join(sorted(failed))}" if failed else ""
    print(f"correctness: {passed}/{total} checks pass{not_timed}", flush=True)
    rows = time_all(torch, [v for v in variants if v.name not in failed], args.sizes, args.budget, args.seed, chosen,
                    failed)
    command = "python scripts/bench_matmul.py" + "".join(
        f" {flag}" for flag, on in (("--sweep", args.sweep), (f"--only '{args.only and args.only.pattern}'", args.only),
                                    (f"--sizes {','.join('x'.join(map(str, s)) for s in args.sizes)}",
                                     tuple(args.sizes) != SIZES)) if on)
    provenance = (f"Measured on {benchkit.device_line(torch)}, {benchkit.today()}, with `{command}`; fp32, TF32 off; "
                  f"median of CUDA-event timings; {passed}/{total} correctness checks passed.")
    out.mkdir(parents=True, exist_ok=True)
    benchkit.write_csv(out / "matmul.csv", rows, FIELDS, provenance)
    md = publish(rows, provenance, out)
    print(f"\n{md}\n{len(rows)} timings in {time.perf_counter() - t0:.0f} s; "
          + (f"FAILED: {', '.join(sorted(failed))}" if failed else "every variant passed its checks"))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
