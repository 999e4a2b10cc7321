"""LayerNorm and RMSNorm forward over the last axis, as ``F.layer_norm(x, (cols,), w, b, eps)`` and
``F.rms_norm(x, (cols,), w, eps)``:

    layer norm:  y = (x - mean(x)) / sqrt(var(x) + eps) * w + b      (var: the population variance)
    RMS norm:    y = x / sqrt(mean(x * x) + eps) * w  (+ b, optional)

``norm_rows(rms, bias, nt, group, cache, vec)`` has the row-group structure of ``softmax_rows`` (``rows.py``):
lanes of a warp or a block own a row, and each thread keeps ``cache`` 16-byte groups of it in registers. A row that
fits is read once and written once (8 bytes per element, plus ``w`` and ``b``, which stay in L1/L2 across rows).
The variance is computed around the mean from the registers (two passes over registers, none over memory): no
cancellation of ``E[x^2] - E[x]^2``. Elements past the register cache are read again for each pass (12-16 bytes
per element for them). Both sums are combined over the row group with shuffles and, for a block, a word per warp
in shared memory, in a fixed order.

``layer_norm(x, weight, bias, eps)`` and ``rms_norm(x, weight, eps, bias=None)`` are the user-facing functions.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import cuda

from ..fastpath import jit_options, u32
from ..launch import check_array, check_same_device, to_kernel_arg
from ..registry import Case, random_array
from ..specialize import specialize
from ..vector_io import vload4
from . import rows as row_groups
from .collectives import group_reduce
from .rows import load_cached, load_group, row_of, store_group


@specialize
def norm_rows(rms: bool, bias: bool = True, nt: int = 256, group: int = 32, cache: int = 4, vec: bool = True):
    """LayerNorm (``rms=False``) or RMSNorm of each row of ``x`` into ``out`` with ``w`` (and ``b`` if ``bias``;
    without it ``b`` is not read); launch with ``rows.row_launch``."""
    row_groups.check_row_config("norm_rows", nt, group, cache, vec)
    if not isinstance(rms, bool) or not isinstance(bias, bool):
        raise ValueError(f"norm_rows: rms and bias must be True or False, got rms={rms!r}, bias={bias!r}")
    width, rows_per_block, n_cached, span = row_groups.row_layout(nt, group, cache, vec)

    @cuda.jit(**jit_options(threads=nt, fastmath=False))
    def norm_rows(x, w, b, out, eps):
        lane, row, cols, body, live = row_of(x, group, rows_per_block, width)
        vals = cuda.local.array(n_cached, np.float32)
        regs = cuda.local.array(width, np.float32)
        wr = cuda.local.array(width, np.float32)
        br = cuda.local.array(width, np.float32)
        r = u32(row)
        t = body + lane  # the row's last cols % 4 elements, one each for the first lanes of the group
        has_tail = vec and live and t < cols

        # 1. load the cached groups (every load issued before any is used) and sum x (or x * x)
        s = np.float32(0.0)
        tail = np.float32(0.0)
        if live:
            load_cached(x, r, vals, cache, span, lane * width, body, vec)
            for u in range(cache):
                if u * span + lane * width < body:
                    for q in range(width):
                        v = vals[u * width + q]
                        s += v * v if rms else v
            if has_tail:
                tail = x[r, u32(t)]
                s += tail * tail if rms else tail
            c = cache * span + lane * width
            while c < body:  # the uncached rest
                load_group(x, r, c, regs, 0, vec)
                for q in range(width):
                    s += regs[q] * regs[q] if rms else regs[q]
                c += span
        n = np.float32(cols)
        mean = group_reduce(s, group, False) / n

        # 2. the statistics: 1 / sqrt(mean(x^2) + eps), or the variance around the mean (registers, then memory)
        shift = np.float32(0.0)
        if rms:
            rstd = np.float32(1.0) / math.sqrt(mean + eps)
        else:
            shift = mean
            d = np.float32(0.0)
            if live:
                for u in range(cache):
                    if u * span + lane * width < body:
                        for q in range(width):
                            dv = vals[u * width + q] - mean
                            d += dv * dv
                if has_tail:
                    d += (tail - mean) * (tail - mean)
                c = cache * span + lane * width
                while c < body:
                    load_group(x, r, c, regs, 0, vec)
                    for q in range(width):
                        d += (regs[q] - mean) * (regs[q] - mean)
                    c += span
            rstd = np.float32(1.0) / math.sqrt(group_reduce(d, group, False) / n + eps)
        if not live:
            return

        # 3. write (x - shift) * rstd * w + b: the cached groups from registers, the rest read again
        for u in range(cache):
            c = u * span + lane * width
            if c < body:
                if vec:
                    vload4(w, u32(c), wr, 0)
                    if bias:
                        vload4(b, u32(c), br, 0)
                else:
                    wr[0] = w[u32(c)]
                    if bias:
                        br[0] = b[u32(c)]
                for q in range(width):
                    y = (vals[u * width + q] - shift) * rstd * wr[q]
                    if bias:
                        y += br[q]
                    vals[u * width + q] = y
                store_group(out, r, c, vals, u * width, vec)
        if has_tail:
            y = (tail - shift) * rstd * w[u32(t)]
            if bias:
                y += b[u32(t)]
            out[r, u32(t)] = y
        c = cache * span + lane * width
        while c < body:
            if vec:
                vload4(x, (r, u32(c)), regs, 0)
                vload4(w, u32(c), wr, 0)
                if bias:
                    vload4(b, u32(c), br, 0)
            else:
                regs[0] = x[r, u32(c)]
                wr[0] = w[u32(c)]
                if bias:
                    br[0] = b[u32(c)]
            for q in range(width):
                y = (regs[q] - shift) * rstd * wr[q]
                if bias:
                    y += br[q]
                regs[q] = y
            store_group(out, r, c, regs, 0, vec)
            c += span

    return norm_rows


# ---------------------------------------------------------------------------------------------------------------
# configurations and the user-facing functions

@functools.cache
def _tuner(rms: bool, bias: bool, index: int, vec: bool):
    name = f"{'rms' if rms else 'layer'}_norm{'_bias' if bias else ''}{'_vec' if vec else ''}"
    return row_groups.row_tuner(name, index, lambda **config: norm_rows(rms, bias, vec=vec, **config))


def _norm(what: str, rms: bool, x, weight, bias, eps, out):
    info, out, o = row_groups.check_rows(what, x, out)
    rows, cols = info.shape
    params = [("weight", weight)] + ([("bias", bias)] if bias is not None else [])
    infos = []
    for name, p in params:
        pi = check_array(name, p, dtype=np.float32, ndim=1)
        if pi.shape != (cols,):
            raise ValueError(f"{what}: argument '{name}' must have shape ({cols},) (one per column of 'x'), "
                             f"got {pi.shape}")
        check_same_device(x=info, **{name: pi})
        infos.append(pi)
    if isinstance(eps, bool) or not isinstance(eps, (int, float, np.floating, np.integer)) or not eps >= 0:
        raise ValueError(f"{what}: argument 'eps' must be a non-negative number, got {eps!r}")
    if rows == 0 or cols == 0:
        return out
    vec = row_groups.vec_ok(info, o, *infos, cols=cols)
    w = to_kernel_arg(weight)
    b = to_kernel_arg(bias) if bias is not None else w  # not read without a bias
    _tuner(rms, bias is not None, row_groups.config_index(cols), vec)(to_kernel_arg(x), w, b, to_kernel_arg(out),
                                                                      np.float32(eps))
    return out


def layer_norm(x, weight, bias, eps=1e-5, out=None):
    """``F.layer_norm(x, (cols,), weight, bias, eps)`` for a 2-D float32 ``x`` (rows x cols) and float32 ``weight``
    and ``bias`` of length cols: torch tensors, CuPy arrays or numpy arrays in, the result of the same kind."""
    if bias is None:
        raise ValueError("layer_norm: argument 'bias' is required (pass zeros for none)")
    return _norm("layer_norm", False, x, weight, bias, eps, out)


def rms_norm(x, weight, eps=1e-6, bias=None, out=None):
    """``F.rms_norm(x, (cols,), weight, eps)`` (plus ``bias`` if given) for a 2-D float32 ``x``; same conventions
    as ``layer_norm``."""
    return _norm("rms_norm", True, x, weight, bias, eps, out)


# ---------------------------------------------------------------------------------------------------------------
# registry

SIGNATURE = "void(float32[:, ::1], float32[::1], float32[::1], float32[:, ::1], float32)"
EPS = {False: 1e-5, True: 1e-6}  # torch's defaults: nn.LayerNorm, and common RMSNorm practice


def _case(size, rng, dist="uniform", rms=False, config=None):
    rows, cols = size["rows"], size["cols"]
    x = random_array(rng, (rows, cols), np.float32, dist)
    w = np.ascontiguousarray(rng.standard_normal(cols), dtype=np.float32)
    b = np.ascontiguousarray(rng.standard_normal(cols), dtype=np.float32)
    out = np.full((rows, cols), np.nan, np.float32)
    return Case((x, w, b, out, np.float32(EPS[rms])), row_groups.row_launch(config, rows), dict(size))


def _stats(x, rms: bool, eps):
    x64 = x.astype(np.float64)
    if rms:
        return np.zeros((x.shape[0], 1)), 1.0 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + float(eps))
    mean = x64.mean(axis=1, keepdims=True)
    return mean, 1.0 / np.sqrt(x64.var(axis=1, keepdims=True) + float(eps))


def _reference(rms: bool, bias: bool):
    def reference(x, w, b, out, eps):
        shift, rstd = _stats(x, rms, eps)
        y = (x.astype(np.float64) - shift) * rstd * w.astype(np.float64)
        return {3: y + b.astype(np.float64) if bias else y}

    return reference


def _error_scale(rms: bool, bias: bool):
    def error_scale(x, w, b, out, eps):
        # float32 rounding of the mean is relative to the size of the inputs, not of x - mean
        shift, rstd = _stats(x, rms, eps)
        x64 = np.abs(x.astype(np.float64))
        size = x64 + x64.mean(axis=1, keepdims=True)
        scale = size * rstd * np.abs(w.astype(np.float64))
        return {3: scale + np.abs(b.astype(np.float64)) if bias else scale}

    return error_scale


def _baseline(rms: bool):
    def baseline(x, w, b, out, eps):
        import torch.nn.functional as F

        shape = (x.shape[1],)
        if rms:
            return (lambda: F.rms_norm(x, shape, w, float(eps))), "F.rms_norm"
        return (lambda: F.layer_norm(x, shape, w, b, float(eps))), "F.layer_norm"

    return baseline


#: the registered kernels: (name suffix, row length the config is for, (simulator test sizes, GPU verification
#: sizes, bench sizes)); each size set has rows longer than the register span (read again) and rows of 4 columns
REGISTERED = (
    ("", 1024, (row_groups.WARP_SIZES[0], (*row_groups.WARP_SIZES[1], {"rows": 65537, "cols": 128}),
                ({"rows": 65536, "cols": 1024},))),
    ("_block", 4096, row_groups.BLOCK_SIZES),
)

for _rms, _name in ((False, "layer_norm"), (True, "rms_norm")):
    _bias = not _rms  # F.rms_norm has no bias
    for _suffix, _cols, _sizes in REGISTERED:
        _config = row_groups.config_for(_cols)
        row_groups.register_rows(
            f"{_name}{_suffix}", "norm", norm_rows(_rms, _bias, **_config), _config, _cols,
            f"{_name.replace('_', ' ')} forward", functools.partial(_case, rms=_rms), _sizes,
            flops=8.0, constants={"rms": _rms, "bias": _bias}, signatures=(SIGNATURE,),
            reference=_reference(_rms, _bias), error_scale=_error_scale(_rms, _bias), outputs=(3,), rtol=1e-5,
            baseline=_baseline(_rms))
