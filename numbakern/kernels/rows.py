"""What the row-group kernels (softmax, norm) share: their configuration check, their launch shape and the
checks of their arguments.

A *row group* is the set of threads that owns one row: a warp (``group=32``, ``nt / 32`` rows per block) for short
rows, or the whole block (``group=nt``) for long ones. Each thread of the group holds ``cache`` 16-byte groups of
its row in registers.
"""

from __future__ import annotations

import numpy as np

from ..launch import LaunchConfig, cdiv, check_array, empty_like_on
from .collectives import WARP


def check_row_config(what: str, nt: int, group: int, cache: int, vec: bool) -> None:
    """The row-group kernels' (softmax, norm) shared constraints, as a ValueError naming the constant."""
    if not isinstance(nt, int) or nt % WARP or not WARP <= nt <= 1024:
        raise ValueError(f"{what}: nt must be a multiple of {WARP} from {WARP} to 1024, got {nt!r}")
    if group not in (WARP, nt):
        raise ValueError(f"{what}: group must be {WARP} (a warp per row) or nt={nt} (a block per row), got {group!r}")
    if not isinstance(cache, int) or not 1 <= cache <= 16:
        raise ValueError(f"{what}: cache must be an int from 1 to 16 (16-byte groups per thread), got {cache!r}")
    if not isinstance(vec, bool):
        raise ValueError(f"{what}: vec must be True or False, got {vec!r}")


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
    if out is None:
        out = empty_like_on(x, tuple(info.shape), np.dtype(np.float32))
    o = check_array("out", out, dtype=np.float32, ndim=2)
    if o.shape != info.shape:
        raise ValueError(f"{what}: argument 'out' must have the shape of 'x' {info.shape}, got {o.shape}")
    if o.device != info.device:
        raise ValueError(f"arguments must all be on one device, got 'x' on {info.device}, 'out' on {o.device}")
    return info, out, o


def cover_index(covers, cols: int) -> int:
    """The index of the first ``(cover, config)`` whose ``cover`` (longest row it holds in registers) is at least
    ``cols``, or the last."""
    return next((i for i, (cover, _) in enumerate(covers) if cols <= cover), len(covers) - 1)


def configs_around(covers, cols: int) -> list[dict]:
    """The config for rows of ``cols`` elements first, then its neighbours in ``covers`` (autotuner candidates)."""
    k = cover_index(covers, cols)
    return [dict(covers[j][1]) for j in [k] + [j for j in (k - 1, k + 1) if 0 <= j < len(covers)]]

