"""The flagship matmul's configuration rules and launch geometry, shared by the kernels built on its design
(``matmul_flagship`` in ``matmul_fast``, ``matmul_pipelined``, the cp.async flagship): which tile configurations are
valid, how a block's threads are laid out, the launch for an output shape, and when matrices allow 16-byte
accesses."""

from __future__ import annotations

import numpy as np

from ..launch import LaunchConfig, array_info
from .config import fits_static_shared, flags, positive_ints, tile_launch
from .matmul import BENCH_SIZES


def _warp_layout(tx_count: int, ty_count: int) -> tuple[int, int]:
    """Threads of one warp along a row (``wx``) and a column (``wy``) of the block's thread grid.

    A warp covers a ``wy``×``wx`` patch of threads (4×8 for 256-thread blocks) instead of two whole rows of 16, so
    its 16-byte shared reads touch 4 distinct A groups and 8 distinct B groups (64 and 128 bytes: one wavefront
    each) instead of 2 and 16 (B: two wavefronts). Falls back to whole rows when the grid does not split so.
    """
    wx = min(8, tx_count)
    wy = min(ty_count, max(1, 32 // wx))
    if tx_count % wx or ty_count % wy:
        return tx_count, 1
    return wx, wy


def thread_grid(bm: int, bn: int, tm: int, tn: int, vm: int, vn: int) -> tuple[int, int, int, int, int]:
    """``(wx, wy, warps_x, gm, gn)`` of the ``(bm / tm)``×``(bn / tn)`` thread grid: a warp is a ``wy``×``wx``
    patch of it (``_warp_layout``), ``warps_x`` patches a row; a thread's rows come in groups of ``vm`` consecutive
    ones ``gm`` apart, its columns in groups of ``vn``, ``gn`` apart."""
    wx, wy = _warp_layout(bn // tn, bm // tm)
    return wx, wy, bn // tn // wx, bm // (tm // vm), bn // (tn // vn)


def _check_config(bm: int, bn: int, bk: int, tm: int, tn: int, vec: bool = False) -> int:
    """Threads per block for a flagship config, or a ValueError saying which constraint fails."""
    positive_ints("matmul_flagship", bm=bm, bn=bn, bk=bk, tm=tm, tn=tn)
    flags("matmul_flagship", vec=vec)
    if bm % tm or bn % tn:
        raise ValueError(f"matmul_flagship: tm={tm} must divide bm={bm} and tn={tn} must divide bn={bn}")
    vm, vn = min(4, tm), min(4, tn)
    if tm % vm or tn % vn:
        raise ValueError("matmul_flagship: tm and tn must be 1, 2, 3 or a multiple of 4")
    threads = (bm // tm) * (bn // tn)
    if not 1 <= threads <= 1024:
        raise ValueError(f"matmul_flagship: (bm/tm)*(bn/tn) = {threads} threads per block; must be 1..1024")
    width = 4 if vec else 1
    if vec and (bk % 4 or tm % 4 or tn % 4):
        raise ValueError(f"matmul_flagship: vec=True needs bk, tm and tn that are multiples of 4 (16-byte groups), "
                         f"got bk={bk}, tm={tm}, tn={tn}")
    if (bm * bk // width) % threads or (bk * bn // width) % threads or threads % (bk // width) \
            or threads % (bn // width):
        raise ValueError(f"matmul_flagship: the {bm}x{bk} and {bk}x{bn} tiles must split evenly over {threads} threads "
                         f"in groups of {width} (and bk/{width} and bn/{width} must divide the thread count)")
    if bk % 2:
        raise ValueError(f"matmul_flagship: bk={bk} must be even (the k-steps go in pairs: fragments double-buffered)")
    fits_static_shared("matmul_flagship", 2 * bk * ((bm + 4) + bn) * 4, "the double-buffered tiles")
    return threads


def _min_blocks(nt: int, tm: int, tn: int) -> int | None:
    """The minimum-blocks half of ``launch_bounds``: 2 blocks of 256 (or more) threads with at most 8x8 per thread."""
    return 512 // nt if nt >= 256 and tm * tn <= 64 else None


def vec_ready(*arrays) -> bool:
    """True when ``matmul_flagship(vec=True)`` may run on these matrices: every one C-contiguous float32 with a
    16-byte aligned data pointer and a row length that is a multiple of 4 (so each 4-float group is one aligned
    16-byte access)."""
    for a in arrays:
        try:
            info = array_info("matrix", a)
        except TypeError:
            return False
        if (info.dtype != np.float32 or len(info.shape) != 2 or not info.c_contiguous or info.address % 16
                or info.shape[1] % 4):
            return False
    return True


def flagship_threads(config: dict) -> int:
    return _check_config(config["bm"], config["bn"], config["bk"], config["tm"], config["tn"],
                         config.get("vec", False))


def flagship_launch(config: dict, h: int, w: int) -> LaunchConfig:
    """Grid and block for an ``h``×``w`` output: one block per ``bm``×``bn`` tile, 1-D blocks."""
    return tile_launch(h, w, config["bm"], config["bn"], flagship_threads(config))


FLAGSHIP_BENCH_SIZES = (*BENCH_SIZES, {"h": 1024, "k": 1024, "w": 1024}, {"h": 2048, "k": 2048, "w": 2048},
                        {"h": 8192, "k": 8192, "w": 8192})


