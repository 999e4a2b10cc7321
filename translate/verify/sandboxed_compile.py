"""NVRTC of code nobody has vouched for (a model's reply), in a sandboxed child with time and memory limits.

A compiler only reads code, but code can make it work without end: a template that instantiates itself
exponentially, ``__device__ const float x[1 << 28] = {1, 2};`` (NVRTC writes out the whole initialiser), huge
unroll counts. In the translating process such a compile holds the user's terminal for minutes and gigabytes. So
``compile_untrusted`` runs the very compile of ``translate.nvrtc`` (``compile_source``) in a child of
``translate.verify.sandbox`` (its namespaces, its own folder, no secrets) with:

- **a wall-clock deadline** (``seconds``, the rest of the model turn's ``--timeout``, at most ``LIMITS``'), after which
  its process group is killed;
- **a CPU-time limit** of as many seconds;
- **an address-space limit** (``RLIMIT_AS``, 2 GiB): a normal compile's child peaks at a few hundred MiB (measured
  on every file of ``generated_cuda/``: at most 0.22 GiB of address space and 2 s), so NVRTC reports
  ``out of memory`` long before the machine would swap.

A compile stopped at a limit is a failed compile whose ``stopped`` says which limit, in one line. The child imports
cuda-bindings' NVRTC and this package's ``nvrtc`` and ``sandbox`` modules, never numba: its include paths and
options come from this process.

Parent: ``compile_untrusted(source, arch, ...)`` -> ``translate.nvrtc.CompileResult``. Child: verification's one
child, ``python -m translate.verify.worker``, given a ``compile`` job (``translate.verify.protocol``).
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Sequence
from dataclasses import replace

from ..nvrtc import CompileResult, compile_options, compile_source, nvrtc_version
from . import sandbox

#: the limits of one compile (the PTX and, for the accepted file, the SASS compile with the resource report)
LIMITS = sandbox.Limits(wall_seconds=120, cpu_seconds=120, address_bytes=2 << 30, file_bytes=256 << 20,
                        open_files=256)
#: the most of the child's answer read back (its PTX included)
MAX_ANSWER_BYTES = 128 << 20
MAX_LOG_CHARS = 1 << 20
#: what NVRTC's log says when an allocation fails
_OUT_OF_MEMORY = "catastrophic error: out of memory"


def compile_untrusted(source: str, arch: str = "sm_90", name: str = "kernel.cu", resources: bool = True,
                      options: Sequence[str] = (), *, seconds: float | None = None,
                      limits: sandbox.Limits = LIMITS) -> CompileResult:
    """``translate.nvrtc.nvrtc_compile`` of ``source`` in a sandboxed child, stopped after ``seconds`` (if given;
    at most ``limits.wall_seconds``) of wall-clock time, as many of CPU time, and at ``limits.address_bytes``."""
    cc, base = compile_options(arch, options)
    if seconds is not None:
        limits = replace(limits, wall_seconds=max(0.0, min(limits.wall_seconds, seconds)),
                         cpu_seconds=max(1, min(limits.cpu_seconds, math.ceil(seconds))))
    with tempfile.TemporaryDirectory(prefix="numbakern-nvrtc-") as workdir:
        done = sandbox.run(job={"kind": "compile", "source": source, "name": name, "cc": cc, "options": base,
                                "resources": bool(resources)}, workdir=workdir, limits=limits,
                           max_answer=MAX_ANSWER_BYTES)
        return _read_answer(done, cc, limits)


def describe_limits(limits: sandbox.Limits) -> str:
    memory = f", {limits.address_bytes / (1 << 30):g} GiB of memory" if limits.address_bytes else ""
    return f"{limits.wall_seconds:g} s, {limits.cpu_seconds} s of CPU time{memory}"


def _read_answer(done: sandbox.Completed, cc: str, limits: sandbox.Limits) -> CompileResult:
    """The child's answer, checked like any input; a compile that gave none was stopped at a limit."""
    try:
        answer = done.answer
        if answer is None:
            raise ValueError("no answer")
        ok, log, ptx = answer["ok"], answer["log"], answer["ptx"]
        if not (isinstance(ok, bool) and isinstance(log, str) and isinstance(ptx, str)):
            raise ValueError("malformed")
        functions = {str(k): {"registers": int(v["registers"]), "shared_bytes": int(v["shared_bytes"])}
                     for k, v in dict(answer.get("functions") or {}).items()}
    except (OSError, ValueError, KeyError, TypeError):
        why = (f"NVRTC was stopped at the limits of a compile of untrusted code ({describe_limits(limits)}): "
               f"{done.describe()}")
        return CompileResult(False, f"sm_{cc}", nvrtc_version(), log=why, stopped=why)
    result = CompileResult(ok and done.ok, f"sm_{cc}", nvrtc_version(), ptx=ptx, log=log[:MAX_LOG_CHARS],
                           functions=functions)
    if not result.ok and limits.address_bytes and _OUT_OF_MEMORY in log:
        # under RLIMIT_AS NVRTC may fail its own allocation and say so instead of being killed: the same limit
        result.stopped = (f"NVRTC was stopped at the limits of a compile of untrusted code "
                          f"({describe_limits(limits)}): it ran out of memory")
    if functions:
        result.registers = max(f["registers"] for f in functions.values())
        result.shared_bytes = max(f["shared_bytes"] for f in functions.values())
    return result


# ---------------------------------------------------------------------------------------------------------------
# the child


def serve(job: dict) -> dict:
    """The ``compile`` job of ``translate.verify.protocol``: NVRTC's result as data. Runs inside the sandbox."""
    result = compile_source(job["source"], job["name"], job["cc"], job["options"], job["resources"])
    return {"ok": result.ok, "log": result.log, "ptx": result.ptx, "functions": result.functions}
