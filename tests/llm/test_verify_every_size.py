"""``--verify`` in the repair loop verifies a reply on every verification size and seed before it is written.

A reply for ``vector_add`` that is right below 70,000 elements and wrong above passes the quick verification that
gates a repair turn (the spec's three smallest sizes: 1, 1000 and 65537 elements, one seed) and must still be caught
before the write by the full one (3 seeds × every size, 786,449 elements included): the model is told, and only its
repair is written.

No GPU here, so the pipeline runs in a process of its own (as the ``translate`` command does) with a stand-in for
the GPU stage: the candidate's own device code, compiled by g++ with CUDA's built-in variables as globals and run
thread by thread over each case's grid, compared with the spec's float64 reference. Everything else is the real
path: the scripted model server, the gate, NVRTC in its sandbox, the backend's quick-then-full verification, the
manifest write.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from numbakern import get
from translate.verify.cases import DEFAULT_SEEDS, smallest_sizes

from . import hostile
from .server import completion

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ for the CPU stand-in of the GPU")

#: right below 70,000 elements, zero above
WRONG_ABOVE_70000 = hostile.reply(hostile.KERNEL.replace("out[i] = a[i] + b[i];",
                                                         "out[i] = i < 70000 ? a[i] + b[i] : 0.0f;"))

DRIVER = r'''
import ctypes, json, os, subprocess, sys, tempfile
os.environ["NUMBA_ENABLE_CUDASIM"] = "0"  # the pipeline in this process, as the translate command runs it
import numpy as np
from numbakern.compare import compare
from translate import api, candidates
from translate.verify.cases import cases_for
from translate.verify.harness import CaseResult, VerifyResult

SHIM = """
#include <stdint.h>
struct nk_dim3 { unsigned x, y, z; };
static nk_dim3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__ static
#define __device__ static
#define __restrict__
"""
RUN = """
extern "C" void run(const float* a, const float* b, float* out, int64_t n, unsigned grid, unsigned block) {
    gridDim = {grid, 1, 1}; blockDim = {block, 1, 1};
    for (unsigned g = 0; g < grid; ++g)
        for (unsigned t = 0; t < block; ++t) {
            blockIdx = {g, 0, 0}; threadIdx = {t, 0, 0};
            vector_add(a, n, b, n, out, n);
        }
}
"""
asked = []


def cpu_stage(spec, candidate, *, seeds, sizes=None, limits=None, **kw):
    """The GPU stage on the CPU: the candidate's device code (between its #line markers) run thread by thread."""
    text = candidate.cu.read_text()
    code = text.split('#line 1 "candidate.cu"\n', 1)[1].split('#line 1 "numbakern-project.cu"', 1)[0]
    sizes = [dict(s) for s in (sizes if sizes is not None else spec.verify_sizes)]
    asked.append({"seeds": list(seeds), "sizes": sizes})
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "k.cpp"), "w") as f:
            f.write(SHIM + code + RUN)
        subprocess.run(["g++", "-O1", "-shared", "-fPIC", "-o", os.path.join(tmp, "k.so"),
                        os.path.join(tmp, "k.cpp")], check=True)
        lib = ctypes.CDLL(os.path.join(tmp, "k.so"))
    p = ctypes.POINTER(ctypes.c_float)
    lib.run.argtypes = [p, p, p, ctypes.c_int64, ctypes.c_uint, ctypes.c_uint]
    result = VerifyResult(spec.name, "launch_vector_add", str(candidate.cu), "", ok=False)
    for size, seed, dist, case in cases_for(spec, seeds, sizes):
        a, b, out = (x.copy() for x in case.args)
        lib.run(a.ctypes.data_as(p), b.ctypes.data_as(p), out.ctypes.data_as(p), out.size,
                case.launch.grid[0], case.launch.block[0])
        cmp = compare(out, spec.reference(*case.args)[2], scale=spec.error_scale(*case.args)[2], rtol=spec.rtol)
        result.cases.append(CaseResult(spec.name, size, seed, dist, cmp.ok, [] if cmp.ok else ["vs_numba"],
                                       cmp.max_abs_error, cmp.max_rel_error, [f"vs_numba: {cmp}"],
                                       list(cmp.first_mismatches)))
    result.ok = all(c.ok for c in result.cases)
    return result


candidates.verify = cpu_stage
candidates.verification_problem = lambda: ""  # the stand-in is this run's GPU: verification can run
job = json.loads(sys.argv[1])
api.translate_kernel("vector_add", backend="llm", out_dir=job["out"], backend_options=job["options"], verify=True)
print(json.dumps(asked))
'''


def test_a_reply_wrong_only_on_large_inputs_is_caught_before_the_write(llm_env, tmp_path):
    llm_env.script(completion(WRONG_ABOVE_70000), completion(hostile.GOOD))
    out = tmp_path / "generated"
    job = {"out": str(out), "options": {"model": "scripted-model", "base_url": None, "max_turns": 2,
                                         "timeout": 60.0, "max_retries": 0}}
    run = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(job)], capture_output=True, text=True,
                         env=dict(os.environ), cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    asked = json.loads(run.stdout.strip().splitlines()[-1])

    spec = get("vector_add")
    quick = {"seeds": [0], "sizes": smallest_sizes(spec, 3)}
    full = {"seeds": list(DEFAULT_SEEDS), "sizes": [dict(s) for s in spec.verify_sizes]}
    assert max(s["n"] for s in quick["sizes"]) < 70_000 < max(s["n"] for s in full["sizes"])
    # the wrong reply passed the quick check, failed the full one; its repair passed both, then was written
    assert asked == [quick, full, quick, full], asked

    assert len(llm_env.requests) == 2
    told = llm_env.requests[1].messages[-1]["content"]
    assert "differ from the Numba kernel" in told and f"n={spec.verify_sizes[-1]['n']}" in told, told
    written = (out / "vector_add.cu").read_text()
    assert "70000" not in written and "out[i] = a[i] + b[i];" in written
    entry = json.loads((out / "manifest.json").read_text())["files"]["vector_add.cu"]
    assert entry["backend"]["turns"] == 2
