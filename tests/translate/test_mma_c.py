"""numbakern.mma in C: every intrinsic's C (translate/codegen/mma.py) in kernels that call them all, compiled by
NVRTC; the library's tensor-core matmuls are in generated_cuda/ (test_files.py compiles and checks those)."""

import pytest

from translate.api import translate_kernel

MODULE = "tests/translate/mma_kernels.py"
CASES = {
    "every_mma": ("void(uint32[:, ::1], uint32[:, ::1], float32[:, ::1], float32[:, ::1], float32[:, ::1])", [
        "nk_mma_m16n8k16_bf16(&acc[0], &a[0], &b[0], &acc[0]);",
        "nk_mma_m16n8k16_f16(&acc[0], &a[0], &b[0], &acc[0]);",
        "nk_mma_m16n8k8_tf32(&acc[0], &x[0], &x[4], &acc[0]);",
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%10, %11, %12, %13};",
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
        '"r"(__float_as_uint(a[0]))',
    ]),
    "every_ldmatrix": ("void(uint16[:, ::1], uint32[:, ::1])", [
        "nk_ldmatrix_x1(&regs[0], &tile[t][0]);", "nk_ldmatrix_x2(&regs[1], &tile[t][8]);",
        "nk_ldmatrix_x4(&regs[3], &tile[t][0]);", "nk_ldmatrix_x1_trans(&regs[7], &tile[t][8]);",
        "nk_ldmatrix_x2_trans(&regs[8], &tile[t][0]);", "nk_ldmatrix_x4_trans(&regs[10], &tile[t][8]);",
        "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];",
        "(unsigned)__cvta_generic_to_shared(row)",
    ]),
    "conversions": ("void(float32[::1], uint16[::1], float32[:, ::1], uint32[:, ::1], uint16[:, ::1])", [
        "nk_pack_bf16x2(x[i], -x[i])", "__floats2bfloat162_rn(lo, hi)", "__floats2half2_rn(lo, hi)",
        "& 0xFFFFu) << 16)", "__uint_as_float(", "__half2float(__ushort_as_half((unsigned short)",
        "__bfloat16_as_ushort(__float2bfloat16_rn(x[i]))", "__half_as_ushort(__float2half_rn(x[i]))",
        "= nk_f32_to_tf32(x[i]);", "cvt.rna.tf32.f32 %0, %1;", "#include <cuda_bf16.h>",
    ]),
}


@pytest.mark.parametrize("kernel", sorted(CASES))
def test_mma_intrinsics_in_c_compile_with_nvrtc(kernel):
    signature, fragments = CASES[kernel]
    r = translate_kernel(f"{MODULE}:{kernel}", signature=signature, write=False)
    assert r.compile["ok"], r.compile["log"]
    for fragment in fragments:
        assert fragment in r.code, f"missing in {kernel}.cu:\n  {fragment}\n--- got ---\n{r.code}"
