"""What the row-group kernels (softmax, norm) share: their configuration check, their launch shape and the
checks of their arguments.

A *row group* is the set of threads that owns one row: a few lanes of a warp or a whole warp (``group`` up to 32,
``nt / group`` rows per block) for short rows, or the whole block (``group=nt``) for long ones. Each thread of the
group holds ``cache`` 16-byte groups of its row in registers; the configurations give every thread a few of them
(enough bytes in flight to cover the memory latency) whatever the row length.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import cuda

from ..autotune import Autotuner
from ..fastpath import u32
from ..launch import LaunchConfig, cdiv, check_array
from ..registry import KernelSpec, Work, register
from ..vector_io import vload4, vstore4
from .collectives import check_group
from .config import checked_out, flags, sizes


def check_row_config(what: str, nt: int, group: int, cache: int, vec: bool) -> None:
    """The row-group kernels' (softmax, norm) shared constraints, as a ValueError naming the constant."""
    check_group(what, nt, group)
    if not isinstance(cache, int) or not 1 <= cache <= 16:
        raise ValueError(f"{what}: cache must be an int from 1 to 16 (16-byte groups per thread), got {cache!r}")
    flags(what, vec=vec)


@cuda.jit(device=True, forceinline=True)
def row_of(x, group, rows_per_block, width):
    """``(lane, row, cols, body, live)``: this thread's place in its row group, the row the group owns, the row's
    length, where its whole groups of ``width`` end (the last ``cols % 4`` elements are loaded one by one), and
    whether the row exists."""
    tid = cuda.threadIdx.x
    row = cuda.blockIdx.x * rows_per_block + tid // group
    cols = x.shape[1]
    return tid % group, row, cols, cols - cols % width, row < x.shape[0]


@cuda.jit(device=True, forceinline=True)
def load_group(x, r, c, regs, at, vec):
    """``regs[at:at + 4] = x[r, c:c + 4]`` in one 16-byte load (``vec``), else ``regs[at] = x[r, c]``."""
    if vec:
        vload4(x, (r, u32(c)), regs, at)
    else:
        regs[at] = x[r, u32(c)]


@cuda.jit(device=True, forceinline=True)
def store_group(out, r, c, regs, at, vec):
    """``out[r, c:c + 4] = regs[at:at + 4]`` in one 16-byte store (``vec``), else ``out[r, c] = regs[at]``."""
    if vec:
        vstore4(out, (r, u32(c)), regs, at)
    else:
        out[r, u32(c)] = regs[at]


@cuda.jit(device=True, forceinline=True)
def load_cached(x, r, vals, cache, span, first, body, vec):
    """A thread's cached groups of row ``r``, every load issued before any is used: group u (of ``cache``) at column
    ``u * span + first``, those before ``body`` (where the whole 16-byte groups end)."""
    for u in range(cache):
        c = u * span + first
        if c < body:
            load_group(x, r, c, vals, u * (4 if vec else 1), vec)


def row_layout(nt: int, group: int, cache: int, vec: bool) -> tuple[int, int, int, int]:
    """``(width, rows_per_block, n_cached, span)`` of a row-group kernel: elements per load (4: one 16-byte group),
    rows a block owns, the values a thread caches, and the elements a row group covers with one load each."""
    width = 4 if vec else 1
    return width, nt // group, cache * width, group * width


def row_launch(config: dict, rows: int) -> LaunchConfig:
    """Grid and block of a row-group kernel (softmax, norm): ``nt / group`` rows per block."""
    nt, group = config["nt"], config["group"]
    return LaunchConfig((max(1, cdiv(rows, nt // group)), 1, 1), (nt, 1, 1))


def vec_ok(*infos, cols: int) -> bool:
    """16-byte access is possible: every array 16-byte aligned and rows a multiple of 4 elements long."""
    return cols % 4 == 0 and all(i.address % 16 == 0 for i in infos)


def check_rows(what: str, x, out):
    """(x info, out array, out info) for a row-wise kernel: ``x`` 2-D float32, ``out`` new or of the same shape."""
    info = check_array("x", x, dtype=np.float32, ndim=2)
    return (info, *checked_out(what, out, x, info, info.shape))


#: (longest row held in registers, config), short rows to long; the first whose span ``group * cache * 4`` covers a
#: row is the default for it (the autotuner also times its neighbours). Every thread gets a few 16-byte groups, so
#: that enough bytes are in flight per multiprocessor, and a block at most 64 registers per thread of values.
ROW_CONFIGS = (
    (32, {"nt": 256, "group": 8, "cache": 1}),
    (64, {"nt": 256, "group": 16, "cache": 1}),
    (128, {"nt": 256, "group": 8, "cache": 4}),
    (256, {"nt": 256, "group": 16, "cache": 4}),
    (512, {"nt": 256, "group": 32, "cache": 4}),
    (1024, {"nt": 256, "group": 32, "cache": 8}),
    (2048, {"nt": 128, "group": 128, "cache": 4}),
    (4096, {"nt": 256, "group": 256, "cache": 4}),
    (8192, {"nt": 512, "group": 512, "cache": 4}),
    (16384, {"nt": 512, "group": 512, "cache": 8}),
    (32768, {"nt": 1024, "group": 1024, "cache": 8}),
)


def config_index(cols: int) -> int:
    """The index in ``ROW_CONFIGS`` of the default configuration for rows of ``cols`` elements."""
    return cover_index(ROW_CONFIGS, cols)


def config_for(cols: int) -> dict:
    """The default configuration for rows of ``cols`` elements."""
    return dict(ROW_CONFIGS[config_index(cols)][1])


def cover_index(covers, cols: int) -> int:
    """The index of the first ``(cover, config)`` whose ``cover`` (longest row it holds in registers) is at least
    ``cols``, or the last."""
    return next((i for i, (cover, _) in enumerate(covers) if cols <= cover), len(covers) - 1)


def configs_around(covers, cols: int) -> list[dict]:
    """The config for rows of ``cols`` elements first, then its neighbours in ``covers`` (autotuner candidates)."""
    k = cover_index(covers, cols)
    return [dict(covers[j][1]) for j in [k] + [j for j in (k - 1, k + 1) if 0 <= j < len(covers)]]


def row_tuner(name: str, index: int, build) -> Autotuner:
    """An autotuner for rows covered by ``ROW_CONFIGS[index]``: that configuration and its neighbours, keyed by the
    shape of the kernel's first argument; ``build(**config)`` returns the kernel."""
    cols = ROW_CONFIGS[index][0]
    configs = configs_around(ROW_CONFIGS, cols)
    return Autotuner(f"{name}_{cols}", build, configs=configs, key=lambda x, *rest: tuple(x.shape),
                     launch=lambda config, x, *rest: row_launch(config, int(x.shape[0])), sim_config=configs[0])


#: the registered (test, verify, bench) sizes of the row kernels for rows up to 1024 (lanes of a warp a row) and up
#: to 4096 (a block a row): rows longer than the register span (read again) and rows of 4 columns
WARP_SIZES = (sizes("rows cols", (1, 4), (9, 132), (3, 1100)),
              sizes("rows cols", (1, 4), (9, 132), (1031, 1024), (3, 4100)), sizes("rows cols", (32768, 1024)))
BLOCK_SIZES = (sizes("rows cols", (1, 4), (3, 1000), (2, 4100)),
               sizes("rows cols", (1, 4), (7, 4100), (1025, 4096), (5, 10000)), sizes("rows cols", (16384, 4096)))


def register_rows(name: str, family: str, kernel, config: dict, cols: int, what: str, make_case, row_sizes: tuple, *,
                  flops: float, constants: dict | None = None, **spec) -> None:
    """A row-group kernel into the registry: ``kernel`` built for ``config`` (the default for rows up to ``cols``)
    with 16-byte groups, described as ``what`` for such rows; ``make_case(size, rng, dist, config=config)`` its
    cases, ``row_sizes`` its (test, verify, bench) sizes, rows a multiple of 4 long, ``constants`` and then the
    configuration its constants, ``flops`` per element and 8 bytes (read once, written once) its work; ``spec`` the
    rest of its fields."""
    def work(size) -> Work:
        n = size["rows"] * size["cols"]
        return Work(flops=flops * n, bytes=8.0 * n)

    test_sizes, verify_sizes, bench_sizes = row_sizes
    register(KernelSpec(
        name=name, family=family, kernel=kernel, make_case=functools.partial(make_case, config=config),
        constants={**(constants or {}), **config, "vec": True}, test_sizes=test_sizes, verify_sizes=verify_sizes,
        bench_sizes=bench_sizes, work=work, size_multiples={"cols": 4},
        description=f"{what} for rows up to {cols}: {config['group']} threads per row, the row in registers", **spec))
