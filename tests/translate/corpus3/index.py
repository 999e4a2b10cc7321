"""The third corpus: Numba CUDA kernels as scientists write them (``sources.SOURCES``: finance indicators, raster GIS,
visualisation, 3-D detection, seismic imaging, particle-in-cell physics, speech recognition, molecular dynamics),
each with a signature like the one its code launches it with and a launch on inputs of the same kind. Chosen for
issue 39's constructs: slices of global and shared arrays passed to device functions, a parameter meant to be
negative (``port_mask_kernel``'s ``beg``), iteration over arrays, ``cuda.libdevice``, atomics into ``.real`` of a
complex array, tuple unpacking of device results, kernels with declared signatures.

A kernel's helpers come with it (``corpus2/extract.py``); where it reads a name of a module it does not define, the
entry says what stands in for it (``prelude``: the value the module gives it on a machine with numba-cuda, never a
change to the kernel).
"""

from __future__ import annotations

import numpy as np

from ..corpus.spec import Launch, custom, fixed, floats, ints
from ..corpus2.index import Entry
from . import sources  # noqa: F401 - registers the sources

L = Launch.of

# -- gQuant (NVIDIA/fsi-samples): financial indicators ------------------------------------------------------------
GQ = "gquant"
_UTIL = "gQuant/plugins/gquant_plugin/greenflow_gquant_plugin/cuindicator/util.py"
N = 1000


def _prices(n=N, nan_share=0.0):
    def make(rng):
        p = 100 + np.cumsum(rng.standard_normal(n))
        p[rng.random(n) < nan_share] = np.nan
        return p
    return custom(make)


def _flags(n=N, share=0.03):
    return custom(lambda rng: (rng.random(n) < share).astype(np.int32))


def _f64(*shape, lo=0.0, hi=1.0):
    return floats(shape if len(shape) > 1 else shape[0], np.float64, lo, hi)


def _f32(*shape, lo=0.0, hi=1.0):
    return floats(shape if len(shape) > 1 else shape[0], np.float32, lo, hi)


def _zeros(*shape, dtype=np.float64):
    return fixed(np.zeros(shape, dtype))


_MASK_SIG = "void(int32[::1], int64, int64, float64[::1], int64)"
GQUANT = [
    # beg < 0 by design: the window [beg, end) around each flagged position, wrapping past the start
    Entry(GQ, _UTIL, "port_mask_kernel", _MASK_SIG, L(8, 128),
          (_flags(), fixed(-5), fixed(3), _prices(), fixed(N))),
    Entry(GQ, _UTIL, "port_mask_zero_kernel", _MASK_SIG, L(8, 128),
          (_flags(), fixed(-2), fixed(6), _prices(), fixed(N))),
    Entry(GQ, _UTIL, "up_down_kernel", "void(float64[::1], float64[::1], float64[::1], float64[::1], int64)",
          L(8, 128), (_prices(nan_share=0.02), _prices(nan_share=0.02), _f64(N), _f64(N), fixed(N))),
    Entry(GQ, _UTIL, "binary_div", "void(float64[::1], float64[::1], float64[::1], int64)", L(8, 128),
          (custom(lambda rng: rng.integers(-2, 3, N).astype(np.float64)),
           custom(lambda rng: rng.integers(-2, 3, N).astype(np.float64)), _f64(N), fixed(N))),
    Entry(GQ, _UTIL, "ultimate_oscillator_kernel",
          "void(float64[::1], float64[::1], float64[::1], float64[::1], float64[::1], int64)", L(8, 128),
          (_prices(), _prices(), _prices(), _f64(N), _f64(N), fixed(N))),
    Entry(GQ, _UTIL, "lowhigh_diff_kernel", "void(float64[::1], float64[::1], float64[::1], int64)", L(8, 128),
          (_prices(), _prices(), _f64(N), fixed(N))),
    Entry(GQ, _UTIL, "onbalance_kernel", "void(float64[::1], float64[::1], float64[::1], int64)", L(8, 128),
          (custom(lambda rng: rng.integers(0, 4, N).astype(np.float64)), _f64(N, hi=1e4), _f64(N), fixed(N))),
    # a Blelloch scan of each block's 256 values in dynamic shared memory (2 * 128 float64); 1024 values: with a
    # partial last block two of its threads store different values into its last element (a race of the kernel's
    # own, which numbakern's simulator reports: test_corpus3_sim.py)
    Entry(GQ, _UTIL, "cumsum_kernel", "void(float64[::1], float64[::1], float64[::1], int64)", L(4, 128, 2048),
          (_f64(1024), _f64(1024), _f64(4), fixed(1024))),
]

# -- xarray-spatial: raster GIS ----------------------------------------------------------------------------------
XS = "xrspatial"
_GRID = L((3, 3), (16, 16))
_ELEVATION = _f32(37, 41, lo=100.0, hi=140.0)
XRSPATIAL = [
    # 3x3 windows of the elevation raster passed to a device function
    Entry(XS, "xrspatial/slope.py", "_run_gpu", "void(float32[:, ::1], float32[::1], float32[::1], float32[:, ::1])",
          _GRID, (_ELEVATION, fixed(np.full(1, 30.0, np.float32)), fixed(np.full(1, 25.0, np.float32)),
                  _f32(37, 41)), variant="slope", rtol=1e-4),
    Entry(XS, "xrspatial/aspect.py", "_run_gpu", "void(float32[:, ::1], float32[:, ::1])", _GRID,
          (_ELEVATION, _f32(37, 41)), variant="aspect", rtol=1e-4),
    Entry(XS, "xrspatial/curvature.py", "_run_gpu", "void(float32[:, ::1], float32[::1], float32[:, ::1])", _GRID,
          (_ELEVATION, fixed(np.full(1, 10.0, np.float32)), _f32(37, 41)), variant="curvature", rtol=1e-4),
    # `for ex in excludes:` (an array iterated), NaN-aware
    Entry(XS, "xrspatial/focal.py", "_mean_gpu", "void(float64[:, ::1], float64[::1], float64[:, ::1])",
          L((3, 3), (16, 16)),
          (custom(lambda rng: np.where(rng.random((41, 37)) < 0.1, np.nan, rng.integers(0, 5, (41, 37)))
                  .astype(np.float64)), fixed(np.array([0.0, np.nan])), _f64(41, 37))),
    Entry(XS, "xrspatial/focal.py", "_focal_sum_cuda", "void(float64[:, ::1], float64[:, ::1], float64[:, ::1])",
          _GRID, (_f64(37, 41), fixed(np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], np.float64)), _f64(37, 41))),
    Entry(XS, "xrspatial/focal.py", "_focal_range_cuda", "void(float64[:, ::1], float64[:, ::1], float64[:, ::1])",
          _GRID, (_f64(37, 41), fixed(np.ones((5, 5))), _f64(37, 41))),
    Entry(XS, "xrspatial/focal.py", "_focal_std_cuda", "void(float64[:, ::1], float64[:, ::1], float64[:, ::1])",
          _GRID, (_f64(37, 41), fixed(np.ones((3, 3))), _f64(37, 41)), rtol=1e-9,
          prelude="from numba import njit as ngjit  # xrspatial.utils.ngjit"),
    Entry(XS, "xrspatial/classify.py", "_run_gpu_bin",
          "void(float64[:, ::1], float64[::1], float64[::1], float64[:, ::1])", _GRID,
          (_f64(37, 41, hi=10.0), fixed(np.array([2.0, 4.0, 6.0, 8.0])), fixed(np.array([1.0, 2.0, 3.0, 4.0])),
           _f64(37, 41))),
    Entry(XS, "xrspatial/focal.py", "_run_gpu_hotspots", "void(float64[:, ::1], int8[:, ::1])", _GRID,
          (_f64(37, 41, lo=-3.0, hi=3.0), ints((37, 41), np.int8, 0, 1))),
    Entry(XS, "xrspatial/convolution.py", "_convolve_2d_cuda",
          "void(float64[:, ::1], float64[:, ::1], float64[:, ::1])", _GRID,
          (_f64(37, 41), _f64(3, 5), _f64(37, 41))),
]

# -- datashader: visualisation of large data ------------------------------------------------------------------------
DS = "datashader"
_CU = "datashader/transfer_functions/_cuda_utils.py"


def _sorted_with_nans(shape):
    """Per pixel (last axis) a descending run of values, NaN after it (datashader's max_n buffers)."""
    def make(rng):
        a = -np.sort(-rng.random(shape), axis=-1)
        a[rng.random(shape[:-1]) < 0.5, -1] = np.nan
        return a
    return custom(make)


DATASHADER = [
    Entry(DS, _CU, "masked_clip_2d_kernel", "void(float64[:, ::1], boolean[:, ::1], float64, float64)", _GRID,
          (_f64(37, 41, lo=-1.0, hi=2.0), custom(lambda rng: rng.random((37, 41)) < 0.3), fixed(0.0), fixed(1.0)),
          # the module defines these per numba version: numba-cuda's branch
          prelude="@cuda.jit(device=True)\ndef cuda_atomic_nanmin(ary, idx, val):\n"
                  "    return cuda.atomic.nanmin(ary, idx, val)\n\n\n"
                  "@cuda.jit(device=True)\ndef cuda_atomic_nanmax(ary, idx, val):\n"
                  "    return cuda.atomic.nanmax(ary, idx, val)"),
    Entry(DS, _CU, "interp2d_kernel",
          "void(float64[:, ::1], float64[::1], float64[::1], float64, float64, float64[:, ::1])", _GRID,
          (custom(lambda rng: np.where(rng.random((37, 41)) < 0.05, np.nan, rng.uniform(-1, 11, (37, 41)))),
           fixed(np.linspace(0.0, 10.0, 17)), _f64(17), fixed(-1.0), fixed(2.0), _f64(37, 41)),
          prelude="from math import nan  # the module imports it in a try block"),
    Entry(DS, _CU, "cuda_nanmax_n_in_place_3d", "void(float64[:, :, ::1], float64[:, :, ::1])", L((3, 3), (8, 8)),
          (_sorted_with_nans((21, 19, 4)), _sorted_with_nans((21, 19, 4)))),
    Entry(DS, _CU, "cuda_row_max_n_in_place_3d", "void(int64[:, :, ::1], int64[:, :, ::1])", L((3, 3), (8, 8)),
          (custom(lambda rng: np.where(rng.random((21, 19, 3)) < 0.3, -1, rng.integers(0, 50, (21, 19, 3)))),
           custom(lambda rng: np.where(rng.random((21, 19, 3)) < 0.3, -1, rng.integers(0, 50, (21, 19, 3)))))),
]

# -- second.pytorch: 3-D detection from point clouds --------------------------------------------------------------
SE = "second"
_NMS = "second/core/non_max_suppression/nms_gpu.py"


def _boxes(n, rotated):
    """``n`` boxes, 5 floats each: centre x, y, width, height, angle (rotated) or x1, y1, x2, y2, score."""
    def make(rng):
        c = rng.uniform(0, 20, (n, 2))
        wh = rng.uniform(1, 4, (n, 2))
        last = rng.uniform(-np.pi, np.pi, (n, 1)) if rotated else rng.random((n, 1))
        b = np.hstack([c, wh, last]) if rotated else np.hstack([c - wh / 2, c + wh / 2, last])
        return b.astype(np.float32).ravel()
    return custom(make)


_NB = 150
_COLS = (_NB + 63) // 64
SECOND = [
    # slices of two shared arrays passed to inlined device functions (rotated-box intersection over union)
    Entry(SE, _NMS, "rotate_iou_kernel", "void(int64, int64, float32[:], float32[:], float32[:])",
          L((3, 2), 64), (fixed(150), fixed(100), _boxes(150, True), _boxes(100, True), _f32(150 * 100)),
          rtol=1e-3),
    Entry(SE, _NMS, "nms_kernel", "void(int64, float32, float32[::1], uint64[::1])", L((_COLS, _COLS), 64),
          (fixed(_NB), fixed(np.float32(0.3)), _boxes(_NB, False), fixed(np.zeros(_NB * _COLS, np.uint64)))),
    Entry(SE, _NMS, "rotate_nms_kernel", "void(int64, float32, float32[::1], uint64[::1])", L((_COLS, _COLS), 64),
          (fixed(_NB), fixed(np.float32(0.3)), custom(lambda rng: np.hstack([
              _boxes(_NB, True)(rng).reshape(_NB, 5), rng.random((_NB, 1), np.float32)]).ravel()),
           fixed(np.zeros(_NB * _COLS, np.uint64)))),
]

# -- PyLops: seismic imaging --------------------------------------------------------------------------------------
PL = "pylops"
_RADON = "pylops/signalprocessing/_fourierradon2d_cuda.py"
_NPX, _NH, _NF = 13, 17, 40


def _c64(*shape):
    return custom(lambda rng: (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64))


_RADON_SIG = "void(complex64[:, ::1], complex64[:, ::1], float32[::1], float32[::1], float32[::1], int64, int64, " \
             "int64, int64)"
_RADON_PRELUDE = "import numpy as cp  # cupy: the same float32 and complex64 constants"
PYLOPS = [
    # s, c = cuda.libdevice.sincosf(...): the fast complex exponential
    Entry(PL, _RADON, "_radon_inner_2d_kernel", _RADON_SIG, L((2, 2), (16, 32)),
          (_c64(_NPX, _NF), _c64(_NH, _NF), _f32(_NF, hi=0.05), _f32(_NPX, lo=-1e-3, hi=1e-3),
           _f32(_NH, lo=-500.0, hi=500.0), fixed(3), fixed(35), fixed(_NPX), fixed(_NH)),
          rtol=1e-3, prelude=_RADON_PRELUDE),
    Entry(PL, _RADON, "_aradon_inner_2d_kernel", _RADON_SIG, L((2, 2), (16, 32)),
          (_c64(_NPX, _NF), _c64(_NH, _NF), _f32(_NF, hi=0.05), _f32(_NPX, lo=-1e-3, hi=1e-3),
           _f32(_NH, lo=-500.0, hi=500.0), fixed(3), fixed(35), fixed(_NPX), fixed(_NH)),
          rtol=1e-3, prelude=_RADON_PRELUDE),
]

# -- FBPIC: particle-in-cell physics --------------------------------------------------------------------------------
FB = "fbpic"
_FB_PRELUDE = ("def compile_cupy(f):  # fbpic.utils.cuda: cuda.jit for cupy arrays\n    return cuda.jit(f)\n\n\n"
               "c = 299792458.0  # scipy.constants.c\ne = 1.602176634e-19  # scipy.constants.e")
_NP = 700
FBPIC = [
    Entry(FB, "fbpic/particles/push/cuda_methods.py", "push_x_gpu",
          "void(float64[::1], float64[::1], float64[::1], float64[::1], float64[::1], float64[::1], float64[::1], "
          "float64, float64, float64, float64)", L(6, 128),
          (_f64(_NP), _f64(_NP), _f64(_NP), _f64(_NP, lo=-1, hi=1), _f64(_NP, lo=-1, hi=1), _f64(_NP, lo=-1, hi=1),
           _f64(_NP, lo=0.5, hi=1.0), fixed(1e-16), fixed(1.0), fixed(1.0), fixed(0.5)),
          prelude=_FB_PRELUDE),
    # the device function's 4-tuple unpacked into four array elements
    Entry(FB, "fbpic/particles/push/cuda_methods.py", "push_p_gpu",
          "void(" + ", ".join(["float64[::1]"] * 10) + ", float64, float64, int64, float64)", L(6, 128),
          tuple([_f64(_NP, lo=-1, hi=1)] * 3 + [_f64(_NP, lo=0.5, hi=1.0)] + [_f64(_NP, lo=-1e9, hi=1e9)] * 3 +
                [_f64(_NP, lo=-1, hi=1)] * 3 + [fixed(-1.602176634e-19), fixed(9.1093837015e-31), fixed(_NP),
                                                 fixed(1e-16)]),
          rtol=1e-9, prelude=_FB_PRELUDE,
          also=(("fbpic/particles/push/inline_functions.py", ("push_p_vay",)),)),
    # atomics into the real part of a complex grid, at a tuple index
    Entry(FB, "fbpic/particles/deposition/cuda_methods_unsorted.py", "deposit_rho_gpu_unsorted",
          "void(float64[::1], float64[::1], float64[::1], float64[::1], float64, float64, float64, int64, float64, "
          "float64, int64, complex128[:, ::1], int64, float64[::1])", L(6, 128),
          (_f64(_NP, lo=-2e-6, hi=2e-6), _f64(_NP, lo=-2e-6, hi=2e-6), _f64(_NP, lo=0.0, hi=20e-6),
           _f64(_NP, lo=0.5, hi=1.5), fixed(1.602176634e-19), fixed(1 / 0.5e-6), fixed(0.0), fixed(40),
           fixed(1 / 0.25e-6), fixed(0.0), fixed(12), fixed(np.zeros((40, 12), np.complex128)), fixed(1),
           fixed(np.zeros(13))),
          rtol=1e-9, prelude=_FB_PRELUDE,
          also=(("fbpic/particles/deposition/particle_shapes.py", ("Sz_linear", "Sr_linear")),)),
]

# -- NeMo: speech recognition -------------------------------------------------------------------------------------
NE = "nemo"
_RNNT = "nemo/collections/asr/parts/numba/rnnt_loss/utils/cuda_utils/gpu_rnnt_kernel.py"
_HELPER = "nemo/collections/asr/parts/numba/rnnt_loss/utils/rnnt_helper.py"
_B, _T, _U, _V = 3, 9, 5, 6
_TORCH = "import types\n\ntorch = types.ModuleType('torch')  # for the annotations\ntorch.Tensor = object\n"
_RNNT_PRELUDE = (_TORCH + "\nimport numpy as np\n\nglobal_constants = types.ModuleType('global_constants')  # nemo's\n"
                 "global_constants.FP32_NEG_INF = -np.inf\nrnnt_helper = types.ModuleType('rnnt_helper')\n"
                 "rnnt_helper.log_sum_exp = log_sum_exp")


def _log_softmax_acts(rng):
    a = rng.standard_normal((_B, _T, _U, _V)).astype(np.float32)
    return a.ravel()


def _rnnt_inputs(out_size):
    return (custom(_log_softmax_acts), _f32(_B * _T * _U, lo=-3.0, hi=-1.0), _zeros(out_size, dtype=np.float32),
            _zeros(_B, dtype=np.float32), fixed(np.array([9, 7, 8], np.int64)), fixed(np.array([4, 2, 3], np.int64)),
            ints((_B, _U), np.int64, 1, _V), fixed(_B), fixed(_T), fixed(_U), fixed(_V), fixed(0))


_RNNT_SIG = "void(float32[::1], float32[::1], float32[::1], float32[::1], int64[::1], int64[::1], int64[:, ::1], " \
            "int64, int64, int64, int64, int64)"
NEMO = [
    Entry(NE, _RNNT, "compute_alphas_kernel", _RNNT_SIG, L(_B, _U), _rnnt_inputs(_B * _T * _U), rtol=1e-4,
          prelude=_RNNT_PRELUDE, also=((_HELPER, ("log_sum_exp",)),)),
    Entry(NE, _RNNT, "compute_betas_kernel", _RNNT_SIG, L(_B, _U), _rnnt_inputs(_B * _T * _U), rtol=1e-4,
          prelude=_RNNT_PRELUDE, also=((_HELPER, ("log_sum_exp",)),)),
    Entry(NE, "nemo/collections/asr/parts/numba/spec_augment/spec_aug_numba.py", "spec_augment_kernel",
          "void(float32[:, :, ::1], int64[::1], int64[:, ::1], int64[:, ::1], int64[:, ::1], int64[:, ::1], float32)",
          L((20, 50), 32),  # a block per (frequency, time) cell, a thread per batch row
          (_f32(4, 20, 50), fixed(np.array([50, 31, 44, 12], np.int64)), ints((4, 2), np.int64, 0, 15),
           ints((4, 2), np.int64, 1, 6), ints((4, 3), np.int64, 0, 40), ints((4, 3), np.int64, 1, 9),
           fixed(np.float32(0.0))), prelude=_TORCH),
    Entry(NE, _HELPER, "compute_costs_data", "void(float32[::1], float32[::1], float32)", L(4, 128),
          (_f32(500), _f32(500), fixed(np.float32(0.01))), prelude=_TORCH),
]

# -- PYGAMD: molecular dynamics -------------------------------------------------------------------------------------
PG = "pygamd"
_NA = 300


def _members(n=_NA):
    return custom(lambda rng: rng.permutation(n).astype(np.int32))


PYGAMD = [
    Entry(PG, "pygamd/application.py", "zero_force_vp", "void(int32, float32[:, :], float32[:, :])", L(3, 128),
          (fixed(np.int32(_NA)), _f32(_NA, 3), _f32(_NA, 2))),
    # a block sum in shared memory of kinetic energy and virial of the group's members
    Entry(PG, "pygamd/chares/compute_properties.py", "cu_sums1",
          "void(int32, int32[:], float32[:, :], float32[:, :], float32[:], int32)", L(3, 128),
          (fixed(np.int32(_NA)), _members(), _f32(_NA, 4, lo=-1, hi=1), _f32(_NA, 2), _zeros(6, dtype=np.float32),
           fixed(np.int32(3))), rtol=1e-5),
    # the kernel's own signature: float64 forces, float32 velocities
    Entry(PG, "pygamd/integrations/nve.py", "cu_second_step", "void(int32, int32[:], float32[:, :], float64[:, :], "
          "float32)", L(3, 128), (fixed(np.int32(_NA)), _members(), _f32(_NA, 4, lo=0.5, hi=1.5),
                                  _f64(_NA, 3, lo=-1, hi=1), fixed(np.float32(0.005)))),
    Entry(PG, "pygamd/tinkers/hilbert.py", "cu_sort_float2d", "void(int32, int32[:], float32[:, :], float32[:, :])",
          L(3, 128), (fixed(np.int32(_NA)), _members(), _f32(_NA, 3), _f32(_NA, 3))),
]

ENTRIES = GQUANT + XRSPATIAL + DATASHADER + SECOND + PYLOPS + FBPIC + NEMO + PYGAMD
