"""The second corpus: Numba CUDA kernels as people write them in libraries, example collections, course material and
scientific codes (``sources.SOURCES``), each with a signature like the one its code launches it with and a launch on
inputs of the same kind.

Which kernels are in: every top-level ``@cuda.jit`` kernel of the files below, except two that link CUDA C of their
own (``numba-examples``' cuRAND example: there is no Python to translate). A kernel's helpers come with it
(``extract.py``); where a kernel reads a name of a package module it does not define (stumpy's ``core`` and
``config``), the entry says what stands in for it (``prelude``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..corpus.spec import Launch, custom, fixed, floats, ints

L = Launch.of


@dataclass(frozen=True)
class Entry:
    source: str                    # a key of sources.SOURCES
    path: str                      # the file in that repository
    kernel: str
    signature: str
    launch: Launch
    args: tuple                    # one maker per argument: called with a numpy Generator
    variant: str = ""
    rtol: float | None = None
    prelude: str = ""              # the entry's own stand-ins (see the module docstring)
    also: tuple = field(default=())  # (path, names) of other files of the source the kernel calls into
    note: str = ""

    @property
    def id(self) -> str:
        stem = self.path.rsplit("/", 1)[-1][:-3]
        return f"{self.source}/{stem}:{self.kernel}" + (f"[{self.variant}]" if self.variant else "")

    @property
    def target(self) -> str:
        from .extract import module_path

        return f"{module_path(self.source, self.path, (self.kernel,), self.prelude, self.also)}:{self.kernel}"

    def make_args(self, seed: int) -> list:
        rng = np.random.default_rng(seed)
        return [m(rng) for m in self.args]


def _f64(*shape, lo=0.0, hi=1.0):
    return floats(shape if len(shape) > 1 else shape[0], np.float64, lo, hi)


def _f32(*shape, lo=0.0, hi=1.0):
    return floats(shape if len(shape) > 1 else shape[0], np.float32, lo, hi)


def _binary(*shape):
    return custom(lambda rng: (rng.random(shape) < 0.4).astype(np.float64))


# -- numba/numba-examples ------------------------------------------------------------------------------------------
NE = "numba-examples"
_HIST = "examples/density_estimation/histogram/gpu.py"
_BS = "examples/finance/blackscholes/blackscholes_cuda.py"
_BS_LEGACY = "legacy/blackscholes/blackscholes_cuda.py"
_LAPLACE = "legacy/laplace2d/laplace2d-numba-cuda{}.py"
_n = 1600  # legacy/cudajit/matmul*.py's n (bpg * tpb), which the kernels read
NUMBA_EXAMPLES = [
    Entry(NE, _HIST, "histogram", "void(float64[::1], float64, float64, int64[::1])", L(4, 128),
          (_f64(1000, lo=-1, hi=1), fixed(-1.0), fixed(1.0), fixed(np.zeros(20, np.int64)))),
    Entry(NE, _HIST, "min_max", "void(float64[::1], float64[::1])", L(4, 128),
          (_f64(1000, lo=-5, hi=5), fixed(np.array([np.inf, -np.inf])))),
    Entry(NE, _BS, "black_scholes_cuda_kernel", "void(float64[::1], float64[::1], float64[::1], float64[::1], "
          "float64[::1], float64, float64)", L(4, 256),
          (_f64(1000), _f64(1000), _f64(1000, lo=5, hi=30), _f64(1000, lo=1, hi=100), _f64(1000, lo=0.25, hi=10),
           fixed(0.02), fixed(0.3))),
    Entry(NE, _BS_LEGACY, "black_scholes_cuda", "void(float64[:], float64[:], float64[:], float64[:], float64[:], "
          "float64, float64)", L(4, 256),
          (_f64(1000), _f64(1000), _f64(1000, lo=5, hi=30), _f64(1000, lo=1, hi=100), _f64(1000, lo=0.25, hi=10),
           fixed(0.02), fixed(0.3))),
    Entry(NE, "legacy/cudajit/matmul.py", "cu_square_matrix_mul", "void(float32[:, :], float32[:, :], float32[:, :])",
          L((50, 50), (32, 32)), (_f32(_n, _n), _f32(_n, _n), _f32(_n, _n)), rtol=1e-4),
    Entry(NE, "legacy/cudajit/matmul_smem.py", "cu_square_matrix_mul",
          "void(float32[:, :], float32[:, :], float32[:, :])", L((50, 50), (32, 32)),
          (_f32(_n, _n), _f32(_n, _n), _f32(_n, _n)), rtol=1e-4),
    Entry(NE, "legacy/cudajit/sum.py", "cuda_sum", "void(float32[:], float32[:], float32[:])", L(50, 32),
          (_f32(1600), _f32(1600), _f32(1600))),
    Entry(NE, _LAPLACE.format("-improve"), "jacobi_relax_core", "void(float64[:, :], float64[:, :], float64[:, :])",
          L((4, 4), (16, 16)), (_f64(64, 64), _f64(64, 64), _f64(4, 4))),
    Entry(NE, _LAPLACE.format("-smem"), "jacobi_relax_core", "void(float64[:, :], float64[:, :], float64[:, :])",
          L((2, 2), (32, 32)), (_f64(64, 64), _f64(64, 64), _f64(64, 64))),
    Entry(NE, _LAPLACE.format(""), "jacobi_relax_core", "void(float64[:, :], float64[:, :], float64[:, :])",
          L((3, 2), (32, 32)), (_f64(61, 83), _f64(61, 83), _f64(61, 83))),
    Entry(NE, "legacy/cuda_mpi.py", "sqplus2", "void(int32[::1], int32[::1])", L(1, 1),
          (ints(10, np.int32, -100, 100), ints(10, np.int32, 0, 1))),
    Entry(NE, "legacy/cuda_dask.py", "gpu_single_block_sum", "void(float32[::1], float32[::1])", L(1, 512),
          (_f32(1000), _f32(1)), rtol=1e-4),
]

# -- rapidsai/cusignal (before its kernels moved to CuPy) --------------------------------------------------------
CS = "cusignal"
_SIG = "python/cusignal/_signaltools.py"
_W, _H = 37, 29  # an output of 37 x 29 pixels


def _conv(kernel, s, s1=None):
    """A 2-D correlate/convolve entry: the input has the output's size plus the filter's halo."""
    if s1 is None:
        taps = 2 * s + 1 if kernel.endswith("odd") else 2 * s
        inp, filt = (_H + taps - 1, _W + taps - 1), (taps, taps)
        sig = "void(float64[:, ::1], int64, int64, float64[:, ::1], int64, float64[:, ::1], int64, int64)"
        args = (_f64(*inp, lo=-1, hi=1), fixed(inp[1]), fixed(inp[0]), _f64(*filt, lo=-1, hi=1), fixed(s),
                _f64(_H, _W), fixed(_W), fixed(_H))
    else:
        inp, filt = (_H + s - 1, _W + s1 - 1), (s, s1)
        sig = "void(float64[:, ::1], int64, int64, float64[:, ::1], int64, int64, float64[:, ::1], int64, int64)"
        args = (_f64(*inp, lo=-1, hi=1), fixed(inp[1]), fixed(inp[0]), _f64(*filt, lo=-1, hi=1), fixed(s), fixed(s1),
                _f64(_H, _W), fixed(_W), fixed(_H))
    return Entry(CS, _SIG, kernel, sig, L((3, 2), (16, 16)), args, rtol=1e-9)


_UP, _DOWN, _HPP, _XLEN = 3, 2, 4, 50  # upfirdn: up, down, taps per phase, input length
_OUT = (((_XLEN - 1) * _UP + _UP * _HPP) + _DOWN - 1) // _DOWN


def _upfirdn_1d(kernel, dtype, explicit):
    t = {np.float32: "float32", np.float64: "float64", np.complex64: "complex64", np.complex128: "complex128"}[dtype]
    sig = f"void({t}[:], {t}[:], int64, int64, int64, int64, int64, {t}[:])" if explicit else \
        f"void({t}[::1], {t}[::1], int64, int64, int64, int64, int64, {t}[::1])"

    def data(n):
        if np.dtype(dtype).kind == "c":
            return custom(lambda rng: (rng.uniform(-1, 1, n) + 1j * rng.uniform(-1, 1, n)).astype(dtype))
        return floats(n, dtype, -1, 1)

    return Entry(CS, "python/cusignal/_upfirdn.py", kernel, sig, L(2, 64),
                 (data(_XLEN), data(_UP * _HPP), fixed(_UP), fixed(_DOWN), fixed(_XLEN), fixed(_HPP),
                  fixed(_XLEN + _HPP - 1), custom(lambda rng: np.zeros(_OUT, dtype))),
                 rtol=1e-4 if dtype in (np.float32, np.complex64) else 1e-9)


CUSIGNAL = [
    _conv("_correlate2d_odd", 2), _conv("_correlate2d_even", 2), _conv("_correlate2d_ns", 3, 2),
    _conv("_convolve2d_odd", 2), _conv("_convolve2d_even", 2), _conv("_convolve2d_ns", 3, 2),
    Entry(CS, "python/cusignal/_spectral.py", "_lombscargle", "void(float64[::1], float64[::1], float64[::1], "
          "float64[::1])", L(2, 64), (_f64(100, hi=10), _f64(100, lo=-1, hi=1), _f64(200, lo=0.1, hi=5), _f64(200)),
          rtol=1e-6),
    Entry(CS, "python/cusignal/_spectral.py", "_lombscargle_norm", "void(float64[::1], float64[::1], float64[::1], "
          "float64[::1], float64[::1])", L(2, 64),
          (_f64(100, hi=10), _f64(100, lo=-1, hi=1), _f64(200, lo=0.1, hi=5), _f64(200), _f64(1, lo=1, hi=2)),
          rtol=1e-6),
    Entry(CS, "python/cusignal/_upfirdn.py", "_numba_upfirdn_2d", "void(float64[:, ::1], float64[::1], int64, int64, "
          "int64, int64, int64, int64, float64[:, ::1])", L((1, 8), (8, 16)),
          (_f64(5, _XLEN, lo=-1, hi=1), _f64(_UP * _HPP, lo=-1, hi=1), fixed(_UP), fixed(_DOWN), fixed(1),
           fixed(_XLEN), fixed(_HPP), fixed(_XLEN + _HPP - 1), fixed(np.zeros((5, _OUT)))), rtol=1e-9),
    _upfirdn_1d("_numba_upfirdn_1d_float", np.float32, True),
    _upfirdn_1d("_numba_upfirdn_1d_double", np.float64, True),
    _upfirdn_1d("_numba_upfirdn_1d_complex64", np.complex64, False),
    _upfirdn_1d("_numba_upfirdn_1d_complex128", np.complex128, False),
]

# -- TDAmeritrade/stumpy -----------------------------------------------------------------------------------------
ST = "stumpy"
#: the package modules the kernels read: ``core`` (its device function, extracted with the kernel) and ``config``
#: (stumpy's default thresholds)
_STUMPY_PRELUDE = """
import types as _types
core = _types.ModuleType("core")
core._gpu_searchsorted_right = _gpu_searchsorted_right
config = _types.ModuleType("config")
config.STUMPY_DENOM_THRESHOLD = 1e-14
config.STUMPY_P_NORM_THRESHOLD = 1e-14
"""
_M, _NT, _K = 8, 100, 3  # window, series length, top-k
_WIN = _NT - _M + 1


def _sorted_profile(rng):
    return np.sort(rng.uniform(0, 20, (_WIN, _K)), axis=1)


def _bfs(rng):
    """stumpy's core._bfs_indices(k, fill_value=-1) for k = 3, and its level count (2)."""
    return np.array([1, 0, 2], np.int64)


def _profiles():
    """profile (sorted rows), profile_L, profile_R, indices, indices_L, indices_R."""
    return (custom(_sorted_profile), _f64(_WIN, lo=5, hi=20), _f64(_WIN, lo=5, hi=20),
            ints((_WIN, _K), np.int64, 0, _WIN), ints(_WIN, np.int64, -1, 0), ints(_WIN, np.int64, -1, 0))


def _stumpy(path, sig, args):
    return Entry(ST, path, "_compute_and_update_PI_kernel", sig, L(2, 64), args, prelude=_STUMPY_PRELUDE,
                 also=(("stumpy/core.py", ("_gpu_searchsorted_right",)),), rtol=1e-9)


STUMPY = [
    _stumpy("stumpy/gpu_stump.py", "void(int64, float64[:], float64[:], int64, float64[:], float64[:], float64[:], "
            "float64[:], float64[:], float64[:], float64[:], boolean[:], boolean[:], int64, boolean, int64, "
            "float64[:, :], float64[:], float64[:], int64[:, :], int64[:], int64[:], boolean, int64[:], int64, int64)",
            (fixed(5), _f64(_NT, lo=-1, hi=1), _f64(_NT, lo=-1, hi=1), fixed(_M), _f64(_WIN), _f64(_WIN),
             _f64(_WIN), _f64(_WIN, lo=-0.5, hi=0.5), _f64(_WIN, lo=0.5, hi=1), _f64(_WIN, lo=-0.5, hi=0.5),
             _f64(_WIN, lo=0.5, hi=1), custom(lambda rng: rng.random(_WIN) < 0.1),
             custom(lambda rng: rng.random(_WIN) < 0.1), fixed(_WIN), fixed(True), fixed(2),
             *_profiles(), fixed(True), custom(_bfs), fixed(2), fixed(_K))),
    _stumpy("stumpy/gpu_aamp.py", "void(int64, float64[:], float64[:], int64, float64, float64[:], float64[:], "
            "float64[:], boolean[:], boolean[:], int64, boolean, int64, float64[:, :], float64[:], float64[:], "
            "int64[:, :], int64[:], int64[:], boolean, int64[:], int64, int64)",
            (fixed(5), _f64(_NT, lo=-1, hi=1), _f64(_NT, lo=-1, hi=1), fixed(_M), fixed(2.0), _f64(_WIN, hi=10),
             _f64(_WIN, hi=10), _f64(_WIN, hi=10), custom(lambda rng: rng.random(_WIN) < 0.9),
             custom(lambda rng: rng.random(_WIN) < 0.9), fixed(_WIN), fixed(True), fixed(2),
             *_profiles(), fixed(True), custom(_bfs), fixed(2), fixed(_K))),
]

# -- sgkit-dev/sgkit -------------------------------------------------------------------------------------------------
SG = "sgkit"
#: the annotations' ArrayLike is sgkit.typing's (an alias of numpy's; a package module the extraction leaves out)
_SGKIT_PRELUDE = "from numpy.typing import ArrayLike"
_GENO = custom(lambda rng: rng.integers(-1, 3, (7, 30)).astype(np.float32))  # genotype calls, -1 missing
SGKIT = [
    Entry(SG, "sgkit/distance/metrics.py", "correlation_map_kernel",
          "void(float32[:, ::1], float32[:, ::1], float32[:, :, ::1])", L((1, 1), (8, 8)),
          (_GENO, _GENO, fixed(np.zeros((7, 7, 6), np.float32))), rtol=1e-5, prelude=_SGKIT_PRELUDE),
    Entry(SG, "sgkit/distance/metrics.py", "euclidean_map_kernel",
          "void(float32[:, ::1], float32[:, ::1], float32[:, :, ::1])", L((1, 1), (8, 8)),
          (_GENO, _GENO, fixed(np.zeros((7, 7, 1), np.float32))), rtol=1e-5, prelude=_SGKIT_PRELUDE),
]

# -- vincentbonnetcg/Numerical-Bric-a-Brac -----------------------------------------------------------------------
BB = "bric-a-brac"
BRIC_A_BRAC = [
    Entry(BB, "stencil_codes/convolution_matrix.py", "apply_kernel",
          "void(float64[:, ::1], float64[:, ::1], float64[:, ::1])", L((4, 4), (16, 16)),
          (_f64(64, 64), _f64(64, 64), _f64(3, 3, lo=-1, hi=1))),
    Entry(BB, "stencil_codes/game_of_life.py", "apply_cellular_automata_rules",
          "void(float64[:, ::1], float64[:, ::1])", L((4, 4), (16, 16)), (_binary(64, 64), _f64(64, 64))),
    Entry(BB, "stencil_codes/poisson_solver.py", "jacobi_kernel", "void(float32[:, ::1], float32[:, ::1])",
          L((4, 4), (16, 16)), (_f32(64, 64), _f32(64, 64))),
]

# -- ENCCS course material ---------------------------------------------------------------------------------------
HP = "enccs-hpda"
_MM = "void(float64[:, ::1], float64[:, ::1], float64[:, ::1])"
ENCCS = [
    Entry(HP, "content/example/ex_numba_gpu.py", "func", "void(float64, float64)", L(1, 1),
          (fixed(2.0), fixed(3.0)), note="returns a value: numba refuses a kernel that does"),
    Entry(HP, "content/example/math_kernel.py", "math_kernel", "void(float64[::1], float64[::1], float64[::1])",
          L(4, 128), (_f64(500), _f64(500, hi=math.pi), _f64(500)), rtol=1e-9),
    Entry(HP, "content/example/math_kernel_devicefunction.py", "math_kernel_devicefunction",
          "void(float64[::1], float64[::1], float64[::1])", L(4, 128), (_f64(500), _f64(500), _f64(500))),
    Entry(HP, "content/example/matmul_kernel.py", "matmul_kernel", _MM, L((3, 2), (16, 16)),
          (_f64(37, 29), _f64(29, 23), _f64(37, 23)), rtol=1e-9),
    Entry(HP, "content/example/matmul_kernel.py", "matmul_kernel2", _MM, L((3, 2), (16, 16)),
          (_f64(37, 29), _f64(29, 23), _f64(37, 23)), rtol=1e-9),
    Entry(HP, "content/exercise/matmul_dtype_solution.py", "matmul_kernel_float32",
          "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])", L((3, 2), (16, 16)),
          (_f32(37, 29), _f32(29, 23), _f32(37, 23)), rtol=1e-4),
    Entry(HP, "content/exercise/matmul_sm.py", "matmul_sm", _MM, L((3, 3), (16, 16)),
          (_f64(48, 48), _f64(48, 48), _f64(48, 48)), rtol=1e-9, note="square, a multiple of the tile"),
    Entry(HP, "content/exercise/matmul_sm_solution.py", "matmul_sm", _MM, L((3, 3), (16, 16)),
          (_f64(37, 41), _f64(41, 43), _f64(37, 43)), rtol=1e-9),
    Entry("enccs-gpu", "content/examples/stencil/python-numba/core_cuda.py", "_evolve_kernel",
          "void(float64[:, ::1], float64[:, ::1], float64, float64, float64, float64)", L((3, 4), (16, 16)),
          (_f64(45, 61), _f64(45, 61), fixed(0.5), fixed(0.01), fixed(0.1), fixed(0.1)), rtol=1e-9),
]

# -- bourbonut/lbm-gpu ---------------------------------------------------------------------------------------------
LB = "lbm-gpu"
_LBM = "utils/numba_kernels.py"
_NX, _NY = 42, 30
_V = np.array([[1, 1], [1, 0], [1, -1], [0, 1], [0, 0], [0, -1], [-1, 1], [-1, 0], [-1, -1]], np.int64)
_T = np.array([1 / 36, 1 / 9, 1 / 36, 1 / 9, 4 / 9, 1 / 9, 1 / 36, 1 / 9, 1 / 36])
_G2, _B2 = L((3, 2), (16, 16)), L(1, 32)
LBM_GPU = [
    Entry(LB, _LBM, "equilibrium", "void(float64[:, ::1], float64[:, :, ::1], int64[:, ::1], float64[::1], "
          "float64[:, :, ::1], int64, int64)", _G2,
          (_f64(_NX, _NY, lo=0.5, hi=1.5), _f64(2, _NX, _NY, lo=-0.1, hi=0.1), fixed(_V), fixed(_T),
           _f64(9, _NX, _NY), fixed(_NX), fixed(_NY))),
    Entry(LB, _LBM, "macroscopic", "void(float64[:, :, ::1], int64[:, ::1], float64[:, ::1], float64[:, :, ::1], "
          "int64, int64)", _G2,
          (_f64(9, _NX, _NY, lo=0.1, hi=1), fixed(_V), _f64(_NX, _NY), _f64(2, _NX, _NY), fixed(_NX), fixed(_NY))),
    Entry(LB, _LBM, "outflow", "void(float64[:, :, ::1], int64, int64)", _B2,
          (_f64(9, _NX, _NY), fixed(_NX), fixed(_NY))),
    Entry(LB, _LBM, "inflow", "void(float64[:, :, ::1], float64[:, :, ::1], float64[:, ::1], float64[:, :, ::1], "
          "int64)", _B2,
          (_f64(2, _NX, _NY, hi=0.1), _f64(2, _NX, _NY, hi=0.1), _f64(_NX, _NY), _f64(9, _NX, _NY), fixed(_NY))),
    Entry(LB, _LBM, "update_fin", "void(float64[:, :, ::1], float64[:, :, ::1], int64)", _B2,
          (_f64(9, _NX, _NY), _f64(9, _NX, _NY), fixed(_NY))),
    Entry(LB, _LBM, "collision", "void(float64[:, ::1], float64[:, :, ::1], float64[:, :, ::1], float64[:, :, ::1], "
          "int64, int64)", _G2,
          (_f64(_NX, _NY, lo=1, hi=1.9), _f64(9, _NX, _NY), _f64(9, _NX, _NY), _f64(9, _NX, _NY), fixed(_NX),
           fixed(_NY))),
    Entry(LB, _LBM, "bounce_back", "void(float64[:, :, ::1], float64[:, :, ::1], boolean[:, ::1], int64, int64)",
          _G2, (_f64(9, _NX, _NY), _f64(9, _NX, _NY), custom(lambda rng: rng.random((_NX, _NY)) < 0.2), fixed(_NX),
                fixed(_NY))),
    Entry(LB, _LBM, "streaming_step", "void(float64[:, :, ::1], float64[:, :, ::1], int64[:, ::1], int64, int64)",
          _G2, (_f64(9, _NX, _NY), _f64(9, _NX, _NY), fixed(_V), fixed(_NX), fixed(_NY))),
    Entry(LB, "tests/fastmult.py", "fast_matmul", "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])",
          L((3, 3), (16, 16)), (_f32(37, 41), _f32(41, 43), _f32(37, 43)), rtol=1e-4,
          prelude="from numba import cuda, float32", note="the file imports nothing: its runner provides these"),
]

ENTRIES = NUMBA_EXAMPLES + CUSIGNAL + STUMPY + SGKIT + BRIC_A_BRAC + ENCCS + LBM_GPU
assert len({e.id for e in ENTRIES}) == len(ENTRIES), "corpus2 ids must be unique"
