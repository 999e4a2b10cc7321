"""Every library kernel (the 38 of ``all_specs``, the tensor-core matmuls among them) compiles with numba-cuda-mlir, no
GPU needed: the source as it is, loaded against numba-cuda-mlir, numbakern's intrinsics typed and lowered by
``numbakern.mlir_lowering``; to PTX that ptxas assembles for sm_90 where libNVVM is installed, else to MLIR
(``tests/mlir/offline_compile.py``). Whether the kernels compute the right thing on a GPU is
``scripts/mlir_gpu.py``'s to show."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from .test_mlir_intrinsics import ROOT, offline_compile

#: numbakern's library: all_specs() (the tensor-core matmuls matmul_bf16, matmul_f16 and matmul_3xtf32 included)
LIBRARY_KERNELS = 38


@pytest.fixture
def compiled(run_store) -> dict:
    """Once per run (a minute and a half of CPU), whichever workers run this file's tests."""
    return run_store.once("mlir-library-compiled", lambda: offline_compile("library"))


#: the Hopper kernels, those the translator compiles for sm_90a (the manifest's compile.arch, which
#: translate/codegen/hopper.py's file_arch decides): numba-cuda-mlir types and lowers their instructions
#: (numbakern.mlir_lowering.instructions), but 0.6 compiles for sm_90, never sm_90a, so its PTX (wgmma, TMA,
#: setmaxnreg) does not assemble (docs/tensor-cores.md)
NEEDS_SM_90A = {file.removesuffix(".cu") for file, entry in
                json.loads((ROOT / "generated_cuda" / "manifest.json").read_text())["files"].items()
                if entry["compile"]["arch"] == "sm_90a"}


def test_every_library_kernel_compiles_on_numba_cuda_mlir(compiled):
    kernels = compiled["kernels"]
    assert len(kernels) >= LIBRARY_KERNELS
    assert {"matmul_bf16", "matmul_f16", "matmul_3xtf32"} <= set(kernels)
    failed = {name: r["error"][:1500] for name, r in kernels.items() if "error" in r}
    for name in NEEDS_SM_90A & set(failed):  # (PTX output only: in MLIR they compile)
        assert "not supported on .target 'sm_90'" in failed.pop(name), name
    assert not failed, failed


def test_the_intrinsics_reach_the_library_kernels_code(compiled):
    """The library's 16-byte loads, cp.async pipelines and tensor cores are there in what numba-cuda-mlir made."""
    kernels = compiled["kernels"]
    ptx = compiled["output"] == "ptx"
    expected = {
        "softmax": r"ld\.global\.v4\.f32" if ptx else r"vector<4xf32>",
        "matmul_flagship_async": r"cp\.async\.cg\.shared\.global" if ptx else r'"cp\.async\.cg\.shared\.global',
        "matmul_pipelined": r"cp\.async\.ca\.shared\.global" if ptx else r'"cp\.async\.ca\.shared\.global',
        "matmul_bf16": r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32" if ptx else r'"mma\.sync',
        "matmul_3xtf32": r"mma\.sync\.aligned\.m16n8k8\.row\.col\.f32\.tf32\.tf32\.f32" if ptx else r'"mma\.sync',
        "reduce_sum": r"membar\.gl;" if ptx else r"nvvm\.memory\.barrier <gpu>",
    }
    for name, pattern in expected.items():
        assert re.search(pattern, kernels[name].get("text", "")), name


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not installed")
def test_ptxas_assembles_every_library_kernel_for_sm_90(compiled, tmp_path):
    if compiled["output"] != "ptx":
        pytest.skip("no libNVVM here: numba-cuda-mlir stops at MLIR")
    failed = {}
    for name, result in compiled["kernels"].items():
        if name in NEEDS_SM_90A:  # (no PTX: see above)
            continue
        p = tmp_path / f"{name}.ptx"
        p.write_text(re.sub(r"^\.version \d+\.\d+", ".version 8.0", result["text"], count=1, flags=re.M))
        r = subprocess.run(["ptxas", "-arch=sm_90", str(p), "-o", str(tmp_path / f"{name}.cubin")],
                           capture_output=True, text=True)
        if r.returncode:
            failed[name] = r.stderr[-1000:]
    assert not failed, failed
