"""numbakern.mma.hopper on numba-cuda-mlir (``numbakern/mlir_lowering/instructions.py``), no GPU: the registered wgmma
matmul and the register-A wgmma kernels are typed and lowered by numba-cuda-mlir, their MLIR holding each
instruction's inline PTX; and
what numba-cuda-mlir 0.6 lacks is pinned down: it compiles for sm_90, never sm_90a, so that PTX does not assemble.
Skipped where numba-cuda-mlir is not installed (``pip install -e ".[mlir]"``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("numba_cuda_mlir")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = r"""
import json, os, sys
sys.path.insert(0, "tests/mlir")
import offline_compile  # (it names its own module for numba-cuda-mlir's front end: ours is named after it)
os.environ["NUMBAKERN_MLIR_MODULES"] = "tests.hopper.kernels"
import numbakern
offline_compile.stand_in_for_the_gpu()
from numba_cuda_mlir import cuda
from numbakern.kernels import matmul_wgmma as mw
from tests.hopper import kernels
regs = "void(uint32[::1], uint64[::1], {}[:, ::1], float32[:, ::1], float32[:, ::1], int64)"
out = {"mlir": cuda.compile_mlir(mw.matmul_wgmma(**mw.DEFAULT_CONFIG).py_func, mw.SIGNATURE)
               + cuda.compile_mlir(kernels.wgmma_rs_bf16.py_func, regs.format("uint32"))
               + cuda.compile_mlir(kernels.wgmma_rs_tf32.py_func, regs.format("float32"))
               + cuda.compile_mlir(kernels.tma_box.py_func,
                                   "void(uint16[:, :, ::1], uint8[::1], uint64[::1], int64, int64, int64, int64)")
               + cuda.compile_mlir(kernels.turns.py_func, "void(int32[:, ::1], int64, int64)")}
try:
    cuda.compile_ptx(kernels.wgmma_rs_bf16.py_func, regs.format("uint32"), cc=(9, 0, "a"))
    out["ptx"] = "compiled"
except Exception as e:
    out["ptx"] = str(e)
json.dump(out, sys.stdout)
"""
INSTRUCTIONS = (  # the registered matmul's, the register-A forms', the 3-D copy's and bar.arrive's
    "mbarrier.init.shared::cta.b64", "mbarrier.arrive.expect_tx.shared::cta.b64", "mbarrier.try_wait.parity",
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
    "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group", "cp.async.bulk.wait_group.read 0",
    "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16", "wgmma.wait_group.sync.aligned 1", "wgmma.fence",
    "setmaxnreg.inc.sync.aligned.u32 232", "setmaxnreg.dec.sync.aligned.u32 40", "bar.sync", "fence.proxy.async",
    "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16", "wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32",
    "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes", "bar.arrive",
)


def test_numba_cuda_mlir_types_and_lowers_the_hopper_instructions_but_targets_sm_90():
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_ENABLE_CUDASIM", "NUMBAKERN_SIM_CHECKS")}
    env.update(NUMBA_ENABLE_CUDASIM="0", NUMBAKERN_FRONTEND="numba-cuda-mlir")
    r = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout)
    for instruction in INSTRUCTIONS:
        assert instruction in out["mlir"], instruction
    if out["ptx"] != "compiled":  # (with libNVVM: numba-cuda-mlir's PTX for sm_90, which ptxas refuses)
        assert "not supported on .target 'sm_90'" in out["ptx"], out["ptx"][:2000]
