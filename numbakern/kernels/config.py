"""What the kernel families check and choose alike, on the host: a configuration's values, the static shared-memory
limit, the configuration for the simulator or the GPU, the launch of a tiled output, and the sizes a spec runs at."""

from __future__ import annotations

import math
import os

import numpy as np

from ..launch import LaunchConfig, array_info, cdiv, check_array, check_same_device, empty_like_on

#: static shared memory a kernel may declare without opting in to more
STATIC_SHARED_LIMIT = 48 * 1024

#: set to a GPU's multiprocessor count by a process whose simulated launches must be the ones that GPU runs (the
#: kernels' GPU configurations and launch sizes): the profiler's comparison with Nsight Compute
#: (scripts/profile_ncu.py), where the simulator and the GPU must run the same kernel on the same grid
SIM_AS_GPU_ENV = "NUMBAKERN_SIM_AS_GPU"


def sim_as_gpu() -> int | None:
    """The multiprocessors of the GPU whose launches the simulator makes (``$NUMBAKERN_SIM_AS_GPU``), or None."""
    given = os.environ.get(SIM_AS_GPU_ENV, "")
    if not given:
        return None
    if not given.isdigit() or int(given) < 1:
        raise ValueError(f"{SIM_AS_GPU_ENV} must be a positive whole number of multiprocessors, got {given!r}")
    return int(given)


def sim_shaped() -> bool:
    """True when launches are configured and sized for the simulator (small tiles, a few blocks): in the simulator,
    unless ``$NUMBAKERN_SIM_AS_GPU`` asks for a GPU's."""
    from .. import mode

    return mode.in_simulator() and sim_as_gpu() is None


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


def on_hopper(a) -> bool:
    """A GPU of compute capability 9.0 holds ``a`` (never in the simulator): the wgmma kernels may run on it."""
    from .. import mode

    if mode.in_simulator() or not array_info("a", a).on_gpu:
        return False
    from numba import cuda

    return tuple(cuda.get_current_device().compute_capability) == (9, 0)


def for_mode(sim: dict, gpu: dict) -> dict:
    """A copy of the configuration a registered kernel uses: the simulator's small one, or the GPU's."""
    return dict(sim if sim_shaped() else gpu)


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
