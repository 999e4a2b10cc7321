"""Histogram of a float32 array with ``torch.histc`` semantics, privatised per block in shared memory.

``torch.histc(x, bins, min=lo, max=hi)`` counts the elements with ``lo <= v <= hi`` into ``bins`` equal bins; an
element goes to ``int((v - lo) * bins / (hi - lo))``, computed in float32 in that order, and an element equal to
``hi`` (index ``bins``) to the last bin. NaN and elements outside ``[lo, hi]`` are not counted. This module computes
exactly that (no reciprocal, no fused or approximate division, since they move elements across bin edges), so the
counts equal torch's, edge bins included. Unlike torch, which returns the counts as float32 (inexact past 2**24),
the counts are int32.

``histogram_counts(nt, copies, unroll, vec)``
    Each block counts into its own copy of the histogram in shared memory (``copies`` copies, one per group of
    warps, to spread the atomics of warps that hit the same bin), with shared-memory atomics, which cost far less
    than global ones. At the end it adds its non-zero bins to the global histogram with one atomic per bin. The
    input is read with 16-byte loads in a grid-stride loop over a grid that just fills the device, ``unroll`` loads
    in flight per thread: 4 bytes per element of memory traffic, plus ``bins`` atomics per block (and fewer blocks
    for many bins, so that those stay below 1/32 of an atomic per element).

``histc(x, bins, lo, hi)`` is the user-facing function.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..fastpath import jit_options, u32
from ..launch import LaunchConfig, cdiv, check_array, dynamic_shared_bytes, to_kernel_arg
from ..registry import Case, KernelSpec, Work, random_array, register
from ..specialize import specialize
from ..vector_io import vload4
from . import scratch
from .collectives import THREADS_PER_SM, WARP, check_threads, multiprocessors, resident_blocks
from .config import STATIC_SHARED_LIMIT, checked_out, flags


@cuda.jit(device=True)
def bin_of(v, lo, hi, scale, bins):
    """torch.histc's bin of ``v`` (``scale`` is ``float32(bins)``), or -1 if ``v`` is outside ``[lo, hi]`` or NaN."""
    if v >= lo and v <= hi:  # (False for NaN)
        b = np.int32((v - lo) * scale / (hi - lo))
        return b if b < bins else b - 1  # v == hi lands on index bins: the last bin is closed
    return np.int32(-1)


def _check_config(nt: int, copies: int, unroll: int, vec: bool) -> None:
    check_threads("histogram", nt)
    if not isinstance(copies, int) or copies < 1 or (nt // WARP) % copies:
        raise ValueError(f"histogram: copies must divide the {nt // WARP} warps of a block, got {copies!r}")
    if not isinstance(unroll, int) or not 1 <= unroll <= 16:
        raise ValueError(f"histogram: unroll must be an int from 1 to 16, got {unroll!r}")
    flags("histogram", vec=vec)


@specialize
def histogram_counts(nt: int = 256, copies: int = 2, unroll: int = 4, vec: bool = True):
    """``counts[b] += #{v in x : lo <= v <= hi, bin(v) == b}`` (``torch.histc``'s bins); launch with
    ``histogram_launch`` (dynamic shared memory: ``copies * bins`` int32)."""
    _check_config(nt, copies, unroll, vec)
    width = 4 if vec else 1
    n_regs = unroll * width
    warps_per_copy = nt // WARP // copies

    # launch_bounds(nt, THREADS_PER_SM / nt): at most 32 registers for 256 threads, so that the grid of
    # ``histogram_launch`` (a full device of resident blocks) runs in one wave; with 33, six blocks fit instead of
    # eight and a third of the grid ran as a second wave
    @cuda.jit(**jit_options(threads=nt, min_blocks=max(1, THREADS_PER_SM // nt), fastmath=False))
    def histogram_counts(x, counts, lo, hi):
        tid = cuda.threadIdx.x
        hist = cuda.shared.array(0, np.int32)  # copies x bins
        regs = cuda.local.array(n_regs, np.float32)
        n = x.shape[0]
        bins = counts.shape[0]
        scale = np.float32(bins)
        offset = tid // WARP // warps_per_copy * bins  # this warp's copy

        for j in range(tid, copies * bins, nt):
            hist[u32(j)] = 0
        cuda.syncthreads()

        body = n - n % width
        stride = cuda.gridsize(1) * width
        i = cuda.grid(1) * width
        while i + (unroll - 1) * stride < body:  # `unroll` loads in flight before the first is counted
            for u in range(unroll):
                if vec:
                    vload4(x, u32(i + u * stride), regs, u * width)
                else:
                    regs[u] = x[u32(i + u * stride)]
            for k in range(n_regs):
                b = bin_of(regs[k], lo, hi, scale, bins)
                if b >= 0:
                    cuda.atomic.add(hist, u32(offset + b), 1)
            i += unroll * stride
        while i < body:
            for q in range(width):
                b = bin_of(x[u32(i + q)], lo, hi, scale, bins)
                if b >= 0:
                    cuda.atomic.add(hist, u32(offset + b), 1)
            i += stride
        if vec:  # the last n % 4 elements, one each for the grid's first threads
            t = body + cuda.grid(1)
            if t < n:
                b = bin_of(x[u32(t)], lo, hi, scale, bins)
                if b >= 0:
                    cuda.atomic.add(hist, u32(offset + b), 1)
        cuda.syncthreads()

        for j in range(tid, bins, nt):  # the block's counts into the global histogram, one atomic per bin
            total = 0
            for c in range(copies):
                total += hist[u32(c * bins + j)]
            if total > 0:
                cuda.atomic.add(counts, u32(j), total)

    return histogram_counts


#: a block counts at least this many elements per bin of its histogram, so that adding its histogram to the global
#: one (an atomic per bin) costs at most 1/32 of an atomic per element
ELEMENTS_PER_BIN = 32


def histogram_launch(config: dict, n: int, bins: int) -> LaunchConfig:
    """Enough blocks to fill the device, fewer when there is not a 16-byte load per thread for them or when
    ``bins`` is so large that their final atomics would cost more than the counting (at least one block per
    multiprocessor), and the shared memory of ``copies`` private histograms."""
    nt, width = config["nt"], 4 if config.get("vec", True) else 1
    worth = max(multiprocessors(), n // (ELEMENTS_PER_BIN * bins))
    blocks = max(1, min(resident_blocks(nt), cdiv(n, nt * width), worth))
    return LaunchConfig((blocks, 1, 1), (nt, 1, 1), dynamic_shared_bytes(np.int32, config["copies"] * bins))


#: 256 threads, two private copies per block (one per four warps), four 16-byte loads in flight per thread
CONFIG = {"nt": 256, "copies": 2, "unroll": 4}


def max_bins(copies: int) -> int:
    return STATIC_SHARED_LIMIT // (4 * copies)


def histc(x, bins: int = 100, lo: float = 0.0, hi: float = 0.0, out=None):
    """``torch.histc(x, bins, min=lo, max=hi)`` for a float32 ``x`` (any shape, C-contiguous), as int32 counts.
    Unlike torch, ``lo`` and ``hi`` must be given with ``lo < hi`` (torch substitutes the data's range when both
    are 0). ``out``, if given, must be an int32 array of ``bins`` counts; it is overwritten."""
    info = check_array("x", x, dtype=np.float32)
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or not 1 <= bins <= max_bins(1):
        raise ValueError(f"histc: argument 'bins' must be an int from 1 to {max_bins(1)} (the histogram lives in "
                         f"48 KiB of shared memory), got {bins!r}")
    lo32, hi32 = np.float32(lo), np.float32(hi)
    if not (np.isfinite(lo32) and np.isfinite(hi32) and lo32 < hi32):
        raise ValueError(f"histc: arguments 'lo' and 'hi' must be finite float32 values with lo < hi, got "
                         f"lo={lo!r}, hi={hi!r}")
    if out is None:
        out = scratch.zeros_like_on(x, (int(bins),), np.int32)
    else:
        checked_out("histc", out, x, info, (bins,), np.int32)
        to_kernel_arg(out)[:] = 0
    n = int(np.prod(info.shape, dtype=np.int64))
    if n == 0:
        return out
    if n >= 2**31:
        raise ValueError(f"histc: argument 'x' has {n} elements; int32 counts hold at most 2**31 - 1")
    config = dict(CONFIG)
    config["copies"] = max(c for c in (1, 2, 4, 8) if c <= config["copies"] and bins <= max_bins(c))
    config["vec"] = info.address % 16 == 0
    cfg = histogram_launch(config, n, int(bins))
    histogram_counts(**config)[cfg.grid, cfg.block, 0, cfg.shared_bytes](to_kernel_arg(x).reshape(n),
                                                                          to_kernel_arg(out), lo32, hi32)
    return out


# ---------------------------------------------------------------------------------------------------------------
# registry


def torch_bins(x: np.ndarray, bins: int, lo: np.float32, hi: np.float32) -> np.ndarray:
    """``torch.histc``'s counts, from its definition (float32 arithmetic in its order; numpy's float32 operations
    are IEEE, like the GPU's without fast math)."""
    x = np.asarray(x, np.float32)
    inside = (x >= lo) & (x <= hi)
    with np.errstate(invalid="ignore", over="ignore"):
        b = ((x[inside] - lo) * np.float32(bins) / (hi - lo)).astype(np.int64)
    b[b == bins] = bins - 1
    return np.bincount(b, minlength=bins)


def _case(size, rng, dist="uniform"):
    n, bins = size["n"], size["bins"]
    x = random_array(rng, (n,), np.float32, dist)
    # a range that leaves some elements out on both sides, and elements exactly on the edges: lo, hi, the bin
    # boundaries lo + k * (hi - lo) / bins, their float32 neighbours, NaN
    lo, hi = np.float32(np.quantile(x, 0.05)), np.float32(np.quantile(x, 0.95))
    if not lo < hi:
        lo, hi = np.float32(x.min()) - np.float32(1), np.float32(x.max()) + np.float32(1)
    edges = (lo + np.arange(bins + 1, dtype=np.float32) * ((hi - lo) / np.float32(bins))).astype(np.float32)
    special = np.concatenate([edges, np.nextafter(edges, np.float32(-np.inf)), np.nextafter(edges, np.float32(np.inf)),
                              np.array([np.nan], np.float32)])
    k = min(n // 4, special.size)
    if k:
        x[rng.choice(n, size=k, replace=False)] = rng.choice(special, size=k, replace=False)
    counts = rng.integers(0, 1000, size=bins).astype(np.int32)  # the kernel adds to them
    cfg = histogram_launch({**CONFIG, "vec": True}, n, bins)
    return Case((x, counts, lo, hi), cfg, dict(size))


def _reference(x, counts, lo, hi):
    return {1: counts.astype(np.int64) + torch_bins(x, counts.shape[0], lo, hi)}


def _baseline(x, counts, lo, hi):
    import torch

    bins = counts.shape[0]
    return (lambda: torch.histc(x, bins, float(lo), float(hi))), "torch.histc"


register(KernelSpec(
    name="histogram",
    family="histogram",
    kernel=histogram_counts(**CONFIG),
    signatures=("void(float32[::1], int32[::1], float32, float32)",),
    make_case=_case,
    reference=_reference,
    outputs=(1,),
    accumulates=(1,),
    rtol=0.0,  # counts: exact
    constants={**CONFIG, "vec": True},
    test_sizes=({"n": 1, "bins": 1}, {"n": 1001, "bins": 7}, {"n": 5003, "bins": 256}),
    verify_sizes=({"n": 1, "bins": 1}, {"n": 1001, "bins": 7}, {"n": 65537, "bins": 256},
                  {"n": 1 << 20, "bins": 1000}, {"n": 4_000_037, "bins": 6000}),
    bench_sizes=({"n": 1 << 26, "bins": 256}, {"n": 1 << 26, "bins": 4096}),
    work=lambda size: Work(flops=3.0 * size["n"], bytes=4.0 * size["n"]),
    description="torch.histc bins, a private histogram per block in shared memory, 16-byte loads",
    baseline=_baseline,
))
