"""``scripts/codegen.py``: what Numba and the translated C compile to, without a GPU. Its occupancy rule against
occupancies worked out by hand from the CUDA occupancy calculator's rules, its instruction counts on a hand-written
disassembly, and one real run against nvcc's own ``-Xptxas -v`` report of the same file."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests import environments
from tests.perf.test_bench_tools import ROOT, load


@pytest.fixture(scope="module")
def codegen():
    return load("codegen")


@pytest.mark.parametrize("threads, registers, shared, expected", [
    # 60 registers: 1920 per warp, allocated as 2048; 8 warps a block -> 16384 -> 4 blocks of 65536
    (256, 60, 9792, (4, "registers")),
    # 40 registers: 1280 per warp (5 units of 256) -> 10240 a block -> 6 blocks
    (256, 40, 9792, (6, "registers")),
    # 32 registers: 8 blocks by registers and by the 64-warp limit; the warp limit is named first
    (256, 32, 0, (8, "warps")),
    # 1024 threads of 58 registers: 2048 per warp * 32 warps = the whole register file
    (1024, 58, 256, (1, "registers")),
    # 213 registers: 6816 per warp, allocated as 6912; 4 warps -> 27648 -> 2 blocks (shared would allow 6)
    (128, 213, 32768, (2, "registers")),
    # 100000 B of shared memory (+ 1 KB the system reserves) in 233472 B -> 2 blocks
    (128, 32, 100000, (2, "shared memory")),
    # 48 threads are 2 warps; 16 registers -> 512 per warp -> 64 blocks by registers, 32 by the block limit
    (48, 16, 0, (32, "blocks")),
])
def test_theoretical_occupancy_follows_the_allocation_rules(codegen, threads, registers, shared, expected):
    assert codegen.occupancy(codegen.MULTIPROCESSORS["sm_90"], threads, registers, shared) == expected


def test_instruction_kinds_are_counted_from_a_disassembly(codegen):
    sass = """
        /*0000*/                   LDC R1, c[0x0][0x28] ;                          /* 0x00000a00ff017b82 */
        /*0010*/                   S2R R0, SR_TID.X ;
        /*0020*/              @!P0 BRA `(.L_x_1) ;
        /*0030*/                   IMAD.WIDE.U32 R2, R0, 0x4, R2 ;
        /*0040*/               @P1 LDG.E R4, desc[UR4][R2.64] ;
        /*0050*/                   FFMA R5, R4, R4, R5 ;
        /*0060*/                   FFMA.FTZ R6, R4, R5, R6 ;
        /*0070*/                   FMUL R7, R5, 0.5 ;
        /*0080*/                   LDS.128 R8, [R1] ;
        /*0090*/                   STL [R1+0x4], R8 ;
        /*00a0*/                   NOP ;
        /*00b0*/                   EXIT ;
    """
    assert codegen.sass_counts(sass) == {"total": 11, "FFMA": 2, "other fp32": 1, "integer": 1, "shared ld/st": 1,
                                         "global ld/st": 1, "local ld/st": 1}


def test_the_longest_loop_and_its_address_arithmetic_are_counted(codegen):
    sass = """
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   MOV R2, RZ ;
.L_x_0:
        /*0020*/                   LEA R4, P0, R0, R6, 0x1 ;
        /*0030*/                   LEA.HI.X R5, R0, R7, R1, 0x1, P0 ;
        /*0040*/                   NOP ;
        /*0050*/                   HMMA.16816.F32.BF16 R8, R12, R14, R8 ;
        /*0060*/                   IADD3 R2, R2, 0x1, RZ ;
        /*0070*/                   ISETP.GE.AND P1, PT, R2, R3, PT ;
        /*0080*/              @!P1 BRA `(.L_x_0) ;
        /*0090*/               @P2 BRA `(.L_x_1) ;
.L_x_2:
        /*00a0*/                   IADD3 R9, R9, 0x1, RZ ;
        /*00b0*/                   BRA `(.L_x_2) ;
.L_x_1:
        /*00c0*/                   EXIT ;
    """
    # the loop from .L_x_0 to its branch back: six instructions (the NOP left out), two of them LEA; the forward
    # branch to .L_x_1 is no loop, and the two-instruction spin at .L_x_2 is shorter
    assert codegen.sass_loop(sass) == {"loop": 6, "loop_lea": 2}
    assert codegen.sass_loop("        /*0000*/                   EXIT ;\n") == {"loop": 0, "loop_lea": 0}


def child_env() -> dict[str, str]:
    """This environment for a script's child: the checkout first on the path, a ``pip --target`` folder kept."""
    return environments.with_path_first({k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}, ROOT)


@pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("ptxas")), reason="needs nvcc and ptxas (no GPU)")
def test_a_run_reports_what_nvcc_itself_reports_for_the_translated_file(tmp_path):
    env = child_env()
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "codegen.py"), "vector_add", "conv2d_5x5",
                        "--out", str(tmp_path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    rows, provenance = load("benchkit").read_csv(tmp_path / "codegen.csv")
    assert "scripts/codegen.py vector_add conv2d_5x5" in provenance
    assert [(row["kernel"], row["compiler"]) for row in rows] == [
        ("vector_add", "Numba"), ("vector_add", "C (nvcc)"), ("conv2d_5x5", "Numba"), ("conv2d_5x5", "C (nvcc)")]
    manifest = json.loads((ROOT / "generated_cuda" / "manifest.json").read_text())["files"]
    for row in rows[1::2]:
        cu = ROOT / "generated_cuda" / f"{row['kernel']}.cu"
        flags = manifest[cu.name]["build"]["nvcc_flags"]
        own = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", *flags, "-Xptxas", "-v", str(cu), "-o",
                              str(tmp_path / "k.cubin")], capture_output=True, text=True, check=True).stderr
        assert int(row["registers"]) == int(re.search(r"Used (\d+) registers", own).group(1)), row
        assert int(row["spill_stores"]) == int(re.search(r"(\d+) bytes spill stores", own).group(1)), row
    conv = rows[2:]
    # conv2d_5x5's shared tile: (8 * 8 + 4) rows of (32 + 4) floats, static, and blocks of 32 x 8 threads
    assert {int(row["shared_bytes"]) for row in conv} == {68 * 36 * 4}
    assert {row["threads"] for row in conv} == {"256"}
    assert all(int(row["registers"]) > 0 for row in rows)
    assert (tmp_path / "codegen.md").read_text().startswith(provenance)


def test_the_change_table_puts_the_c_before_and_after_beside_numba(codegen):
    def row(kernel, compiler, registers, stores, loads):
        return {"kernel": kernel, "compiler": compiler, "registers": str(registers), "spill_stores": str(stores),
                "spill_loads": str(loads)}

    before = [row("attn", "Numba", 168, 16, 20), row("attn", "C (nvcc)", 168, 172, 172),
              row("mm", "Numba", 120, 0, 0), row("mm", "C (nvcc)", 127, 0, 0), row("mm", "C (nvcc)", 100, 0, 0)]
    after = [row("attn", "Numba", 168, 16, 20), row("attn", "C (nvcc)", 168, 0, 0),
             row("mm", "Numba", 120, 0, 0), row("mm", "C (nvcc)", 125, 0, 0), row("mm", "C (nvcc)", 96, 4, 8),
             row("new", "Numba", 30, 0, 0), row("new", "C (nvcc)", 28, 0, 0)]
    md = codegen.change_table(before, after, "Compiled for sm_90 on 2026-11-26 with x.")
    lines = md.splitlines()
    assert lines[0] == "Before: Compiled for sm_90 on 2026-11-26 with x."
    assert "| attn | 168 | 16 / 20 | 168 | 172 / 172 | 168 | 0 / 0 |" in lines
    # one line per instantiation, matched in order; a kernel the earlier run did not have: empty cells
    assert "| mm | 120 | 0 / 0 | 127 | 0 / 0 | 125 | 0 / 0 |" in lines
    assert "| mm | 120 | 0 / 0 | 100 | 0 / 0 | 96 | 4 / 8 |" in lines
    assert "| new | 30 | 0 / 0 |  |  | 28 | 0 / 0 |" in lines
