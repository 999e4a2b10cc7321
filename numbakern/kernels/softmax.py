"""Row softmax: ``out[r, :] = exp(x[r, :] - max) / sum(exp(x[r, :] - max))``, as ``torch.softmax(x, -1)``.

``softmax_rows(nt, group, cache, vec)``
    A *row group* of ``group`` threads owns a row (``rows.py``): a few lanes of a warp or a warp for short rows,
    the whole block for long ones. Each thread keeps ``cache`` 16-byte groups of its row in registers, so a row of
    up to ``group * cache * 4`` elements is read from memory once and written once: 8 bytes per element, the
    minimum. Elements past that are folded in *online* (a running maximum, and a running sum rescaled by
    ``exp(old max - new max)`` when the maximum grows) and read a second time for the output: 12 bytes per
    element for them.

    Per thread: the maximum of its cached elements, then ``e = exp(v - m)`` kept in place of ``v`` and their sum;
    the uncached rest online. Then the row group agrees on the maximum (shuffles, and shared memory across warps),
    each thread rescales its sum to it and the group adds them up. The output is ``e * exp(m - M) / S`` for the
    cached elements: ``exp`` is evaluated once per element.

``softmax(x, out=None)`` is the user-facing function: it picks the row group and the register cache from the row
length (autotuned among neighbours on a GPU).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import cuda

from ..fastpath import jit_options, u32
from ..launch import to_kernel_arg
from ..registry import Case, random_array
from ..specialize import specialize
from . import rows as row_groups
from .collectives import group_reduce, nan_max
from .config import sizes
from .rows import load_cached, load_group, row_of, store_group


@specialize
def softmax_rows(nt: int = 256, group: int = 32, cache: int = 4, vec: bool = True):
    """Softmax of each row of ``x`` into ``out`` (both rows x cols, float32); launch with ``rows.row_launch``."""
    row_groups.check_row_config("softmax_rows", nt, group, cache, vec)
    width, rows_per_block, n_cached, span = row_groups.row_layout(nt, group, cache, vec)

    @cuda.jit(**jit_options(threads=nt, fastmath=False))
    def softmax_rows(x, out):
        lane, row, cols, body, live = row_of(x, group, rows_per_block, width)
        vals = cuda.local.array(n_cached, np.float32)
        regs = cuda.local.array(width, np.float32)
        r = u32(row)

        # 1. load the cached groups (all loads issued before any is used); the maximum of what this thread holds
        m = np.float32(0.0)
        mc = m
        if live:
            m = x[r, 0]  # an element of the row: the identity of max without -inf
            load_cached(x, r, vals, cache, span, lane * width, body, vec)
            for u in range(cache):
                if u * span + lane * width < body:
                    for q in range(width):
                        m = nan_max(m, vals[u * width + q])
            t = body + lane  # the row's last cols % 4 elements, one each for the first lanes
            tail = np.float32(0.0)
            if vec and t < cols:
                tail = x[r, u32(t)]
                m = nan_max(m, tail)
            # 2. exp once per cached element, kept in place of the value, and their sum
            s = np.float32(0.0)
            for u in range(cache):
                if u * span + lane * width < body:
                    for q in range(width):
                        e = math.exp(vals[u * width + q] - m)
                        vals[u * width + q] = e
                        s += e
            if vec and t < cols:
                s += math.exp(tail - m)
            mc = m  # the cached exps are relative to it
            # 3. the uncached rest, online: rescale the running sum when the maximum grows
            c = cache * span + lane * width
            while c < body:
                load_group(x, r, c, regs, 0, vec)
                m_new = m
                for q in range(width):
                    m_new = nan_max(m_new, regs[q])
                s *= math.exp(m - m_new)
                m = m_new
                for q in range(width):
                    s += math.exp(regs[q] - m)
                c += span
        else:
            s = np.float32(0.0)

        # 4. the row group's maximum, every thread's sum rescaled to it, and the total
        big = group_reduce(m, group, True)
        scale = math.exp(m - big)
        total = group_reduce(s * scale, group, False)
        if not live:
            return
        inv = np.float32(1.0) / total

        # 5. write: the cached elements from registers, the rest read again
        f = math.exp(mc - big) * inv
        for u in range(cache):
            c = u * span + lane * width
            if c < body:
                for q in range(width):
                    vals[u * width + q] *= f
                store_group(out, r, c, vals, u * width, vec)
        t = body + lane
        if vec and t < cols:
            out[r, u32(t)] = math.exp(x[r, u32(t)] - big) * inv
        c = cache * span + lane * width
        while c < body:
            load_group(x, r, c, regs, 0, vec)
            for q in range(width):
                regs[q] = math.exp(regs[q] - big) * inv
            store_group(out, r, c, regs, 0, vec)
            c += span

    return softmax_rows


# ---------------------------------------------------------------------------------------------------------------
# configurations and the user-facing function

@functools.cache
def _tuner(index: int, vec: bool):
    return row_groups.row_tuner(f"softmax_rows{'_vec' if vec else ''}", index,
                                lambda **config: softmax_rows(vec=vec, **config))


def softmax(x, out=None):
    """``torch.softmax(x, -1)`` for a 2-D float32 ``x``: torch tensors, CuPy arrays or numpy arrays in, the result
    of the same kind on the same device (``out``, if given, must be a float32 array of ``x``'s shape)."""
    info, out, o = row_groups.check_rows("softmax", x, out)
    rows, cols = info.shape
    if rows == 0 or cols == 0:
        return out
    vec = row_groups.vec_ok(info, o, cols=cols)
    _tuner(row_groups.config_index(cols), vec)(to_kernel_arg(x), to_kernel_arg(out))
    return out


# ---------------------------------------------------------------------------------------------------------------
# registry

SIGNATURE = "void(float32[:, ::1], float32[:, ::1])"
#: the registered kernels: (name, row length the config is for, (simulator test sizes, GPU verification sizes, bench
#: sizes)). Each size set has rows longer than the register span (the online part) and rows of 1 group (4 columns).
REGISTERED = (
    ("softmax", 128, (sizes("rows cols", (1, 4), (9, 132), (33, 36)),
                      sizes("rows cols", (1, 4), (9, 132), (65537, 128), (1031, 1024)),
                      sizes("rows cols", (262144, 128)))),
    ("softmax_warp", 1024, row_groups.WARP_SIZES),
    ("softmax_block", 4096, row_groups.BLOCK_SIZES),
    ("softmax_long", 32768, (sizes("rows cols", (1, 4), (2, 33000)),
                             sizes("rows cols", (1, 4), (33, 32768), (5, 65540)), sizes("rows cols", (2048, 32768)))),
)


def _case(size, rng, dist="uniform", config=None):
    rows, cols = size["rows"], size["cols"]
    x = random_array(rng, (rows, cols), np.float32, dist)
    out = np.full((rows, cols), np.nan, np.float32)
    return Case((x, out), row_groups.row_launch(config, rows), dict(size))


def _reference(x, out):
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return {1: e / e.sum(axis=1, keepdims=True)}


def _baseline(x, out):
    import torch

    return (lambda: torch.softmax(x, -1)), "torch.softmax(x, -1)"


for _name, _cols, _sizes in REGISTERED:
    _config = row_groups.config_for(_cols)
    row_groups.register_rows(
        _name, "softmax", softmax_rows(**_config), _config, _cols, "row softmax", _case, _sizes, flops=5.0,
        signatures=(SIGNATURE,), reference=_reference, outputs=(1,), baseline=_baseline,
        # float32 exp and sums against float64: a few ulp of each output (the error is relative to the output)
        rtol=1e-5, atol=1e-7)
