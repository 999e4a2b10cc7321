"""Reductions: sum and max over a whole array or along the last axis of a 2-D array.

``block_sum``
    The lecture-style teaching example: one element per thread, a shared-memory tree inside each block, then one
    atomic add per block. Simple, and slow: one 4-byte load per thread, half the threads idle after the first
    step of the tree, and float atomics that add the block totals in a run-dependent order.

``reduce_rows(is_max, nt, group, unroll, vec)``: the fast path.
    Each thread first combines its share of a row on its own: 16-byte loads (``vector_io.vload4``), ``unroll`` of
    them issued before any is used (so that enough bytes are in flight to cover memory latency), four independent
    accumulators, a grid-stride loop over the row. Then the row group combines its threads: a ``shfl_xor``
    butterfly within each warp, and a word per warp in shared memory across the warps of a block.

    ``group=nt`` gives each row one block, or ``grid.y`` blocks when there are too few rows to fill the device (a
    whole 1-D array is one row). Blocks that share a row finish in one launch, deterministically: each writes its
    partial result to ``partials[row, part]``, and the block that arrives last (a ticket from an atomic counter,
    after a ``threadfence``) combines all the partials in a fixed order. So the result does not depend on which
    block finishes when: the same bits every run, unlike float atomics, and one launch, unlike two passes (torch's
    reductions of long rows work the same way). The last block also puts the workspace back to zeros, so the next
    launch can use it as it is: no memset between launches.

    ``group`` of 32 or fewer gives each row a warp or a few lanes of one (``nt / group`` rows per block): for short
    rows, where a block per row would leave most of its threads without work. Such a group never shares its row
    with another block and does not touch the workspace.

    Every element is read once: 4 bytes per element, the minimum. The 16-byte path (``vec=True``) needs rows whose
    starts are 16-byte aligned (``cols % 4 == 0``, or a single row) and handles a row's last ``cols % 4`` elements
    with scalar loads; ``vec=False`` takes any shape.

``reduce_sum(x, axis=None)`` and ``reduce_max(x, axis=None)`` are the user-facing functions.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import cuda

from ..autotune import Autotuner
from ..fastpath import jit_options, u32
from ..launch import LaunchConfig, cdiv, check_array, launch_config, to_kernel_arg
from ..registry import Case, KernelSpec, Work, random_array, register
from ..specialize import specialize
from . import scratch
from .collectives import check_group, combine, group_reduce, split_count
from .config import checked_out, flags
from .rows import load_group

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


def _check_config(nt: int, group: int, unroll: int, vec: bool) -> None:
    check_group("reduce_rows", nt, group)
    if not isinstance(unroll, int) or not 1 <= unroll <= 16:
        raise ValueError(f"reduce_rows: unroll must be an int from 1 to 16, got {unroll!r}")
    flags("reduce_rows", vec=vec)


@specialize
def reduce_rows(is_max: bool, nt: int = 256, group: int = 256, unroll: int = 4, vec: bool = True):
    """Sum (``is_max=False``) or max of each row of ``x`` (rows x cols, float32) into ``out`` (rows).

    ``group`` threads own a row: the block (``group=nt``; ``grid.y`` blocks per row when rows are few) or lanes of
    a warp (``group`` a power of two up to 32, ``nt / group`` rows per block, ``grid.y == 1``). Launch with
    ``reduce_launch``. ``partials`` (rows x grid.y, float32) and ``counters`` (rows, uint32) are the workspace of
    rows shared by several blocks: they must be zeros, and are zeros again after the launch (lanes of a warp per
    row do not touch them).
    """
    _check_config(nt, group, unroll, vec)
    width = 4 if vec else 1  # elements per load
    n_regs = unroll * width
    rows_per_block = nt // group
    shared_rows = group == nt  # only a block per row can share a row between blocks

    @cuda.jit(**jit_options(threads=nt, fastmath=False))
    def reduce_rows(x, out, partials, counters):
        tid = cuda.threadIdx.x
        lane = tid % group  # thread within the row group
        row = cuda.blockIdx.x * rows_per_block + tid // group
        part = cuda.blockIdx.y
        parts = cuda.gridDim.y
        cols = x.shape[1]
        live = row < x.shape[0]
        r = u32(row)
        regs = cuda.local.array(n_regs, np.float32)
        acc = cuda.local.array(width, np.float32)  # independent accumulators: no chain of dependent adds
        ticket = cuda.shared.array(1, np.uint32)

        # 1. this thread's share of the row: elements c .. c + width - 1 for c = first, first + stride, ...
        seed = np.float32(0.0)
        if is_max and live:
            seed = x[r, 0]  # an element of the row: the identity of max without -inf
        for q in range(width):
            acc[q] = seed
        if live:
            body = cols - cols % width  # 16-byte groups; the last cols % 4 elements are loaded one by one
            stride = parts * group * width
            c = (part * group + lane) * width
            while c + (unroll - 1) * stride < body:  # `unroll` loads in flight before the first is used
                for u in range(unroll):
                    load_group(x, r, c + u * stride, regs, u * width, vec)
                for k in range(n_regs):
                    acc[k % width] = combine(acc[k % width], regs[k], is_max)
                c += unroll * stride
            while c < body:
                load_group(x, r, c, regs, 0, vec)
                for k in range(width):
                    acc[k] = combine(acc[k], regs[k], is_max)
                c += stride
            t = body + part * group + lane  # the last cols % 4 elements: one each for the row's first threads
            if vec and t < cols:
                acc[0] = combine(acc[0], x[r, u32(t)], is_max)
        total = acc[0]
        for q in range(1, width):
            total = combine(total, acc[q], is_max)

        # 2. the row group's result
        total = group_reduce(total, group, is_max)
        if not shared_rows:  # lanes of a warp per row
            if lane == 0 and live:
                out[r] = total
        elif parts == 1:
            if tid == 0:
                out[r] = total
        else:
            # 3. a row shared by `parts` blocks: the last block to finish combines their partials in a fixed order
            if tid == 0:
                cuda.atomic.add(partials, (r, u32(part)), total)  # onto a zero: stores the partial exactly
                cuda.threadfence()  # the partial is visible before the ticket is taken
                ticket[0] = cuda.atomic.add(counters, r, 1)
            cuda.syncthreads()
            if ticket[0] == parts - 1:
                cuda.threadfence()
                combined = seed
                for p in range(tid, parts, nt):  # the same order whichever block came last
                    v = cuda.atomic.add(partials, (r, u32(p)), np.float32(0.0))  # from L2, never a stale L1 line
                    partials[r, u32(p)] = np.float32(0.0)  # the workspace back to zeros for the next launch
                    combined = combine(combined, v, is_max)
                combined = group_reduce(combined, group, is_max)
                if tid == 0:
                    out[r] = combined
                    cuda.atomic.exch(counters, r, 0)

    return reduce_rows


# ---------------------------------------------------------------------------------------------------------------
# launch shapes and workspace

#: the registered configurations: 256 threads, four 16-byte loads in flight per thread; a block per row, or 16 lanes
#: per row for short rows (a row of 256 elements: four 16-byte loads per lane)
BLOCK_CONFIG = {"nt": 256, "group": 256, "unroll": 4}
SHORT_CONFIG = {"nt": 256, "group": 16, "unroll": 4}
#: rows up to this many elements get lanes of a warp in ``reduce_sum``/``reduce_max`` with ``axis=-1``
SHORT_ROW_MAX_COLS = 1024
#: at most this many blocks share a row (the last block combines that many partials)
MAX_PARTS = 4096


def reduce_launch(config: dict, rows: int, cols: int) -> LaunchConfig:
    """Grid and block for ``rows`` x ``cols``: a block per row (``grid.y`` blocks per row when rows are too few to
    fill the device), or ``nt / group`` rows per block for lanes of a warp per row."""
    nt, group = config["nt"], config["group"]
    if group != nt:
        return LaunchConfig((max(1, cdiv(rows, nt // group)), 1, 1), (nt, 1, 1))
    width = 4 if config.get("vec", True) else 1
    parts = split_count(rows, cols, nt, width, cap=MAX_PARTS)
    return LaunchConfig((max(1, rows), parts, 1), (nt, 1, 1))


def workspace(rows: int, parts: int, like=None):
    """Zeroed ``partials`` (rows x parts, float32) and ``counters`` (rows, uint32) for ``reduce_rows``: new host
    arrays without ``like``, else the cached ones on ``like``'s device (``scratch.zeroed``)."""
    return (scratch.zeroed("reduce_partials", (rows, parts), np.float32, like),
            scratch.zeroed("reduce_counters", (rows,), np.uint32, like))


# ---------------------------------------------------------------------------------------------------------------
# user-facing functions

#: the autotuner's candidates: for short rows (lanes of a warp each), for long rows and whole arrays (a block each)
SHORT_CONFIGS = (SHORT_CONFIG, {"nt": 256, "group": 32, "unroll": 4}, {"nt": 256, "group": 8, "unroll": 4},
                 {"nt": 256, "group": 32, "unroll": 2}, {"nt": 512, "group": 16, "unroll": 2})
BLOCK_CONFIGS = (BLOCK_CONFIG, {"nt": 256, "group": 256, "unroll": 8}, {"nt": 512, "group": 512, "unroll": 4},
                 {"nt": 128, "group": 128, "unroll": 8}, {"nt": 1024, "group": 1024, "unroll": 2})


@functools.cache
def _tuner(is_max: bool, short_rows: bool, vec: bool) -> Autotuner:
    configs = SHORT_CONFIGS if short_rows else BLOCK_CONFIGS
    name = f"reduce_{'max' if is_max else 'sum'}_{'short' if short_rows else 'block'}{'_vec' if vec else ''}"
    return Autotuner(name, lambda **cfg: reduce_rows(is_max, vec=vec, **cfg), configs=configs,
                     key=lambda x, *rest: tuple(x.shape),
                     launch=lambda cfg, x, *rest: reduce_launch({**cfg, "vec": vec}, int(x.shape[0]), int(x.shape[1])),
                     sim_config=configs[0])


def _reduce(x, axis, out, is_max: bool, what: str):
    info = check_array("x", x, dtype=np.float32)
    if axis is None:
        rows, cols = 1, int(np.prod(info.shape, dtype=np.int64))
        out_shape: tuple[int, ...] = (1,)
    elif len(info.shape) == 2 and axis in (-1, 1):
        rows, cols = info.shape
        out_shape = (rows,)
    else:
        raise ValueError(f"{what}: axis must be None (the whole array) or -1 (the last axis of a 2-D array), "
                         f"got axis={axis!r} for a {len(info.shape)}-D array")
    if is_max and cols == 0:
        raise ValueError(f"{what}: argument 'x' has no elements to take the maximum of (shape {info.shape})")
    out, _ = checked_out(what, out, x, info, out_shape)
    ok = to_kernel_arg(out)
    if rows == 0:
        return out
    if cols == 0:  # the sum of nothing
        ok[:] = 0
        return out
    xk = to_kernel_arg(x).reshape(rows, cols)
    # 16-byte loads need every row to start on a 16-byte boundary
    vec = info.address % 16 == 0 and (cols % 4 == 0 or rows == 1)
    short_rows = axis is not None and cols <= SHORT_ROW_MAX_COLS
    tuner = _tuner(is_max, short_rows, vec)
    parts = max(reduce_launch({**c, "vec": vec}, rows, cols).grid[1] for c in tuner.configs)
    tuner(xk, ok, *workspace(rows, parts, ok))  # (a workspace wide enough for every candidate)
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

SIGNATURE = "void(float32[:, ::1], float32[::1], float32[:, ::1], uint32[::1])"


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


def _rows_case(size, rng, dist="uniform", config=None):
    rows, cols = _rows_of(size)
    x = random_array(rng, (rows, cols), np.float32, dist)
    out = np.full(rows, np.nan, np.float32)
    cfg = reduce_launch(config, rows, cols)
    return Case((x, out, *workspace(rows, cfg.grid[1])), cfg, dict(size))


def _sum_reference(x, out, *ws):
    return {1: x.astype(np.float64).sum(axis=1)}


def _sum_scale(x, out, *ws):
    return {1: np.abs(x.astype(np.float64)).sum(axis=1)}


def _max_reference(x, out, *ws):
    return {1: x.max(axis=1).astype(np.float64)}


def _baseline(is_max: bool, whole: bool):
    def baseline(x, out, *ws):
        import torch

        op, name = (torch.amax, "torch.amax") if is_max else (torch.sum, "torch.sum")
        if whole:
            return (lambda: op(x)), name
        return (lambda: op(x, dim=-1, out=out)), f"{name}(x, -1)"

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
SHORT_TEST_SIZES = ({"rows": 1, "cols": 4}, {"rows": 11, "cols": 132}, {"rows": 9, "cols": 36})
SHORT_VERIFY_SIZES = ({"rows": 1, "cols": 4}, {"rows": 11, "cols": 132}, {"rows": 4099, "cols": 36},
                     {"rows": 1031, "cols": 1028}, {"rows": 65537, "cols": 128})

for _is_max in (False, True):
    _op = "max" if _is_max else "sum"
    for _name, _config, _tests, _verify, _bench, _how, _multiples in (
        (f"reduce_{_op}", BLOCK_CONFIG, WHOLE_TEST_SIZES, WHOLE_VERIFY_SIZES, ({"n": 1 << 26},),
         "of a whole array: blocks combined by the last one to finish", {}),
        (f"reduce_{_op}_rows", BLOCK_CONFIG, ROWS_TEST_SIZES, ROWS_VERIFY_SIZES,
         ({"rows": 4096, "cols": 16384}, {"rows": 16, "cols": 1 << 22}), "along rows: a block per row (or several)",
         {"cols": 4}),
        (f"reduce_{_op}_short_rows", SHORT_CONFIG, SHORT_TEST_SIZES, SHORT_VERIFY_SIZES,
         ({"rows": 262144, "cols": 256},), "along short rows: 16 lanes per row", {"cols": 4}),
    ):
        register(KernelSpec(
            name=_name,
            family="reduce",
            kernel=reduce_rows(_is_max, **_config),
            signatures=(SIGNATURE,),
            make_case=functools.partial(_rows_case, config=_config),
            reference=_max_reference if _is_max else _sum_reference,
            error_scale=None if _is_max else _sum_scale,
            outputs=(1,),
            workspace=(2, 3),  # partials and counters: zeros before and after
            rtol=0.0 if _is_max else 1e-5,  # a max picks an element: exact
            constants={"is_max": _is_max, **_config, "vec": True},
            test_sizes=_tests,
            verify_sizes=_verify,
            bench_sizes=_bench,
            work=_work,
            size_multiples=_multiples,
            description=f"{_op} {_how}; 16-byte loads, warp shuffles",
            baseline=_baseline(_is_max, whole=_name == f"reduce_{_op}"),
        ))
