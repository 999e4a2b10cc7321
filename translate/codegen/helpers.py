"""C helper functions that keep Numba's meaning where C's operators differ. Each is emitted only if used, in a
fixed order (byte-identical output)."""

from __future__ import annotations

HELPERS: dict[str, str] = {
    "nk_cp_async": """\
// cp.async (sm_80+): a 16-byte global -> shared copy that lands in the background; valid == false reads nothing
// and fills the 16 bytes with zeros. nk_async_wait_all: this thread's copies have landed (others' after a barrier).
__device__ __forceinline__ void nk_copy_async4(float *dst, const float *src, bool valid) {
    unsigned shared_addr = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(shared_addr), "l"(src), "r"(valid ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void nk_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void nk_async_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }
""",
    "nk_cp_async1": """\
// cp.async of one float (4 bytes, through L1: .ca is the only mode for copies under 16 bytes); any alignment
__device__ __forceinline__ void nk_copy_async(float *dst, const float *src, bool valid) {
    unsigned shared_addr = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" :: "r"(shared_addr), "l"(src), "r"(valid ? 4 : 0)
                 : "memory");
}
""",
    "nk_cp_async_wait": """\
// cp.async.wait_group N: all but this thread's N most recent groups of copies have landed (N an immediate)
template <int N> __device__ __forceinline__ void nk_async_wait() {
    asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
}
""",
    "nk_floordiv": """\
// Python floor division as numba computes it: rounds toward -inf; x // 0 == 0 and INT64_MIN // -1 == 0
__device__ __forceinline__ int64_t nk_floordiv(int64_t x, int64_t y) {
    if (y == 0 || (x == INT64_MIN && y == -1)) return 0;
    int64_t q = x / y, r = x % y;
    return (r != 0 && ((r ^ y) < 0)) ? q - 1 : q;
}
__device__ __forceinline__ uint64_t nk_floordiv(uint64_t x, uint64_t y) { return y == 0 ? 0 : x / y; }
__device__ __forceinline__ double nk_floordiv(double x, double y) {
    if (y == 0.0) return x / y;
    double mod = fmod(x, y), div = (x - mod) / y;
    if (mod != 0.0 && ((y < 0.0) != (mod < 0.0))) div -= 1.0;
    if (div != 0.0) { double f = floor(div); return (div - f > 0.5) ? f + 1.0 : f; }
    return 0.0 * x / y;
}
__device__ __forceinline__ float nk_floordiv(float x, float y) {
    if (y == 0.0f) return x / y;
    float mod = fmodf(x, y), div = (x - mod) / y;
    if (mod != 0.0f && ((y < 0.0f) != (mod < 0.0f))) div -= 1.0f;
    if (div != 0.0f) { float f = floorf(div); return (div - f > 0.5f) ? f + 1.0f : f; }
    return 0.0f * x / y;
}
""",
    "nk_floormod": """\
// Python modulo as numba computes it: the result has the divisor's sign; x % 0 == 0 (ints), NaN (floats)
__device__ __forceinline__ int64_t nk_floormod(int64_t x, int64_t y) {
    if (y == 0 || (x == INT64_MIN && y == -1)) return 0;
    int64_t r = x % y;
    return (r != 0 && ((r ^ y) < 0)) ? r + y : r;
}
__device__ __forceinline__ uint64_t nk_floormod(uint64_t x, uint64_t y) { return y == 0 ? 0 : x % y; }
__device__ __forceinline__ double nk_floormod(double x, double y) {
    if (y == 0.0) return fmod(x, y);
    double mod = fmod(x, y);
    if (mod != 0.0) { if ((y < 0.0) != (mod < 0.0)) mod += y; }
    else mod = (y < 0.0) ? -0.0 : 0.0;
    return mod;
}
__device__ __forceinline__ float nk_floormod(float x, float y) {
    if (y == 0.0f) return fmodf(x, y);
    float mod = fmodf(x, y);
    if (mod != 0.0f) { if ((y < 0.0f) != (mod < 0.0f)) mod += y; }
    else mod = (y < 0.0f) ? -0.0f : 0.0f;
    return mod;
}
""",
    "nk_ipow": """\
// integer power as numba computes it: a ** b for b < 0 is 0 unless |a| == 1; 0 ** -n == INT64_MIN
__device__ __forceinline__ int64_t nk_ipow(int64_t a, int64_t b) {
    if (b < 0) {
        if (a == 0) return INT64_MIN;
        if (a != 1 && a != -1) return 0;
        return (a == -1 && (b & 1)) ? -1 : 1;
    }
    int64_t r = 1;
    while (b != 0) { if (b & 1) r *= a; b >>= 1; a *= a; }
    return r;
}
""",
    "nk_wrap": """\
// numba's negative-index wraparound: x[-1] is the last element (used only where an index may be negative)
__device__ __forceinline__ int64_t nk_wrap(int64_t i, int64_t extent) { return i < 0 ? i + extent : i; }
""",
    "nk_min": """\
// Python's min/max: the first argument unless the second is strictly smaller / larger
template <typename T> __device__ __forceinline__ T nk_min(T a, T b) { return b < a ? b : a; }
template <typename T> __device__ __forceinline__ T nk_max(T a, T b) { return b > a ? b : a; }
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
    "nk_fast_tanhf": """\
// numba's math.tanh on float32 with fastmath (cc >= 7.5): the tanh.approx.f32 instruction
__device__ __forceinline__ float nk_fast_tanhf(float x) { float y; asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x)); return y; }
""",
}

ORDER = tuple(HELPERS)


def render(used: set[str]) -> str:
    return "\n".join(HELPERS[name] for name in ORDER if name in used)
