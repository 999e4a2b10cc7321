"""numbakern.mma.hopper with numba-cuda's real CUDA target, no GPU: each Hopper instruction a kernel calls is one
inline-PTX statement of its Op's template in Numba's PTX, with its operands in the registers that template names
(shared addresses and counts in 32-bit registers, descriptors and tensor maps in 64-bit ones, the accumulators
in and out as float registers, immediates written into the text)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
U64, F2 = "uint64[::1]", "float32[:, ::1]"
SIGNATURES = {
    "tma_box": f"void(uint16[:, :, ::1], uint8[::1], {U64}, int64, int64, int64, int64)",
    "tma_store_box": f"void(uint8[::1], uint16[:, ::1], {U64}, int64, int64)",
    "turns": "void(int32[:, ::1], int64, int64)",
    "register_budgets": "void(int32[::1])",
    "wgmma_rs_bf16": f"void(uint32[::1], {U64}, uint32[:, ::1], {F2}, {F2}, int64)",
    "wgmma_rs_tf32": f"void(uint32[::1], {U64}, {F2}, {F2}, {F2}, int64)",
    "wgmma_ss_tf32": f"void(uint32[::1], {U64}, {F2}, {F2}, {F2}, int64)",
}
SCRIPT = r"""
import json, sys
from numba import cuda
from tests.hopper import kernels
signatures = json.loads(sys.argv[1])
json.dump({name: cuda.compile_ptx(getattr(kernels, name).py_func, sig, cc=(9, 0))[0]
           for name, sig in signatures.items()}, sys.stdout)
"""
R, RD, F = r"%r\d+", r"%rd\d+", r"%f\d+"


def _regs(kind: str, n: int) -> str:
    return r"\{" + ",".join([kind] * n) + r"\}"


EXPECTED = {  # kernel -> the statements its PTX must hold, as regular expressions
    "tma_box": [rf"cp\.async\.bulk\.tensor\.3d\.shared::cluster\.global\.tile\.mbarrier::complete_tx::bytes "
                   rf"\[{R}\], \[{RD}, \{{{R}, {R}, {R}\}}\], \[{R}\];",
                   rf"mbarrier\.arrive\.expect_tx\.shared::cta\.b64 _, \[{R}\], {R};",
                   rf"mbarrier\.try_wait\.parity\.shared::cta\.b64 p, \[{R}\], {R}; selp\.u32 {R}, 1, 0, p; \}}",
                   rf"mbarrier\.init\.shared::cta\.b64 \[{R}\], {R};", r"fence\.mbarrier_init\.release\.cluster;"],
    "tma_store_box": [rf"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.bulk_group \[{RD}, \{{{R}, {R}\}}\], "
                      rf"\[{R}\];", r"cp\.async\.bulk\.commit_group;", r"cp\.async\.bulk\.wait_group\.read 0;",
                      r"fence\.proxy\.async\.shared::cta;"],
    "turns": [rf"bar\.arrive {R}, {R};", rf"bar\.sync {R}, {R};"],
    "register_budgets": [r"setmaxnreg\.dec\.sync\.aligned\.u32 40;", r"setmaxnreg\.inc\.sync\.aligned\.u32 232;"],
    "wgmma_rs_bf16": [rf"\{{ \.reg \.pred p; setp\.ne\.b32 p, {R}, 0; wgmma\.mma_async\.sync\.aligned\.m64n64k16"
                      rf"\.f32\.bf16\.bf16 {_regs(F, 32)}, {_regs(R, 4)}, {RD}, p, 1, 1, 1; \}}",
                      r"wgmma\.fence\.sync\.aligned;", r"wgmma\.commit_group\.sync\.aligned;",
                      r"wgmma\.wait_group\.sync\.aligned 0;"],
    "wgmma_rs_tf32": [rf"wgmma\.mma_async\.sync\.aligned\.m64n16k8\.f32\.tf32\.tf32 {_regs(F, 8)}, {_regs(R, 4)}, "
                      rf"{RD}, p, 1, 1; \}}"],
    "wgmma_ss_tf32": [rf"wgmma\.mma_async\.sync\.aligned\.m64n32k8\.f32\.tf32\.tf32 {_regs(F, 16)}, {RD}, {RD}, "
                      r"p, 1, 1; \}"],
}


@pytest.fixture(scope="module")
def ptx():
    pytest.importorskip("numba.cuda")
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_ENABLE_CUDASIM", "NUMBAKERN_SIM_CHECKS")}
    env.update(NUMBA_ENABLE_CUDASIM="0", PYTHONPATH=os.pathsep.join([ROOT, env.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(SIGNATURES)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=900)
    if r.returncode != 0 and "NVVM" in r.stderr and "not found" in r.stderr.lower():
        pytest.skip("numba-cuda's NVVM is not installed")
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


@pytest.mark.parametrize("kernel", sorted(EXPECTED))
def test_each_instruction_is_its_template_in_numbas_ptx(ptx, kernel):
    for pattern in EXPECTED[kernel]:
        assert re.search(pattern, ptx[kernel]), f"{kernel}: no match for {pattern}"
