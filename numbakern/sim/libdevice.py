"""``numba.cuda.libdevice`` in the simulator: every function computed, in numba-cuda's types.

numba-cuda's ``libdevice`` module holds stubs (each returns None in the simulator); on a GPU each is a call of
NVIDIA's libdevice. ``install()`` gives each stub a body that computes its result here, keeping the stub itself (a
kernel that imported ``sinf`` before numbakern did holds the same object, and the front end still sends numba-cuda
the real function to type). Signatures are numba-cuda's own table (``numba.cuda.libdevicefuncs``): the arguments are
converted to their declared types, the result returned in its type's canonical form (``numerics``), and the values
libdevice returns through pointers come back as numba-cuda returns them, in a tuple after the result
(``sincosf(x) -> (sin, cos)``, ``frexp(x) -> (mantissa, exponent)``).

How results compare with the GPU's:

- exact: integer functions, bit reinterpretations and conversions, the arithmetic with a rounding mode (``fadd_rz``,
  ``dmul_ru``, ``fsqrt_rd``, ``fmaf_rn``, ...: the exact result rounded once in the mode named), ``ceil``/``floor``/
  ``trunc``/``rint``/``round``, ``fmod``/``remainder``/``remquo``, ``frexp``/``ldexp``/``modf``, ``fma``, ``sqrt``,
  ``fmax``/``fmin``/``fdim``/``copysign``/``nextafter``, ``saturatef``, ``half2float``/``float2half_rn``;
- the transcendental and special functions (``sinf``, ``exp``, ``erfinv``, ``j0``, ...) are computed in double
  precision (or, where Python's ``math`` has no such function, with ``mpmath``) and rounded to the result's type:
  libdevice's results are within a few units in the last place of these, and may differ in the last bits;
- ``fast_*`` functions are the GPU's approximate instructions (``ex2.approx``, ``sin.approx``...): here they are
  computed as their exact counterparts, so the GPU's result differs from the simulator's by the approximation's
  error (documented by NVIDIA as up to a few units in the last place, more for large arguments).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from . import numerics

_MODES = ("rn", "rz", "ru", "rd")
F32, F64 = np.float32, np.float64
_INF = float("inf")


# -- exact rounding of a rational to float32 / float64 in one of the four modes ------------------------------------


def _round(q: Fraction, ftype, mode: str):
    """``q`` rounded to ``ftype`` (np.float32 or np.float64) in ``mode``: rn (nearest, ties to even), rz (toward
    zero), ru (toward +inf), rd (toward -inf). Overflow follows IEEE: inf or the largest finite value by mode."""
    big = np.finfo(ftype).max
    with np.errstate(over="ignore"):
        near = ftype(float(q)) if abs(q) < 2**1100 else ftype(math.copysign(_INF, q))
    if np.isinf(near) and abs(q) > Fraction(float(big)):
        toward_inf = mode == "rn" or (mode == "ru" and q > 0) or (mode == "rd" and q < 0)
        return ftype(math.copysign(_INF, q)) if toward_inf else ftype(math.copysign(big, q))
    if mode == "rn":
        candidates = [near, np.nextafter(near, ftype(_INF)), np.nextafter(near, ftype(-_INF))]
        candidates = [c for c in candidates if np.isfinite(c)]
        best = min(candidates, key=lambda c: (abs(Fraction(float(c)) - q),
                                              int(np.asarray(c).view(np.uint32 if ftype is F32 else np.uint64)) & 1))
        return ftype(best) if best != 0 else ftype(math.copysign(0.0, q) if q != 0 else 0.0)
    # the two representable neighbours around q
    value = Fraction(float(near))
    if value == q:
        return near
    below = near if value < q else np.nextafter(near, ftype(-_INF))
    above = near if value > q else np.nextafter(near, ftype(_INF))
    if mode == "ru":
        return ftype(above)
    if mode == "rd":
        return ftype(below)
    return ftype(below if q > 0 else above)  # rz


def _exact(*values) -> list[Fraction] | None:
    """The values as exact rationals, or None when one is inf or NaN (IEEE arithmetic then gives the result)."""
    if not all(math.isfinite(v) for v in values):
        return None
    return [Fraction(float(v)) for v in values]


def _rounded_op(ftype, op, mode: str):
    """An arithmetic operation computed exactly and rounded once in ``mode`` (special values: IEEE's answer)."""

    def compute(*args):
        args = [ftype(a) for a in args]
        exact = _exact(*args)
        with np.errstate(all="ignore"):
            if exact is None:
                return ftype(op.ieee(*args))
            try:
                q = op.exact(*exact)
            except ZeroDivisionError:
                return ftype(op.ieee(*args))
        if q == 0:
            return ftype(op.ieee(*args))  # the sign of an exact zero is IEEE's (x - x is +0 in every mode but rd)
        return _round(q, ftype, mode)

    return compute


class _Op:
    def __init__(self, exact, ieee):
        self.exact, self.ieee = exact, ieee


_ADD = _Op(lambda x, y: x + y, lambda x, y: x + y)
_SUB = _Op(lambda x, y: x - y, lambda x, y: x - y)
_MUL = _Op(lambda x, y: x * y, lambda x, y: x * y)
_DIV = _Op(lambda x, y: x / y, lambda x, y: x / y)
_RCP = _Op(lambda x: 1 / x, lambda x: type(x)(1) / x)
_FMA = _Op(lambda x, y, z: x * y + z, lambda x, y, z: x * y + z)


def _sqrt(ftype, mode: str):
    def compute(x):
        x = ftype(x)
        if not np.isfinite(x) or x <= 0:
            with np.errstate(invalid="ignore"):
                return ftype(np.sqrt(x))
        near = ftype(math.sqrt(float(x)))
        q = Fraction(float(x))
        # the neighbours of the root: r*r compared with x exactly decides which side each lies on
        candidates = sorted({near, np.nextafter(near, ftype(_INF)), np.nextafter(near, ftype(0))}, key=float)
        below = max((c for c in candidates if Fraction(float(c)) ** 2 <= q), key=float)
        above = min((c for c in candidates if Fraction(float(c)) ** 2 >= q), key=float)
        if below == above or mode in ("rz", "rd"):
            return ftype(below)
        if mode == "ru":
            return ftype(above)
        # nearest: the root lies above the midpoint m exactly when x > m*m (a root is never a midpoint)
        mid = (Fraction(float(below)) + Fraction(float(above))) / 2
        return ftype(above if q > mid * mid else below)

    return compute


def _rsqrt_rn(x):
    """1/sqrt(x) rounded once to the nearest float32: r lies below the true value exactly when r*r*x < 1."""
    x = F32(x)
    if not np.isfinite(x) or x <= 0:
        with np.errstate(all="ignore"):
            return F32(1) / np.sqrt(x)
    q = Fraction(float(x))
    near = F32(1 / math.sqrt(float(x)))
    candidates = sorted({near, np.nextafter(near, F32(_INF)), np.nextafter(near, F32(0))}, key=float)
    below = max((c for c in candidates if Fraction(float(c)) ** 2 * q <= 1), key=float)
    above = min((c for c in candidates if Fraction(float(c)) ** 2 * q >= 1), key=float)
    mid = (Fraction(float(below)) + Fraction(float(above))) / 2
    return F32(above if mid * mid * q < 1 else below)


# -- conversions --------------------------------------------------------------------------------------------------


def _to_int(bits: int, signed: bool, mode: str):
    """cvt.r{n,z,u,d}i.{s,u}{32,64}.f{32,64}: round in ``mode``, saturate to the range, NaN to 0; returned as numba-cuda
    types the result (int32/int64: an unsigned result's bit pattern)."""
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    wrap = numerics.WRAP[f"int{bits}"]
    rounding = {"rn": _round_half_even, "rz": math.trunc, "ru": math.ceil, "rd": math.floor}[mode]

    def convert(x):
        x = float(x)
        if x != x:
            return 0
        if x == _INF:
            return wrap(hi)
        if x == -_INF:
            return wrap(lo)
        return wrap(min(hi, max(lo, rounding(x))))

    return convert


def _round_half_even(x: float) -> int:
    return round(x)  # Python's round of a float to an int: ties to even, exact


def _from_int(bits: int, signed: bool, ftype, mode: str):
    mask = (1 << bits) - 1

    def convert(i):
        i = int(i)
        if not signed:
            i &= mask
        return _round(Fraction(i), ftype, mode) if i else ftype(0)

    return convert


def _double2float(mode: str):
    def convert(d):
        d = float(d)
        if not math.isfinite(d) or d == 0:
            with np.errstate(over="ignore"):
                return F32(d)
        return _round(Fraction(d), F32, mode)

    return convert


def _bits_of(x, float_type, int_type):
    return int(np.asarray(float_type(x)).view(int_type))


def _float_of(i, int_type, float_type):
    return float_type(np.asarray(int_type(numerics.WRAP[np.dtype(int_type).name](int(i)))).view(float_type))


def _float2half_rn(f):
    return int(np.asarray(np.float16(F32(f))).view(np.int16))  # numpy's float16 conversion rounds to nearest even


def _half2float(h):
    return F32(np.asarray(np.int16(numerics.WRAP["int16"](int(h)))).view(np.float16))


# -- integer functions -------------------------------------------------------------------------------------------


def _u32(x: int) -> int:
    return int(x) & 0xFFFFFFFF


def _u64(x: int) -> int:
    return int(x) & 0xFFFFFFFFFFFFFFFF


def _byte_perm(x, y, s):
    data = _u32(x) | _u32(y) << 32
    out = 0
    for k in range(4):
        selector = _u32(s) >> (4 * k) & 0x7
        out |= (data >> (8 * selector) & 0xFF) << (8 * k)
    return out


def _sad(x, y, z):
    return abs(int(x) - int(y)) + _u32(z)


def _usad(x, y, z):
    return abs(_u32(x) - _u32(y)) + _u32(z)


def _mul24(x, y):
    def low24(v):
        v = int(v) & 0xFFFFFF
        return v - (1 << 24) if v & 0x800000 else v

    return low24(x) * low24(y)


# -- float functions -------------------------------------------------------------------------------------------


def _mp():
    try:
        import mpmath
    except ImportError:
        raise ImportError("numbakern's simulator computes this libdevice function with mpmath (Python's math has no "
                          "such function): pip install mpmath") from None
    return mpmath


def _special(name):
    """A function of ``mpmath`` (Bessel functions, erfinv, ...), to double precision."""

    def compute(*args):
        mp = _mp()
        with mp.workdps(40):
            value = getattr(mp, name)(*args)
        return float(mp.re(value)) if isinstance(value, mp.mpc) else float(value)

    return compute


def _erfinv(x):
    if x in (-1.0, 1.0):
        return math.copysign(_INF, x)
    if not -1.0 < x < 1.0:
        return math.nan
    return _special("erfinv")(x)


def _erfcinv(x):
    if x == 0.0:
        return _INF
    if x == 2.0:
        return -_INF
    if not 0.0 < x < 2.0:
        return math.nan
    mp = _mp()
    with mp.workdps(40):
        return float(mp.erfinv(1 - mp.mpf(x)))


def _erfcx(x):
    if x == _INF:
        return 0.0
    if x != x:
        return x
    mp = _mp()
    with mp.workdps(40):
        return float(mp.exp(mp.mpf(x) ** 2) * mp.erfc(x))


def _normcdfinv(p):
    if p in (0.0, 1.0):
        return math.copysign(_INF, p - 0.5)
    if not 0.0 < p < 1.0:
        return math.nan
    mp = _mp()
    with mp.workdps(40):
        return float(-mp.sqrt(2) * mp.erfinv(1 - 2 * mp.mpf(p)))


def _bessel(kind: str):
    def compute(n, x):
        if x != x:
            return x
        if kind == "y":
            if x < 0:
                return math.nan
            if x == 0:
                return -_INF
        if x in (_INF, -_INF):
            return 0.0
        mp = _mp()
        with mp.workdps(40):
            return float((mp.besselj if kind == "j" else mp.bessely)(int(n), x))

    return compute


def _pi_scaled(f):
    """sinpi/cospi: of pi * x, exact for the arguments where that matters (integers and halves)."""

    def compute(x):
        if not math.isfinite(x):
            return math.nan
        r = math.fmod(x, 2.0)  # exact
        if f is math.sin:
            if r == int(r):
                return math.copysign(0.0, x)
            if r * 2 == int(r * 2):
                return 1.0 if r in (0.5, -1.5) else -1.0
        else:
            if r * 2 == int(r * 2) and r != int(r):
                return 0.0
            if r == int(r):
                return 1.0 if r == 0 else -1.0
        return f(math.pi * r)

    return compute


def _nan_safe(f):
    def compute(*args):
        try:
            return f(*args)
        except (ValueError, ZeroDivisionError):
            with np.errstate(all="ignore"):
                return _numpy_fallback(f, args)
        except OverflowError:
            return _INF

    compute.__name__ = getattr(f, "__name__", "compute")
    return compute


def _numpy_fallback(f, args):
    name = getattr(f, "__name__", "")
    numpy_f = getattr(np, {"gamma": "nan", "acos": "arccos", "asin": "arcsin", "acosh": "arccosh",
                           "atanh": "arctanh"}.get(name, name), None)
    if callable(numpy_f):
        try:
            return float(numpy_f(*[np.float64(a) for a in args]))
        except TypeError:
            pass
    return math.nan


def _tgamma(x):
    if x == 0:
        return math.copysign(_INF, x)
    if x < 0 and x == int(x) or x == -_INF or x != x:
        return math.nan
    try:
        return math.gamma(x)
    except OverflowError:
        return _INF


def _lgamma(x):
    if x != x:
        return x
    if x in (_INF, -_INF) or (x <= 0 and x == int(x)):
        return _INF
    return math.lgamma(x)


def _logb(x):
    if x != x:
        return x
    if x == 0:
        return -_INF
    if x in (_INF, -_INF):
        return _INF
    return float(math.frexp(x)[1] - 1)


def _ilogb(x):
    if x != x or x == 0:
        return -0x80000000  # FP_ILOGBNAN and FP_ILOGB0: INT_MIN
    if x in (_INF, -_INF):
        return 0x7FFFFFFF
    return math.frexp(x)[1] - 1


def _remquo(x, y):
    with np.errstate(all="ignore"):
        r = math.remainder(x, y) if math.isfinite(x) and y != 0 and y == y else math.nan
    if r != r:
        return r, 0
    q = round((Fraction(x) - Fraction(r)) / Fraction(y))
    sign = -1 if (x < 0) != (y < 0) else 1
    return r, sign * (abs(q) & 0x7)


def _frexp(x):
    if not math.isfinite(x):
        return x, 0
    m, e = math.frexp(x)
    return m, e


def _modf(x):
    if x in (_INF, -_INF):
        return math.copysign(0.0, x), x
    frac, whole = math.modf(x)
    return frac, whole


def _ldexp(x, e):
    try:
        return math.ldexp(x, max(-10000, min(10000, int(e))))
    except OverflowError:
        return math.copysign(_INF, x)


def _powi(x, n):
    try:
        return math.pow(x, int(n))
    except (OverflowError, ValueError, ZeroDivisionError):
        with np.errstate(all="ignore"):
            return float(np.float64(x) ** np.float64(int(n)))


def _pow(x, y):
    with np.errstate(all="ignore"):
        return float(np.power(np.float64(x), np.float64(y)))


def _fmax(x, y):
    return float(np.fmax(x, y))


def _fmin(x, y):
    return float(np.fmin(x, y))


def _fdim(x, y):
    if x != x or y != y:
        return math.nan
    return x - y if x > y else 0.0


def _saturate(x):
    return 0.0 if x != x else min(1.0, max(0.0, x))


def _rint(x):
    return float(np.rint(x))


def _round_away(x):
    """C's round(): halfway cases away from zero."""
    if not math.isfinite(x):
        return x
    r = math.floor(abs(x) + 0.5) if abs(x) < 2**52 else abs(x)
    return math.copysign(float(r), x)


def _llround(x):
    return _saturated_int(_round_away(x), 64)


def _llrint(x):
    return _saturated_int(_rint(x), 64)


def _saturated_int(x: float, bits: int) -> int:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if x != x:
        return lo  # what cvt gives for NaN in a 64-bit conversion's C library: the smallest value
    if x >= hi:
        return hi
    if x <= lo:
        return lo
    return int(x)


def _float64_math():
    """The float64 functions, as functions of Python floats (their float32 versions, named ``...f``, are the same
    computed on the float32 argument and rounded)."""
    m = math
    exp10 = _nan_safe(lambda x: 10.0**x)
    return {
        "acos": _nan_safe(m.acos), "acosh": _nan_safe(m.acosh), "asin": _nan_safe(m.asin), "asinh": m.asinh,
        "atan": m.atan, "atan2": m.atan2, "atanh": _nan_safe(m.atanh), "cbrt": lambda x: float(np.cbrt(x)),
        "ceil": lambda x: float(np.ceil(x)), "copysign": m.copysign, "cos": _nan_safe(m.cos),
        "cosh": _nan_safe(m.cosh), "cospi": _pi_scaled(m.cos), "erf": m.erf, "erfc": m.erfc, "erfcinv": _erfcinv,
        "erfcx": _erfcx, "erfinv": _erfinv, "exp": _nan_safe(m.exp), "exp10": exp10,
        "exp2": _nan_safe(lambda x: 2.0**x),
        "expm1": _nan_safe(m.expm1), "fabs": m.fabs, "fdim": _fdim, "floor": lambda x: float(np.floor(x)),
        "fmax": _fmax, "fmin": _fmin, "fmod": lambda x, y: float(np.fmod(np.float64(x), np.float64(y))),
        "hypot": m.hypot, "lgamma": _lgamma, "log": _nan_safe(m.log), "log10": _nan_safe(m.log10),
        "log1p": _nan_safe(m.log1p), "log2": _nan_safe(m.log2), "logb": _logb,
        "nearbyint": _rint, "nextafter": m.nextafter, "normcdf": lambda x: 0.5 * m.erfc(-x / m.sqrt(2.0)),
        "normcdfinv": _normcdfinv, "pow": _pow, "rcbrt": lambda x: float(1.0 / np.cbrt(x)),
        "remainder": lambda x, y: float(np.float64(m.remainder(x, y))) if m.isfinite(x) and y != 0 and y == y
        else m.nan,
        "rint": _rint, "round": _round_away, "rsqrt": lambda x: float(1.0 / np.sqrt(x)),
        "sin": _nan_safe(m.sin), "sinh": _nan_safe(m.sinh), "sinpi": _pi_scaled(m.sin),
        "sqrt": lambda x: float(np.sqrt(x)), "tan": _nan_safe(m.tan), "tanh": m.tanh, "tgamma": _tgamma,
        "trunc": lambda x: float(np.trunc(x)),
        "j0": lambda x: _bessel("j")(0, x), "j1": lambda x: _bessel("j")(1, x), "jn": _bessel("j"),
        "y0": lambda x: _bessel("y")(0, x), "y1": lambda x: _bessel("y")(1, x), "yn": _bessel("y"),
        "saturate": _saturate, "fma": numerics.fma,
        "ldexp": _ldexp, "scalbn": _ldexp, "powi": _powi,
        "sincos": lambda x: (_nan_safe(m.sin)(x), _nan_safe(m.cos)(x)),
        "sincospi": lambda x: (_pi_scaled(m.sin)(x), _pi_scaled(m.cos)(x)),
        "frexp": _frexp, "modf": _modf, "remquo": _remquo,
    }


def _implementations() -> dict:
    """Every libdevice function numba-cuda binds, by its name in ``numba.cuda.libdevice``, as a function of values
    already in the argument types (the wrapper made by ``_typed`` converts them)."""
    f64 = _float64_math()
    impl: dict = {}
    # float64 math and its float32 twin ("sinf"): the same function of the float32 value, rounded to float32
    for name, fn in f64.items():
        impl[name] = fn
        impl[name + "f"] = fn
    impl.update({"saturatef": _saturate, "fmaf": numerics.fma, "ilogb": _ilogb, "ilogbf": _ilogb,
                 "nextafterf": lambda x, y: np.nextafter(F32(x), F32(y)),  # the next float32, not float64
                 "isfinited": lambda x: int(math.isfinite(x)), "finitef": lambda x: int(math.isfinite(x)),
                 "isinfd": lambda x: int(math.isinf(x)), "isinff": lambda x: int(math.isinf(x)),
                 "isnand": lambda x: int(x != x), "isnanf": lambda x: int(x != x),
                 "signbitd": _signbit, "signbitf": _signbit,
                 "llrint": _llrint, "llrintf": _llrint, "llround": _llround, "llroundf": _llround})
    # the GPU's approximate instructions: computed as their exact counterparts (see the module's docstring)
    for name in ("cos", "exp10", "exp", "log10", "log2", "log", "pow", "sin", "tan"):
        impl[f"fast_{name}f"] = f64[name]
    impl["fast_fdividef"] = lambda x, y: _div_ieee(x, y)
    impl["fast_sincosf"] = f64["sincos"]
    # arithmetic with a rounding mode, exact and rounded once
    for mode in _MODES:
        for prefix, ftype in (("d", F64), ("f", F32)):
            impl[f"{prefix}add_{mode}"] = _rounded_op(ftype, _ADD, mode)
            impl[f"{prefix}mul_{mode}"] = _rounded_op(ftype, _MUL, mode)
            impl[f"{prefix}div_{mode}"] = _rounded_op(ftype, _DIV, mode)
            impl[f"{prefix}rcp_{mode}"] = _rounded_op(ftype, _RCP, mode)
            impl[f"{prefix}sqrt_{mode}"] = _sqrt(ftype, mode)
        impl[f"fsub_{mode}"] = _rounded_op(F32, _SUB, mode)
        impl[f"fma_{mode}"] = _rounded_op(F64, _FMA, mode)
        impl[f"fmaf_{mode}"] = _rounded_op(F32, _FMA, mode)
        impl[f"double2float_{mode}"] = _double2float(mode)
        for source in ("double", "float"):
            impl[f"{source}2int_{mode}"] = _to_int(32, True, mode)
            impl[f"{source}2uint_{mode}"] = _to_int(32, False, mode)
            impl[f"{source}2ll_{mode}"] = _to_int(64, True, mode)
            impl[f"{source}2ull_{mode}"] = _to_int(64, False, mode)
        impl[f"int2float_{mode}"] = _from_int(32, True, F32, mode)
        impl[f"uint2float_{mode}"] = _from_int(32, False, F32, mode)
        impl[f"ll2float_{mode}"] = _from_int(64, True, F32, mode)
        impl[f"ull2float_{mode}"] = _from_int(64, False, F32, mode)
        impl[f"ll2double_{mode}"] = _from_int(64, True, F64, mode)
        impl[f"ull2double_{mode}"] = _from_int(64, False, F64, mode)
    impl["int2double_rn"] = _from_int(32, True, F64, "rn")
    impl["uint2double_rn"] = _from_int(32, False, F64, "rn")
    impl["frsqrt_rn"] = _rsqrt_rn
    impl["float2half_rn"] = _float2half_rn
    impl["half2float"] = _half2float
    # bit reinterpretations
    impl["double_as_longlong"] = lambda x: _bits_of(x, F64, np.int64)
    impl["longlong_as_double"] = lambda i: float(_float_of(i, np.int64, F64))
    impl["float_as_int"] = lambda x: _bits_of(x, F32, np.int32)
    impl["int_as_float"] = lambda i: _float_of(i, np.int32, F32)
    impl["double2hiint"] = lambda x: _bits_of(x, F64, np.int64) >> 32
    impl["double2loint"] = lambda x: numerics.WRAP["int32"](_bits_of(x, F64, np.int64))
    impl["hiloint2double"] = lambda hi, lo: float(_float_of(_u32(hi) << 32 | _u32(lo), np.int64, F64))
    # integers (numba-cuda types the unsigned ones as int32/int64 too: their bit patterns)
    impl.update({
        "abs": abs, "llabs": abs, "max": max, "min": min, "llmax": max, "llmin": min,
        "umax": lambda x, y: max(_u32(x), _u32(y)), "umin": lambda x, y: min(_u32(x), _u32(y)),
        "ullmax": lambda x, y: max(_u64(x), _u64(y)), "ullmin": lambda x, y: min(_u64(x), _u64(y)),
        "brev": numerics.BIT_OPERATIONS[("brev", "int32")], "brevll": numerics.BIT_OPERATIONS[("brev", "int64")],
        "clz": numerics.BIT_OPERATIONS[("clz", "int32")], "clzll": numerics.BIT_OPERATIONS[("clz", "int64")],
        "ffs": numerics.BIT_OPERATIONS[("ffs", "int32")], "ffsll": numerics.BIT_OPERATIONS[("ffs", "int64")],
        "popc": numerics.BIT_OPERATIONS[("popc", "int32")], "popcll": numerics.BIT_OPERATIONS[("popc", "int64")],
        "byte_perm": _byte_perm,
        "hadd": lambda x, y: (x + y) >> 1, "rhadd": lambda x, y: (x + y + 1) >> 1,
        "uhadd": lambda x, y: (_u32(x) + _u32(y)) >> 1, "urhadd": lambda x, y: (_u32(x) + _u32(y) + 1) >> 1,
        "mul24": _mul24, "umul24": lambda x, y: (_u32(x) & 0xFFFFFF) * (_u32(y) & 0xFFFFFF),
        "mulhi": lambda x, y: (x * y) >> 32, "umulhi": lambda x, y: (_u32(x) * _u32(y)) >> 32,
        "mul64hi": lambda x, y: (x * y) >> 64, "umul64hi": lambda x, y: (_u64(x) * _u64(y)) >> 64,
        "sad": _sad, "usad": _usad,
    })
    return impl


def _signbit(x) -> int:
    return int(math.copysign(1.0, x) < 0)


def _div_ieee(x, y):
    with np.errstate(all="ignore"):
        return F32(x) / F32(y)


# -- the typed wrappers and the stubs ----------------------------------------------------------------------------------


def _converter(numba_type):
    name = str(numba_type)
    if name == "float64":
        return float
    return numerics.TO[name]


def _typed(name: str, compute, retty, args):
    """``compute`` with the arguments converted to their declared types and the results to theirs."""
    inputs = [_converter(a.ty) for a in args if not a.is_ptr]
    outputs = ([] if str(retty) == "none" else [_converter(retty)]) + [_converter(a.ty) for a in args if a.is_ptr]
    single = len(outputs) == 1

    def call(*values):
        if len(values) != len(inputs):
            raise TypeError(f"libdevice.{name}() takes {len(inputs)} argument(s), got {len(values)}")
        result = compute(*(convert(v) for convert, v in zip(inputs, values)))
        if single:
            return outputs[0](result)
        return tuple(convert(v) for convert, v in zip(outputs, result))

    call.__name__ = call.__qualname__ = name
    return call


#: the name the stubs' new bodies find their implementations under, in the libdevice module's globals
_TABLE = "__numbakern_libdevice__"


def install() -> None:
    """Give every stub of ``numba.cuda.libdevice`` a body that computes its function (idempotent)."""
    import numba.cuda.libdevice as stubs
    from numba.cuda.libdevicefuncs import functions

    if _TABLE in vars(stubs):
        return
    impl = _implementations()
    table = {}
    for full_name, (retty, args) in functions.items():
        name = full_name[len("__nv_"):]
        stub = getattr(stubs, name, None)
        compute = impl.get(name)
        if stub is None or compute is None:
            continue
        table[name] = _typed(name, compute, retty, args)
        params = stub.__code__.co_varnames[: stub.__code__.co_argcount]
        source = f"def {name}({', '.join(params)}):\n    return {_TABLE}[{name!r}]({', '.join(params)})\n"
        namespace: dict = {}
        exec(compile(source, __file__, "exec"), namespace)  # noqa: S102 - a body that calls the implementation
        stub.__code__ = namespace[name].__code__
    vars(stubs)[_TABLE] = table


def function(name: str):
    """The simulator's ``libdevice.<name>``, typed as numba-cuda types it, without touching numba-cuda's module (the
    GPU comparison computes its expectations with it in a GPU process)."""
    from numba.cuda.libdevicefuncs import functions

    retty, args = functions[f"__nv_{name}"]
    return _typed(name, _implementations()[name], retty, args)


def implemented() -> list[str]:
    """The libdevice functions numba-cuda binds that have an implementation here (every one: a test checks it)."""
    return sorted(_implementations())


__all__ = ["function", "implemented", "install"]
