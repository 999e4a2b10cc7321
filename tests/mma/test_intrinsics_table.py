"""The instruction table (numbakern/intrinsics): one declaration per instruction, read by every backend.

The PTX operand numbering is checked against the PTX ISA's (outputs first, then the inputs in the instruction's
order), the typing rule against what it must refuse, and what an instruction touches against its definition."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from numba.core import types

from numbakern import async_copy, mma, vector_io
from numbakern.intrinsics import OPS, hopper, memory, op_of, tensorcore, warp
from numbakern.mma import hopper as hopper_module

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_every_instruction_is_declared_once_and_is_what_its_module_exports():
    assert len(OPS) == len({op.qualname for op in OPS.values()})
    for module, declared in ((mma, tensorcore.OPS), (vector_io, (memory.VLOAD4, memory.VSTORE4)),
                             (async_copy, memory.OPS[2:]), (hopper_module, hopper.OPS)):
        for op in declared:
            assert getattr(module, op.name) is op.function and op_of(op.function) is op, op.name
            assert op.function.__module__ == module.__name__ == op.module


def test_the_ptx_operands_are_numbered_as_the_ptx_isa_orders_them():
    bf16 = tensorcore.MMA["m16n8k16.bf16"]
    assert bf16.ptx_text({}) == ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {$0,$1,$2,$3}, "
                                 "{$4,$5,$6,$7}, {$8,$9}, {$10,$11,$12,$13};")
    assert bf16.ptx_text({}, "c").endswith("{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};")
    assert tensorcore.LDMATRIX["ldmatrix_x2_trans"].ptx_text({}) == \
        "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {$0,$1}, [$2];"
    # cvt.rn.bf16x2.f32 d, a, b puts a in the upper half: hi is the first source
    assert tensorcore.PACK_BF16X2.ptx_text({}) == "cvt.rn.bf16x2.f32 $0, $1, $2;"
    assert [o.name for o in tensorcore.PACK_BF16X2.operands] == ["hi", "lo"]
    # an immediate is written into the text for LLVM, and is an "n" operand in C
    assert memory.ASYNC_WAIT.ptx_text({"n": types.IntegerLiteral(2)}) == "cp.async.wait_group 2;"
    assert memory.ASYNC_WAIT.ptx_text({}, "c") == "cp.async.wait_group %0;"
    # wgmma: the accumulators out, the same registers in (tied), then the descriptors and scale_d
    wgmma = hopper.WGMMA["wgmma_m64n64k16_bf16"]
    text = wgmma.ptx_text({"trans_b": types.IntegerLiteral(1)})
    assert text.startswith("{ .reg .pred p; setp.ne.b32 p, $66, 0; wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.")
    assert "{" + ",".join(f"${q}" for q in range(32)) + "}, $64, $65, p, 1, 1, 0, 1; }" in text


def test_the_typing_rule_names_the_argument_and_what_it_must_be():
    regs = types.Array(types.float32, 1, "C")
    u32 = types.Array(types.uint32, 1, "C")
    op = tensorcore.MMA["m16n8k16.bf16"]
    assert op.typing(types, TypeError, (regs, types.int64, u32, types.int64, u32, types.int64, regs,
                                        types.int64)) == types.void
    with pytest.raises(TypeError, match="mma_m16n8k16_bf16: a must be a 1-D uint32 array .* got array"):
        op.typing(types, TypeError, (regs, types.int64, regs, types.int64, u32, types.int64, regs, types.int64))
    with pytest.raises(TypeError, match="takes 8 argument"):
        op.typing(types, TypeError, (regs,))
    tile = types.Array(types.uint16, 2, "C")
    with pytest.raises(TypeError, match=r"the index into smem must be 2 integer\(s\)"):
        tensorcore.LDMATRIX["ldmatrix_x4"].typing(types, TypeError, (u32, types.int64, tile, types.int64))
    with pytest.raises(TypeError, match="async_wait: n must be a non-negative compile-time integer"):
        memory.ASYNC_WAIT.typing(types, TypeError, (types.int64,))
    with pytest.raises(TypeError, match="trans_b must be one of 0, 1"):
        hopper.WGMMA["wgmma_m64n64k16_f16"].typing(types, TypeError, (
            regs, types.uint64, types.uint64, types.int32, types.IntegerLiteral(2)))
    assert tensorcore.SPLIT_TF32.typing(types, TypeError, (types.float64,)) == types.UniTuple(types.float32, 2)


def test_what_an_instruction_touches():
    tile = np.zeros((16, 16), np.uint16)
    x4 = tensorcore.LDMATRIX["ldmatrix_x2"]
    regs = np.zeros(4, np.uint32)
    assert x4.accesses((regs, 0, tile, (3, 8)), lane=15) == (("shared", "ld", tile, (3, 8), 16),)
    assert x4.accesses((regs, 0, tile, (3, 8)), lane=16) == (("shared", "ld", tile, None, 0),)
    src, dst = np.zeros((4, 8), np.uint16), np.zeros((4, 8), np.uint16)
    copy = memory.COPY_ASYNC16
    assert copy.accesses((dst, (1, 0), src, 8, True)) == (("global", "ld", src, 8, 16), ("shared", "st", dst, (1, 0),
                                                                                          16))
    assert copy.accesses((dst, (1, 0), src, 8, False))[0] == ("global", "ld", src, None, 0)
    assert memory.COPY_ASYNC.accesses((dst, (1, 0), src, 8, True))[1].nbytes == 2  # one element
    assert memory.VLOAD4.accesses((src, (0, 4), regs, 0)) == ((None, "ld", src, (0, 4), 16),)
    counts = np.zeros(3, np.int64)
    add = next(op for op in warp.ATOMIC if op.name == "atomic.add")
    assert add.accesses((counts, 2, 1)) == ((None, "atom", counts, 2, 8),)
    assert tensorcore.MMA["m16n8k16.bf16"].accesses((regs,) * 8) == ()
    assert tensorcore.MMA["m16n8k16.bf16"].flops() == {"tensor_bf16": 2 * 16 * 8 * 16}
    assert tensorcore.MMA["m16n8k8.tf32"].flops() == {"tensor_tf32": 2 * 16 * 8 * 8}


PROBE = """
import json, os, sys
import numbakern.mma as mma
from numbakern.intrinsics import op_of
if os.environ["NUMBA_ENABLE_CUDASIM"] == "0":
    import translate.codegen.builtins  # the whole code generator (it needs numba's real CUDA target)
print(json.dumps({"module": mma.mma_m16n8k16_bf16.__module__, "op": op_of(mma.mma_m16n8k16_bf16).qualname,
                  "simulator": sorted(m for m in sys.modules if m.startswith("numbakern.sim"))}))
"""


@pytest.mark.parametrize("simulator", ["0", "1"])
def test_one_object_per_instruction_in_either_mode_and_the_code_generator_loads_no_simulator(simulator):
    """The same function whichever target the process has (nothing is chosen at import); with numba's real target
    (where translate runs) importing the code generator loads nothing of the simulator."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM=simulator)
    r = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    found = json.loads(r.stdout.strip().splitlines()[-1])
    assert found["module"] == "numbakern.mma" and found["op"] == "numbakern.mma.mma_m16n8k16_bf16"
    if simulator == "0":
        assert found["simulator"] == [], found["simulator"]
