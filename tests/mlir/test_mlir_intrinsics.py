"""numbakern's intrinsics compile with numba-cuda-mlir (no GPU needed): each kernel of tests/mlir/intrinsic_kernels.py
(written for numba-cuda, loaded against numba-cuda-mlir) holds the exact instructions, its fragments and vector
registers stay out of local memory, and ptxas assembles it for sm_90; a bad call is numba-cuda-mlir's TypingError
with numbakern's message. Where libNVVM is missing (the CI's numba-cuda-mlir-only job) the same is checked in
numba-cuda-mlir's MLIR, one stage earlier (``tests/mlir/offline_compile.py``)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


def offline_compile(which: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_ENABLE_CUDASIM", "PYTEST_VERSION", "NUMBAKERN_SIM_CHECKS")}
    r = subprocess.run([sys.executable, str(HERE / "offline_compile.py"), which], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def compiled() -> dict:
    return offline_compile("intrinsics")


def _body(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.strip().startswith("//"))


def _ldmatrix(count: int, trans: str):
    instruction = re.escape(f"ldmatrix.sync.aligned.m8n8.x{count}{trans.replace('_', '.')}.shared.b16")
    registers = ",".join([r"%r\d+"] * count)
    return [(instruction + r" \{" + registers + r"\}, \[%r\d+\];", 1)], [('"' + instruction + " ", 1)]


# kernel -> (PTX instruction patterns with the count each must appear, the MLIR each stems from)
_MMA = r"\{(%f\d+,){3}%f\d+\}, \{(%r\d+,){3}%r\d+\}, \{%r\d+,%r\d+\}, \{(%f\d+,){3}%f\d+\};"
EXPECTED = {
    "vector_io": ([(r"ld\.global\.v4\.f32", 1), (r"st\.shared\.v4\.f32", 1), (r"ld\.shared\.v4\.f32", 1),
                   (r"st\.global\.v4\.f32", 2)],
                  [(r"llvm\.load %\S+ \{alignment = 16 : i64\} : !llvm\.ptr<1> -> vector<4xf32>", 1),
                   (r"llvm\.load %\S+ \{alignment = 16 : i64\} : !llvm\.ptr<3> -> vector<4xf32>", 1),
                   (r"llvm\.store %\S+, %\S+ \{alignment = 16 : i64\} : vector<4xf32>, !llvm\.ptr<1>", 2),
                   (r"llvm\.store %\S+, %\S+ \{alignment = 16 : i64\} : vector<4xf32>, !llvm\.ptr<3>", 1)]),
    "async_copies": ([(r"cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16, %r\d+;", 2),
                      (r"cp\.async\.ca\.shared\.global \[%r\d+\], \[%rd\d+\], 4, %r\d+;", 1),
                      (r"cp\.async\.commit_group;", 2), (r"cp\.async\.wait_group 1;", 1),
                      (r"cp\.async\.wait_group 0;", 1)],
                     [(r'"cp\.async\.cg\.shared\.global \[\$0\], \[\$1\], 16, \$2;", "r,l,r,~\{memory\}"', 2),
                      (r'"cp\.async\.ca\.shared\.global \[\$0\], \[\$1\], 4, \$2;", "r,l,r,~\{memory\}"', 1),
                      (r'"cp\.async\.commit_group;"', 2), (r'"cp\.async\.wait_group 1;"', 1),
                      (r'"cp\.async\.wait_group 0;"', 1)]),
    "mma_bf16": ([(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32 " + _MMA, 1)],
                 [(r'"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32 ', 1)]),
    "mma_f16": ([(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.f16\.f16\.f32 " + _MMA, 1)],
                [(r'"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.f16\.f16\.f32 ', 1)]),
    "mma_tf32": ([(r"mma\.sync\.aligned\.m16n8k8\.row\.col\.f32\.tf32\.tf32\.f32 " + _MMA, 1)],
                 [(r'"mma\.sync\.aligned\.m16n8k8\.row\.col\.f32\.tf32\.tf32\.f32 ', 1)]),
    **{f"ldmatrix_x{n}{t}": _ldmatrix(n, t) for n in (1, 2, 4) for t in ("", "_trans")},
    "helpers": ([(r"cvt\.rn\.bf16x2\.f32", 1), (r"cvt\.rn\.f16x2\.f32", 1), (r"cvt\.rn\.bf16\.f32", 1),
                 (r"cvt\.rn\.f16\.f32", 1), (r"cvt\.rna\.tf32\.f32", 3)],
                [(r'"cvt\.rn\.bf16x2\.f32', 1), (r'"cvt\.rn\.f16x2\.f32', 1), (r'"cvt\.rn\.bf16\.f32', 1),
                 (r'"cvt\.rn\.f16\.f32', 1), (r'"cvt\.rna\.tf32\.f32', 3)]),
    "rolled_unroll": ([(r"ld\.global\.f32", 1)], [(r"scf\.for|cf\.cond_br", 1)]),
    "fences": ([(r"membar\.cta;", 1), (r"membar\.gl;", 1), (r"membar\.sys;", 1)],
               [(r"nvvm\.memory\.barrier <cta>", 1), (r"nvvm\.memory\.barrier <gpu>", 1),
                (r"nvvm\.memory\.barrier <sys>", 1)]),
}
#: kernels whose registers (fragments, vector lanes) must never touch local memory
REGISTERS_ONLY = ("vector_io", "mma_bf16", "mma_f16", "mma_tf32", "helpers",
                  *(f"ldmatrix_x{n}{t}" for n in (1, 2, 4) for t in ("", "_trans")))


def test_every_intrinsic_kernel_is_checked(compiled):
    assert set(compiled["kernels"]) == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_intrinsic_compiles_to_its_instructions(compiled, name):
    result = compiled["kernels"][name]
    assert "error" not in result, result.get("error")
    ptx_patterns, mlir_patterns = EXPECTED[name]
    body = _body(result["text"])
    for pattern, count in (ptx_patterns if compiled["output"] == "ptx" else mlir_patterns):
        found = len(re.findall(pattern, body))
        # a rolled loop's load may be unrolled by LLVM: at least once; the instructions themselves: exactly
        assert found >= count if name == "rolled_unroll" else found == count, (pattern, body[-4000:])
    if compiled["output"] == "ptx" and name in REGISTERS_ONLY:
        assert not re.search(r"\b(?:ld|st)\.local\.", body), body[-4000:]


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not installed")
def test_ptxas_assembles_every_intrinsic_kernel_for_sm_90(compiled, tmp_path):
    if compiled["output"] != "ptx":
        pytest.skip("no libNVVM here: numba-cuda-mlir stops at MLIR")
    for name, result in compiled["kernels"].items():
        p = tmp_path / f"{name}.ptx"
        # NVVM may stamp a newer .version than this ptxas reads; these kernels use nothing newer than PTX 8.0
        p.write_text(re.sub(r"^\.version \d+\.\d+", ".version 8.0", result["text"], count=1, flags=re.M))
        r = subprocess.run(["ptxas", "-arch=sm_90", str(p), "-o", str(tmp_path / f"{name}.cubin")],
                           capture_output=True, text=True)
        assert r.returncode == 0, f"{name}: {r.stderr}"


@pytest.mark.parametrize("name, message", [
    ("vload4_of_float64", "vload4: the array must be a C-contiguous float32 array, got array(float64, 2d, C)"),
    ("async_wait_of_a_variable", "async_wait: n must be a non-negative compile-time integer"),
    ("mma_with_float_registers", "mma_m16n8k16_bf16: a must be a 1-D uint32 array"),
    ("copy_async_without_a_bool", "copy_async4: valid must be a bool"),
])
def test_a_bad_call_is_numba_cuda_mlirs_typing_error_with_numbakerns_message(name, message, refused):
    error = refused["kernels"][name].get("error", "")
    assert error.startswith("TypingError"), error
    assert message in error, error


@pytest.fixture(scope="module")
def refused() -> dict:
    return offline_compile("refusals")


ORDER_PROBE = """
import os, sys
os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
sys.path.insert(0, {here!r})
import numpy as np
if {mlir_first}:
    from numba_cuda_mlir import cuda
from numbakern.vector_io import vload4, vstore4
from numba_cuda_mlir import cuda
import offline_compile
offline_compile.stand_in_for_the_gpu()

def twice(out, m):
    regs = cuda.local.array(4, np.float32)
    vload4(m, 0, regs, 0)
    for q in range(4):
        regs[q] *= 2
    vstore4(out, 0, regs, 0)

text = cuda.compile_mlir(twice, "void(float32[::1], float32[::1])")
print("LOADS", text.count("-> vector<4xf32>"), "STORES", text.count(": vector<4xf32>, !llvm.ptr"))
"""


@pytest.mark.parametrize("mlir_first", [True, False], ids=["numba-cuda-mlir first", "numbakern first"])
def test_the_intrinsics_reach_numba_cuda_mlir_whichever_is_imported_first(mlir_first):
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_ENABLE_CUDASIM", "PYTEST_VERSION")}
    r = subprocess.run([sys.executable, "-c", ORDER_PROBE.format(here=str(HERE), mlir_first=mlir_first)], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=600)
    assert "LOADS 1 STORES 1" in r.stdout, r.stdout + r.stderr[-3000:]
