"""Verification of translated CUDA C on a GPU: the compiled ``.cu`` against the Numba kernel.

Python API (imports of numba happen inside the calls, so ``import translate.verify`` is cheap and GPU-free)::

    from translate.verify import verify_kernels, verify, Candidate
    results = verify_kernels(["matmul_tiled"], sanitize=True, record=True)   # from generated_cuda/manifest.json
    result = verify(spec, Candidate(cu_path, launcher_description))          # any .cu that follows the contract

Command line: ``python -m translate.verify --all [--sanitize] [--record]`` (see ``cli.py``; the ``translate`` CLI
wires the same options in through ``translate.verify.cli.add_arguments`` / ``run``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["Candidate", "VerifyResult", "verify", "verify_kernels", "candidate_for", "add_arguments", "run"]


def __getattr__(name: str) -> Any:
    if name in ("Candidate", "VerifyResult", "CaseResult", "verify", "cases_for"):
        from . import harness

        return getattr(harness, name)
    if name in ("verify_kernels", "candidate_for", "add_arguments", "run", "main"):
        from . import cli

        return getattr(cli, name)
    raise AttributeError(name)
