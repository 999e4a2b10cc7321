"""numbakern.mma.hopper in C (``translate/codegen/hopper.py``): the Hopper test kernels and the registered matmuls
translated, compiled by NVRTC for sm_90a, their helpers holding the instructions Numba emits; where nvcc is
installed, the ``.cu`` built as a deployer builds it (the launcher's tensor-map encoding included). No GPU."""

from __future__ import annotations

import json
import shutil

import pytest

from translate.api import translate_kernel

KERNELS = "tests/hopper/kernels.py"
U64 = "uint64[::1]"
F2 = "float32[:, ::1]"
CASES = {
    f"{KERNELS}:tma_box": (f"void(uint16[:, ::1], uint8[::1], {U64}, int64, int64, int64, int64)", [
        "nk_mbarrier_init(&bars[0], (unsigned)(1));", "nk_mbarrier_arrive_expect_tx(&bars[0], (unsigned)(nbytes));",
        "nk_tma_load_2d(&smem[pad], tmap, (int)(c0), (int)(c1), &bars[0]);",
        "while (!nk_mbarrier_try_wait(&bars[0], (unsigned)(0)))",
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
        "mbarrier.try_wait.parity.shared::cta.b64", "fence.mbarrier_init.release.cluster;",
    ]),
    f"{KERNELS}:tma_box#3d": (f"void(uint16[:, :, ::1], uint8[::1], {U64}, int64, int64, int64, int64)", [
        "nk_tma_load_3d(&smem[pad], tmap, (int)(c0), (int)(c1), (int)(c2), &bars[0]);",
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes ",
        '"[%0], [%1, {%2, %3, %4}], [%5];"',
    ]),
    f"{KERNELS}:turns": ("void(int32[:, ::1], int64, int64)", [
        "nk_named_barrier((unsigned)(2), (unsigned)(64));", "nk_named_barrier_arrive((unsigned)(1), (unsigned)(64));",
        "bar.arrive %0, %1;", "bar.sync %0, %1;",
    ]),
    f"{KERNELS}:tma_store_box": (f"void(uint8[::1], uint16[:, ::1], {U64}, int64, int64)", [
        "nk_fence_proxy_async();", "nk_tma_store_2d(tmap, (int)(c0), (int)(c1), &smem[pad]);", "nk_bulk_commit();",
        "nk_bulk_wait_read<0>();", "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group",
        "cp.async.bulk.wait_group.read %0;",
    ]),
    f"{KERNELS}:named_barriers": ("void(int32[:, ::1])", [
        "nk_named_barrier((unsigned)(1 + (int64_t)tid / 64), (unsigned)(64));", "bar.sync %0, %1;",
    ]),
    f"{KERNELS}:register_budgets": ("void(int32[::1])", [
        "nk_setmaxnreg_dec<40>();", "nk_setmaxnreg_inc<232>();", "setmaxnreg.inc.sync.aligned.u32 %0;",
    ]),
    f"{KERNELS}:wgmma_ss_bf16": (f"void(uint32[::1], {U64}, uint32[:, ::1], {F2}, {F2}, int64)", [
        "nk_wgmma_fence();", "nk_wgmma_m64n64k16_bf16<0>(acc, descs[0] + start, descs[1] + start, (int)(scale_d));",
        "nk_wgmma_commit();", "nk_wgmma_wait_32<0>(acc);",
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1,", "p, 1, 1, 0, %35; }",
        "wgmma.wait_group.sync.aligned %32;",
    ]),
    f"{KERNELS}:wgmma_rs_bf16": (f"void(uint32[::1], {U64}, uint32[:, ::1], {F2}, {F2}, int64)", [
        "nk_wgmma_m64n64k16_bf16_rs<1>(acc, &a[0], descs[1] + start, (int)(scale_d));",
        "{%32, %33, %34, %35}, %36, p, 1, 1, %38; }", '"r"(a[0])',
    ]),
    f"{KERNELS}:wgmma_ss_tf32": (f"void(uint32[::1], {U64}, {F2}, {F2}, {F2}, int64)", [
        "nk_wgmma_m64n32k8_tf32(acc, descs[0] + start, descs[1] + start, (int)(scale_d));",
        "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32", "%16, %17, p, 1, 1; }",
    ]),
    f"{KERNELS}:wgmma_rs_tf32": (f"void(uint32[::1], {U64}, {F2}, {F2}, {F2}, int64)", [
        "nk_wgmma_m64n16k8_tf32_rs(acc, &a[0], descs[1] + start, (int)(scale_d));", '"r"(__float_as_uint(a[0]))',
    ]),
    "tests/hopper/stage.py:one_stage": (
        f"void(uint16[:, ::1], uint16[:, ::1], float32[:, ::1], {U64}, {U64}, {U64}, int64)", [
            "nk_wgmma_m64n64k16_bf16<1>(acc, desc_a + (uint64_t)(kk * 2), desc_b + (uint64_t)(kk * 128), 1);",
            "nk_tma_store_2d(tmap_out, 32, 0, &smem[out_at + 8192]);",
        ]),
}


@pytest.mark.parametrize("kernel", sorted(CASES))
def test_hopper_intrinsics_in_c_compile_for_sm_90a(kernel):
    signature, fragments = CASES[kernel]
    r = translate_kernel(kernel.split("#")[0], signature=signature, write=False)  # ("#": another signature)
    assert r.compile["ok"], r.compile["log"]
    assert r.compile["arch"] == "sm_90a"
    for fragment in fragments:
        assert fragment in r.code, f"missing in {kernel}:\n  {fragment}\n--- got ---\n{r.code}"


REGISTERED = ("matmul_wgmma_bf16", "matmul_wgmma_f16", "matmul_wgmma_f16_out16")


@pytest.mark.parametrize("name", REGISTERED)
def test_registered_wgmma_matmuls_translate_with_launchers_that_make_their_tensor_maps(name, tmp_path):
    """The kernel takes its maps by value (``__grid_constant__``); the launcher makes them from the arrays'
    pointers and extents, raises the shared-memory limit, and keeps the Numba kernel's ABI (the map arguments are
    16-word arrays it does not read); the manifest says which argument is whose map and that it builds for
    sm_90a; nvcc builds it where installed."""
    r = translate_kernel(name, write=True, out_dir=str(tmp_path))
    assert r.compile["ok"] and r.compile["arch"] == "sm_90a", r.compile
    code = r.code
    assert "const __grid_constant__ nk_tensor_map tmap_a," in code
    assert "nk_tma_load_2d(&smem[so], &tmap_a, (int)(kt * BK), (int)(tm * bm), &bars[s]);" in code
    assert "cudaFuncSetAttribute(" in code and "cudaFuncAttributeMaxDynamicSharedMemorySize" in code
    assert "nk_encode_tensor_map(&tmap_a_map, a, 0, a_shape0, a_shape1, 0, a_shape1 * sizeof(" in code
    assert "tmap_a_map, tmap_b_map, tmap_out_map);" in code
    entry = json.loads((tmp_path / "manifest.json").read_text())["files"][f"{name}.cu"]
    params = {p["name"]: p for p in entry["launchers"][0]["params"]}
    assert params["tmap_a"]["tensor_map"] == {"of": "a", "box": [128, 64], "swizzle": 128}
    assert params["tmap_out"]["tensor_map"]["box"] == ([64, 64] if name.endswith("out16") else [64, 32])
    assert "-gencode=arch=compute_90a,code=sm_90a" in entry["build"]["nvcc_flags"]
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not installed: the NVRTC compile above is the check")
    from translate.verify.build import build_shared_library

    assert build_shared_library(tmp_path / f"{name}.cu", arch="sm_90",
                                extra_flags=entry["build"]["nvcc_flags"]).exists()
