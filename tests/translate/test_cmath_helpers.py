"""The C of cmath's functions (translate/codegen/helpers.py, ``nk_cmath``) against numba's own, without a GPU: the
helpers built as host code with nvcc and run on special values (infinities, NaNs, signed zeros, the large-argument
branches) and random complex numbers, complex128 and complex64, compared with numba's ``cmath`` (CPU, the same
algorithms numba-cuda compiles for the device). On a GPU the extra kernels verify them on the device
(``extra_kernels.py``: complex_trig, complex_functions)."""

from __future__ import annotations

import cmath
import shutil
import subprocess

import numpy as np
import pytest

from translate.codegen import helpers

NAMES = ("sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "exp", "log",
         "sqrt")
INF, NAN = float("inf"), float("nan")
SPECIAL = [0j, 1 + 0j, -1 + 0j, 1j, -1j, 2.5 + 0j, -3 + 0j, -2j, complex(1, 1e-30), complex(1e39, 1),
           complex(-1e39, 2), complex(2, 1e300), complex(INF, 0), complex(-INF, 0), complex(INF, 1), complex(-INF, 1),
           complex(INF, NAN), complex(NAN, INF), complex(INF, INF), complex(NAN, 0), complex(0, NAN), complex(1, INF),
           complex(-INF, -INF), complex(0, INF), complex(1e-40, 1e-40), complex(-0.0, -0.0), complex(0.999999, 1e-25),
           complex(30, 2), complex(-800, 0.5), complex(0.3, 1e38)]

MAIN = r"""
#include <cstdio>
int main(int argc, char **argv) {
    FILE *f = fopen(argv[1], "r"); int n; if (fscanf(f, "%d", &n) != 1) return 1;
    for (int k = 0; k < n; k++) {
        double re, im; if (fscanf(f, "%lf %lf", &re, &im) != 2) return 1;
        cuDoubleComplex z = make_cuDoubleComplex(re, im);
        cuFloatComplex w = make_cuFloatComplex((float)re, (float)im);
        cuDoubleComplex d[] = {CALLS(z)};
        cuFloatComplex s[] = {CALLS(w)};
        for (auto v : d) printf("%.17g %.17g ", v.x, v.y);
        for (auto v : s) printf("%.9g %.9g ", (double)v.x, (double)v.y);
        printf("\n");
    }
}
"""


@pytest.fixture(scope="module")
def host_helpers(tmp_path_factory):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("needs nvcc (no GPU)")
    text = helpers.render({"nk_cmath"}).replace("__device__ __forceinline__", "__host__ __device__ inline")
    text = text.replace("__device__", "__host__ __device__")
    text = text.replace("__longlong_as_double(0x7ff0000000000000LL)", "INFINITY")
    text = text.replace("__longlong_as_double(0x7ff8000000000000LL)", "NAN")
    calls = ", ".join(f"nk_c{n}(X)" for n in NAMES)
    src = ("#include <cuComplex.h>\n#include <cmath>\nusing std::isinf; using std::isnan; using std::isfinite;\n"
           f"#define CALLS(X) {calls}\n" + text + MAIN)
    work = tmp_path_factory.mktemp("cmath_host")
    (work / "t.cu").write_text(src)
    r = subprocess.run([nvcc, "-O2", "-x", "cu", str(work / "t.cu"), "-o", str(work / "t")], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return work / "t"


def _same(a: float, b: float, tol: float) -> bool:
    if np.isnan(a) and np.isnan(b):
        return True
    if np.isinf(a) or np.isinf(b):
        return a == b
    return abs(a - b) <= tol * max(1.0, abs(b))


def _caller(f):
    def call(z):
        return f(z)
    return call


def test_cmath_helpers_compute_what_numba_computes(host_helpers, tmp_path):
    import numba

    rng = np.random.default_rng(7)
    zs = SPECIAL + [complex(z) for z in rng.uniform(-4, 4, 200) + 1j * rng.uniform(-4, 4, 200)]
    (tmp_path / "in.txt").write_text(f"{len(zs)}\n" + "\n".join(f"{z.real!r} {z.imag!r}" for z in zs))
    lines = subprocess.run([str(host_helpers), str(tmp_path / "in.txt")], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    assert len(lines) == len(zs)
    fns = {n: numba.njit(_caller(getattr(cmath, n))) for n in NAMES}
    wrong = []
    k = len(NAMES)
    for z, line in zip(zs, lines):
        vals = [float(v) for v in line.split()]
        for j, name in enumerate(NAMES):
            with np.errstate(all="ignore"):
                cases = ((complex(vals[2 * j], vals[2 * j + 1]), complex(fns[name](np.complex128(z))), 1e-13),
                         (complex(vals[2 * (k + j)], vals[2 * (k + j) + 1]), complex(fns[name](np.complex64(z))), 3e-6))
            for got, want, tol in cases:
                if not (_same(got.real, want.real, tol) and _same(got.imag, want.imag, tol)):
                    wrong.append(f"cmath.{name}({z!r}) [{'f64' if tol < 1e-9 else 'f32'}]: C {got!r}, numba {want!r}")
    assert not wrong, f"{len(wrong)} differ, e.g.:\n" + "\n".join(wrong[:10])
