"""The C of coverage_kernels.py: each construct numba compiles that the translator took in for issue 39 (views of
arrays, iteration, tuples, chained assignment, reductions, libdevice, half precision), translated and compiled by
NVRTC here; on a GPU each is verified against Numba (test_corpus_gpu.py runs the ``COVERAGE`` entries)."""

import numpy as np
import pytest

from numbakern import sim
from translate.api import translate_kernel

from .coverage_entries import COVERAGE

FRAGMENTS = {
    # a slice passed on: a pointer into the array and the slice's length as numba clamps it
    "slice_to_device": ["centroid((xs + nk_bound(i * NPTS, xs_shape0)), nk_span(i * NPTS, i * NPTS + NPTS, xs_shape0))",
                        "__device__ double centroid(const double* pts, int64_t pts_shape0)"],
    # a 2-D window: the row stride comes along (numba's layout A)
    "window_to_device": ["int64_t win_shape0, int64_t win_shape1, int64_t win_stride0, int64_t win_stride1)",
                         "s += win[a * win_stride0 + b * win_stride1];",
                         "nk_span(i - 1, i + 2, img_shape0), nk_span(j - 1, j + 2, img_shape1), img_shape1, 1)"],
    "local_slice": ["seg = (out + nk_bound(start, out_shape0));", "seg_shape0 = nk_span(start, end, out_shape0);",
                    "seg[k] = (double)x[i] + k;"],
    "strided_slice": ["evens_shape0 = (x_shape0 + 1) / 2;", "evens_stride0 = 2;", "back = (x + (x_shape0 - 1));",
                      "back_stride0 = -1;", "out[k] = evens[k * evens_stride0] + back[k * back_stride0];"],
    "array_from_device": ["__device__ double* longer(", "int64_t *ret_shape0)", "*ret_shape0 = a_shape0;",
                          "double *longer_data = longer((x + i), x_shape0 - i, y, nk_bound(i, y_shape0), "
                          "&longer_shape0);"],
    "shared_slices": ["centroid((&buf[0][0] + t), 4, 32) + centroid_((loc + 2), 4);"],
    "row_view": ["row = (m + i * m_shape1);", "row_shape0 = m_shape1;",
                 "if (m_shape1 != 3) asm volatile(\"exit;\");", "double z = (m + i * m_shape1)[2];"],
    "complex_parts": ["re[i] = ((double*)z)[i * 2];", "im[i] = (((double*)z) + 1)[i * 2];",
                      "atomicAdd(&((double*)acc)[0], cuCreal(z[i]));"],
    "float_bits_max": ["bits = ((int32_t*)arr);", "if (nk_bits<float>(cur) >= v) {",
                       "old = atomicCAS(&bits[0], cur, nk_bits<int32_t>(v));"],
    "dtype_of": ["float tmp[3];"],
    "transpose_view": ["t_shape0 = a_shape1;", "t_stride0 = 1;", "t_stride1 = a_shape1;",
                       "out[i * out_shape1 + j] = t[i * t_stride0 + j * t_stride1];"],
    "iterate_array": ["for (int64_t ex_i = 0; ex_i < excludes_shape0; ex_i++) {",
                      "int32_t ex = excludes[ex_i];"],
    "iterate_tuple": ["const double w_items[3] = {0.25, 0.5, 0.25};", "double w = w_items[w_i];"],
    "enumerate_zip": ["for (int64_t k = 0; k < x_shape0; k++) {", "double v = x[k];",
                      "a_i < (x_shape0 < y_shape0 ? x_shape0 : y_shape0)", "double b = y[a_i];",
                      # enumerate(zip(y, x), 1) with the pair unpacked in the target
                      "int64_t j = p_i + 1;", "double p = y[p_i];", "double q = x[p_i];"],
    # a parameter left out is numba's compile-time default: a C function per set of defaults, its value inlined
    "device_keywords": ["__device__ double scaled(float x, int64_t shift)", "return x * 2.0 + shift;",
                        "__device__ double scaled_(float x)", "__device__ double scaled_2(float x, double factor)",
                        "return x * factor + 0;",
                        "out[i] = scaled(x[i], (int64_t)1) + scaled_(x[i]) + scaled_2(x[i], -0.5);"],
    "tuple_argument": ["int64_t shape_0, int64_t shape_1,", "int64_t h = shape_0;",
                       "int64_t r = nk_floordiv(i, w);", "int64_t c = nk_floormod(i, w);"],
    "namedtuple_value": ["__device__ double norm2(double p_0, double p_1)", "return p_0 * p_0 + p_1 * p_1;",
                         "out[i] = norm2(xs[i], ys[i]);"],
    "record_scalars": ["nk_record_a_b r = recs[i];", "out[i] = r.a * r.b;"],
    # a loop over rows: the alias of each row, assigned by the loop
    "iterate_rows": ["for (int64_t row_i = 0; row_i < m_shape0; row_i++) {", "float *row = (m + row_i * m_shape1);",
                     "int64_t row_shape0 = m_shape1;", "int64_t plane_shape0 = w_shape1 - nk_bound(1, w_shape1);"],
    # a tuple of arrays as the kernel's argument: each array with its extents, in the launcher too
    "array_tuple_argument": ["double* pair_0, int64_t pair_0_shape0, double* pair_1, int64_t pair_1_shape0,",
                             "double *arr_items[2] = {pair_0, pair_1};", "b = pair_1;",
                             "out[i] = s * a_shape0 - pair_1[i];",
                             "pair_0, pair_0_shape0, pair_1, pair_1_shape0, out, out_shape0);"],
    # a starred tuple: its items as the callee's arguments
    "starred_call": ["out[i] = affine(t_0, t_1, t_2) + affine_(x[i], wb_0, wb_1);"],
    # a tuple of arrays: each array's pointer and extents (a device function's parameters, a loop's C arrays)
    "tuple_of_arrays": ["__device__ void fill_pair(double* pair_0, int64_t pair_0_shape0, double* pair_1, "
                        "int64_t pair_1_shape0, int64_t i, double v)",
                        "double *arr_items[2] = {x, y};", "int64_t arr_shape0_items[2] = {x_shape0, y_shape0};",
                        "double *arr = arr_items[arr_i];", "s += arr[i] * arr_shape0;",
                        # zip() of the arrays with numbers, enumerated: the counter indexes both
                        "const double w_items[2] = {0.5, 2.0};", "double *arr = arr_items_[k];",
                        "s += arr[i] * w * (k + 1);",
                        "a = pair_0;", "b_shape1 = pair_1_shape1;",
                        "fill_pair(out_a, out_a_shape0, out_b, out_b_shape0, i, s + u[i] - y[i] + "
                        "dot_pair(m, m_shape0, m_shape1, n, n_shape0, n_shape1, i));",
                        "out_b[i] += v[i] * n_shape1;"],
    "chained_assignment": ["int64_t a = 0;", "int64_t b = 0;", "int64_t c = x[i];", "int64_t d = x[i];"],
    # numba-cuda's array.sum: c = R(0); c = R(c + v) for each item, R the item type with integers widened
    "array_sums": ["nk_sum_of<int64_t>((a + nk_bound(i, a_shape0)), nk_span(i, i + 4, a_shape0), 1)",
                   "nk_sum_of<float>((m + i * m_shape1), m_shape1, 1)",
                   "nk_sum_of<float>((m + i * m_shape1), (m_shape1 + 1) / 2, 2)",
                   # array.mean: an integer array's sum in float64, a float32 one's in float32, then / the extent
                   "nk_sum_of<double>((a + nk_bound(i, a_shape0)), nk_span(i, i + 3, a_shape0), 1) / "
                   "nk_span(i, i + 3, a_shape0) * ((double)nk_sum_of<float>((m + i * m_shape1), m_shape1, 1) / "
                   "m_shape1)",
                   # pow(x, y) is x ** y
                   "nk_powi(m[i * m_shape1], (int64_t)3)", "pow(out[i], 0.5)"],
    # an N-D array's sum: one accumulator over its items in numba's np.nditer order, an (extent, stride) pair per
    # loop, outermost first: C order for C and strided ("A") arrays, the reverse for Fortran-ordered ones (a .T of
    # whole rows); the mean divides by the product of the extents
    "array_sums_nd": ["nk_sum_nd<float>(w, w_shape0, w_stride0, w_shape1, w_stride1)",
                      "nk_sum_nd<float>(w, w_shape1, w_stride1, w_shape0, w_stride0) * 0.5",
                      "nk_sum_nd<float>((m + nk_bound(i, m_shape0) * m_shape1), nk_span(i, i + 3, m_shape0), "
                      "m_shape1, m_shape1, 1) * 0.25",
                      "nk_sum_nd<int64_t>((t + i * t_shape1 * t_shape2), t_shape1, t_shape2, t_shape2, 1)",
                      "/ (nk_span(i, i + 2, t_shape0) * (t_shape1 - nk_bound(1, t_shape1)) * ((t_shape2 + 1) / 2))"],
    # numba compares each item with == in the value's type, stopping at the first equal one
    "membership": ["if (k == odd_0 || k == odd_1 || k == odd_2) {", "if (x[i] != 0 && x[i] != -3 && x[i] != 6) {"],
    # ... in the type the item and the value unify to: float64 for a float32 value and int64 items
    "membership_mixed": ["if ((double)x[i] == 1 || (double)x[i] == 2) {", "if (n[i] != 3.5 && n[i] != -1.0) {",
                         "if (n[i] == 3 || n[i] == 7) {"],
    # complex == and != part by part, also inside `in`
    "complex_equality": ["if (nk_ceq(cuComplexFloatToDouble(z[i]), w[i])) {",
                         "if (!nk_ceq(cuComplexFloatToDouble(z[i]), make_cuDoubleComplex(0.0, 1.0))) {",
                         "if (nk_ceq(w[i], make_cuDoubleComplex(0.0, 1.0)) || "],
    # over an array: each item against the value in np.equal's loop type; over range(...): numba's range test
    "membership_containers": [
        "if (nk_contains<float>((table + nk_bound(1, table_shape0) * table_shape1), x[i], nk_span(1, 4, table_shape0), "
        "table_shape1, table_shape1, 1)) {", "if (nk_contains<float>(x, big[i], nk_bound(4, x_shape0), 1)) {",
        "if (!nk_contains<float>(table, x[i], table_shape0, table_shape1, table_shape1, 1)) {",
        "if (nk_in_range(big[i], 3, 40, 3)) {", "if (nk_in_range((double)x[i], -5, 5, 1)) {",
        "if (nk_in_range(i, 60, 10, -7)) {"],
    # tuples of tuples: one C variable per number, named by its place (pairs_1_0 is item 0 of item 1); a loop over
    # them reads one C array per number of the item; a run-time index chooses each number; `in` is numba's tuple ==
    "nested_tuples": ["const double a_items[3] = {pairs_0_0, pairs_1_0, pairs_2_0};", "double b = b_items[a_i];",
                      "double pair_1 = pair_1_items[pair_0_i];",
                      "(j == 0 ? pairs_0_0 : j == 1 ? pairs_1_0 : pairs_2_0) * 10",
                      "((j - 1 == 0 || j - 1 == -3) ? pairs_0_1 : (j - 1 == 1 || j - 1 == -2) ? pairs_1_1 : pairs_2_1)",
                      "__device__ void bounds_and_sums(float a, float b, float *ret_0_0, float *ret_0_1, "
                      "float *ret_1_0, float *ret_1_1)", "*ret_1_1 = a - b;", "lo = bounds_and_sums_0_0;",
                      "double r_1_0 = bounds_and_sums_1_0_;",
                      "__device__ double weighted(float pair_0, float pair_1, double weights_0_0, double weights_0_1, "
                      "int64_t weights_1)", "acc += weighted(x[i], x[i + 1], 0.5, 0.25, n[i]);",
                      "const int64_t swapped_0_1_new = swapped_1_1;",
                      "if ((x[i] == 1.0 && n[i] == 1) || (x[i] == 2.0 && n[i] == 2) || (x[i] == 0.5 && n[i] == 3)) {",
                      "if (!((n[i] == 1 && n[i + 1] == 2 && x[i] == 0.5) || (n[i] == 2 && n[i + 1] == 2 && "
                      "x[i] == 2.0))) {"],
    # functions defined in the kernel: a C function each, the kernel's names they read passed first; their comments
    # go with them; a conditional expression of tuples chooses each number
    "inner_functions": ["__device__ double square(double v)", "    // the kernel's own comment, carried into the C",
                        "__device__ double shifted(double offset, float scale, float v)",
                        "__device__ double blend(double offset, float scale, float v, double w)",
                        "    // a closure's own comment, carried too\n"
                        "    return shifted(offset, scale, v) - square(w);",
                        "    out[k] = v;  // (into the kernel's argument)",
                        "__device__ int64_t square_(int64_t v)",
                        "__device__ void store(double* out, int64_t out_shape0, int64_t k, double v)",
                        "const bool chosen = x[i] < 0.25;", "double hi = chosen ? 1.0 : (double)x[i] * 2;",
                        "store(out, out_shape0, i, blend(offset, scale, x[i], lo) + square(hi) + "
                        "shifted_(offset, scale, 2.0) + square_(i % 3));"],
    # a while loop's test in the types numba gives each of its two evaluations: before the loop (float32 v), then
    # as do { ... } while at the end of the body (float64 v); numba's conversion of v made once, before the branch
    "retyped_while": ["v = x[i];\n        v_f64 = (double)v;\n        int64_t n = 0;\n        if (fabsf(v) * v > 0.001 "
                      "&& n < 40) {\n            do {", "} while (fabs(v_f64) * v_f64 > 0.001 && n < 40);",
                      "while (w_f64 * w_f64 > 0.01) {", "out[i] = v_f64 + w_f64 + n + k;",
                      "u = x[i];\n        int64_t k = 0;\n        u_f64 = (double)u;\n        if (fabsf(u) > 0.001 && "
                      "k < 50) {  // (u is not read after the loop)\n            do {\n"
                      "                u_f64 = u_f64 / 2;",
                      "sign[i] = (double)x[i] < 0 ? -1 : ((double)x[i] == 0) ? 0 : x[i] > 0.5 ? (int64_t)2 : "
                      "(int64_t)1;"],
    # counted down to a run-time stop as numba counts: trips up from 0 (ptxas 13.0 miscompiles the plain C loop)
    "downward_ranges": ["const int64_t k_trips = nk_range_len(m, -m, -3);\n        "
                        "for (int64_t k_trip = 0; k_trip < k_trips; k_trip++) {\n            "
                        "const int64_t k = m - k_trip * 3;",
                        "const int64_t j_start = i % 7 + m;\n        const int64_t j_trips = nk_range_len(j_start, "
                        "-2 * m, -1);",
                        "const int64_t k_stop = hi - 9;\n        const int64_t k_start = hi + 3;",
                        "for (int64_t q = m; q > -1; q -= 4) {"],
    # a range's bounds held where it is made (literals as they are)
    "held_ranges": ["const int64_t odd_stop = n;\n        const int64_t down_start = n + i % 3;\n        "
                    "const int64_t down_stop = -n;\n        n = n - 1;",
                    "for (int64_t k = 1; k < odd_stop; k += 2) {",
                    "const int64_t k_trips = nk_range_len(down_start, down_stop, -3);",
                    "#pragma unroll\n        for (int64_t q = 0; q < 8; q++) {",
                    "nk_in_range(i, 1, odd_stop, 2)", "nk_range_len(1, odd_stop, 2) * 100"],
    # an item of a range in zip() or enumerate(): start plus the count times the step; bounds held before the loop
    "zipped_ranges": ["#pragma unroll\n        for (int64_t a_i = 0; a_i < 3; a_i++) {\n            int64_t a = a_i;\n"
                      "            int64_t b = 5 + a_i;",
                      "const int64_t k_stop = nk_range_len(v_start, v_stop, -3);\n        "
                      "for (int64_t k = 0; k < k_stop; k++) {\n            int64_t v = v_start - k * 3;",
                      "x_shape0 < nk_range_len(back_start, -1, -1) ? x_shape0 : nk_range_len(back_start, -1, -1);",
                      "float v_f32 = x[v_f32_i];\n            int64_t r = back_start - v_f32_i;"],
    # the thread ends where numba's kernel would raise
    "raising": ["if (v > limit) {\n            return;  // raise ValueError(\"x above the limit\")\n        }",
                "if (!(v > -limit)) return;  // assert v > -limit, \"x below minus the limit\""],
    # a ufunc's loop takes its operands in its output's type: np.arctan2 of a float32 and 0.5 in double
    "numpy_scalar_functions": ["out[i] = sinf(v) + atan2((double)v, 0.5) + log((double)v + 2) + tanhf(v) * "
                               "hypotf(v, 1.5f) + 3;", "flags[i] = isnan(logf(v));"],
    "reductions": ["nk_min_of<float>(row, row_shape0, 1)", "nk_max(nk_max(t_0, t_1), t_2)",
                   "(double)t_0 + (double)t_1 + (double)t_2", "fminf(t_0, t_1)"],
    # a number stored into a slice: a loop over the view's elements, the slice's length as numba clamps it
    "slice_fill": ["acc[k_] = 0.0;", "(out + i * out_shape1)[k_2] = -1.0;",
                   "k_3 < nk_span(1, 3, out_shape1); k_3++"],
    # an annotated local is a local; a module-level complex constant is written where it is used
    "annotated_rotate": ["int64_t k = i;",
                         "cuCmulf(make_cuFloatComplex(0.0f, 1.0f), make_cuFloatComplex(s, 0.0f))"],
    # a negative start is what the kernel means (it tests beg + i >= 0): the launcher takes it, the C proves the
    # first loop's indices from that test and wraps the second's as numba does
    "window_mask": ["if (beg + i >= 0) {", "out[j] = ", "out[nk_wrap(j, out_shape0)] = "],
    # the very libdevice functions numba-cuda calls, declared for NVRTC and nvcc
    "libdevice_calls": ['extern "C" __device__ void __nv_sincosf(float x, float* sptr, float* cptr);',
                        "__nv_sincosf(v, &sincosf_sptr, &sincosf_cptr);", "__nv_fast_sinf(v)",
                        "const float frexpf_value = __nv_frexpf(v, &frexpf_b);", "__nv_float2int_rn(v)"],
    "half_arrays": ["out[i] = (float)(x[i] * x[i]) + sqrtf((float)i);"],
    # the inlined call's own signature, not that of the bool() that tests its result at the same position
    "inlined_predicate": ["if (inside(xs[i], ys[i], box, box_shape0)) {"],
    "bfloat16_arrays": ["#include <cuda_bf16.h>", "const __nv_bfloat16* x", "out[i] = (float)x[i] * s + (float)x[i];"],
    # numpy's reductions: a helper per loop of numba's arraymath over the (extent, stride) pairs, in np.nditer's
    # order (a Fortran-ordered transpose in its memory's order) or .flat's (C order) for argmin/argmax; std is
    # var ** 0.5 as numba computes it
    "array_reductions": ["nk_prod_of<float>(row, nk_bound(3, row_shape0), 1)",
                         "nk_nansum_of<float>(row, row_shape0, 1)",
                         "nk_var_of<double>((t + i * t_shape1), t_shape1, t_shape1, 1)",
                         "pow(nk_var_of<float>(row, row_shape0, row_shape0, 1), 0.5)",
                         "nk_var_of<float>((m + nk_bound(i, m_shape0) * m_shape1), (m_shape1 * nk_span(i, i + 3, "
                         "m_shape0)), nk_span(i, i + 3, m_shape0), m_shape1, m_shape1, 1)",
                         "nk_argmax_of((m + nk_bound(i, m_shape0) * m_shape1), m_shape1, 1, nk_span(i, i + 3, "
                         "m_shape0), m_shape1)", "nk_count_nonzero_of(row, row_shape0, 1)"],
    # numpy's own selections and the operands' truth, in the type of the ufunc's loop
    "numpy_elementwise": ["out[i * out_shape1] = nk_np_maximum(a, b);", "nk_np_fmin(a, (float)k[i])",
                          "57.295780181884766f * a + 0.017453292519943295 * (double)k[i]",
                          "(b != 0) != (k[i] != 0)", "8 * (int64_t)(a == 0)"],
    # a loop's else: under a flag its own breaks set, or after the loop when it has no break; its -1 is wrapped
    "loop_else": ["bool broke = false;", "broke = true;\n                break;", "if (!broke) {  // the loop's else",
                  "out[i] = a[i * a_shape1 + nk_wrap(k, a_shape1)];", "found[i] = -5;",
                  "}\n        out[i] = (double)out[i] * 2;"],
    # np.iinfo / np.finfo fields: numbers in the C, as numba reads them
    "number_limits": ["int64_t big = 32767;", "fmin(x[i] * 1e+38, 3.4028234663852886e+38)",
                      "1.1920928955078125e-07 * i", "lim[i] = big - i + -128;"],
    # the operator in the type of the loop numba picks: int64's for an int32 and an int64, double's for np.divide
    # of integers, float32's for a float32 and an int64
    "numpy_operators": ["((int64_t)a[i] & b[i])", "(int64_t)((uint64_t)(int64_t)a[i] << (int64_t)3)",
                        "~a[i] + !(a[i] > 0)",
                        "(double)a[i] / (double)nk_floormod(b[i], (int64_t)3)", "(x[i] > (float)b[i])",
                        "cuCimagf(cuConjf(make_cuFloatComplex(x[i], y[i])))"],
    # numba's np.angle (arctan2 of the parts in their loop's type), np.sinc (in double) and np.trace
    "numpy_angles_and_traces": ["(double)atan2f(cuCimagf(z[i]), cuCrealf(z[i]))",
                                "(double)atan2f(0.0f, x[i]) * 57.29577951308232", "nk_sinc((double)x[i])",
                                "nk_trace_of<double>(m, 0, m_shape0, m_shape1, m_shape1, 1)"],
    # booleans counted as 0 and 1: in int64 for sums and products, in double for the mean and the variance
    "boolean_reductions": ["nk_sum_of<int64_t>(row, row_shape0, 1)", "nk_prod_of<int64_t>(row, row_shape0, 1) * 100",
                           "nk_sum_of<double>(row, row_shape0, 1) / row_shape0",
                           "nk_var_of<double>(row, row_shape0, row_shape0, 1)"],
}


@pytest.mark.parametrize("entry", COVERAGE, ids=[e.kernel for e in COVERAGE])
def test_coverage_kernel_c(entry):
    r = translate_kernel(entry.target, signature=entry.signature, write=False)
    assert r.compile["ok"], r.compile["log"]
    for fragment in FRAGMENTS[entry.kernel]:
        assert fragment in r.code, f"missing in {entry.kernel}.cu:\n  {fragment}\n--- got ---\n{r.code}"


def test_every_coverage_kernel_has_fragments():
    assert set(FRAGMENTS) == {e.kernel for e in COVERAGE}


def test_a_bfloat16_scalar_in_a_signature_is_a_parameter_not_a_crash(tmp_path):
    """numba-cuda spells bfloat16 ``__nv_bfloat16``: once a bare KeyError, now the C type of a parameter."""
    path = tmp_path / "bf.py"
    path.write_text("from numba import cuda\n\n\n@cuda.jit\ndef scale(x, out, s):\n    i = cuda.grid(1)\n"
                    "    if i < x.shape[0]:\n        out[i] = x[i] * s\n")
    r = translate_kernel(f"{path}:scale", signature="void(bfloat16[::1], bfloat16[::1], bfloat16)", write=False)
    assert r.compile["ok"], r.compile["log"]
    assert "__nv_bfloat16 s)" in r.code and "out[i] = x[i] * s;" in r.code
    assert r.entry["launchers"][0]["params"][2] == {"name": "s", "kind": "scalar", "dtype": "bfloat16"}


def test_a_starred_tuple_outside_a_device_functions_call_is_a_located_refusal(tmp_path):
    """``max(*t)`` compiles in numba, but the C unpacks a tuple only into a device function's parameters: the error
    points at the starred argument and says where it is taken (not an internal error)."""
    from translate.errors import TranslationError

    path = tmp_path / "star.py"
    path.write_text("from numba import cuda\n\n\n@cuda.jit\ndef biggest(x, out):\n    i = cuda.grid(1)\n"
                    "    if i < x.shape[0]:\n        t = (x[i], 1.0)\n        out[i] = max(*t)\n")
    with pytest.raises(TranslationError) as err:
        translate_kernel(f"{path}:biggest", signature="void(float64[::1], float64[::1])", write=False)
    text = str(err.value)
    assert "star.py:9:" in text and "only into a device function's arguments" in text, text


def test_a_tuple_of_an_alias_assigned_again_is_refused_not_read_late(tmp_path):
    """``t = (a, y)`` reads ``a``'s pointer again wherever ``t`` is read; Python's tuple keeps the array ``a`` named
    when it was made. An alias assigned again later would make the C read the new array: refused, located."""
    from translate.errors import TranslationError

    path = tmp_path / "moving.py"
    path.write_text("from numba import cuda\n\n\n@cuda.jit\ndef moving(x, y, out):\n    i = cuda.grid(1)\n"
                    "    a = x\n    t = (a, y)\n    a = y\n    if i < out.shape[0]:\n"
                    "        out[i] = t[0][i] + a[i]\n")
    with pytest.raises(TranslationError) as err:
        translate_kernel(f"{path}:moving", signature="void(float32[::1], float32[::1], float32[::1])", write=False)
    text = str(err.value)
    assert "moving.py:8:" in text and "holds 'a', which is assigned another array elsewhere" in text, text


IN_WITH_A_CALL = """\
from numba import cuda


@cuda.jit(device=True)
def bump(a, i):
    a[i] += 1
    return a[i] % 4


@cuda.jit
def in_arg(a, allowed, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        out[i] = 1 if bump(a, i) in allowed else 0
"""


def test_in_evaluates_its_value_once(tmp_path):
    """``bump(a, i) in allowed``: the call runs once (it writes a[i]), not once per item of the tuple argument."""
    path = tmp_path / "member.py"
    path.write_text(IN_WITH_A_CALL)
    r = translate_kernel(f"{path}:in_arg", signature="void(int64[::1], UniTuple(int64, 2), int64[::1])", write=False)
    assert r.compile["ok"], r.compile["log"]
    assert r.code.count("bump(a, a_shape0, i)") == 1
    assert "const int64_t value = bump(a, a_shape0, i);" in r.code
    assert "out[i] = (value == allowed_0 || value == allowed_1) ? (int64_t)1 : (int64_t)0;" in r.code


def test_a_launcher_refuses_no_value_the_kernel_means():
    """window_mask is launched with beg = -3 (the kernel branches on beg + i >= 0): its launcher checks nothing of
    beg (a negative index would be numba's wraparound, not undefined)."""
    entry = next(e for e in COVERAGE if e.kernel == "window_mask")
    r = translate_kernel(entry.target, signature=entry.signature, write=False)
    launcher = r.code[r.code.index('extern "C" cudaError_t launch_window_mask'):]
    assert "beg < 0" not in launcher and "cudaErrorInvalidValue" not in launcher
    assert r.entry["launchers"][0]["nonneg_params"] == []


def test_a_branch_numba_prunes_for_one_instantiation_is_typed_from_another(tmp_path):
    """numba prunes ``flag and x[i] > 0.5`` for flag = False, so the first instantiation's record has no comparison
    there: the C template, shared by flag = 0 and 1, takes its types from the instantiation that keeps it (once
    "numba's typed IR has no operation here")."""
    path = tmp_path / "flagged.py"
    path.write_text("from numba import cuda\n\n\ndef make(flag):\n    @cuda.jit\n    def masked(x, out, lim):\n"
                    "        i = cuda.grid(1)\n        if i < x.shape[0]:\n"
                    "            m = i > lim or flag and x[i] > 0.5\n"
                    "            out[i] = 1.0 if m else 0.0\n            if not flag and i == 0:\n"
                    "                out[i] = 7.0\n    return masked\n\n\nmasked = make(False)\n")
    r = translate_kernel(f"{path}:masked", signature="void(float64[::1], float64[::1], int64)",
                         constants={"flag": [False, True]}, write=False)
    assert r.compile["ok"], r.compile["log"]
    for fragment in ("template <int flag>", "bool m = i > lim || flag && x[i] > 0.5;", "if (!flag && i == 0) {",
                     "template __global__ void masked<0>(", "template __global__ void masked<1>("):
        assert fragment in r.code, f"missing: {fragment}\n--- got ---\n{r.code}"


def test_a_call_is_typed_by_its_own_operation_not_by_another_call_at_its_position():
    """Python 3.12 places the ``bool()`` that tests ``if f(x):`` on the call's own position: the record's first call
    there is bool's ``(bool,) -> bool``, and a device function typed by it is refused (second.pytorch's
    ``point_in_quadrilateral`` on the GPU machine's Python). Only a call of a dispatcher, of the callee's where the
    record says whose, gives the signature; none (numba inlined it) leaves the callee to be typed for its arguments."""
    from types import SimpleNamespace as NS

    from numba.core import types

    from translate.codegen.calls import _recorded_call

    def callee(): ...

    def other(): ...

    truth = NS(signature=types.boolean(types.boolean), callee=types.NumberClass(types.boolean))
    mine = NS(signature=types.boolean(types.float32, types.float32), callee=NS(dispatcher=NS(py_func=callee)))
    theirs = NS(signature=types.int64(types.int64), callee=NS(dispatcher=NS(py_func=other)))

    def record(*ops):
        return NS(operations=lambda node: ops)

    assert _recorded_call(record(truth, mine), None, callee) == mine.signature
    assert _recorded_call(record(theirs, mine), None, callee) == mine.signature
    assert _recorded_call(record(truth), None, callee) is None            # inlined: typed for its arguments


@pytest.mark.sim
# np.divide by zero (inf, NaN): numpy warns, as the simulator's arithmetic does; the GPU computes it silently
@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
def test_numpy_reductions_and_elementwise_ufuncs_in_the_simulator_give_numpys_answers():
    """The semantics the C of array_reductions, numpy_elementwise and numpy_operators copies from numba (NaN wins in
    argmin and np.maximum, loses in np.fmin, is true in np.logical_*; var in two passes; the loop's type of each
    operator), checked against numpy itself on the entries' inputs (NaN, 0.0 and -0.0 among them) in numbakern's
    simulator, which runs numba's typed code."""
    from . import coverage_kernels as kernels

    entries = {e.kernel: e for e in COVERAGE}
    m, t, out, picks = entries["array_reductions"].make_args(3)
    m64, t64 = m.astype(np.float64), t.astype(np.int64)
    kernels.array_reductions[2, 64](m, t, out, picks)
    for i in range(m.shape[0]):
        row, w = m[i], m[i:i + 3, 1:5]
        assert list(picks[i]) == [
            np.argmin(row), np.argmax(row), np.argmin(w),
            np.argmax(w.T) + 10 * np.argmax(m[i:i + 3].T) + 1000 * np.argmin(t[i]),
            np.count_nonzero(row) + 10 * np.all(t[i]) + 100 * np.any(row) + 1000 * np.any(w),
            10 * np.all(t[i]) + np.count_nonzero(t[i])], i
        r64, w64 = m64[i], m64[i:i + 3, 1:5]
        expected = (np.prod(r64[:3]) + np.prod(r64) * 0.5 + np.nansum(r64) + np.sum(t64[i]) + np.mean(r64[1:])
                    + np.var(t64[i]) + np.std(r64) + np.var(w64) * 2 + np.std(w64) + np.var(m64[i:i + 3]) * 3)
        np.testing.assert_allclose(out[i], expected, rtol=1e-5, atol=1e-6, equal_nan=True)

    x, y, k, z, out, flags = entries["numpy_elementwise"].make_args(3)
    kernels.numpy_elementwise[2, 64](x, y, k, z, out, flags)
    expected = np.stack([np.maximum(x, y), np.minimum(x, y), np.fmax(x, y), np.fmin(x.astype(np.float64), k),
                         np.degrees(x) + np.radians(k) + np.rad2deg(k) + np.deg2rad(y),
                         z.real + z.imag.astype(np.float64) * 2 + x, np.maximum(k, 3) - np.minimum(k, -2)], axis=1)
    np.testing.assert_allclose(out, expected, rtol=1e-6, equal_nan=True)
    assert list(flags) == list(np.logical_and(x, y) + 2 * np.logical_or(x, k) + 4 * np.logical_xor(y, k)
                               + 8 * np.logical_not(x))

    a, b, x, y, out, bits, flags = entries["numpy_operators"].make_args(3)
    kernels.numpy_operators[2, 64](a, b, x, y, out, bits, flags)
    a64 = a.astype(np.int64)
    assert list(bits) == list((a64 & b) + (a64 | 3) * 2 + (b ^ a64) + (a64 << 3) + (b >> 2) + ~a + ~(a > 0))
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal(out[:, 0], a / (b % 3))
    np.testing.assert_array_equal(out[:, 1], x / y + x - y)
    assert list(flags) == list((x > b) + 2 * (x <= y) + 4 * (a == b % 3) + 8 * (x != 0.5) + 16 * (a >= 0)
                               + 32 * (y < x))


@pytest.mark.sim
def test_a_loops_else_in_the_simulator_runs_where_python_runs_it():
    from . import coverage_kernels as kernels

    a, out, found = next(e for e in COVERAGE if e.kernel == "loop_else").make_args(5)
    with sim.allow_negative_indices():  # a[i, -1] where no item is negative: the last item, as numba reads it
        kernels.loop_else[2, 64](a, out, found)
    for i, row in enumerate(a):
        negative = np.flatnonzero(row < 0)
        k = negative[0] if len(negative) else -1
        assert out[i] == np.float32((float(row[k]) + 0 + 1) * 2), i
        above = np.flatnonzero(row > 0.9)
        assert found[i] == (above[0] if len(above) else -5), i
    assert 0 < sum(1 for row in a if (row < 0).any()) < len(a)  # both ways out of the for loop are taken
    assert 0 < sum(1 for row in a if (row > 0.9).any()) < len(a)
