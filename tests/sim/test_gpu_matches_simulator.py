"""What passes in the simulator computes the same on a GPU: every registered library kernel (and the fidelity
kernels of ``fidelity_kernels``) run in the simulator and on the GPU on the same inputs.

Integer and boolean outputs must be bit-identical. Float outputs must be equal too, unless the kernel's PTX has
fused multiply-adds (``fma.rn``: NVVM contracts ``a * b + c`` by default, rounding once where the simulator rounds
twice), float atomics (their order differs run to run) or tensor-core instructions (``mma``/``wgmma``: the
simulator sums exactly and rounds once, the hardware's internal order and width are not documented; bit-identical
only where the exact sum is a float32, as ``tests/mma/test_mma_gpu.py`` checks, docs/tensor-cores.md): those are
held to the kernel's tolerance instead.

The GPU test needs a GPU: ``pytest --gpu tests/sim/test_gpu_matches_simulator.py``. The simulator half runs in a
helper process (``python -m numbakern.sim.replay``), since a process that has a GPU cannot switch numba to the
simulator. It is one test per kernel: all of them in one test simulated for minutes in one process, the longest
test of ``pytest --gpu -n auto``, where one test per kernel spreads over the xdist workers.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from numbakern import all_specs, run_case
from numbakern.sim.replay import case_for, inputs_checksum, save_case
from numbakern.specialize import constants_of

from . import fidelity_kernels

SEED = 20261201
FIDELITY_MODULE = "tests.sim.fidelity_kernels"


def _cases():
    cases = []
    for spec in all_specs():
        for k, size in enumerate(spec.test_sizes):
            if spec.accepts(size):
                cases.append({"name": spec.name, "size": dict(size), "seed": SEED + k, "dist": "normal"})
    for name, spec in fidelity_kernels.SPECS.items():
        for k, size in enumerate(spec.test_sizes):
            cases.append({"name": name, "size": dict(size), "seed": SEED + k, "dist": "normal",
                          "module": FIDELITY_MODULE})
    return cases


@pytest.mark.sim
@pytest.mark.parametrize("name", sorted(fidelity_kernels.SPECS))
def test_fidelity_kernels_compute_their_references_in_the_simulator(name):
    spec = fidelity_kernels.SPECS[name]
    for k, size in enumerate(spec.test_sizes):
        case = case_for(spec, size, SEED + k, "normal")
        expected = spec.reference(*case.args)
        outputs = run_case(spec, case)
        for j in spec.outputs:
            np.testing.assert_array_equal(outputs[j], expected[j], err_msg=f"{name} output {j}, seed {SEED + k}")


def _simulator_outputs(cases, tmp_path) -> dict:
    cases_file, out_file = tmp_path / "cases.json", tmp_path / "outputs.npz"
    cases_file.write_text(json.dumps(cases))
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    done = subprocess.run([sys.executable, "-m", "numbakern.sim.replay", str(cases_file), str(out_file)], env=env,
                          cwd=root, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-4000:]
    with np.load(out_file) as data:
        return {k: data[k] for k in data.files}


def _ptx(kernel) -> str:
    asm = kernel.inspect_asm()
    return "\n".join(asm.values()) if isinstance(asm, dict) else str(asm)


_FLOAT_ATOMIC = re.compile(r"\b(?:atom|red)\.[\w.]*\.f(?:16|32|64)\b")
_TENSOR_CORE = re.compile(r"\b(?:mma\.sync|wgmma\.mma_async)\b")


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted({c["name"] for c in _cases()}))
def test_the_simulator_computes_what_the_gpu_computes(name, tmp_path):
    from numbakern.sim.replay import spec_for

    cases = [c for c in _cases() if c["name"] == name]
    # the GPU's own cases go to the simulator whole: a launch (and the workspace sized for it) depends on the device
    built = []
    for i, c in enumerate(cases):
        spec = spec_for(c)
        case = case_for(spec, c["size"], c["seed"], c["dist"])
        c["args"] = str(tmp_path / f"case{i}.npz")
        c["constants"] = constants_of(spec.kernel)
        save_case(case, c["args"])
        built.append((spec, case))
    simulated = _simulator_outputs(cases, tmp_path)
    report, failures = [], []
    for i, (c, (spec, case)) in enumerate(zip(cases, built)):
        assert (inputs_checksum(case) == simulated[f"{i}:inputs"]).all(), f"{c}: the two processes built other inputs"
        on_gpu = run_case(spec, case)
        ptx = _ptx(spec.kernel)
        contracted, float_atomics = "fma.rn" in ptx, bool(_FLOAT_ATOMIC.search(ptx))
        tensor_cores = bool(_TENSOR_CORE.search(ptx))
        for j in spec.outputs:
            sim_out, gpu_out = simulated[f"{i}:{j}"], np.asarray(on_gpu[j])
            exact_required = gpu_out.dtype.kind in "iub" or not (contracted or float_atomics or tensor_cores)
            if exact_required:
                same = sim_out.shape == gpu_out.shape and np.array_equal(sim_out, gpu_out, equal_nan=True)
                how = "bit-identical"
            else:
                gpu_all = {k: np.asarray(v) for k, v in on_gpu.items()}
                same = spec.check(case, {**gpu_all, j: sim_out})[j].ok and spec.check(case, gpu_all)[j].ok
                how = "both within the kernel's tolerance (" + ", ".join(
                    w for w, on in (("FMA contraction", contracted), ("float atomics", float_atomics),
                                  ("tensor cores", tensor_cores)) if on) + ")"
            report.append(f"{spec.name} {c['size']} output {j}: {how}: {'ok' if same else 'DIFFERENT'}")
            if not same:
                diff = np.argwhere(sim_out != gpu_out)[:5].tolist() if sim_out.shape == gpu_out.shape else "shape"
                failures.append(f"{spec.name} {c['size']} seed {c['seed']} output {j} ({how}): differs at {diff}")
    print("\n".join(report))
    assert not failures, "\n".join(failures)


@pytest.mark.sim
def test_a_case_passed_whole_is_the_same_case(tmp_path):
    """What the GPU test hands the simulator process: every library kernel's case, arguments and launch, back as
    it was (array bytes, dtypes, shapes, scalar types)."""
    from numbakern.sim.replay import load_case

    for k, spec in enumerate(all_specs()):
        case = case_for(spec, spec.test_sizes[-1], SEED + k, "normal")
        save_case(case, str(tmp_path / "case.npz"))
        back = load_case(str(tmp_path / "case.npz"))
        assert (inputs_checksum(back) == inputs_checksum(case)).all(), spec.name
        assert back.launch == case.launch and dict(back.size) == dict(case.size), spec.name
        assert [type(a) for a in back.args] == [type(a) for a in case.args], spec.name
