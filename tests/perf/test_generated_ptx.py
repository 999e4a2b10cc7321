"""What Numba and nvcc generate for the pipelined matmul and the attention kernels, read without a GPU: Numba's
PTX (``compile_ptx`` in a helper process with the real CUDA target) and ``ptxas -v`` of it, and ``ptxas -v`` of
the translated .cu. The claims of ``numbakern.unroll`` and ``matmul_pipelined``: the k-steps are unrolled (every
multiply-add of a tile is in the PTX, the fragments in registers: no local memory), cp.async of both sizes and
``wait_group`` are there, and nothing spills."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: every test reads the module fixture ``numba_ptx``, the PTX built in a process of its own (12 s cold): the whole
#: file is slow. Measured, only the test that happened to build it counted as slow, so ``-m "not slow"`` built it
#: for another
pytestmark = pytest.mark.slow

SCRIPT = r"""
import json, re, sys
from numba import cuda
from numbakern.frontend.target import cuda_typing  # calls to device functions ask for the device's cc: answered
from numbakern.kernels import attention as at, matmul_pipe as mp

MATRIX = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])"
out = {}
with cuda_typing():
    k = mp.matmul_pipelined(**mp.PIPE_DEFAULT_CONFIG)
    out["matmul_pipelined"] = cuda.compile_ptx(k.py_func, MATRIX, cc=(9, 0), fastmath=True,
                                               launch_bounds=k.targetoptions["launch_bounds"])[0]
    k = at.flash_attention(**at.config_for(64, False))
    out["attention_d64"] = cuda.compile_ptx(k.py_func, at.SIGNATURE[0], cc=(9, 0), fastmath=True,
                                            launch_bounds=k.targetoptions["launch_bounds"])[0]
json.dump(out, sys.stdout)
"""


def _ptxas(ptx: str, tmp_path) -> dict:
    p = tmp_path / "k.ptx"
    # numba-cuda's NVVM stamps a newer .version than this ptxas may read; the kernels use nothing newer
    p.write_text(re.sub(r"^\.version \d+\.\d+", ".version 9.0", ptx, count=1, flags=re.M))
    r = subprocess.run(["ptxas", "-arch=sm_90", "-v", str(p), "-o", str(tmp_path / "k.cubin")], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    return _resources(r.stdout + r.stderr)


def _resources(text: str) -> dict:
    get = lambda pat: int(re.search(pat, text).group(1))  # noqa: E731
    return {"registers": get(r"Used (\d+) registers"), "spill_st": get(r"(\d+) bytes spill stores"),
            "spill_ld": get(r"(\d+) bytes spill loads")}


@pytest.fixture(scope="module")
def numba_ptx():
    # numba's real CUDA front end lowers to PTX without a GPU; unset, numbakern would pick its simulator here
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    r = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not installed")
def test_pipelined_matmul_ptx(numba_ptx, tmp_path):
    ptx = numba_ptx["matmul_pipelined"]
    body = "\n".join(l for l in ptx.splitlines() if not l.strip().startswith("//"))
    # 128x128 tile, 256 threads, 8x8 per thread, bk = 16: 16 unrolled k-steps of 64 multiply-adds
    assert len(re.findall(r"\bfma\.rn(?:\.ftz)?\.f32", body)) == 16 * 64
    assert len(re.findall(r"\bld\.shared\.v4\.f32", body)) == 16 * 4  # 2 A + 2 B fragment groups per k-step
    assert not re.search(r"\b(?:ld|st)\.local\.", body)  # the fragments and accumulators stay in registers
    assert len(re.findall(r"cp\.async\.ca\.shared\.global \[[^]]+\], \[[^]]+\], 4,", body)) == 2 * 8  # A, 4 bytes
    assert len(re.findall(r"cp\.async\.cg\.shared\.global \[[^]]+\], \[[^]]+\], 16,", body)) == 2 * 2  # B
    assert "cp.async.wait_group 0;" in body and body.count("cp.async.commit_group;") == 2
    res = _ptxas(ptx, tmp_path)
    assert res["spill_st"] == 0 and res["spill_ld"] == 0 and res["registers"] <= 128, res


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not installed")
def test_attention_ptx(numba_ptx, tmp_path):
    ptx = numba_ptx["attention_d64"]
    body = "\n".join(l for l in ptx.splitlines() if not l.strip().startswith("//"))
    assert not re.search(r"\b(?:ld|st)\.local\.", body)
    assert "cp.async.cg.shared.global" in body and "cp.async.wait_group 1;" in body  # V waited for, next K in flight
    assert len(re.findall(r"\bshfl\.sync\.bfly", body)) >= 3 * 4  # row maxima: 3 steps for each of 4 rows
    res = _ptxas(ptx, tmp_path)
    assert res["spill_st"] == 0 and res["registers"] <= 128, res


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_translated_pipelined_matmul_does_not_spill(tmp_path):
    r = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-Xptxas", "-v", "-O3", "-ftz=true", "-prec-div=false",
                        "-prec-sqrt=false", "-fmad=true", os.path.join(ROOT, "generated_cuda", "matmul_pipelined.cu"),
                        "-o", str(tmp_path / "m.cubin")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    res = _resources(r.stdout + r.stderr)
    assert res["spill_st"] == 0 and res["registers"] <= 128, res
