"""The Hopper matmuls in the registry: ``matmul_wgmma`` (``numbakern/kernels/matmul_wgmma.py``) in its launcher's
default configuration, for bf16 and f16 inputs with fp32 output (``matmul_wgmma_bf16``, ``matmul_wgmma_f16``) and
for f16 with f16 output (``matmul_wgmma_f16_out16``); and its 3xTF32 form (``matmul_3xtf32_wgmma``: fp32-accurate on
the tf32 tensor cores), which takes the split parts of A and of B^T (``tf32x3.split_tf32_parts``; its case makes them
on the host, ``matmul_3xtf32(a, b)`` on a Hopper GPU with the registered split kernel).

The kernel takes its three tensor maps as arguments; a case holds placeholders for them, and every launch makes
them from the arrays it launches with (``numbakern.tensormap.launch_arguments``: the registry, verification, the
benchmark; the translated C's ``extern "C"`` launcher makes its own with ``cuTensorMapEncodeTiled``). It needs
more than 48 KiB of dynamic shared memory (the same helper raises the limit on a GPU). bf16 output is not
registered: the registry compares integer outputs (bf16 is held as uint16 bits) exactly, and a 16-bit rounding of
an fp32 sum is not reproducible bit for bit by a reference; ``tests/hopper`` checks it in the simulator.
"""

from __future__ import annotations

import numpy as np

from ..launch import LaunchConfig
from ..mma import formats
from ..registry import Case
from .config import sizes
from .half import random16
from .matmul import matmul_case, matmul_reference, register_matmul
from .matmul_3xtf32 import TF32X3_SPEC, _sgemm
from .matmul_tc import TC_SPEC
from .matmul_wgmma import DEFAULT_CONFIG, TF32X3_CONFIG, matmul_wgmma, wgmma_grid, wgmma_shared_bytes

#: multiprocessors the registered launches assume (an H100's and H200's): the kernel is persistent, each block
#: walks output tiles, so any count computes the same
MULTIPROCESSORS = 132
#: sizes for the simulator: k and w multiples of 8 (the tensor maps' 16-byte rows); h and w not multiples of the
#: 128×256 tile, k not of the 64-deep stage; and a single row
TEST_SIZES = ({"h": 70, "k": 72, "w": 264}, {"h": 1, "k": 8, "w": 8})
#: what a case holds in place of each tensor map (16 uint64): every launch makes the map from the arrays
PLACEHOLDER = np.full(16, 0x4E4B504C41434548, np.uint64)  # "NKPLACEH"


def _signature(f16: bool, out16: bool) -> str:
    t = "float16" if f16 else "uint16"
    out = t if out16 else "float32"
    return f"void({t}[:, ::1], {t}[:, ::1], {out}[:, ::1], uint64[::1], uint64[::1], uint64[::1])"


def _launch(config: dict, h: int, w: int) -> LaunchConfig:
    grid = wgmma_grid(h, w, config["bn"], config["consumers"], MULTIPROCESSORS)
    shared = wgmma_shared_bytes(config["bn"], config["stages"], config["consumers"], config.get("tma_store", False),
                                config.get("tf32x3", False))
    return LaunchConfig((grid,), (128 * (config["consumers"] + 1),), shared)


def _case_maker(f16: bool, out16: bool, config: dict):
    def make_case(size, rng, dist="uniform"):
        h, k, w = size["h"], size["k"], size["w"]
        a = random16(rng, (h, k), dist, f16)
        b = random16(rng, (k, w), dist, f16)
        out = np.zeros((h, w), np.float16 if out16 else np.float32)
        maps = [PLACEHOLDER.copy() for _ in range(3)]
        return Case((a, b, out, *maps), _launch(config, h, w), dict(size))

    return make_case


_reference = matmul_reference()[0]
_split_reference, _split_error_scale = matmul_reference(parts=True)


def _reference6(a, b, out, *maps):
    expected = _reference(a, b, out)
    if out.dtype == np.float16:  # the f16 output: past its range the product is an infinity
        with np.errstate(over="ignore"):
            expected[2] = expected[2].astype(np.float16).astype(np.float64)
    return expected


for _f16, _out16 in ((False, False), (True, False), (True, True)):
    _fmt = "f16" if _f16 else "bf16"
    _config = {**DEFAULT_CONFIG, "f16": _f16, **({"out16": True} if _out16 else {})}
    register_matmul(
        f"matmul_wgmma_{_fmt}{'_out16' if _out16 else ''}", matmul_wgmma(**_config),
        _case_maker(_f16, _out16, _config),
        f"{_fmt} inputs, fp32 accumulation, {'f16' if _out16 else 'fp32'} output on Hopper: a persistent "
        "warp-specialised kernel, TMA loads into a 4-stage ring guarded by mbarriers, wgmma m64n256k16 from shared "
        "memory, a TMA-store epilogue",
        signatures=(_signature(_f16, _out16),),
        reference=_reference6,
        test_sizes=TEST_SIZES,
        # fp32 accumulation of exact 16-bit products (as matmul_bf16's); with f16 output its rounding on top
        rtol=2.0**-10 if _out16 else 1e-5,
        constants=dict(_config),
        **TC_SPEC,  # (k and w multiples of 8: the tensor maps' 16-byte rows)
    )


_fp32_case = matmul_case(lambda h, w: _launch(TF32X3_CONFIG, h, w))


def _split_case(size, rng, dist="uniform"):
    """``matmul_case``'s random fp32 A (h×k) and B (k×w) as the kernel takes them: the split parts of A and of B^T,
    (2, h, k) and (2, w, k)."""
    case = _fp32_case(size, rng, dist)
    a, b, out = case.args
    parts_a, parts_b = (np.stack(formats.split_tf32(x)) for x in (a, np.ascontiguousarray(b.T)))
    return Case((parts_a, parts_b, out, *(PLACEHOLDER.copy() for _ in range(3))), case.launch, case.size)


def _sgemm_of_parts(parts_a, parts_b, out, *maps):
    """The benchmark's baseline: matmul_3xtf32's (cuBLAS SGEMM) on the fp32 A and B the parts make up, formed once
    here."""
    run, label = _sgemm(parts_a.sum(0), parts_b.sum(0).t().contiguous(), out)
    return run, f"{label} of big + small"


register_matmul(
    "matmul_3xtf32_wgmma", matmul_wgmma(**TF32X3_CONFIG), _split_case,
    "fp32-accurate on Hopper's tf32 tensor cores (3xTF32: small*big + big*small + big*big per k8): matmul_wgmma "
    "with the split parts of A and B^T loaded by TMA (four 128-byte-swizzled tiles a stage, 3 stages), wgmma "
    "m64n128k8 tf32, a fresh accumulator per k-tile added in registers, TMA-store epilogue",
    signatures=("void(float32[:, :, ::1], float32[:, :, ::1], float32[:, ::1], uint64[::1], uint64[::1], "
                "uint64[::1])",),
    reference=_split_reference,
    error_scale=_split_error_scale,
    # none a multiple of the 128x128 tile or the 32-deep k-tile; a single row with k under one k-tile
    test_sizes=sizes("h k w", (130, 200, 264), (1, 4, 4)),
    constants=dict(TF32X3_CONFIG),
    baseline=_sgemm_of_parts,
    **TF32X3_SPEC,  # (fp32-accurate, as matmul_3xtf32)
)

__all__ = ["MULTIPROCESSORS", "TEST_SIZES"]
