"""What the kernel families check and choose alike, on the host: a configuration's values, the static shared-memory
limit, the configuration for the simulator or the GPU, the launch of a tiled output, and the sizes a spec runs at."""

from __future__ import annotations

import math

import numpy as np

from ..launch import LaunchConfig, array_info, cdiv, check_array, check_same_device, empty_like_on

#: static shared memory a kernel may declare without opting in to more
STATIC_SHARED_LIMIT = 48 * 1024


def positive_ints(what: str, **values) -> None:
    """A ValueError naming the first of ``values`` that is not a positive int."""
    for name, v in values.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{what}: {name} must be a positive int, got {v!r}")


def flags(what: str, **values) -> None:
    """A ValueError naming the first of ``values`` that is not True or False."""
    for name, v in values.items():
        if not isinstance(v, bool):
            raise ValueError(f"{what}: {name} must be True or False, got {v!r}")


def fits_static_shared(what: str, nbytes: int, tiles: str) -> None:
    """A ValueError when ``tiles`` (said as the message says them) need more than 48 KiB of static shared memory."""
    if nbytes > STATIC_SHARED_LIMIT:
        raise ValueError(f"{what}: {tiles} need {nbytes} bytes, more than 48 KiB of static shared memory")


def checked_out(what: str, out, like, like_info, shape: tuple, dtype=np.float32):
    """``(out, its info)``: ``out`` made like ``like`` when None, else checked: ``dtype``, ``shape``, on the device
    of ``like`` (whose info is ``like_info``)."""
    shape = tuple(shape)
    if out is None:
        out = empty_like_on(like, shape, np.dtype(dtype))
    info = check_array("out", out, dtype=dtype)
    if info.shape != shape:
        raise ValueError(f"{what}: argument 'out' must have shape {shape}, got {info.shape}")
    check_same_device(x=like_info, out=info)
    return out, info


def for_mode(sim: dict, gpu: dict) -> dict:
    """A copy of the configuration a registered kernel uses: the simulator's small one, or the GPU's."""
    from .. import mode

    return dict(sim if mode.in_simulator() else gpu)


def tile_launch(h: int, w: int, bm: int, bn: int, threads: int) -> LaunchConfig:
    """One block of ``threads`` (1-D) per ``bm``×``bn`` tile of an ``h``×``w`` output."""
    return LaunchConfig((max(1, cdiv(w, bn)), max(1, cdiv(h, bm)), 1), (threads, 1, 1), 0)


def chunks_ready(a, b, out, chunk: int) -> bool:
    """True when ``a @ b`` may go in 16-byte chunks of ``chunk`` elements: k and w multiples of ``chunk``, the
    three matrices C-contiguous and 16-byte aligned, the inputs under 2**31 elements."""
    infos = [array_info(name, x) for name, x in (("a", a), ("b", b), ("out", out))]
    k, w = infos[0].shape[1], infos[1].shape[1]
    return (k % chunk == 0 and w % chunk == 0 and all(i.c_contiguous and i.address % 16 == 0 for i in infos)
            and all(math.prod(i.shape) < 2**31 for i in infos[:2]))


def sizes(keys: str, *values: tuple) -> tuple[dict, ...]:
    """Sizes as dicts, written as rows: ``sizes("h k w", (1, 1, 1), (33, 70, 45))``."""
    names = keys.split()
    return tuple(dict(zip(names, row, strict=True)) for row in values)
