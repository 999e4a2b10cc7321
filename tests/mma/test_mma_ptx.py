"""numbakern.mma's intrinsics compile with numba-cuda's real CUDA target (no GPU needed): each kernel's PTX holds the
exact instructions, its fragments stay in registers, and ptxas assembles it for sm_90."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: every test reads one module fixture, the PTX of all the kernels built in a process of its own (17 s of CPU warm,
#: 50 s cold): the whole file is slow. Measured, only its first test counted as slow, so ``-m "not slow"`` built
#: the PTX for the second
pytestmark = pytest.mark.slow

SCRIPT = r"""
import json, sys
import numpy as np
from numba import cuda
from numbakern import mma


def mma_kernel(fn, operand):
    def kernel(a_in, b_in, c_in, d_out):
        lane = cuda.laneid
        a = cuda.local.array(4, operand)
        b = cuda.local.array(2, operand)
        acc = cuda.local.array(4, np.float32)
        for i in range(4):
            a[i] = a_in[lane, i]
            acc[i] = c_in[lane, i]
        for i in range(2):
            b[i] = b_in[lane, i]
        fn(acc, 0, a, 0, b, 0, acc, 0)
        for i in range(4):
            d_out[lane, i] = acc[i]
    return kernel


def ldmatrix_kernel(fn, count):
    def kernel(src, out):
        lane = cuda.laneid
        tile = cuda.shared.array((16, 16), dtype=np.uint16)
        for e in range(lane, 256, 32):
            tile[e // 16, e % 16] = src[e // 16, e % 16]
        cuda.syncthreads()
        regs = cuda.local.array(4, np.uint32)
        fn(regs, 0, tile, (lane % 16, (lane // 16) * 8))
        for j in range(count):
            out[lane, j] = regs[j]
    return kernel


def helpers(x, bits, out, out_bits):
    i = cuda.grid(1)
    v = x[i]
    out_bits[i, 0] = mma.pack_bf16x2(v, x[i + 1])
    out_bits[i, 1] = mma.pack_f16x2(v, x[i + 1])
    out_bits[i, 2] = mma.pack_b16x2(bits[i], bits[i + 1])
    lo, hi = mma.unpack_bf16x2(out_bits[i, 0])
    lo2, hi2 = mma.unpack_f16x2(out_bits[i, 1])
    b_lo, b_hi = mma.unpack_b16x2(out_bits[i, 2])
    out[i, 0] = lo + hi + lo2 + hi2 + np.float32(b_lo) + np.float32(b_hi)
    out[i, 1] = mma.bf16_to_f32(mma.f32_to_bf16(v)) + mma.f16_to_f32(mma.f32_to_f16(v))
    big, small = mma.split_tf32(v)
    out[i, 2] = mma.f32_to_tf32(v) + big + small


REGS = "void(uint32[:, ::1], uint32[:, ::1], float32[:, ::1], float32[:, ::1])"
FLOATS = "void(float32[:, ::1], float32[:, ::1], float32[:, ::1], float32[:, ::1])"
TILE = "void(uint16[:, ::1], uint32[:, ::1])"
out = {
    "bf16": cuda.compile_ptx(mma_kernel(mma.mma_m16n8k16_bf16, np.uint32), REGS, cc=(9, 0))[0],
    "f16": cuda.compile_ptx(mma_kernel(mma.mma_m16n8k16_f16, np.uint32), REGS, cc=(9, 0))[0],
    "tf32": cuda.compile_ptx(mma_kernel(mma.mma_m16n8k8_tf32, np.float32), FLOATS, cc=(9, 0))[0],
    "helpers": cuda.compile_ptx(helpers, "void(float32[::1], uint16[::1], float32[:, ::1], uint32[:, ::1])",
                                cc=(9, 0))[0],
}
from numbakern.frontend.target import cuda_typing
from numbakern.kernels import matmul_tc as mt
from numbakern.kernels import matmul_wgmma as mw
for name, k, sig, cc in [
    ("matmul_bf16", mt.matmul_bf16_pipelined(**mt.PIPE_CONFIG), mt.SIGNATURE, (9, 0)),
    ("matmul_f16", mt.matmul_f16_pipelined(**mt.PIPE_CONFIG), mt.SIGNATURES[True], (9, 0)),
    ("matmul_bf16_plain", mt.matmul_bf16_plain(**mt.PLAIN_CONFIG), mt.SIGNATURE, (9, 0)),
    ("wgmma_sm90a", mw.matmul_wgmma(**mw.DEFAULT_CONFIG), mw.SIGNATURE, (9, 0, "a")),
]:
    with cuda_typing():  # (a kernel calling device functions asks for the device's cc: answered)
        out[name] = cuda.compile_ptx(k.py_func, sig, cc=cc, fastmath=True,
                                     launch_bounds=k.targetoptions.get("launch_bounds"))[0]
for count in (1, 2, 4):
    for trans in (False, True):
        name = f"ldmatrix_x{count}" + ("_trans" if trans else "")
        out[name] = cuda.compile_ptx(ldmatrix_kernel(getattr(mma, name), count), TILE, cc=(9, 0))[0]
json.dump(out, sys.stdout)
"""


@pytest.fixture(scope="module")
def ptx() -> dict[str, str]:
    # numba's real CUDA front end lowers to PTX without a GPU; unset, numbakern would pick its simulator here
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    r = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def _body(ptx: str) -> str:
    return "\n".join(line for line in ptx.splitlines() if not line.strip().startswith("//"))


@pytest.mark.parametrize("name, instruction", [
    ("bf16", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
    ("f16", "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
    ("tf32", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),
])
def test_mma_emits_the_instruction_with_register_operands(ptx, name, instruction):
    body = _body(ptx[name])
    found = re.findall(re.escape(instruction) + r" \{(%f\d+,%f\d+,%f\d+,%f\d+)\}, \{(%r\d+,%r\d+,%r\d+,%r\d+)\}, "
                       r"\{(%r\d+,%r\d+)\}, \{(%f\d+,%f\d+,%f\d+,%f\d+)\};", body)
    assert len(found) == 1, body
    assert not re.search(r"\b(?:ld|st)\.local\.", body)  # the fragments live in registers


@pytest.mark.parametrize("count", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True], ids=["plain", "trans"])
def test_ldmatrix_emits_the_instruction_with_a_shared_address(ptx, count, trans):
    name = f"ldmatrix_x{count}" + ("_trans" if trans else "")
    body = _body(ptx[name])
    instruction = f"ldmatrix.sync.aligned.m8n8.x{count}{'.trans' if trans else ''}.shared.b16"
    regs = ",".join([r"%r\d+"] * count)
    assert len(re.findall(re.escape(instruction) + r" \{" + regs + r"\}, \[%r\d+\];", body)) == 1, body
    assert not re.search(r"\b(?:ld|st)\.local\.", body)


def test_helpers_emit_the_conversions(ptx):
    body = _body(ptx["helpers"])
    for instruction in ("cvt.rn.bf16x2.f32", "cvt.rn.f16x2.f32", "cvt.rn.bf16.f32", "cvt.rn.f16.f32",
                        "cvt.rna.tf32.f32"):
        assert instruction in body, instruction
    assert len(re.findall(r"cvt\.rna\.tf32\.f32", body)) == 3  # f32_to_tf32 once, split_tf32 twice


@pytest.mark.parametrize("fmt", ["bf16", "f16"])
def test_pipelined_matmul_unrolls_its_k_tile_into_mma_ldmatrix_and_16_byte_copies(ptx, fmt):
    """128x128x32 block tile, four 64x64 warp tiles, 3 stages: per k-tile 2 k-steps x (4 A ldmatrix_x4 + 4 B
    ldmatrix_x4_trans + 32 mma), 8 cp.async of 16 bytes per thread (A and B tiles: 4 each) in the prologue's 2 tiles
    and in the steady state, every fragment and accumulator in registers."""
    body = _body(ptx[f"matmul_{fmt}"])
    assert len(re.findall(rf"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.{fmt}\.{fmt}\.f32", body)) == 64
    assert len(re.findall(r"ldmatrix\.sync\.aligned\.m8n8\.x4\.shared\.b16", body)) == 8
    assert len(re.findall(r"ldmatrix\.sync\.aligned\.m8n8\.x4\.trans\.shared\.b16", body)) == 8
    assert len(re.findall(r"cp\.async\.cg\.shared\.global \[%r\d+\], \[%rd\d+\], 16", body)) == 24
    assert not re.search(r"\b(?:ld|st)\.local\.", body)


def test_plain_matmul_keeps_fragments_in_registers(ptx):
    body = _body(ptx["matmul_bf16_plain"])
    assert re.search(r"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.bf16\.bf16\.f32", body)
    assert not re.search(r"\b(?:ld|st)\.local\.", body)


def test_hopper_matmul_is_wgmma_fed_by_tma(ptx):
    """The sm_90a kernel: four wgmma m64n256k16 per k-tile (B n-major: trans-b 1), TMA loads completing on mbarriers,
    register reallocation between the producer and consumer warpgroups, no local memory."""
    text = ptx["wgmma_sm90a"]
    assert re.search(r"^\.target sm_90a", text, re.M)
    body = _body(text)
    assert len(re.findall(r"wgmma\.mma_async\.sync\.aligned\.m64n256k16\.f32\.bf16\.bf16 .*, 1, 1, 0, 1;", body)) == 4
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes" in body
    assert "setmaxnreg.inc.sync.aligned.u32 232" in body and "setmaxnreg.dec.sync.aligned.u32 40" in body
    assert "mbarrier.try_wait.parity.shared::cta.b64" in body
    assert not re.search(r"\b(?:ld|st)\.local\.", body)


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas not installed")
def test_ptxas_assembles_every_kernel_for_sm_90(ptx, tmp_path):
    for name, text in ptx.items():
        p = tmp_path / f"{name}.ptx"
        # numba-cuda's NVVM may stamp a newer .version than this ptxas reads; these kernels use nothing newer
        p.write_text(re.sub(r"^\.version \d+\.\d+", ".version 8.0", text, count=1, flags=re.M))
        arch = "sm_90a" if name.endswith("sm90a") else "sm_90"
        r = subprocess.run(["ptxas", f"-arch={arch}", "-v", str(p), "-o", str(tmp_path / f"{name}.cubin")],
                           capture_output=True, text=True)
        assert r.returncode == 0, f"{name}: {r.stderr}"
        assert "0 bytes spill stores" in r.stdout + r.stderr, name
