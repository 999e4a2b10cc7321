"""C helper functions that keep Numba's meaning where C's operators differ. Each is emitted only if used, in a
fixed order (byte-identical output)."""

from __future__ import annotations

from . import hopper as _hopper
from .mma import DEPENDS as _MMA_DEPENDS
from .mma import HELPERS as _MMA_HELPERS
from .vectors import DEPENDS as _VECTOR_DEPENDS
from .vectors import HELPERS as _VECTOR_HELPERS

HELPERS: dict[str, str] = {
    "nk_fp16": """\
#include <cuda_fp16.h>
""",
    "nk_complex": """\
#include <cuComplex.h>
""",
    "nk_bf16": """\
#include <cuda_bf16.h>
""",
    "nk_cdiv": """\
// complex division as numba computes it (CPython's _Py_c_quot): scaled by the larger part of the divisor; a zero
// divisor ends the thread, as numba's ZeroDivisionError does on a GPU
__device__ __forceinline__ cuFloatComplex nk_cdiv(cuFloatComplex a, cuFloatComplex b) {
    if (fabsf(b.x) >= fabsf(b.y)) {
        if (b.x == 0.0f) {  // numba raises ZeroDivisionError, which on a GPU ends the thread before its stores
            asm volatile("exit;");
            return b;
        }
        float ratio = b.y / b.x, denom = b.x + b.y * ratio;
        return make_cuFloatComplex((a.x + a.y * ratio) / denom, (a.y - a.x * ratio) / denom);
    }
    float ratio = b.x / b.y, denom = b.x * ratio + b.y;
    return make_cuFloatComplex((a.x * ratio + a.y) / denom, (a.y * ratio - a.x) / denom);
}
__device__ __forceinline__ cuDoubleComplex nk_cdiv(cuDoubleComplex a, cuDoubleComplex b) {
    if (fabs(b.x) >= fabs(b.y)) {
        if (b.x == 0.0) {
            asm volatile("exit;");
            return b;
        }
        double ratio = b.y / b.x, denom = b.x + b.y * ratio;
        return make_cuDoubleComplex((a.x + a.y * ratio) / denom, (a.y - a.x * ratio) / denom);
    }
    double ratio = b.x / b.y, denom = b.x * ratio + b.y;
    return make_cuDoubleComplex((a.x * ratio + a.y) / denom, (a.y * ratio - a.x) / denom);
}
""",
    "nk_ceq": """\
// == of complex numbers as numba computes it: both parts equal (cuComplex has no operator ==)
__device__ __forceinline__ bool nk_ceq(cuFloatComplex a, cuFloatComplex b) { return a.x == b.x && a.y == b.y; }
__device__ __forceinline__ bool nk_ceq(cuDoubleComplex a, cuDoubleComplex b) { return a.x == b.x && a.y == b.y; }
""",
    "nk_cmath": """\
// cmath functions as numba-cuda computes them (its cpython/cmathimpl.py: CPython's and NumPy's algorithms, the
// special cases of infinite and NaN parts included); nk_cplx<T> is the cuComplex type of parts of type T
template <typename T> struct nk_cplx;
template <> struct nk_cplx<float> {
    typedef cuFloatComplex type;
    static __device__ __forceinline__ type make(double re, double im) { return make_cuFloatComplex((float)re, (float)im); }
    static constexpr double sqrt_threshold = 1.4094955303793193e+38;  // FLT_MAX / (1 + sqrt(2)), in float32
};
template <> struct nk_cplx<double> {
    typedef cuDoubleComplex type;
    static __device__ __forceinline__ type make(double re, double im) { return make_cuDoubleComplex(re, im); }
    static constexpr double sqrt_threshold = 7.446288774449766e+307;  // DBL_MAX / (1 + sqrt(2))
};
template <typename T> __device__ typename nk_cplx<T>::type nk_cexp_of(T x, T y) {
    typedef nk_cplx<T> C;
    const double nan = __longlong_as_double(0x7ff8000000000000LL);
    if (isfinite(x)) {
        if (isfinite(y)) { T c = cos(y), s = sin(y), r = exp(x); return C::make(r * c, r * s); }
        return C::make(nan, nan);
    }
    if (isnan(x)) return y != 0 ? C::make(x, x) : C::make(x, y);
    if (x > 0) {  // +inf
        if (!isfinite(y)) return C::make(x, nan);
        T re = cos(y), im = sin(y);
        if (re != 0) re *= x;
        if (im != 0) im *= x;
        return C::make(re, im);
    }
    if (isfinite(y)) { T r = exp(x), c = cos(y), s = sin(y); return C::make(r * c, r * s); }  // -inf
    return C::make(0.0, 0.0);
}
template <typename T> __device__ typename nk_cplx<T>::type nk_clog_of(T x, T y) {
    return nk_cplx<T>::make(log(hypot(x, y)), atan2(y, x));
}
// NumPy's npy_csqrt (Algorithm 312, CACM vol 10, Oct 1967), in double as numba computes it for both types
template <typename T> __device__ typename nk_cplx<T>::type nk_csqrt_of(double a, double b) {
    typedef nk_cplx<T> C;
    if (a == 0.0 && b == 0.0) return C::make(fabs(b), b);
    if (isinf(b)) return C::make(fabs(b), b);
    if (isnan(a)) return C::make(a, a);
    if (isinf(a)) return a < 0.0 ? C::make(fabs(b - b), copysign(a, b)) : C::make(a, copysign(b - b, b));
    bool scale = fabs(a) >= C::sqrt_threshold || fabs(b) >= C::sqrt_threshold;
    if (scale) { a *= 0.25; b *= 0.25; }
    double re, im;
    if (a >= 0) { double t = sqrt((a + hypot(a, b)) * 0.5); re = t; im = b / (2 * t); }
    else { double t = sqrt((-a + hypot(a, b)) * 0.5); re = fabs(b) / (2 * t); im = copysign(t, b); }
    return scale ? C::make(re * 2, im) : C::make(re, im);
}
template <typename T> __device__ typename nk_cplx<T>::type nk_crect(T r, T phi) {
    typedef nk_cplx<T> C;
    if (!isfinite(phi)) {
        if (r == 0) return C::make(fabs(r), 0.0);
        if (isinf(r)) return C::make(r, phi);
    }
    T re = cos(phi), im = sin(phi);
    if (re == 0 && isinf(r)) re /= r; else re *= r;
    if (im == 0 && isinf(r)) im /= r; else im *= r;
    return C::make(re, im);
}
// cosh, sinh, tanh and the inverse functions, line by line as numba-cuda's cmathimpl (CPython's c_acos, c_acosh,
// c_asinh, c_atanh, c_tanh): T the parts' type, and double wherever numba's float64 constants promote a value
// (1.0 + x, 2.0 * y); the inner square roots of complex128 (complex(1.0 - x, -y) is complex128 to numba)
template <typename T> __device__ typename nk_cplx<T>::type nk_ccosh_of(T x, T y) {
    if (isinf(x)) {
        T re, im;
        if (isnan(y) || y == 0.0) { re = fabs(x); im = y; }
        else { re = copysign(x, cos(y)); im = copysign(x, sin(y)); }
        if (x < 0.0) im = -im;  // x = -inf: the imaginary part negated
        return nk_cplx<T>::make(re, im);
    }
    return nk_cplx<T>::make(cos(y) * cosh(x), sin(y) * sinh(x));
}
template <typename T> __device__ typename nk_cplx<T>::type nk_csinh_of(T x, T y) {
    if (isinf(x)) {
        if (isnan(y)) return nk_cplx<T>::make(x, y);
        T re = cos(y), im = sin(y);
        if (re != 0.0) re *= x;
        if (im != 0.0) im *= fabs(x);
        return nk_cplx<T>::make(re, im);
    }
    return nk_cplx<T>::make(cos(y) * sinh(x), sin(y) * cosh(x));
}
template <typename T> __device__ typename nk_cplx<T>::type nk_ctanh_of(T x, T y) {
    if (isinf(x)) return nk_cplx<T>::make(copysign(1.0, (double)x), isinf(y) ? 0.0 : copysign(0.0, sin(2.0 * y)));
    T tx = tanh(x), ty = tan(y);
    double cx = 1.0 / cosh(x);
    T txty = tx * ty;
    double denom = 1.0 + txty * txty;
    return nk_cplx<T>::make(tx * (1.0 + ty * ty) / denom, ((ty / denom) * cx) * cx);
}
#define NK_CMATH_LN_4 1.3862943611198906                 // math.log(4)
#define NK_CMATH_THRES 8.507059173023462e+37              // FLT_MAX / 4 (numba's, for both types)
template <typename T> __device__ typename nk_cplx<T>::type nk_cacos_of(T x, T y) {
    double re, im;
    if (fabs(x) > NK_CMATH_THRES || fabs(y) > NK_CMATH_THRES) {  // no needless overflow; infinities too
        re = atan2(fabs(y), x);
        im = copysign(log(hypot(x * 0.5, y * 0.5)) + NK_CMATH_LN_4, (double)-y);
    } else {
        cuDoubleComplex s1 = nk_csqrt_of<double>(1.0 - x, -y), s2 = nk_csqrt_of<double>(1.0 + x, y);
        re = 2.0 * atan2(s1.x, s2.x);
        im = asinh(s2.x * s1.y - s2.y * s1.x);
    }
    return nk_cplx<T>::make(re, im);
}
template <typename T> __device__ typename nk_cplx<T>::type nk_cacosh_of(T x, T y) {
    double re, im;
    if (fabs(x) > NK_CMATH_THRES || fabs(y) > NK_CMATH_THRES) {
        re = log(hypot(x * 0.5, y * 0.5)) + NK_CMATH_LN_4;
        im = atan2(y, x);
    } else {
        cuDoubleComplex s1 = nk_csqrt_of<double>(x - 1.0, y), s2 = nk_csqrt_of<double>(x + 1.0, y);
        re = asinh(s1.x * s2.x + s1.y * s2.y);
        im = 2.0 * atan2(s1.y, s2.x);
    }
    return nk_cplx<T>::make(re, im);
}
template <typename T> __device__ typename nk_cplx<T>::type nk_casinh_of(T x, T y) {
    double re, im;
    if (fabs(x) > NK_CMATH_THRES || fabs(y) > NK_CMATH_THRES) {
        re = copysign(log(hypot(x * 0.5, y * 0.5)) + NK_CMATH_LN_4, (double)x);
        im = atan2(y, fabs(x));
    } else {
        cuDoubleComplex s1 = nk_csqrt_of<double>(1.0 + y, -x), s2 = nk_csqrt_of<double>(1.0 - y, x);
        re = asinh(s1.x * s2.y - s2.x * s1.y);
        im = atan2((double)y, s1.x * s2.x - s1.y * s2.y);
    }
    return nk_cplx<T>::make(re, im);
}
template <typename T> __device__ typename nk_cplx<T>::type nk_catanh_of(T x, T y) {
    const double large = 9.223372036854776e+18, small = 1.0842021724855044e-19;  // sqrt(FLT_MAX / 4), sqrt(FLT_MIN)
    bool negate = x < 0.0;  // atanh(z) = -atanh(-z)
    if (negate) { x = -x; y = -y; }
    T ay = fabs(y);
    double re, im;
    if (isnan(x) || x > large || ay > large) {
        if (isinf(y)) re = copysign(0.0, (double)x);
        else if (isinf(x)) re = 0.0;
        else { double h = hypot(x * 0.5, y * 0.5); re = x / 4.0 / h / h; }
        im = -copysign(1.5707963267948966, (double)-y);
    } else if (x == 1.0 && ay < small) {  // C99: atanh(1 +/- 0j) = inf +/- 0j
        if (ay == 0.0) { re = __longlong_as_double(0x7ff0000000000000LL); im = y; }
        else { re = -log(sqrt(ay) / sqrt(hypot((double)ay, 2.0))); im = copysign(atan2(2.0, (double)-ay) / 2, (double)y); }
    } else {
        T sqay = ay * ay;
        double zr1 = 1.0 - x;
        re = log1p(4.0 * x / (zr1 * zr1 + sqay)) * 0.25;
        im = -atan2(-2.0 * y, zr1 * (1.0 + x) - sqay) * 0.5;
    }
    if (isnan(y)) im = __longlong_as_double(0x7ff8000000000000LL);
    return negate ? nk_cplx<T>::make(-re, -im) : nk_cplx<T>::make(re, im);
}
// cos(z) = cosh(iz); sin(z) = -i sinh(iz); tan(z) = -i tanh(iz); asin(z) = -i asinh(iz); atan(z) = -i atanh(iz)
// (each inner result in the parts' type, as numba's overload returns it)
#define NK_CMATH_UNARY(name, expr) \
    __device__ __forceinline__ cuFloatComplex name(cuFloatComplex z) { typedef float T; float x = z.x, y = z.y; \
        return expr; } \
    __device__ __forceinline__ cuDoubleComplex name(cuDoubleComplex z) { typedef double T; double x = z.x, y = z.y; \
        return expr; }
NK_CMATH_UNARY(nk_ccosh, nk_ccosh_of<T>(x, y))
NK_CMATH_UNARY(nk_csinh, nk_csinh_of<T>(x, y))
NK_CMATH_UNARY(nk_ctanh, nk_ctanh_of<T>(x, y))
NK_CMATH_UNARY(nk_cacos, nk_cacos_of<T>(x, y))
NK_CMATH_UNARY(nk_cacosh, nk_cacosh_of<T>(x, y))
NK_CMATH_UNARY(nk_casinh, nk_casinh_of<T>(x, y))
NK_CMATH_UNARY(nk_catanh, nk_catanh_of<T>(x, y))
NK_CMATH_UNARY(nk_ccos, nk_ccosh_of<T>(-y, x))
NK_CMATH_UNARY(nk_csin, (nk_cplx<T>::make(nk_csinh_of<T>(-y, x).y, -nk_csinh_of<T>(-y, x).x)))
NK_CMATH_UNARY(nk_ctan, (nk_cplx<T>::make(nk_ctanh_of<T>(-y, x).y, -nk_ctanh_of<T>(-y, x).x)))
NK_CMATH_UNARY(nk_casin, (nk_cplx<T>::make(nk_casinh_of<T>(-y, x).y, -nk_casinh_of<T>(-y, x).x)))
NK_CMATH_UNARY(nk_catan, (isinf(x) && isnan(y) ? nk_cplx<T>::make(nk_catanh_of<T>(-y, x).y, nk_catanh_of<T>(-y, x).x)
                                               : nk_cplx<T>::make(nk_catanh_of<T>(-y, x).y, -nk_catanh_of<T>(-y, x).x)))
#undef NK_CMATH_UNARY
__device__ __forceinline__ cuFloatComplex nk_cexp(cuFloatComplex z) { return nk_cexp_of(z.x, z.y); }
__device__ __forceinline__ cuDoubleComplex nk_cexp(cuDoubleComplex z) { return nk_cexp_of(z.x, z.y); }
__device__ __forceinline__ cuFloatComplex nk_clog(cuFloatComplex z) { return nk_clog_of(z.x, z.y); }
__device__ __forceinline__ cuDoubleComplex nk_clog(cuDoubleComplex z) { return nk_clog_of(z.x, z.y); }
// log10: log(z) with both parts divided by ln(10) in double (numba's overload)
__device__ __forceinline__ cuFloatComplex nk_clog10(cuFloatComplex z) {
    cuFloatComplex w = nk_clog(z);
    return make_cuFloatComplex((float)(w.x / 2.302585092994046), (float)(w.y / 2.302585092994046));
}
__device__ __forceinline__ cuDoubleComplex nk_clog10(cuDoubleComplex z) {
    cuDoubleComplex w = nk_clog(z);
    return make_cuDoubleComplex(w.x / 2.302585092994046, w.y / 2.302585092994046);
}
__device__ __forceinline__ cuFloatComplex nk_csqrt(cuFloatComplex z) { return nk_csqrt_of<float>(z.x, z.y); }
__device__ __forceinline__ cuDoubleComplex nk_csqrt(cuDoubleComplex z) { return nk_csqrt_of<double>(z.x, z.y); }
__device__ __forceinline__ bool nk_cisnan(cuFloatComplex z) { return isnan(z.x) || isnan(z.y); }
__device__ __forceinline__ bool nk_cisnan(cuDoubleComplex z) { return isnan(z.x) || isnan(z.y); }
__device__ __forceinline__ bool nk_cisinf(cuFloatComplex z) { return isinf(z.x) || isinf(z.y); }
__device__ __forceinline__ bool nk_cisinf(cuDoubleComplex z) { return isinf(z.x) || isinf(z.y); }
__device__ __forceinline__ bool nk_cisfinite(cuFloatComplex z) { return isfinite(z.x) && isfinite(z.y); }
__device__ __forceinline__ bool nk_cisfinite(cuDoubleComplex z) { return isfinite(z.x) && isfinite(z.y); }
""",
    "nk_grid_sync": """\
#include <cooperative_groups.h>
// cuda.cg.this_grid().sync(): a barrier across the whole grid (the launcher launches the kernel cooperatively)
__device__ __forceinline__ void nk_grid_sync() { cooperative_groups::this_grid().sync(); }
""",
    **_VECTOR_HELPERS,  # cp.async (translate/codegen/vectors.py)
    # every overload at once, for a caller that does not say which it calls (the LLM backend's code)
    "nk_floordiv": "",
    "nk_floormod": "",
    "nk_floordiv_int64": """\
// Python floor division as numba computes it: rounds toward -inf; x // 0 == 0 and INT64_MIN // -1 == 0
__device__ __forceinline__ int64_t nk_floordiv(int64_t x, int64_t y) {
    if (y == 0 || (x == INT64_MIN && y == -1)) return 0;
    int64_t q = x / y, r = x % y;
    return (r != 0 && ((r ^ y) < 0)) ? q - 1 : q;
}
""",
    "nk_floordiv_uint64": """\
// floor division of unsigned integers as numba computes it: x // 0 == 0
__device__ __forceinline__ uint64_t nk_floordiv(uint64_t x, uint64_t y) { return y == 0 ? 0 : x / y; }
""",
    "nk_floordiv_float64": """\
// Python floor division of floats as numba computes it (its divmod algorithm: fmod, then the quotient rounded)
__device__ __forceinline__ double nk_floordiv(double x, double y) {
    if (y == 0.0) return x / y;
    double mod = fmod(x, y), div = (x - mod) / y;
    if (mod != 0.0 && ((y < 0.0) != (mod < 0.0))) div -= 1.0;
    if (div != 0.0) { double f = floor(div); return (div - f > 0.5) ? f + 1.0 : f; }
    return 0.0 * x / y;
}
""",
    "nk_floordiv_float32": """\
// Python floor division of floats as numba computes it (its divmod algorithm: fmod, then the quotient rounded)
__device__ __forceinline__ float nk_floordiv(float x, float y) {
    if (y == 0.0f) return x / y;
    float mod = fmodf(x, y), div = (x - mod) / y;
    if (mod != 0.0f && ((y < 0.0f) != (mod < 0.0f))) div -= 1.0f;
    if (div != 0.0f) { float f = floorf(div); return (div - f > 0.5f) ? f + 1.0f : f; }
    return 0.0f * x / y;
}
""",
    "nk_floormod_int64": """\
// Python modulo as numba computes it: the result has the divisor's sign; x % 0 == 0 and INT64_MIN % -1 == 0
__device__ __forceinline__ int64_t nk_floormod(int64_t x, int64_t y) {
    if (y == 0 || (x == INT64_MIN && y == -1)) return 0;
    int64_t r = x % y;
    return (r != 0 && ((r ^ y) < 0)) ? r + y : r;
}
""",
    "nk_floormod_uint64": """\
// modulo of unsigned integers as numba computes it: x % 0 == 0
__device__ __forceinline__ uint64_t nk_floormod(uint64_t x, uint64_t y) { return y == 0 ? 0 : x % y; }
""",
    "nk_floormod_float64": """\
// Python modulo of floats as numba computes it: the result has the divisor's sign; x % 0.0 is NaN
__device__ __forceinline__ double nk_floormod(double x, double y) {
    if (y == 0.0) return fmod(x, y);
    double mod = fmod(x, y);
    if (mod != 0.0) { if ((y < 0.0) != (mod < 0.0)) mod += y; }
    else mod = (y < 0.0) ? -0.0 : 0.0;
    return mod;
}
""",
    "nk_floormod_float32": """\
// Python modulo of floats as numba computes it: the result has the divisor's sign; x % 0.0 is NaN
__device__ __forceinline__ float nk_floormod(float x, float y) {
    if (y == 0.0f) return fmodf(x, y);
    float mod = fmodf(x, y);
    if (mod != 0.0f) { if ((y < 0.0f) != (mod < 0.0f)) mod += y; }
    else mod = (y < 0.0f) ? -0.0f : 0.0f;
    return mod;
}
""",
    "nk_powi": """\
// x ** n for a float x and an integer n as numba computes it (int_power: repeated squaring in x's type; 1.0 / r
// in double for n < 0; pow() beyond 65536)
template <typename T> __device__ __forceinline__ T nk_powi(T x, int64_t n) {
    uint64_t e = n < 0 ? 0 - (uint64_t)n : (uint64_t)n;
    if (e > 0x10000) return (T)pow((double)x, (double)n);
    T r = 1;
    while (e != 0) { if (e & 1) r *= x; e >>= 1; x *= x; }
    return n < 0 ? (T)(1.0 / (double)r) : r;
}
""",
    "nk_ipow": """\
// integer power as numba computes it: a ** b for b < 0 is 0 unless |a| == 1; 0 ** -n == INT64_MIN; the product
// wraps around (unsigned arithmetic: C's signed overflow is undefined); pow() beyond an exponent of 65536
__device__ __forceinline__ int64_t nk_ipow(int64_t a, int64_t b) {
    if (b < 0) {
        if (a == 0) return INT64_MIN;
        if (a != 1 && a != -1) return 0;
        return (a == -1 && (b & 1)) ? -1 : 1;
    }
    if (b > 0x10000) return (int64_t)pow((double)a, (double)b);
    uint64_t r = 1, x = (uint64_t)a, e = (uint64_t)b;
    while (e != 0) { if (e & 1) r *= x; e >>= 1; x *= x; }
    return (int64_t)r;
}
""",
    "nk_round_ndigits": """\
// round(x, ndigits) as numba-cuda computes it (CPython's fallback double_round: round half to even), in double
__device__ __forceinline__ double nk_round_ndigits(double x, int64_t ndigits) {
    if (isinf(x) || isnan(x)) return x;
    double pow1, pow2 = 1.0, y;
    if (ndigits >= 0) {
        if (ndigits > 22) { pow1 = nk_powi(10.0, ndigits - 22); pow2 = 1e22; }
        else pow1 = nk_powi(10.0, ndigits);
        y = (x * pow1) * pow2;
        if (isinf(y)) return x;
    } else {
        pow1 = nk_powi(10.0, -ndigits);
        y = x / pow1;
    }
    double z = (double)llrint(y);
    if (fabs(y - z) == 0.5) z = 2.0 * (double)llrint(y / 2.0);
    return ndigits >= 0 ? (z / pow2) / pow1 : z * pow1;
}
""",
    "nk_dynamic_smem_bytes": """\
// the dynamic shared memory of this launch, in bytes: numba's extent of cuda.shared.array(0, T) is this / sizeof(T)
__device__ __forceinline__ int64_t nk_dynamic_smem_bytes() {
    uint32_t n;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(n));
    return n;
}
""",
    "nk_wrap": """\
// numba's negative-index wraparound: x[-1] is the last element (used only where an index may be negative)
__device__ __forceinline__ int64_t nk_wrap(int64_t i, int64_t extent) { return i < 0 ? i + extent : i; }
""",
    "nk_bits": """\
// numba's .view(dtype) of a number: the same bits read as another type of the same size
template <typename To, typename From>
__device__ __forceinline__ To nk_bits(From x) {
    To y;
    memcpy(&y, &x, sizeof(To));
    return y;
}
""",
    "nk_slice": """\
// numba's slices (Python's slice.indices): a[lo:hi] of an extent n starts at nk_bound(lo, n) and has
// nk_span(lo, hi, n) elements; a negative bound counts from the end, and every bound is clamped into [0, n]
__device__ __forceinline__ int64_t nk_bound(int64_t i, int64_t n) {
    return i < 0 ? (i + n < 0 ? 0 : i + n) : (i > n ? n : i);
}
__device__ __forceinline__ int64_t nk_span(int64_t lo, int64_t hi, int64_t n) {
    int64_t d = nk_bound(hi, n) - nk_bound(lo, n);
    return d > 0 ? d : 0;
}
// a[lo:hi:step] with a step other than 1 (a bound left out is NK_NO_BOUND): the first index and the count
#define NK_NO_BOUND INT64_MIN
__device__ __forceinline__ int64_t nk_slice_first(int64_t lo, int64_t step, int64_t n) {
    if (lo == NK_NO_BOUND) return step < 0 ? n - 1 : 0;
    if (lo < 0) lo += n;
    if (step < 0) return lo < -1 ? -1 : (lo > n - 1 ? n - 1 : lo);
    return lo < 0 ? 0 : (lo > n ? n : lo);
}
__device__ __forceinline__ int64_t nk_slice_count(int64_t lo, int64_t hi, int64_t step, int64_t n) {
    int64_t first = nk_slice_first(lo, step, n), last;
    if (hi == NK_NO_BOUND) {
        last = step < 0 ? -1 : n;
    } else {
        if (hi < 0) hi += n;
        last = step < 0 ? (hi < -1 ? -1 : (hi > n - 1 ? n - 1 : hi)) : (hi < 0 ? 0 : (hi > n ? n : hi));
    }
    if (step < 0) return first > last ? (first - last - 1) / -step + 1 : 0;
    return last > first ? (last - first - 1) / step + 1 : 0;
}
""",
    "nk_min": """\
// Python's min/max: the first argument unless the second is strictly smaller / larger
template <typename T> __device__ __forceinline__ T nk_min(T a, T b) { return b < a ? b : a; }
template <typename T> __device__ __forceinline__ T nk_max(T a, T b) { return b > a ? b : a; }
""",
    "nk_reductions": """\
// min, max and sum of a 1-D array as numba computes them: Python's algorithm over its items (min: the first,
// replaced by each later one that is strictly smaller); sum from 0 in the result's type. min/max of no items raise
// (numba: StopIteration), which ends the thread on a GPU
template <typename R, typename T> __device__ R nk_min_of(const T* a, int64_t n, int64_t stride) {
    if (n <= 0) asm volatile("exit;");
    R m = a[0];
    for (int64_t k = 1; k < n; k++) m = (R)a[k * stride] < m ? (R)a[k * stride] : m;
    return m;
}
template <typename R, typename T> __device__ R nk_max_of(const T* a, int64_t n, int64_t stride) {
    if (n <= 0) asm volatile("exit;");
    R m = a[0];
    for (int64_t k = 1; k < n; k++) m = (R)a[k * stride] > m ? (R)a[k * stride] : m;
    return m;
}
template <typename R, typename T> __device__ R nk_sum_of(const T* a, int64_t n, int64_t stride) {
    R s = 0;
    for (int64_t k = 0; k < n; k++) s = s + (R)a[k * stride];
    return s;
}
""",
    "nk_sum_nd": """\
// the sum of an N-D array's items as numba computes it (np.nditer): from 0 in the result's type R, one loop per
// (extent, stride in elements) pair, the first pair's loop outermost (the caller orders them as numba iterates)
template <typename R, typename T> __device__ R nk_sum_into(R s, const T* a) { return s + (R)*a; }
template <typename R, typename T, typename... Dims>
__device__ R nk_sum_into(R s, const T* a, int64_t n, int64_t stride, Dims... rest) {
    for (int64_t k = 0; k < n; k++) s = nk_sum_into<R>(s, a + k * stride, rest...);
    return s;
}
template <typename R, typename T, typename... Dims> __device__ R nk_sum_nd(const T* a, Dims... dims) {
    return nk_sum_into<R>(R(0), a, dims...);
}
""",
    "nk_array_reductions": """\
// numpy's reductions of a whole array as numba-cuda computes them (its arraymath.py). nk_each_item: numba's loop
// over the items, visit(item) for each, one loop per (extent, stride in elements) pair, the first pair's loop
// outermost (the caller orders them as numba iterates); a visit that returns false ends the walk
template <typename T, typename Visit> __device__ bool nk_each_item(const T* a, Visit& visit) { return visit(*a); }
template <typename T, typename Visit, typename... Dims>
__device__ bool nk_each_item(const T* a, Visit& visit, int64_t n, int64_t stride, Dims... rest) {
    for (int64_t k = 0; k < n; k++)
        if (!nk_each_item(a + k * stride, visit, rest...)) return false;
    return true;
}
// prod from 1 and nansum from 0 in the result's type R (nansum leaves out the NaN items)
template <typename R, typename T, typename... Dims> __device__ R nk_prod_of(const T* a, Dims... dims) {
    R product = 1;
    auto times = [&](T v) { product = product * (R)v; return true; };
    nk_each_item(a, times, dims...);
    return product;
}
template <typename R, typename T, typename... Dims> __device__ R nk_nansum_of(const T* a, Dims... dims) {
    R sum = 0;
    auto add = [&](T v) { if (v == v) sum = sum + (R)v; return true; };
    nk_each_item(a, add, dims...);
    return sum;
}
// all, any and count_nonzero: an item is true when it is not 0 (a NaN is true)
template <typename T, typename... Dims> __device__ bool nk_all_of(const T* a, Dims... dims) {
    auto nonzero = [](T v) { return v != (T)0; };
    return nk_each_item(a, nonzero, dims...);
}
template <typename T, typename... Dims> __device__ bool nk_any_of(const T* a, Dims... dims) {
    auto zero = [](T v) { return v == (T)0; };
    return !nk_each_item(a, zero, dims...);
}
template <typename T, typename... Dims> __device__ int64_t nk_count_nonzero_of(const T* a, Dims... dims) {
    int64_t count = 0;
    auto counted = [&](T v) { if (v != (T)0) count = count + 1; return true; };
    nk_each_item(a, counted, dims...);
    return count;
}
// argmin and argmax: the index, in C order (.flat's), of the first smallest / largest item, or of the first NaN;
// no items raise (numba: ValueError), which ends the thread on a GPU
template <bool Largest, typename T, typename... Dims> __device__ int64_t nk_arg_extreme(const T* a, Dims... dims) {
    T best = 0;
    int64_t at = 0, best_at = -1;
    auto visit = [&](T v) {
        if (v != v) {  // a NaN (never for integers): numba's loop returns its index
            best_at = at;
            return false;
        }
        if (best_at < 0 || (Largest ? v > best : v < best)) {
            best = v;
            best_at = at;
        }
        at = at + 1;
        return true;
    };
    nk_each_item(a, visit, dims...);
    if (best_at < 0) asm volatile("exit;");
    return best_at;
}
template <typename T, typename... Dims> __device__ int64_t nk_argmin_of(const T* a, Dims... dims) {
    return nk_arg_extreme<false>(a, dims...);
}
template <typename T, typename... Dims> __device__ int64_t nk_argmax_of(const T* a, Dims... dims) {
    return nk_arg_extreme<true>(a, dims...);
}
// var: numba's two passes over the items, the mean's sum in A (the item type for floats, else double) divided in
// double by the number of items, then the squared differences from the mean summed in double
template <typename A, typename T, typename... Dims> __device__ double nk_var_of(const T* a, int64_t size, Dims... dims) {
    A sum = 0;
    auto add = [&](T v) { sum = sum + (A)v; return true; };
    nk_each_item(a, add, dims...);
    const double mean = (double)sum / (double)size;
    double squares = 0.0;
    auto square = [&](T v) {
        const double d = (double)v - mean;
        squares = squares + d * d;
        return true;
    };
    nk_each_item(a, square, dims...);
    return squares / (double)size;
}
// trace: the sum of the diagonal `offset` above the main one (below it where negative), from 0 in R
template <typename R, typename T> __device__ R nk_trace_of(const T* a, int64_t offset, int64_t rows, int64_t row_stride,
                                                           int64_t cols, int64_t col_stride) {
    if (offset < 0) rows = rows + offset;
    if (offset > 0) cols = cols - offset;
    const int64_t n = rows < cols ? (rows > 0 ? rows : 0) : (cols > 0 ? cols : 0);
    R sum = 0;
    for (int64_t i = 0; i < n; i++)
        sum = sum + (R)(offset >= 0 ? a[i * row_stride + (offset + i) * col_stride]
                                    : a[(i - offset) * row_stride + i * col_stride]);
    return sum;
}
""",
    "nk_np_extremes": """\
// numpy's maximum and minimum (a NaN operand wins, the first if both are) and fmax and fmin (a NaN operand loses),
// as numba-cuda's loops select them (npyfuncs np_real_maximum_impl, ...); for integers, the larger / smaller
template <typename T> __device__ __forceinline__ T nk_np_maximum(T a, T b) {
    return (a != a || b != b) ? (a != a ? a : b) : (a >= b ? a : b);
}
template <typename T> __device__ __forceinline__ T nk_np_minimum(T a, T b) {
    return (a != a || b != b) ? (a != a ? a : b) : (a <= b ? a : b);
}
template <typename T> __device__ __forceinline__ T nk_np_fmax(T a, T b) {
    return (a != a || b != b) ? (b != b ? a : b) : (a >= b ? a : b);
}
template <typename T> __device__ __forceinline__ T nk_np_fmin(T a, T b) {
    return (a != a || b != b) ? (a != a ? b : a) : (a <= b ? a : b);
}
""",
    "nk_sinc": """\
// np.sinc as numba computes it, in double whatever the argument: sin(pi x) / (pi x), with 1e-20 standing for 0
__device__ __forceinline__ double nk_sinc(double x) {
    if (x == 0.0) x = 1e-20;
    x *= 3.141592653589793;
    return sin(x) / x;
}
""",
    "nk_contains": """\
// `value in a` of an N-D array as numba computes it (np.nditer over the items, each compared with == in K, the type
// of np.equal's loop for the item and the value): true at the first equal item; one loop per (extent, stride) pair
template <typename K, typename T, typename V> __device__ bool nk_contains_at(const T* a, V v) { return (K)*a == (K)v; }
template <typename K, typename T, typename V, typename... Dims>
__device__ bool nk_contains_at(const T* a, V v, int64_t n, int64_t stride, Dims... rest) {
    for (int64_t k = 0; k < n; k++) if (nk_contains_at<K>(a + k * stride, v, rest...)) return true;
    return false;
}
template <typename K, typename T, typename V, typename... Dims> __device__ bool nk_contains(const T* a, V v, Dims... dims) {
    return nk_contains_at<K>(a, v, dims...);
}
""",
    "nk_range_len": """\
// len(range(start, stop, step)) as Python counts it; numba's range iterator counts its trips so
__device__ int64_t nk_range_len(int64_t start, int64_t stop, int64_t step) {
    if (step > 0) return start < stop ? (stop - start - 1) / step + 1 : 0;
    return start > stop ? (start - stop - 1) / -step + 1 : 0;
}
""",
    "nk_in_range": """\
// `value in range(start, stop, step)` as numba computes it (its rangeobj impl_contains): an integer inside the range's
// span and on its step; a float only when it is integral, as int(value)
__device__ bool nk_in_range(int64_t v, int64_t start, int64_t stop, int64_t step) {
    if (step > 0 && (v < start || v >= stop)) return false;
    if (step < 0 && (v <= stop || v > start)) return false;
    return (v - start) % step == 0;
}
__device__ bool nk_in_range(double v, int64_t start, int64_t stop, int64_t step) {
    return fmod(v, 1.0) == 0.0 && nk_in_range((int64_t)v, start, stop, step);
}
""",
    "nk_lanemask_lt": """\
__device__ __forceinline__ uint32_t nk_lanemask_lt() { uint32_t m; asm volatile("mov.u32 %0, %%lanemask_lt;" : "=r"(m)); return m; }
""",
    "nk_laneid": """\
__device__ __forceinline__ int32_t nk_laneid() { int32_t id; asm volatile("mov.u32 %0, %%laneid;" : "=r"(id)); return id; }
""",
    "nk_atomic_fminmax": """\
// numba's cuda.atomic.max/min on floats (numba_cuda nvvm.py ___numba_atomic_*_max/min): no store and the first
// value read returned when val or that value is NaN; else compare-and-swap while the element is < val (> for
// min); returns the value first read (as numba does, also when another thread changed it in between)
__device__ __forceinline__ float nk_atomic_max(float *addr, float val) {
    float first = *(volatile float *)addr, cur = first;
    if (val != val || first != first) return first;
    while (cur < val) cur = __uint_as_float(atomicCAS((unsigned int *)addr, __float_as_uint(cur), __float_as_uint(val)));
    return first;
}
__device__ __forceinline__ float nk_atomic_min(float *addr, float val) {
    float first = *(volatile float *)addr, cur = first;
    if (val != val || first != first) return first;
    while (cur > val) cur = __uint_as_float(atomicCAS((unsigned int *)addr, __float_as_uint(cur), __float_as_uint(val)));
    return first;
}
__device__ __forceinline__ double nk_atomic_max(double *addr, double val) {
    double first = *(volatile double *)addr, cur = first;
    if (val != val || first != first) return first;
    while (cur < val) cur = __longlong_as_double((long long)atomicCAS((unsigned long long *)addr,
        (unsigned long long)__double_as_longlong(cur), (unsigned long long)__double_as_longlong(val)));
    return first;
}
__device__ __forceinline__ double nk_atomic_min(double *addr, double val) {
    double first = *(volatile double *)addr, cur = first;
    if (val != val || first != first) return first;
    while (cur > val) cur = __longlong_as_double((long long)atomicCAS((unsigned long long *)addr,
        (unsigned long long)__double_as_longlong(cur), (unsigned long long)__double_as_longlong(val)));
    return first;
}
""",
    "nk_atomic_nanminmax": """\
// numba's cuda.atomic.nanmax/nanmin on floats (numba_cuda nvvm.py ___numba_atomic_*_nanmax/nanmin): NaNs are
// ignored (no store when val is NaN; a NaN element is replaced); returns the value first read
__device__ __forceinline__ float nk_atomic_nanmax(float *addr, float val) {
    float first = *(volatile float *)addr, cur = first;
    if (val != val) return first;
    while (!(cur >= val)) cur = __uint_as_float(atomicCAS((unsigned int *)addr, __float_as_uint(cur), __float_as_uint(val)));
    return first;
}
__device__ __forceinline__ float nk_atomic_nanmin(float *addr, float val) {
    float first = *(volatile float *)addr, cur = first;
    if (val != val) return first;
    while (!(cur <= val)) cur = __uint_as_float(atomicCAS((unsigned int *)addr, __float_as_uint(cur), __float_as_uint(val)));
    return first;
}
__device__ __forceinline__ double nk_atomic_nanmax(double *addr, double val) {
    double first = *(volatile double *)addr, cur = first;
    if (val != val) return first;
    while (!(cur >= val)) cur = __longlong_as_double((long long)atomicCAS((unsigned long long *)addr,
        (unsigned long long)__double_as_longlong(cur), (unsigned long long)__double_as_longlong(val)));
    return first;
}
__device__ __forceinline__ double nk_atomic_nanmin(double *addr, double val) {
    double first = *(volatile double *)addr, cur = first;
    if (val != val) return first;
    while (!(cur <= val)) cur = __longlong_as_double((long long)atomicCAS((unsigned long long *)addr,
        (unsigned long long)__double_as_longlong(cur), (unsigned long long)__double_as_longlong(val)));
    return first;
}
""",
    "nk_atomic_incdec64": """\
// numba's cuda.atomic.inc/dec on 64-bit integers (numba_cuda nvvm.py ___numba_atomic_u64_inc/dec): atomicInc's and
// atomicDec's rule (unsigned compare) in a compare-and-swap loop; returns the old value
__device__ __forceinline__ unsigned long long nk_atomic_inc64(unsigned long long *addr, unsigned long long val) {
    unsigned long long old = *(volatile unsigned long long *)addr, assumed;
    do { assumed = old; old = atomicCAS(addr, assumed, assumed < val ? assumed + 1 : 0ull); } while (old != assumed);
    return old;
}
__device__ __forceinline__ unsigned long long nk_atomic_dec64(unsigned long long *addr, unsigned long long val) {
    unsigned long long old = *(volatile unsigned long long *)addr, assumed;
    do { assumed = old; old = atomicCAS(addr, assumed, assumed - 1 < val ? assumed - 1 : val); } while (old != assumed);
    return old;
}
""",
    "nk_fast_tanhf": """\
// numba's math.tanh on float32 with fastmath (cc >= 7.5): the tanh.approx.f32 instruction
__device__ __forceinline__ float nk_fast_tanhf(float x) { float y; asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }
""",
}

HELPERS.update(_MMA_HELPERS)  # numbakern.mma's (translate/codegen/mma.py)
HELPERS.update(dict(_hopper.HELPERS))  # numbakern.mma.hopper's fixed ones (translate/codegen/hopper.py)
ORDER = tuple(HELPERS)
_TYPES = ("int64", "uint64", "float64", "float32")
#: helpers that call other helpers (or stand for a group of them)
DEPENDS = {"nk_floordiv": tuple(f"nk_floordiv_{t}" for t in _TYPES),
           "nk_floormod": tuple(f"nk_floormod_{t}" for t in _TYPES), "nk_round_ndigits": ("nk_powi",),
           "nk_cdiv": ("nk_complex",), "nk_ceq": ("nk_complex",), "nk_cmath": ("nk_complex",),
           **_VECTOR_DEPENDS, **_MMA_DEPENDS}


#: the prefix of a used libdevice function's name (its declaration, after the fixed helpers)
LIBDEVICE = "libdevice:"


def render(used: set[str]) -> str:
    from .mathfuncs import libdevice_declaration

    used = set(used)
    for name in list(used):
        used.update(DEPENDS.get(name, ()))
        used.update(_hopper.depends(name))
    fixed = [HELPERS[name] for name in ORDER if name in used and HELPERS[name]]
    # the wgmma helpers, one per shape and wait width, made when used: after the fixed ones, in name order
    made = [_hopper.HELPERS[name] for name in sorted(used - set(ORDER)) if name in _hopper.HELPERS]
    parts = fixed + made
    declared = sorted(n[len(LIBDEVICE):] for n in used if n.startswith(LIBDEVICE))
    if declared:
        parts.append("// the libdevice functions numba-cuda calls\n" +
                     "".join(libdevice_declaration(n) + "\n" for n in declared))
    return "\n".join(parts)
