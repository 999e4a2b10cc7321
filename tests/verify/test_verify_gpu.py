"""GPU tests (skipped without one): the planted-defect suite, deployability without Numba, the PyTorch binding.

Run on the GPU machine with ``pytest -p numbakern.pytest_plugin --gpu tests/verify``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .conftest import DEFECTS_DIR

pytestmark = pytest.mark.gpu

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

_summary: dict[str, dict] = {}


def _log_dir() -> Path | None:
    d = os.environ.get("NUMBAKERN_VERIFY_LOG")
    return Path(d) if d else None


@pytest.fixture(scope="module")
def built(fixture_launchers):
    from translate.verify.build import build_many
    from translate.verify.driver import device_info

    return build_many([DEFECTS_DIR / f for f in DEFECTS], arch=device_info()["arch"])


@pytest.mark.parametrize("file", list(DEFECTS))
def test_planted_defects_are_rejected_and_the_translation_accepted(file, built, fixture_launchers):
    from numbakern.registry import get
    from translate.verify.harness import Candidate, verify
    from translate.verify.report import result_block

    kernel, must_fail = DEFECTS[file]
    spec = get(kernel)
    result = verify(spec, Candidate(DEFECTS_DIR / file, fixture_launchers[kernel], label=Path(file).stem),
                    sanitize=SANITIZE.get(file, False))
    failing = result.failed_checks()
    _summary[file] = {"kernel": kernel, "expected": must_fail or "accept", "ok": result.ok, "cases": len(result.cases),
                      "failed_cases": result.n_failed, "failing_checks": failing, "sanitizer": result.sanitizer,
                      "error": result.error}
    print(result_block(result))
    if _log_dir():
        _log_dir().mkdir(parents=True, exist_ok=True)
        (_log_dir() / "defects.json").write_text(json.dumps(_summary, indent=2, default=str))
        with open(_log_dir() / "cases.log", "a") as f:
            f.write(f"\n### defect suite: {file}\n{result_block(result, verbose=True)}\n")
    assert not result.error, result.error
    if must_fail is None:
        assert result.ok, result_block(result)
    else:
        assert not result.ok, f"{file}: the planted defect was accepted"
        assert must_fail in failing, f"{file}: expected {must_fail} to reject it, failing checks were {failing}"


def _candidates_for_deploy(fixture_launchers):
    """Every generated kernel listed in the manifest, else the hand-written fixtures."""
    from numbakern.registry import all_specs
    from translate.verify.cli import candidate_for
    from translate.verify.harness import Candidate

    out = []
    for spec in all_specs():
        try:
            out.append((spec, candidate_for(spec)[1]))
        except Exception:  # noqa: BLE001 - not generated yet
            continue
    if not out:
        from numbakern.registry import get

        out = [(get(k), Candidate(DEFECTS_DIR / f"{k}.cu", fixture_launchers[k])) for k in ("matmul_tiled", "vector_add")]
    return out


def test_each_cu_runs_through_ctypes_without_numba(tmp_path, fixture_launchers):
    """The deployable path: nvcc -shared + ctypes in a process that never imports numba."""
    from translate.verify.standalone import write_case

    paths = []
    for spec, cand in _candidates_for_deploy(fixture_launchers):
        size = sorted(spec.verify_sizes, key=lambda s: -int(np.prod(list(s.values()))))[-2]  # small, not trivial
        case = spec.make_case(size, np.random.default_rng(7), "normal")
        scale = spec.error_scale(*case.args) if spec.error_scale else None
        p = tmp_path / f"{spec.name}.npz"
        write_case(p, cu=cand.cu.resolve(), launcher=cand.launcher, nvcc_flags=cand.nvcc_flags, case=case,
                   expected=spec.reference(*case.args),
                   scale=scale, rtol=spec.rtol, atol=spec.atol, outputs=spec.outputs)
        paths.append(str(p))
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-m", "translate.verify.standalone", *paths], capture_output=True,
                          text=True, env=env, cwd=Path(__file__).resolve().parents[2], timeout=600)
    print(proc.stdout, proc.stderr)
    if _log_dir():
        (_log_dir() / "deploy.log").write_text(proc.stdout + proc.stderr)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"numba_imported": False, "cases": len(paths), "ok": True}


def test_pytorch_binding_runs_the_launcher_on_a_torch_stream(fixture_launchers):
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
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(h, k, device="cuda", generator=g)
    b = torch.randn(k, w, device="cuda", generator=g)
    out = torch.full((h, w), float("nan"), device="cuda")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        matmul(a, b, out, tw, grid=((w + tw - 1) // tw, (h + tw - 1) // tw), block=(tw, tw), shared_bytes=2 * tw * tw * 4)
    stream.synchronize()
    expected = (a.double() @ b.double())
    scale = a.double().abs() @ b.double().abs()
    assert torch.all((out.double() - expected).abs() <= 1e-5 * scale)
    with pytest.raises(TypeError, match="CUDA tensor"):
        matmul(a.cpu(), b, out, tw, grid=(1, 1), block=(tw, tw))
