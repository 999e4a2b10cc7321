"""GPU tests (marked ``gpu``, skipped without one): the planted-defect suite, deployability without Numba, the
PyTorch binding; and the check, without a GPU, that a registered kernel with no generated file fails them.

Run on the GPU machine with ``pytest --gpu tests/verify``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .conftest import DEFECTS_DIR

ROOT = Path(__file__).resolve().parents[2]

#: defect file -> (registered kernel it claims to implement, the check that must reject it; None = must pass)
DEFECTS = {
    "matmul_tiled.cu": ("matmul_tiled", None),
    "matmul_tiled_unwritten_output.cu": ("matmul_tiled", "vs_numba"),
    "matmul_tiled_first_row_only.cu": ("matmul_tiled", "vs_numba"),
    "matmul_tiled_uninit_shared.cu": ("matmul_tiled", "vs_numba"),
    "matmul_tiled_race_missing_sync.cu": ("matmul_tiled", "sanitizer:racecheck"),
    "matmul_tiled_half_precision.cu": ("matmul_tiled", "vs_numba"),
    "matmul_tiled_hardcoded_shape.cu": ("matmul_tiled", "vs_numba"),
    "vector_add.cu": ("vector_add", None),
    "vector_add_input_mutation.cu": ("vector_add", "inputs"),
    "block_sum.cu": ("block_sum", None),
}
#: which candidates also get compute-sanitizer (the race needs racecheck; the correct one must pass it)
SANITIZE = {"matmul_tiled.cu": ("memcheck", "racecheck", "initcheck", "synccheck"),
            "matmul_tiled_race_missing_sync.cu": ("racecheck",)}

def _log_dir() -> Path | None:
    d = os.environ.get("NUMBAKERN_VERIFY_LOG")
    return Path(d) if d else None


@pytest.fixture(scope="module")
def built(fixture_launchers):
    from translate.verify.build import build_many
    from translate.verify.driver import device_info

    return build_many([DEFECTS_DIR / f for f in DEFECTS], arch=device_info()["arch"])


@pytest.mark.gpu
@pytest.mark.parametrize("file", list(DEFECTS))
def test_planted_defects_are_rejected_and_the_translation_accepted(file, built, fixture_launchers, run_store):
    from numbakern.registry import get
    from translate.verify.harness import Candidate, verify
    from translate.verify.report import result_block

    kernel, must_fail = DEFECTS[file]
    spec = get(kernel)
    result = verify(spec, Candidate(DEFECTS_DIR / file, fixture_launchers[kernel], label=Path(file).stem),
                    sanitize=SANITIZE.get(file, False))
    failing = result.failed_checks()
    # every worker's results so far (each worker runs some of the files): the last test to write has them all
    run_store.record("defect-summary", file, json.loads(json.dumps(
        {"kernel": kernel, "expected": must_fail or "accept", "ok": result.ok, "cases": len(result.cases),
         "failed_cases": result.n_failed, "failing_checks": failing, "sanitizer": result.sanitizer,
         "error": result.error}, default=str)))
    print(result_block(result))
    if _log_dir():
        _log_dir().mkdir(parents=True, exist_ok=True)
        summary = dict(sorted(run_store.records("defect-summary").items()))
        tmp = _log_dir() / f".defects.json.{os.getpid()}"
        tmp.write_text(json.dumps(summary, indent=2))
        os.replace(tmp, _log_dir() / "defects.json")
        with open(_log_dir() / "cases.log", "a") as f:
            f.write(f"\n### defect suite: {file}\n{result_block(result, verbose=True)}\n")
    assert not result.error, result.error
    if must_fail is None:
        assert result.ok, result_block(result)
    else:
        assert not result.ok, f"{file}: the planted defect was accepted"
        assert must_fail in failing, f"{file}: expected {must_fail} to reject it, failing checks were {failing}"


def _generated_candidates(directory: Path = ROOT / "generated_cuda", names=None):
    """``(spec, Candidate)`` for every registered kernel (or those named), from ``directory``; a kernel whose
    ``.cu`` does not resolve (no manifest entry, a missing file, no launcher for its constants) fails the test."""
    from numbakern.registry import all_specs, get
    from translate.verify.abi import AbiError
    from translate.verify.cli import candidate_for

    found, missing = [], []
    for spec in [get(n) for n in names] if names else all_specs():
        try:
            found.append((spec, candidate_for(spec, directory)[1]))
        except (LookupError, AbiError) as exc:
            why = str(exc)
            missing.append(why if why.startswith(f"{spec.name}:") else f"{spec.name}: {why}")
    assert not missing, "registered kernels without a usable generated .cu:\n" + "\n".join(missing)
    return found


def test_a_registered_kernel_without_its_generated_file_fails(tmp_path):
    # kernels without compile-time constants: their launcher does not depend on the simulator's small configs
    names = ["vector_add", "matmul_tiled", "transpose"]
    assert [spec.name for spec, _ in _generated_candidates(names=names)] == names
    shutil.copytree(ROOT / "generated_cuda", tmp_path, dirs_exist_ok=True)
    (tmp_path / "vector_add.cu").unlink()
    missing = r"without a usable generated \.cu:\n\s*vector_add: .*vector_add\.cu is listed in the manifest but missing"
    with pytest.raises(AssertionError, match=missing):
        _generated_candidates(tmp_path, names)


@pytest.mark.gpu
def test_each_cu_runs_through_ctypes_without_numba(tmp_path, rng):
    """The deployable path: nvcc -shared + ctypes in a process that never imports numba."""
    from translate.verify.standalone import write_case

    paths = []
    for spec, cand in _generated_candidates():
        size = sorted(spec.verify_sizes, key=lambda s: -int(np.prod(list(s.values()))))[-2]  # small, not trivial
        case = spec.make_case(size, rng, "normal")
        scale = spec.error_scale(*case.args) if spec.error_scale else None
        p = tmp_path / f"{spec.name}.npz"
        write_case(p, cu=cand.cu.resolve(), launcher=cand.launcher, nvcc_flags=cand.nvcc_flags, case=case,
                   expected=spec.reference(*case.args),
                   scale=scale, rtol=spec.rtol, atol=spec.atol, outputs=spec.outputs)
        paths.append(str(p))
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-m", "translate.verify.standalone", *paths], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=600, check=False)
    print(proc.stdout, proc.stderr)
    if _log_dir():
        (_log_dir() / "deploy.log").write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"numba_imported": False, "cases": len(paths),
                                                                "ok": True}


@pytest.mark.gpu
def test_pytorch_binding_runs_the_launcher_on_a_torch_stream(fixture_launchers, rng):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    from translate.verify.build import build_shared_library
    from translate.verify.driver import device_info
    from translate.verify.torch_binding import torch_launcher

    so = build_shared_library(DEFECTS_DIR / "matmul_tiled.cu", arch=device_info()["arch"])
    matmul = torch_launcher(str(so), fixture_launchers["matmul_tiled"])
    torch.backends.cuda.matmul.allow_tf32 = False
    h, k, w, tw = 300, 517, 129, 16
    a = torch.from_numpy(rng.standard_normal((h, k), dtype=np.float32)).cuda()
    b = torch.from_numpy(rng.standard_normal((k, w), dtype=np.float32)).cuda()
    out = torch.full((h, w), float("nan"), device="cuda")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        matmul(a, b, out, tw, grid=((w + tw - 1) // tw, (h + tw - 1) // tw), block=(tw, tw),
               shared_bytes=2 * tw * tw * 4)
    stream.synchronize()
    expected = (a.double() @ b.double())
    scale = a.double().abs() @ b.double().abs()
    assert torch.all((out.double() - expected).abs() <= 1e-5 * scale)
    with pytest.raises(TypeError, match="CUDA tensor"):
        matmul(a.cpu(), b, out, tw, grid=(1, 1), block=(tw, tw))
