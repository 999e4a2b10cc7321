"""On a GPU (``pytest --gpu tests/hopper/test_gpu.py``): the Hopper test kernels and the registered wgmma matmul
compute in the simulator what they compute on the GPU.

Bit for bit where nothing depends on the tensor cores' internal order: the TMA copies (every swizzle, boxes past
the tensor's edges), and every wgmma whose inputs are small integers (each sum exact in float32). Elsewhere (random
normal operands) the simulator rounds each exact sum once and the hardware's internal order and width are not
documented: those outputs are held to a few units in the last place of their largest element, and the test prints
how many elements agree exactly.
The simulator's half runs in a process of its own (``python -m tests.hopper.gpu_cases``): a process with a GPU cannot
switch numba to the simulator."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from tests.hopper import gpu_cases

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.gpu
def test_the_simulator_computes_what_the_gpu_computes(tmp_path):
    from numba import cuda

    if tuple(cuda.get_current_device().compute_capability) != (9, 0):
        pytest.skip("needs a GPU of compute capability 9.0 (wgmma, TMA: sm_90a)")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    env["PYTHONPATH"] = os.pathsep.join([ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    out = tmp_path / "sim.npz"
    done = subprocess.run([sys.executable, "-m", "tests.hopper.gpu_cases", str(out)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-4000:]
    simulated = dict(np.load(out))
    report, failures = [], []
    for name in gpu_cases.NAMES:
        for i, gpu in gpu_cases.run(name).items():
            sim = simulated[f"{name}:{i}"]
            same = np.array_equal(gpu.view(np.uint8), sim.view(np.uint8))
            if name in gpu_cases.EXACT:
                report.append(f"{name}: {'bit-identical' if same else 'DIFFERENT'}")
                if not same:
                    failures.append(f"{name} output {i}: differs at {np.argwhere(gpu != sim)[:5].tolist()}")
                continue
            # the sums' order inside the tensor cores is not documented: an element that cancels to near zero may
            # differ by many of its own ulps, so the bound is on the output's scale (units in the last place of its
            # largest element; measured on an H200, 2026-11-29: at most 1)
            scale = np.spacing(np.float32(np.abs(sim).max()))
            apart = float(np.abs(gpu.astype(np.float64) - sim.astype(np.float64)).max() / scale)
            report.append(f"{name}: {np.mean(gpu == sim):.1%} of elements bit-identical, at most {apart:g} ulp of "
                          "the largest element apart")
            if apart > 8:
                failures.append(f"{name} output {i}: {apart:g} units in the last place of its largest element apart")
    print("\n".join(report))
    assert not failures, "\n".join(failures)
