"""Kernels written for a GPU run in the simulator as written: the GPU's ``cuda.jit`` options, ``numba.cuda`` reached
through the package, and ``cuda.libdevice`` (the stock simulator fails every one of these)."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from fractions import Fraction

import numba
import numba as nb
import numpy as np
import pytest
from numba import cuda
from numba.cuda import libdevice
from numba.cuda.libdevice import sincosf

from numbakern import sim
from numbakern.sim import libdevice as sim_libdevice
from tests import environments


@cuda.jit(max_registers=40, lineinfo=True, launch_bounds=256, forceinline=False)
def triple(x):
    i = cuda.grid(1)
    if i < x.shape[0]:
        x[i] = 3 * x[i]


def test_the_gpus_jit_options_are_accepted(rng):
    x = rng.standard_normal(300).astype(np.float32)
    y = x.copy()
    with sim.checks("all"):
        triple[2, 256](y)
    np.testing.assert_array_equal(y, x * np.float32(3))


@nb.cuda.jit
def through_the_package(out):
    i, j = nb.cuda.grid(2)
    tile = numba.cuda.shared.array((4, 4), numba.float32)
    tile[cuda.threadIdx.x, cuda.threadIdx.y] = numba.float32(i * 10 + j)
    cuda.syncthreads()
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = tile[cuda.threadIdx.x, cuda.threadIdx.y]


def test_numba_cuda_reached_through_the_numba_package():
    out = np.full((6, 7), np.nan, np.float32)
    with sim.checks("all"):
        through_the_package[(2, 2), (4, 4)](out)
    i, j = np.indices(out.shape)
    np.testing.assert_array_equal(out, (i * 10 + j).astype(np.float32))


@cuda.jit
def trig(x, s, c, s2, c2):
    i = cuda.grid(1)
    if i < x.shape[0]:
        s[i], c[i] = sincosf(x[i])  # imported before numbakern was: the same stub
        s2[i] = cuda.libdevice.sinf(x[i])
        c2[i] = libdevice.cos(np.float64(x[i]))


def test_libdevice_in_a_kernel_computes_as_the_gpu_does(rng):
    x = (rng.standard_normal(70) * 4).astype(np.float32)
    s, c, s2 = (np.full(70, np.nan, np.float32) for _ in range(3))
    c2 = np.full(70, np.nan)
    with sim.checks("all"):
        trig[1, 96](x, s, c, s2, c2)
    x64 = x.astype(np.float64)
    np.testing.assert_array_equal(s, np.sin(x64).astype(np.float32))  # float32 of the double result
    np.testing.assert_array_equal(c, np.cos(x64).astype(np.float32))
    np.testing.assert_array_equal(s2, s)
    np.testing.assert_allclose(c2, np.cos(x64), rtol=1e-15)


def test_every_libdevice_function_numba_cuda_binds_is_implemented():
    from numba.cuda.libdevicefuncs import functions

    bound = {name[len("__nv_"):] for name in functions}
    assert bound - set(sim_libdevice.implemented()) == set()
    assert len(bound) > 300


def test_results_through_pointers_come_back_as_numba_cuda_returns_them():
    assert libdevice.sincosf(np.float32(0.5)) == (np.float32(math.sin(0.5)), np.float32(math.cos(0.5)))
    assert libdevice.frexp(12.0) == (0.75, 4)
    assert libdevice.modff(np.float32(-2.25)) == (np.float32(-0.25), np.float32(-2.0))
    rem, quo = libdevice.remquo(7.0, 2.0)  # 7 = 4 * 2 - 1: the remainder rounds the quotient to even
    assert (rem, quo) == (-1.0, 4)
    assert type(libdevice.sinf(np.float32(1))) is np.float32 and type(libdevice.popc(7)) is int


def _exact_sum(a, b):
    return Fraction(float(a)) + Fraction(float(b))


def test_the_rounding_modes_round_the_exact_result_once(rng):
    f32 = np.float32
    for _ in range(300):
        a, b = (f32(v) for v in rng.standard_normal(2) * 10.0 ** rng.integers(-8, 8, 2))
        exact = _exact_sum(a, b)
        rd, ru, rz, rn = (libdevice.__dict__[f"fadd_{m}"](a, b) for m in ("rd", "ru", "rz", "rn"))
        assert Fraction(float(rd)) <= exact <= Fraction(float(ru))
        assert rd == ru or np.nextafter(rd, f32(np.inf)) == ru  # adjacent: nothing between them
        assert rz == (rd if exact > 0 else ru)
        assert rn == a + b  # numpy's float32 addition rounds to nearest even
        q = Fraction(float(a)) / Fraction(float(b))
        assert Fraction(float(libdevice.ddiv_rd(float(a), float(b)))) <= q <= \
            Fraction(float(libdevice.ddiv_ru(float(a), float(b))))
        root, above = libdevice.fsqrt_rd(abs(a)), libdevice.fsqrt_ru(abs(a))
        assert Fraction(float(root)) ** 2 <= Fraction(float(abs(a))) <= Fraction(float(above)) ** 2
        assert Fraction(float(abs(a))) < Fraction(float(np.nextafter(root, f32(1e30)))) ** 2
    # float64 fma: rounded once (a float64 product and then a sum would lose the small term)
    assert libdevice.fma_rn(1 + 2.0**-30, 1 - 2.0**-30, -1.0) == -(2.0**-60)
    assert libdevice.dmul_rz(1 + 2.0**-52, 1 + 2.0**-52) == 1 + 2.0**-51
    assert libdevice.dmul_ru(1 + 2.0**-52, 1 + 2.0**-52) == 1 + 3 * 2.0**-52


def test_conversions_round_and_saturate_as_cvt_does():
    assert [libdevice.float2int_rn(np.float32(v)) for v in (0.5, 1.5, 2.5, -2.5)] == [0, 2, 2, -2]
    assert [libdevice.double2int_rd(v) for v in (-0.5, 3e10, float("nan"))] == [-1, 2**31 - 1, 0]
    assert libdevice.double2uint_ru(0.25) == 1 and libdevice.double2uint_rz(4294967295.0) == -1  # its bits, int32
    assert libdevice.double2float_rd(0.1) < np.float32(0.1) == libdevice.double2float_rn(0.1)
    assert libdevice.int2float_rz(2**24 + 1) == np.float32(2**24) and libdevice.int2float_ru(2**24 + 1) == 2**24 + 2
    assert libdevice.float_as_int(np.float32(1.0)) == 0x3F800000 and libdevice.int_as_float(0x3F800000) == 1.0
    assert libdevice.hiloint2double(libdevice.double2hiint(-2.5), libdevice.double2loint(-2.5)) == -2.5
    assert libdevice.half2float(libdevice.float2half_rn(np.float32(0.1))) == np.float32(np.float16(0.1))


def test_integer_functions_work_on_the_bit_patterns():
    assert libdevice.umulhi(-1, -1) == -2  # 0xFFFFFFFF squared: high word 0xFFFFFFFE, as int32
    assert libdevice.mulhi(-(2**31), 2) == -1
    assert libdevice.byte_perm(0x33221100, 0x77665544, 0x7531) == 0x77553311
    assert libdevice.sad(3, 10, 5) == 12 and libdevice.usad(-1, 0, 0) == -1  # |0xFFFFFFFF - 0|
    assert libdevice.umax(-1, 5) == -1 and libdevice.max(-1, 5) == 5
    assert libdevice.brev(1) == -(2**31) and libdevice.clzll(1) == 63 and libdevice.ffs(8) == 4
    assert libdevice.mul24(0x1000001, 3) == 3 and libdevice.urhadd(-1, 1) == -(2**31)


def test_special_functions_against_known_values():
    assert libdevice.j0(1.0) == pytest.approx(0.7651976865579666, rel=1e-15)
    assert libdevice.y1(2.0) == pytest.approx(-0.10703243154093754, rel=1e-14)
    assert libdevice.jn(3, 10.0) == pytest.approx(0.05837937930518666, rel=1e-14)
    for x in (-0.9, 0.1, 0.5, 0.99):
        assert libdevice.erfinv(math.erf(x)) == pytest.approx(x, rel=1e-14)
        assert libdevice.erfcinv(math.erfc(x)) == pytest.approx(x, rel=1e-13)
        assert libdevice.normcdfinv(libdevice.normcdf(x)) == pytest.approx(x, rel=1e-13)
    assert libdevice.erfcx(30.0) == pytest.approx(0.018795888861416751, rel=1e-14)  # exp(900) erfc(30): no overflow
    assert libdevice.sinpi(1.0) == 0.0 and libdevice.cospif(np.float32(0.5)) == 0.0
    assert libdevice.tgamma(5.0) == 24.0 and math.isinf(libdevice.lgamma(0.0))
    assert libdevice.ilogb(0.0) == -(2**31) and libdevice.logb(8.0) == 3.0
    assert libdevice.rsqrtf(np.float32(4)) == np.float32(0.5) and libdevice.frsqrt_rn(np.float32(4)) == 0.5
    assert libdevice.nextafterf(np.float32(1), np.float32(2)) == np.float32(1) + np.finfo(np.float32).eps


def test_a_stub_imported_before_numbakern_computes_too(tmp_path):
    script = tmp_path / "early.py"
    script.write_text(textwrap.dedent("""
        from numba.cuda.libdevice import sqrtf

        import numbakern  # noqa: F401
        import numpy as np
        from numba import cuda

        @cuda.jit
        def roots(x):
            i = cuda.grid(1)
            if i < x.shape[0]:
                x[i] = sqrtf(x[i])

        x = np.array([4.0, 9.0, 2.0], np.float32)
        roots[1, 32](x)
        print(x.tolist())
    """))
    env = environments.clean(tmp_path, NUMBA_ENABLE_CUDASIM="1")
    result = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str([2.0, 3.0, float(np.sqrt(np.float32(2)))])


# -- on a GPU: the functions the simulator claims to compute exactly give the GPU's bits ------------------------

EXACT_ON_GPU = {
    # name: argument dtypes (numba-cuda's: the unsigned functions take int32/int64 bit patterns)
    "fadd_rd": "ff", "fadd_ru": "ff", "fadd_rz": "ff", "fmul_rz": "ff", "fmul_ru": "ff", "fdiv_ru": "ff",
    "fdiv_rd": "ff", "fsub_rz": "ff", "frcp_rz": "f", "fsqrt_rd": "f", "fsqrt_ru": "f", "frsqrt_rn": "f",
    "fmaf_rz": "fff", "fmaf_ru": "fff", "dadd_ru": "dd", "dmul_rd": "dd", "ddiv_rz": "dd", "dsqrt_ru": "d",
    "drcp_rd": "d", "fma_rz": "ddd", "fma_rn": "ddd", "double2float_rd": "d", "double2float_ru": "d",
    "float2int_rn": "f", "float2uint_ru": "f", "double2ll_rd": "d", "double2ull_rz": "d", "int2float_rz": "i",
    "uint2float_ru": "i", "ll2float_rd": "l", "ull2double_ru": "l", "float2half_rn": "f", "half2float": "h",
    "umulhi": "ii", "mulhi": "ii", "umul64hi": "ll", "byte_perm": "iii", "sad": "iii", "usad": "iii",
    "brev": "i", "popcll": "l", "clz": "i", "ffsll": "l", "uhadd": "ii", "urhadd": "ii", "mul24": "ii",
    "rintf": "f", "roundf": "f", "truncf": "f", "nextafterf": "ff", "fmodf": "ff", "remainderf": "ff",
    "saturatef": "f", "fdimf": "ff", "copysignf": "ff", "ldexpf": "fi", "ilogbf": "f", "double2hiint": "d",
}
_DTYPES = {"f": np.float32, "d": np.float64, "i": np.int32, "l": np.int64, "h": np.int16}


def _gpu_inputs(rng, kinds: str, n: int) -> list[np.ndarray]:
    out = []
    for k in kinds:
        if k in "fd":
            values = rng.standard_normal(n) * 10.0 ** rng.integers(-6, 7, n)
            values[:4] = (0.5, -2.5, 1e30, 3.0)  # ties and overflow near the edge of int32
            out.append(values.astype(_DTYPES[k]))
        else:
            info = np.iinfo(_DTYPES[k])
            out.append(rng.integers(info.min, info.max, n, dtype=_DTYPES[k], endpoint=True))
    return out


def _gpu_kernel(name: str, arity: int):
    namespace: dict = {}
    params = ", ".join(f"a{j}" for j in range(arity))
    exec(textwrap.dedent(f"""
        from numba import cuda
        from numba.cuda import libdevice

        @cuda.jit
        def kernel({params}, out):
            i = cuda.grid(1)
            if i < out.shape[0]:
                out[i] = libdevice.{name}({", ".join(f"a{j}[i]" for j in range(arity))})
    """), namespace)  # noqa: S102 - one kernel per function of the table above
    return namespace["kernel"]


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(EXACT_ON_GPU))
def test_the_exact_libdevice_functions_give_the_gpus_bits(name, rng):
    kinds = EXACT_ON_GPU[name]
    args = _gpu_inputs(rng, kinds, 1000)
    expected_fn = sim_libdevice.function(name)
    expected = np.array([expected_fn(*(a[i] for a in args)) for i in range(1000)])
    out = cuda.to_device(np.zeros(1000, expected.dtype))
    _gpu_kernel(name, len(kinds))[8, 128](*(cuda.to_device(a) for a in args), out)
    got = out.copy_to_host()
    differ = np.flatnonzero(~((got == expected) | (np.isnan(got) & np.isnan(expected)) if got.dtype.kind == "f"
                              else got == expected))
    assert differ.size == 0, [(name, [a[i] for a in args], got[i], expected[i]) for i in differ[:5]]


@pytest.mark.gpu
@pytest.mark.parametrize("grid, block", [(1, 2048), ((1, 1, 70_000), 1), (0, 32), (1, 0), ((2, -1), 32)])
def test_the_gpu_refuses_the_launches_the_simulator_refuses(grid, block):
    out = cuda.to_device(np.zeros(4, np.int32))

    @cuda.jit
    def count(out):
        i = cuda.grid(1)
        if i < out.shape[0]:
            cuda.atomic.add(out, i, 1)

    with pytest.raises(Exception):  # noqa: B017, PT011 - numba-cuda's error for the driver's refusal, whatever its class
        count[grid, block](out)
        cuda.synchronize()


@pytest.mark.gpu
def test_the_gpu_refuses_more_threads_than_launch_bounds():
    @cuda.jit(launch_bounds=128)
    def bounded(out):
        out[cuda.grid(1)] = 1

    out = cuda.to_device(np.zeros(256, np.int32))
    bounded[2, 128](out)
    with pytest.raises(Exception):  # noqa: B017, PT011
        bounded[1, 256](out)
        cuda.synchronize()
