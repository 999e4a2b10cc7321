"""Scratch arrays kept per device and array library and reused launch after launch: zeroed ones for kernels that
leave their workspace as they found it (``reduce_rows``' partials and counters, ``inclusive_scan``'s tile states),
grown on demand and never memset again; and plain buffers that a launch fills before it reads them (``matmul_fast``'s
A^T), made again only when the shape changes.

A cached array may be larger than a launch needs (more rows, more columns): the kernels index it with its own
strides and touch only the part the launch uses, and the rest stays zero. Launches that share a workspace must not
overlap in time: numbakern launches on the default stream, where they run one after the other.
"""

from __future__ import annotations

import numpy as np

from .. import mode
from ..launch import empty_like_on

_cache: dict = {}


def zeros_like_on(like, shape: tuple[int, ...], dtype) -> object:
    """A new zeroed array of the library and device of ``like`` (numpy in the simulator)."""
    dtype = np.dtype(dtype)
    if like is None or mode.in_simulator():
        return np.zeros(shape, dtype)
    a = empty_like_on(like, shape, dtype)
    if hasattr(a, "zero_"):  # torch
        a.zero_()
    elif hasattr(a, "fill"):  # cupy
        a.fill(0)
    else:  # a numba device array
        a.copy_to_device(np.zeros(shape, dtype))
    return a


def zeroed(name: str, shape: tuple[int, ...], dtype, like) -> object:
    """A zeroed array of at least ``shape`` on ``like``'s device, cached under ``name`` (a new host array without
    ``like``, and fresh in the simulator, where host arrays cost nothing to make)."""
    if like is None or mode.in_simulator():
        return zeros_like_on(None, shape, dtype)
    key = (name, np.dtype(dtype).str, type(like).__module__.split(".")[0], str(getattr(like, "device", "")))
    have = _cache.get(key)
    if have is None or len(have.shape) != len(shape) or any(h < s for h, s in zip(have.shape, shape)):
        grown = tuple(max(s, h) for s, h in zip(shape, have.shape)) if have is not None else tuple(shape)
        have = zeros_like_on(like, grown, dtype)
        _cache[key] = have
    return have


def buffer(name: str, shape: tuple[int, ...], dtype, like) -> object:
    """An uninitialised array of exactly ``shape`` on ``like``'s device, cached under ``name``: the one made for an
    earlier call is reused when its shape is the same, so that a launch sequence which fills it first pays no
    allocation (a ``cudaMalloc`` for numba's device arrays). Only the latest shape is kept."""
    if mode.in_simulator():
        return np.empty(shape, np.dtype(dtype))
    key = ("buffer", name, np.dtype(dtype).str, type(like).__module__.split(".")[0], str(getattr(like, "device", "")))
    have = _cache.get(key)
    if have is None or tuple(int(d) for d in have.shape) != tuple(shape):
        _cache.pop(key, None)  # (the old one goes before the new one is made)
        have = empty_like_on(like, tuple(shape), np.dtype(dtype))
        _cache[key] = have
    return have
