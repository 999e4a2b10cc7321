"""The C of extra_kernels.py: kernels as a user writes them, C name collisions, and the places where C's rules
differ from Numba's. Each fragment is the construct that keeps Numba's meaning; on a GPU the same kernels are
verified against Numba (test_corpus_gpu.py)."""

import pytest

from translate.api import translate_kernel

from .extra_entries import EXTRA

FRAGMENTS = {
    "softmax_rows": ["double m;", "float m_f32;", "m = -__longlong_as_double(0x7ff0000000000000LL);",
                     "m = fmax(m, (double)x[row * x_shape1 + j]);", "m_f32 = part[0];",
                     "s += expf(x[row * x_shape1 + j] - m_f32);"],
    "sort_pairs": ["__device__ void minmax(float a, float b, float *ret_0, float *ret_1)",
                   "*ret_0 = fminf(a, b);", "minmax(x[2 * i], x[2 * i + 1], &lo, &hi);"],
    "block_scan": ["__shared__ int32_t buf[256];", "buf[t] += v;"],
    "atomic_float_max": ["nk_atomic_max(&out[0], x[i]);"],
    "gaussian": ["out[i] = exp(-x[i] * x[i] / 2) / sqrt(2 * 3.141592653589793);"],
    "laplace_2d": ["constexpr int64_t HALO = 18;", "__shared__ float tile[HALO][HALO];",
                   "u[r * u_shape1 + nk_wrap(c - 1, u_shape1)]"],
    "warp_vote_count": ["__ballot_sync(0xffffffffu, positive)", "out[i / WARP] = __popc(votes);"],
    "rms_norm": ["double scale = 1 / sqrt((double)acc[0] / n + EPS);"],
    "stencil_1d": ["for (int64_t o = -radius; o < radius + 1; o++) {", "acc += tile[t + radius + o];",
                   "if (radius < 0) return cudaErrorInvalidValue;"],
    "shadow_extent": ["int64_t x_shape0_ = 1;", "x[i] = x_shape0_ + x_shape0_ + x_shape0;"],
    "launcher_names": ["    int64_t grid_x_,\n    int64_t stream_,\n    int64_t shared_bytes_,\n    int64_t block_z_)",
                       "out[i] = grid_x_ * i + stream_ - shared_bytes_ * block_z_;",
                       "(\n        out, out_shape0, grid_x_, stream_, shared_bytes_, block_z_);"],
    "keyword_names": ["double* float_, int64_t float_shape0,", "int64_t compl_ = new_ + 1;",
                      "int64_t bitand_ = compl_ * xor_;",
                      "float_[i] = bitand_ + nk_wrap_ + float_[nk_wrap(i > 0 ? i - 1 : 0, float_shape0)];"],
    "overflow_mod": ["constexpr int64_t INT64_MAX_ = 9223372036854775807LL;",
                     "out[i] = nk_floormod((int64_t)((uint64_t)(i + 1) * (uint64_t)(INT64_MAX_)), (int64_t)10);"],
    "floor_div_mod": ["q[i] = nk_floordiv(a[i], b[i]);", "r[i] = nk_floormod(a[i], b[i]);"],
    "signed_shifts": ["out[i * out_shape1] = (int64_t)((uint64_t)a[i] << 3);",
                      "out[i * out_shape1 + 1] = a[i] >> 2;"],
    "mixed_signedness": ["out[i * out_shape1] = (int64_t)u[i] < s[i];",
                         "out[i * out_shape1 + 1] = (int64_t)u[i] + s[i];",
                         "out[i * out_shape1 + 2] = (uint64_t)u[i] - (uint32_t)7;"],
    # each comparison of a chain in its own types: a compared with y as a double, not y truncated to an integer
    "chained_compare": ["out[i] = (0 < a[i] && a[i] < y[i]) ? (int64_t)1 : (int64_t)0;"],
    # a shared mbarrier array passed to a device function: a pointer, the barrier's address converted there
    "mbarrier_in_device_function": ["__device__ void arrive_and_wait(uint64_t* bars, int64_t bars_shape0)",
                                    "nk_mbarrier_arrive(&bars[0]);", "arrive_and_wait(bars, 1);"],
    "powers": ["nk_powi(x[i], (int64_t)3)", "nk_powi(x[i], n[i])", "nk_ipow(n[i], (int64_t)(-1))",
               "pow((double)x[i], 0.5)"],
    "nan_min_max": ["fmaxf(a[i], b[i])", "fminf(a[i], b[i])", "r_f64 = 2.5;", "llrint(r_f64)"],
    "retyped_accumulator": ["int64_t s;", "double s_f64;", "s = 0;", "s_f64 = (double)s;",
                            "s_f64 = s_f64 + x[i * x_shape1 + j];", "out[i] = s_f64;"],
    "global_array": ["__constant__ double PRICES[5] = {10.0, 25.0, 5.0, 15.0, 30.0};",
                     "totals[i] = quantities[i] * PRICES[i % 5];"],
    "casts_and_constants": ["float v = (float)x[i];", "(int32_t)((double)v * 1000)",
                            "v < __longlong_as_double(0x7ff0000000000000LL) ? v : "
                            "-__longlong_as_double(0x7ff0000000000000LL)",
                            "2.718281828459045 * v + 6.283185307179586"],
    # a doubling and a halving stride: every index proven >= 0, no wraparound (and none of the refusal's)
    "brent_kung_scan": ["extern __shared__ float s[];", "s[idx] += s[idx - stride];", "s[idx + stride] += s[idx];",
                        "stride /= 2;"],
    # an index into dynamic shared memory that may be negative wraps around the launch's extent, as numba's does
    "dynamic_shared_wrap": ["s[nk_wrap(idx[i], nk_dynamic_smem_bytes() / 8)] + nk_dynamic_smem_bytes() / 8",
                            'asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(n));'],
    "mandelbrot": ["cuDoubleComplex c = make_cuDoubleComplex(-2.0 + 3.0 * j / out_shape1, -1.5 + 3.0 * i / "
                   "out_shape0);",
                   "cuDoubleComplex z = make_cuDoubleComplex(0.0, 0.0);",
                   "while (n < max_iter && hypot(cuCreal(z), cuCimag(z)) <= 2.0) {", "z = cuCadd(cuCmul(z, z), c);"],
    "twiddle": ["cuDoubleComplex w = nk_cexp(nk_cdiv(cuCmul(cuCmul(make_cuDoubleComplex(-0.0, -2.0), "
                "make_cuDoubleComplex(3.141592653589793, 0.0))",
                "out[k] = cuComplexDoubleToFloat(cuCmul(cuComplexFloatToDouble(x[k]), w));"],
    # (also for complex64: the same C functions, with the float ones of cuComplex.h)
    "complex_functions": [" r = hypot", " phi = atan2", "nk_csqrt(v)", "(nk_clog(v), cuConj", "nk_crect(r, phi)",
                          "nk_clog10(v)", "nk_cisfinite(v) - nk_cisnan(v)"],
    # bounds read before the loop's own declaration hides the earlier value (`for (int64_t j = j; ...)` would not)
    "loop_bounds_own_name": ["const int64_t j_start = j;", "for (int64_t j = j_start; j < i + 1; j++) {",
                             "const int64_t n_stop = n;", "for (int64_t n = 0; n < n_stop; n++) {",
                             "const int64_t start_step = start;", "start += start_step) {"],
    "loop_name_reused": ["for (int64_t q = 0; q < 4; q++) {", "int64_t q = 3;", "out[i] = acc + q;"],
    "histogram_optional": ["int64_t nbins, bool *present)", "*present = false;\n        return 0;",
                           "*present = true;", "bool b_present;",
                           "int64_t b = bin_number(x[i], lo, hi, hist_shape0, &b_present);", "if (b_present) {"],
    "chained_index": ["tile[ty][tx + 1] = inside ? x[r * x_shape1 + c] : 0.0f;",
                      # r - 1 >= 0 where r > 0, r of cuda.grid(2) unpacked: no wraparound
                      "tile[ty][0] = (inside && r > 0) ? x[(r - 1) * x_shape1 + c] : 0.0f;",
                      "out[r * out_shape1 + c] = tile[ty][tx + 1] + tile[ty][tx];"],
    # value ranges that are sound: a break's state, an elif's own state, a while test at every iteration
    "break_state": ["out[i] = y[nk_wrap(j, y_shape0)];"],
    "elif_state": ["} else if ((double)y[nk_wrap(i - 10, y_shape0)] > 0) {"],
    "while_test_state": ["while ((double)x[nk_wrap(k - 5, x_shape0)] > 0 && n < 3) {"],
    # and precise: a block index is below the grid's size, an extent is non-negative
    "reversed_blocks": ["int64_t nb = (x_shape0 + 31) / 32;", "out[i] = (double)x[qb] + nb;"],
    # met in the second corpus: a tuple at a run-time index, rows passed on, const.array_like of an argument, Greek
    "shape_loop": ["n *= (d == 0 ? x_shape0 : d == 1 ? x_shape1 : x_shape2);"],
    "rows_to_device": [
        "__device__ void row_sum(const double* row, int64_t row_shape0, double* out, int64_t out_shape0)",
        "row_sum((x + i * x_shape1), x_shape1, (out + (i * out_shape1 + 1) * out_shape2), out_shape2);"],
    "const_of_argument": ["out[i] = v[i % 9];"],
    "complex_trig": ["(nk_csin(v), nk_ccos(v)), nk_ctan(v))", "nk_ccosh(v)", "nk_ctanh(v)",
                     "nk_casin(v)", "nk_cacos(v)", "nk_catan(v)", "nk_casinh(v)", "nk_cacosh(v)", "nk_catanh(v)"],
    # no wraparound where the condition above proves the index >= 0; the kernel's comments next to their lines
    "stencil_guarded": ["out[r * out_shape1 + c] = plane[ty][tx - 1] + plane[ty][tx + 1] + plane[ty - 1][tx] + "
                        "plane[ty + 1][tx];", "    // the tile, zeros outside the array\n",
                        "if (tx >= 1 && tx < TILE - 1 && ty >= 1 && ty < TILE - 1) {  // inner threads only"],
    "greek_names": ["const double* mu, int64_t mu_shape0,", "double rho = (out[i] - mu[i]) / sigma[i];"],
    # made by exec(): the Python rebuilt from numba's IR, with the string's own names
    "made_rows_dot": ["__global__ void made_rows_dot(", "double acc = 0.0;",
                      "for (int64_t j = 0; j < x_shape1; j++) {", "acc = acc + fabsf(x[i * x_shape1 + j]) * w[j];"],
    "calls_made_device": ["__device__ double softplus(double v)", "return log1p(exp(v));",
                          "out[i] = softplus(x[i]);"],
}


@pytest.mark.parametrize("entry", EXTRA, ids=[e.kernel for e in EXTRA])
def test_extra_kernel_c(entry):
    r = translate_kernel(entry.target, signature=entry.signature, write=False)
    assert r.compile["ok"], r.compile["log"]
    for fragment in FRAGMENTS[entry.kernel]:
        assert fragment in r.code, f"missing in {entry.kernel}.cu:\n  {fragment}\n--- got ---\n{r.code}"


def test_every_extra_kernel_has_fragments():
    assert set(FRAGMENTS) == {e.kernel for e in EXTRA}
