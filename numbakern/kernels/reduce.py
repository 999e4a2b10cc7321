"""Reductions: sum and max over a whole array or along the last axis of a 2-D array.

``block_sum``
    The lecture-style teaching example: one element per thread, a shared-memory tree inside each block, then one
    atomic add per block. Simple, and slow: one 4-byte load per thread, half the threads idle after the first
    step of the tree, and float atomics that add the block totals in a run-dependent order.

``reduce_rows(is_max, ...)`` and ``reduce_warp_rows(is_max, ...)``: the fast path.
    Each thread first combines its share of a row on its own: 16-byte loads (``vector_io.vload4``), ``unroll`` of
    them issued before any is used (so that enough bytes are in flight to cover memory latency), four independent
    accumulators, a grid-stride loop over the row. Then the warp combines its lanes with a ``shfl_xor`` butterfly,
    and the warps of a block through a few words of shared memory.

    ``reduce_rows`` gives each row one block, or ``grid.y`` blocks when there are too few rows to fill the device
    (a whole 1-D array is one row). Blocks that share a row finish in one launch, deterministically: each writes its
    partial result to ``partials[row, part]``, and the block that arrives last (a ticket from an atomic counter,
    after a ``threadfence``) combines all the partials in a fixed order. So the result does not depend on which
    block finishes when: the same bits every run, unlike float atomics, and one launch, unlike two passes. (This is
    what torch's own reductions do for long rows.) The last block also puts the workspace back to zeros, so the
    next launch can use it as it is: no memset between launches.

    ``reduce_warp_rows`` gives each row one warp (``nt / 32`` rows per block): for short rows, where a block per
    row would leave most of its threads without work.

    Both read every element once: 4 bytes per element, the minimum. The 16-byte path (``vec=True``) needs rows
    whose starts are 16-byte aligned (``cols % 4 == 0``, or a single row) and handles a row's last ``cols % 4``
    elements with scalar loads; ``vec=False`` takes any shape.

``reduce_sum(x, axis=None)`` and ``reduce_max(x, axis=None)`` are the user-facing functions.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import cuda

from ..autotune import Autotuner
from ..fastpath import jit_options, u32
from ..launch import LaunchConfig, cdiv, check_array, empty_like_on, launch_config, to_kernel_arg
from ..registry import Case, KernelSpec, Work, random_array, register
from ..specialize import specialize
from ..vector_io import vload4
from . import scratch
from .collectives import WARP, group_collectives, nan_max, split_count, warp_max, warp_sum

# ---------------------------------------------------------------------------------------------------------------
# the lecture-style teaching example

#: threads per block; the tree halves it down to 1, so it must be a power of two
BLOCK = 256


@cuda.jit
def block_sum(x, out):
    """``out[0] += sum(x)``: each block sums ``BLOCK`` elements in shared memory, then adds its total atomically."""
    partial = cuda.shared.array(BLOCK, dtype=np.float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    partial[tid] = x[i] if i < x.shape[0] else np.float32(0.0)
    cuda.syncthreads()
    stride = BLOCK // 2
    while stride > 0:
        if tid < stride:
            partial[tid] += partial[tid + stride]
        cuda.syncthreads()
        stride //= 2
    if tid == 0:
        cuda.atomic.add(out, 0, partial[0])


# ---------------------------------------------------------------------------------------------------------------
# the fast path


def _check_config(nt: int, unroll: int, vec: bool) -> None:
    if not isinstance(nt, int) or nt % WARP or not WARP <= nt <= 1024:
        raise ValueError(f"reduce: nt must be a multiple of {WARP} from {WARP} to 1024, got {nt!r}")
    if not isinstance(unroll, int) or not 1 <= unroll <= 16:
        raise ValueError(f"reduce: unroll must be an int from 1 to 16, got {unroll!r}")
    if not isinstance(vec, bool):
        raise ValueError(f"reduce: vec must be True or False, got {vec!r}")


@functools.cache
def _row_share(is_max: bool, unroll: int, vec: bool):
    """The device function both kernels start with: one thread's combination of its share of a row."""
    width = 4 if vec else 1  # elements per load
    n_regs = unroll * width

    @cuda.jit(device=True)
    def row_share(x, row, first, stride):
        """Combine ``x[row, c:c + width]`` for ``c = first, first + stride, ...`` (and, with 16-byte loads, the
        row's last ``cols % 4`` elements if ``first`` is one of the first lanes of the row's first block).
        ``first`` and ``stride`` count elements and are multiples of ``width``."""
        cols = x.shape[1]
        regs = cuda.local.array(n_regs, np.float32)
        acc = cuda.local.array(width, np.float32)  # independent accumulators: no chain of dependent adds
        seed = np.float32(0.0)
        if is_max:
            seed = x[u32(row), 0]  # an element of the row: the identity of max without needing -inf
        for q in range(width):
            acc[q] = seed
        body = cols - cols % width
        c = first
        while c + (unroll - 1) * stride < body:  # `unroll` loads in flight before the first is used
            for u in range(unroll):
                if vec:
                    vload4(x, (u32(row), u32(c + u * stride)), regs, u * width)
                else:
                    regs[u] = x[u32(row), u32(c + u * stride)]
            for k in range(n_regs):
                if is_max:
                    acc[k % width] = nan_max(acc[k % width], regs[k])
                else:
                    acc[k % width] += regs[k]
            c += unroll * stride
        while c < body:
            if vec:
                vload4(x, (u32(row), u32(c)), regs, 0)
            else:
                regs[0] = x[u32(row), u32(c)]
            for k in range(width):
                if is_max:
                    acc[k] = nan_max(acc[k], regs[k])
                else:
                    acc[k] += regs[k]
            c += stride
        if vec:
            t = body + first // width  # the row's last cols % 4 elements: one each for its first threads
            if t < cols:
                if is_max:
                    acc[0] = nan_max(acc[0], x[u32(row), u32(t)])
                else:
                    acc[0] += x[u32(row), u32(t)]
        total = acc[0]
        for q in range(1, width):
            if is_max:
                total = nan_max(total, acc[q])
            else:
                total += acc[q]
        return total

    return row_share


@specialize
def reduce_rows(is_max: bool, nt: int = 256, unroll: int = 4, vec: bool = True):
    """Sum (``is_max=False``) or max of each row of ``x`` into ``out``: one block per row, ``grid.y`` blocks per
    row when rows are few. Launch with ``reduce_launch``; ``partials`` (rows x grid.y, float32) and ``counters``
    (rows, uint32) must be zeros, and are zeros again after the launch."""
    _check_config(nt, unroll, vec)
    width = 4 if vec else 1
    group_sum, group_max = group_collectives(nt // WARP)  # the block is the row group
    row_share = _row_share(is_max, unroll, vec)

    @cuda.jit(**jit_options(threads=nt, fastmath=False))
    def reduce_rows(x, out, partials, counters):
        tid = cuda.threadIdx.x
        row = cuda.blockIdx.x
        part = cuda.blockIdx.y
        parts = cuda.gridDim.y
        ticket = cuda.shared.array(1, np.uint32)

        total = row_share(x, row, (part * nt + tid) * width, parts * nt * width)
        if is_max:
            total = group_max(total)
        else:
            total = group_sum(total)
        if parts == 1:
            if tid == 0:
                out[u32(row)] = total
            return
        if tid == 0:
            cuda.atomic.add(partials, (u32(row), u32(part)), total)  # onto a zero: stores the partial exactly
            cuda.threadfence()  # the partial is visible before the ticket is taken
            ticket[0] = cuda.atomic.add(counters, u32(row), 1)
        cuda.syncthreads()
        if ticket[0] != parts - 1:
            return
        # the last block of this row: every other block's partial is in place
        cuda.threadfence()
        combined = np.float32(0.0)
        if is_max:
            combined = x[u32(row), 0]
        for p in range(tid, parts, nt):  # a fixed order whichever block came last
            v = cuda.atomic.add(partials, (u32(row), u32(p)), np.float32(0.0))  # read from L2, not a stale L1
            partials[u32(row), u32(p)] = np.float32(0.0)  # the workspace back to zeros for the next launch
            if is_max:
                combined = nan_max(combined, v)
            else:
                combined += v
        if is_max:
            combined = group_max(combined)
        else:
            combined = group_sum(combined)
        if tid == 0:
            out[u32(row)] = combined
            cuda.atomic.exch(counters, u32(row), 0)

    return reduce_rows


@specialize
def reduce_warp_rows(is_max: bool, nt: int = 256, unroll: int = 2, vec: bool = True):
    """Sum or max of each row of ``x`` into ``out`` with one warp per row, ``nt / 32`` rows per block: for short
    rows. Launch with ``reduce_launch``."""
    _check_config(nt, unroll, vec)
    width = 4 if vec else 1
    rows_per_block = nt // WARP
    row_share = _row_share(is_max, unroll, vec)

    @cuda.jit(**jit_options(threads=nt, fastmath=False))
    def reduce_warp_rows(x, out):
        tid = cuda.threadIdx.x
        lane = tid % WARP
        row = cuda.blockIdx.x * rows_per_block + tid // WARP
        total = np.float32(0.0)
        if row < x.shape[0]:  # (whole warps: the shuffles below see all 32 lanes of a warp or none)
            total = row_share(x, row, lane * width, WARP * width)
            if is_max:
                total = warp_max(total)
            else:
                total = warp_sum(total)
            if lane == 0:
                out[u32(row)] = total

    return reduce_warp_rows


# ---------------------------------------------------------------------------------------------------------------
# launch shapes and workspace

#: the kernels' configurations on a GPU: 256 threads, 4 (block per row) or 2 (warp per row) 16-byte loads in flight
ROWS_CONFIG = {"nt": 256, "unroll": 4}
WARP_ROWS_CONFIG = {"nt": 256, "unroll": 2}
#: rows up to this many elements get a warp each (``reduce_sum``/``reduce_max`` with ``axis=-1``)
WARP_ROW_MAX_COLS = 1024


def reduce_launch(kind: str, config: dict, rows: int, cols: int, vec: bool) -> LaunchConfig:
    """Grid and block for ``rows`` x ``cols``: ``kind`` is "block" (``reduce_rows``) or "warp"."""
    nt = config["nt"]
    if kind == "warp":
        return LaunchConfig((max(1, cdiv(rows, nt // WARP)), 1, 1), (nt, 1, 1))
    width = 4 if vec else 1
    parts = split_count(rows, cols, nt, width, cap=MAX_PARTS)
    return LaunchConfig((max(1, rows), parts, 1), (nt, 1, 1))


#: at most this many blocks share a row (the last block combines that many partials)
MAX_PARTS = 4096


def workspace(rows: int, parts: int, like=None):
    """Zeroed ``partials`` (rows x parts, float32) and ``counters`` (rows, uint32) for ``reduce_rows``: new host
    arrays without ``like``, else the cached ones on ``like``'s device (``scratch``)."""
    if like is None:
        return np.zeros((rows, parts), np.float32), np.zeros(rows, np.uint32)
    return (scratch.zeroed("reduce_partials", (rows, parts), np.float32, like),
            scratch.zeroed("reduce_counters", (rows,), np.uint32, like))


# ---------------------------------------------------------------------------------------------------------------
# user-facing functions

def _tuner_configs(kind: str) -> list[dict]:
    if kind == "warp":
        return [WARP_ROWS_CONFIG, {"nt": 256, "unroll": 4}, {"nt": 128, "unroll": 2}, {"nt": 512, "unroll": 1}]
    return [ROWS_CONFIG, {"nt": 256, "unroll": 8}, {"nt": 512, "unroll": 4}, {"nt": 128, "unroll": 8},
            {"nt": 1024, "unroll": 2}]


@functools.cache
def _tuner(is_max: bool, kind: str, vec: bool) -> Autotuner:
    factory = reduce_warp_rows if kind == "warp" else reduce_rows

    def build(nt, unroll):
        return factory(is_max, nt=nt, unroll=unroll, vec=vec)

    def launch(config, x, out, *ws):
        return reduce_launch(kind, config, int(x.shape[0]), int(x.shape[1]), vec)

    name = f"reduce_{'max' if is_max else 'sum'}_{kind}{'_vec' if vec else ''}"
    configs = _tuner_configs(kind)
    return Autotuner(name, build, configs=configs, key=lambda x, *rest: tuple(x.shape), launch=launch,
                     sim_config=configs[0])


def _vec_ready(info, rows: int, cols: int) -> bool:
    return info.address % 16 == 0 and (cols % 4 == 0 or rows == 1)


def _reduce(x, axis, out, is_max: bool, what: str):
    info = check_array("x", x, dtype=np.float32)
    if axis is None:
        rows, cols = 1, int(np.prod(info.shape, dtype=np.int64))
        out_shape: tuple[int, ...] = (1,)
    elif axis in (-1, len(info.shape) - 1) and len(info.shape) == 2:
        rows, cols = info.shape
        out_shape = (rows,)
    else:
        raise ValueError(f"{what}: axis must be None (the whole array) or -1 (the last axis of a 2-D array), "
                         f"got axis={axis!r} for a {len(info.shape)}-D array")
    if is_max and cols == 0:
        raise ValueError(f"{what}: argument 'x' has no elements to take the maximum of (shape {info.shape})")
    if out is None:
        out = empty_like_on(x, out_shape, np.dtype(np.float32))
    else:
        o = check_array("out", out, dtype=np.float32)
        if o.shape != out_shape:
            raise ValueError(f"{what}: argument 'out' must have shape {out_shape}, got {o.shape}")
        if o.device != info.device:
            raise ValueError(f"arguments must all be on one device, got 'x' on {info.device}, 'out' on {o.device}")
    if rows == 0:
        return out
    if cols == 0:  # the sum of nothing
        ok = to_kernel_arg(out)
        ok[:] = 0
        return out
    xk = to_kernel_arg(x).reshape(rows, cols)
    ok = to_kernel_arg(out)
    vec = _vec_ready(info, rows, cols)
    if axis is not None and cols <= WARP_ROW_MAX_COLS:
        _tuner(is_max, "warp", vec)(xk, ok)
        return out
    tuner = _tuner(is_max, "block", vec)
    config = tuner.select(xk, ok)
    cfg = reduce_launch("block", config, rows, cols, vec)
    partials, counters = workspace(rows, cfg.grid[1], ok)
    reduce_rows(is_max, vec=vec, **config)[cfg.grid, cfg.block](xk, ok, partials, counters)
    return out


def reduce_sum(x, axis=None, out=None):
    """The float32 sum of ``x`` (``axis=None``: every element, returned as a 1-element array) or of each row of a
    2-D ``x`` (``axis=-1``). torch tensors, CuPy arrays or numpy arrays in; the result of the same kind on the same
    device. Deterministic: the same bits every run."""
    return _reduce(x, axis, out, False, "reduce_sum")


def reduce_max(x, axis=None, out=None):
    """The maximum of ``x`` (``axis=None``) or of each row of a 2-D ``x`` (``axis=-1``); NaN if there is a NaN
    (like ``torch.amax``). Same conventions as ``reduce_sum``."""
    return _reduce(x, axis, out, True, "reduce_max")


# ---------------------------------------------------------------------------------------------------------------
# registry

ROWS_SIGNATURE = "void(float32[:, ::1], float32[::1], float32[:, ::1], uint32[::1])"
WARP_SIGNATURE = "void(float32[:, ::1], float32[::1])"


def _block_sum_case(size, rng, dist="uniform"):
    n = size["n"]
    x = random_array(rng, (n,), np.float32, dist)
    # the kernel adds to out[0]: start it at a random value, so the reference checks the accumulation too
    out = random_array(rng, (1,), np.float32, dist)
    return Case((x, out), launch_config(n, BLOCK), dict(size))


register(KernelSpec(
    name="block_sum",
    family="reduce",
    kernel=block_sum,
    signatures=("void(float32[::1], float32[::1])",),
    make_case=_block_sum_case,
    reference=lambda x, out: {1: np.array([out[0].astype(np.float64) + x.astype(np.float64).sum()])},
    error_scale=lambda x, out: {1: np.array([abs(float(out[0])) + np.abs(x.astype(np.float64)).sum()])},
    outputs=(1,),
    accumulates=(1,),
    # float atomics add the block totals in a run-dependent order
    rtol=1e-5,
    test_sizes=({"n": 1}, {"n": 1000}, {"n": 256}),
    verify_sizes=({"n": 1}, {"n": 1000}, {"n": 65537}, {"n": 1 << 20}),
    bench_sizes=({"n": 1 << 26},),
    work=lambda size: Work(flops=size["n"], bytes=4.0 * size["n"]),
    description="shared-memory tree per block + one atomic add per block",
    baseline=lambda x, out: (lambda: x.sum(), "torch.sum"),
))


def _rows_of(size) -> tuple[int, int]:
    return (1, size["n"]) if "n" in size else (size["rows"], size["cols"])


def _rows_case(size, rng, dist="uniform", kind="block", config=None):
    rows, cols = _rows_of(size)
    x = random_array(rng, (rows, cols), np.float32, dist)
    out = np.full(rows, np.nan, np.float32)
    cfg = reduce_launch(kind, config, rows, cols, True)
    if kind == "warp":
        return Case((x, out), cfg, dict(size))
    partials, counters = workspace(rows, cfg.grid[1])
    return Case((x, out, partials, counters), cfg, dict(size))


def _sum_reference(x, out, *ws):
    return {1: x.astype(np.float64).sum(axis=1)}


def _sum_scale(x, out, *ws):
    return {1: np.abs(x.astype(np.float64)).sum(axis=1)}


def _max_reference(x, out, *ws):
    return {1: x.max(axis=1).astype(np.float64)}


def _baseline(is_max: bool, whole: bool):
    def baseline(x, out, *ws):
        import torch

        if whole:
            op = (lambda: torch.amax(x)) if is_max else (lambda: torch.sum(x))
            return op, "torch.amax" if is_max else "torch.sum"
        if is_max:
            return (lambda: torch.amax(x, dim=-1, out=out)), "torch.amax(x, -1)"
        return (lambda: torch.sum(x, dim=-1, out=out)), "torch.sum(x, -1)"

    return baseline


def _work(size) -> Work:
    rows, cols = _rows_of(size)
    return Work(flops=rows * cols, bytes=4.0 * rows * (cols + 1))


#: 1-D sizes: 1, a non-multiple of 4, of the block and of a part's share, a prime, several parts
WHOLE_TEST_SIZES = ({"n": 1}, {"n": 3}, {"n": 1029}, {"n": 3001})
WHOLE_VERIFY_SIZES = ({"n": 1}, {"n": 3}, {"n": 1000}, {"n": 65537}, {"n": 1 << 20}, {"n": 4_000_037})
#: rows: 1 row and 1 column, columns that are multiples of 4 (the 16-byte path), non-multiples of the row group
ROWS_TEST_SIZES = ({"rows": 1, "cols": 4}, {"rows": 3, "cols": 1028}, {"rows": 5, "cols": 2052})
ROWS_VERIFY_SIZES = ({"rows": 1, "cols": 4}, {"rows": 7, "cols": 1028}, {"rows": 33, "cols": 65540},
                     {"rows": 4099, "cols": 2052}, {"rows": 3, "cols": 1_000_004})
WARP_TEST_SIZES = ({"rows": 1, "cols": 4}, {"rows": 11, "cols": 132}, {"rows": 9, "cols": 36})
WARP_VERIFY_SIZES = ({"rows": 1, "cols": 4}, {"rows": 11, "cols": 132}, {"rows": 4099, "cols": 36},
                     {"rows": 1031, "cols": 1028}, {"rows": 65537, "cols": 128})

for _is_max in (False, True):
    _op = "max" if _is_max else "sum"
    _common = dict(
        family="reduce",
        reference=_max_reference if _is_max else _sum_reference,
        error_scale=None if _is_max else _sum_scale,
        outputs=(1,),
        rtol=0.0 if _is_max else 1e-5,  # a max picks an element: exact
        work=_work,
        size_multiples={},
    )
    register(KernelSpec(
        name=f"reduce_{_op}",
        kernel=reduce_rows(_is_max, **ROWS_CONFIG),
        signatures=(ROWS_SIGNATURE,),
        make_case=functools.partial(_rows_case, kind="block", config=ROWS_CONFIG),
        constants={"is_max": _is_max, **ROWS_CONFIG, "vec": True},
        test_sizes=WHOLE_TEST_SIZES,
        verify_sizes=WHOLE_VERIFY_SIZES,
        bench_sizes=({"n": 1 << 26},),
        description=f"{_op} of a whole array: 16-byte loads, warp shuffles, blocks combined by the last one to finish",
        baseline=_baseline(_is_max, whole=True),
        **_common,
    ))
    register(KernelSpec(
        name=f"reduce_{_op}_rows",
        kernel=reduce_rows(_is_max, **ROWS_CONFIG),
        signatures=(ROWS_SIGNATURE,),
        make_case=functools.partial(_rows_case, kind="block", config=ROWS_CONFIG),
        constants={"is_max": _is_max, **ROWS_CONFIG, "vec": True},
        test_sizes=ROWS_TEST_SIZES,
        verify_sizes=ROWS_VERIFY_SIZES,
        bench_sizes=({"rows": 4096, "cols": 16384}, {"rows": 16, "cols": 1 << 22}),
        description=f"{_op} along rows: one block per row, several per row when rows are few",
        baseline=_baseline(_is_max, whole=False),
        **{**_common, "size_multiples": {"cols": 4}},
    ))
    register(KernelSpec(
        name=f"reduce_{_op}_warp_rows",
        kernel=reduce_warp_rows(_is_max, **WARP_ROWS_CONFIG),
        signatures=(WARP_SIGNATURE,),
        make_case=functools.partial(_rows_case, kind="warp", config=WARP_ROWS_CONFIG),
        constants={"is_max": _is_max, **WARP_ROWS_CONFIG, "vec": True},
        test_sizes=WARP_TEST_SIZES,
        verify_sizes=WARP_VERIFY_SIZES,
        bench_sizes=({"rows": 262144, "cols": 256},),
        description=f"{_op} along short rows: one warp per row",
        baseline=_baseline(_is_max, whole=False),
        **{**_common, "size_multiples": {"cols": 4}},
    ))
