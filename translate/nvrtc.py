"""NVRTC through cuda-bindings: a generated file -> PTX, on a machine without a GPU. A second compile to SASS
(``sm_XX``) with ``ptxas -v`` reports registers and shared memory.

``nvrtc_compile`` compiles in this process, for code the project wrote (the deterministic backend's); code nobody has
vouched for (a model's reply) is compiled by the same ``compile_source`` in a sandboxed child with time and memory
limits (``translate.verify.compile_child``): a compiler only reads code, but it can be made to work without end.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from cuda.bindings import nvrtc as cuda_nvrtc


@dataclass
class CompileResult:
    ok: bool
    arch: str
    nvrtc_version: str
    ptx: str = ""
    log: str = ""
    registers: int | None = None
    shared_bytes: int | None = None
    functions: dict = field(default_factory=dict)   # mangled kernel name -> {"registers": n, "shared_bytes": n}
    stopped: str = ""  # why the compile did not finish (a sandboxed compile stopped at a limit); "" when it did

    def manifest(self) -> dict:
        return {"ok": self.ok, "arch": self.arch, "nvrtc_version": self.nvrtc_version,
                "registers": self.registers, "shared_bytes": self.shared_bytes}


def nvrtc_version() -> str:
    _, major, minor = cuda_nvrtc.nvrtcVersion()
    return f"{major}.{minor}"


def _run(source: str, name: str, options: list[str], ptx_wanted: bool = True):
    err, prog = cuda_nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    _check(err, "nvrtcCreateProgram")
    try:
        (err,) = cuda_nvrtc.nvrtcCompileProgram(prog, len(options), [o.encode() for o in options])
        # NVRTC writes into the buffer it is given, so it must be a mutable one: `b" " * size` is, for size 1 (an
        # empty log), CPython's shared one-byte object b" ", and NVRTC's terminating NUL would turn every b" " in
        # the process into b"\x00" (seen on the GPU machine: .npy headers and printed spaces became NUL bytes).
        _, size = cuda_nvrtc.nvrtcGetProgramLogSize(prog)
        log = bytearray(size)
        cuda_nvrtc.nvrtcGetProgramLog(prog, log)
        log_text = bytes(log).rstrip(b"\x00 ").decode(errors="replace")
        ok = err == cuda_nvrtc.nvrtcResult.NVRTC_SUCCESS
        ptx = ""
        if ok and ptx_wanted:
            _, psize = cuda_nvrtc.nvrtcGetPTXSize(prog)
            buf = bytearray(psize)
            cuda_nvrtc.nvrtcGetPTX(prog, buf)
            ptx = bytes(buf).rstrip(b"\x00").decode()
        return ok, log_text, ptx
    finally:
        cuda_nvrtc.nvrtcDestroyProgram(prog)


def _check(err, what):
    if err != cuda_nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"{what} failed: {err}")


def nvrtc_compile(source: str, arch: str = "sm_90", name: str = "kernel.cu", resources: bool = True,
                  options=()) -> CompileResult:
    """Compile ``source`` to PTX for ``arch`` (``sm_90`` or ``compute_90``); ``log`` holds errors on failure.
    With ``resources``, also compile to SASS and parse ptxas' register / shared memory report. ``options``: the
    file's required NVRTC options (manifest ``build.nvrtc_options``: fast-math flags and the like)."""
    cc, base = compile_options(arch, options)
    return compile_source(source, name, cc, base, resources)


def compile_options(arch: str, options: Sequence[str] = ()) -> tuple[str, list[str]]:
    """``arch``'s number (``ValueError`` naming ``--arch`` if it is not one) and the options of every compile."""
    from .request import arch_number  # imports numba: not at the top, for the sandboxed compile's child

    return arch_number(arch), ["-std=c++17", *_include_options(), *options]


def compile_source(source: str, name: str, cc: str, base: Sequence[str], resources: bool) -> CompileResult:
    """The compile itself, in this process (``base`` from ``compile_options``): PTX for ``compute_<cc>``; with
    ``resources``, SASS for ``sm_<cc>`` too, whose ptxas report gives the registers and shared memory.

    With ``resources`` the SASS compile comes first and gives the PTX as well (the same PTX: NVRTC makes the SASS
    from it), which saves a third of the time of a translation's compiles; where it fails (ptxas refusing what the
    front end accepted), the PTX compile alone decides, as it always did."""
    if resources:
        ok, log, ptx = _run(source, name, [f"--gpu-architecture=sm_{cc}", "--ptxas-options=-v", *base])
        if ok:
            result = CompileResult(True, f"sm_{cc}", nvrtc_version(), ptx=ptx, log=_front_end_log(log))
            result.functions = parse_ptxas(log)
            if result.functions:
                result.registers = max(f.get("registers", 0) for f in result.functions.values())
                result.shared_bytes = max(f.get("shared_bytes", 0) for f in result.functions.values())
            return result
    ok, log, ptx = _run(source, name, [f"--gpu-architecture=compute_{cc}", *base])
    return CompileResult(ok, f"sm_{cc}", nvrtc_version(), ptx=ptx, log=log)


def _front_end_log(log: str) -> str:
    """A SASS compile's log without ptxas' report: what the PTX compile alone logs (its warnings)."""
    return "".join(line for line in log.splitlines(keepends=True) if not line.startswith("ptxas "))


def _include_options() -> list[str]:
    """The CUDA headers' directories (cuda_fp16.h, cuComplex.h, cooperative_groups.h and the libcu++ headers it
    includes), found the way numba-cuda finds them for NVRTC; nvcc knows them by itself."""
    dirs = []
    try:
        from numba.cuda.cuda_paths import get_cuda_paths  # optional: a toolkit's headers, as numba-cuda finds them

        dirs.append(get_cuda_paths()["include_dir"].info)
    except Exception:  # noqa: BLE001 - no toolkit headers found: files that need none still compile
        pass
    try:
        from cuda import pathfinder  # optional: where the wheels put the CCCL headers

        cccl = pathfinder.locate_nvidia_header_directory("cccl")
        if cccl is not None:
            dirs.append(cccl.abs_path)
    except Exception:  # noqa: BLE001 - as above
        pass
    return [f"--include-path={d}" for d in dirs if d]


def parse_ptxas(log: str) -> dict:
    out, current = {}, None
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            current = m.group(1)
            out[current] = {"registers": 0, "shared_bytes": 0}
            continue
        if current is None:
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m:
            out[current]["registers"] = int(m.group(1))
        m = re.search(r"(\d+) bytes smem", line)
        if m:
            out[current]["shared_bytes"] = int(m.group(1))
    return out
