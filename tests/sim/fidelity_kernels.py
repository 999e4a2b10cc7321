"""Kernels whose results depend on Numba's exact arithmetic, as kernel specs kept out of the library's registry
(``SPECS``): the GPU comparison test runs them in the simulator and on a GPU next to the library's kernels.

Each reference is computed independently with numpy and explicit dtypes, following the Numba rule stated beside it.
"""

from __future__ import annotations

import math

import numpy as np
from numba import cuda, int32, int64, uint32

from numbakern.launch import LaunchConfig
from numbakern.registry import Case, KernelSpec, random_array

FULL = 0xFFFFFFFF


@cuda.jit
def integer_edges(a, out64, outu32):
    i = cuda.grid(1)
    if i < a.shape[0]:
        x = a[i]
        out64[i, 0] = x * int32(2147483647)  # int32 * int32 -> int64
        out64[i, 1] = uint32(x) - uint32(3)  # uint64, wraps
        out64[i, 2] = (x + 1) * int64(2**63 - 1)  # int64 overflow wraps
        out64[i, 3] = x // int32(-7)  # floor division
        out64[i, 4] = x % int32(-7)  # the divisor's sign
        out64[i, 5] = (x << 33) >> 5  # int64 shifts
        outu32[i] = uint32(x) * uint32(3)  # uint64, truncated to uint32 when stored


def _integer_edges_case(size, rng, dist="uniform"):
    n = size["n"]
    a = rng.integers(-(2**31), 2**31, n, dtype=np.int32)
    a[: min(n, 4)] = [-(2**31), -1, 0, 2**31 - 1][: min(n, 4)]
    return Case((a, np.zeros((n, 6), np.int64), np.zeros(n, np.uint32)), LaunchConfig(((n + 127) // 128,), (128,)),
                dict(size))


def _integer_edges_reference(a, out64, outu32):
    x = a.astype(np.int64)
    with np.errstate(over="ignore"):
        u = a.astype(np.uint32).astype(np.uint64)  # uint32(x): x modulo 2**32, then widened to uint64
        return {
            1: np.stack([
                x * 2147483647,
                (u - np.uint64(3)).astype(np.int64),
                (x + 1) * np.int64(2**63 - 1),
                x // -7,
                x % -7,
                (x << 33) >> 5,
            ], axis=1),
            2: (u * np.uint64(3)).astype(np.uint32),
        }


@cuda.jit
def float_rules(x, out32, out64):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out32[i, 0] = x[i] * 0.1  # float32 * float64: float64, rounded when stored
        out32[i, 1] = x[i] * np.float32(0.1)  # float32
        out32[i, 2] = math.sqrt(x[i])  # float32 sqrt
        out64[i, 0] = math.sqrt(x[i])  # still float32, widened when stored
        out64[i, 1] = x[i] / 3  # float64
        out64[i, 2] = float(x[i]) + np.float32(1e-3)  # float() of a float32 is float32: a float32 sum


def _float_rules_case(size, rng, dist="uniform"):
    n = size["n"]
    x = (np.abs(random_array(rng, (n,), np.float32, dist)) + np.float32(0.5)).astype(np.float32)
    return Case((x, np.zeros((n, 3), np.float32), np.zeros((n, 3))), LaunchConfig(((n + 127) // 128,), (128,)),
                dict(size))


def _float_rules_reference(x, out32, out64):
    x64 = x.astype(np.float64)
    return {
        1: np.stack([(x64 * 0.1).astype(np.float32), x * np.float32(0.1), np.sqrt(x)], axis=1),
        2: np.stack([np.sqrt(x).astype(np.float64), x64 / 3, (x + np.float32(1e-3)).astype(np.float64)], axis=1),
    }


@cuda.jit
def warp_masks(x, out):
    t = cuda.grid(1)
    if t < x.shape[0]:
        out[t, 0] = cuda.ballot_sync(FULL, x[t] > 0)  # int32 in numba-cuda, sign-extended into int64
        out[t, 1] = cuda.activemask()  # uint32
        out[t, 2] = cuda.lanemask_lt()  # uint32
        out[t, 3] = cuda.all_sync(FULL, x[t] > -1)
        out[t, 4] = cuda.shfl_xor_sync(FULL, t, 1)


def _warp_masks_case(size, rng, dist="uniform"):
    n = 64  # two full warps: masks of partial warps are the GPU's business
    x = random_array(rng, (n,), np.float32, "normal")
    return Case((x, np.zeros((n, 5), np.int64)), LaunchConfig((1,), (n,)), dict(size))


def _warp_masks_reference(x, out):
    n = x.shape[0]
    lane = np.arange(n) % 32
    bits, every = np.zeros(n, np.int64), np.zeros(n, np.int64)
    for w in range(n // 32):
        b = sum(1 << j for j in range(32) if x[32 * w + j] > 0)
        bits[32 * w : 32 * w + 32] = b - (1 << 32) if b & 0x80000000 else b
        every[32 * w : 32 * w + 32] = (x[32 * w : 32 * w + 32] > -1).all()
    return {1: np.stack([bits, np.full(n, FULL), (1 << lane) - 1, every, np.arange(n) ^ 1], axis=1)}


def _spec(name, kernel, make_case, reference, outputs, sizes):
    return KernelSpec(name=name, family="fidelity", kernel=kernel, signatures=(), make_case=make_case,
                      reference=reference, outputs=outputs, test_sizes=sizes, verify_sizes=sizes, rtol=0.0)


SPECS = {
    "integer_edges": _spec("integer_edges", integer_edges, _integer_edges_case, _integer_edges_reference, (1, 2),
                           ({"n": 1000}, {"n": 4})),
    "float_rules": _spec("float_rules", float_rules, _float_rules_case, _float_rules_reference, (1, 2),
                         ({"n": 1000},)),
    "warp_masks": _spec("warp_masks", warp_masks, _warp_masks_case, _warp_masks_reference, (1,), ({"n": 64},)),
}
