"""A real NVRTC compile of device code for the backend tests (no GPU needed), standing in for the translator's
compile step: fixed-width integer typedefs, the project helpers the code calls, then the device code."""

from __future__ import annotations

from translate.llm.helpers import used_helpers
from translate.llm.repair import CompileOutcome

PREAMBLE = """\
typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long long int64_t;
typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define INT64_MIN (-9223372036854775807LL - 1)
"""


def nvrtc_compile(device_code: str, name: str = "kernel.cu", arch: str = "compute_90") -> CompileOutcome:
    from cuda.bindings import nvrtc

    from translate.codegen.helpers import render

    source = PREAMBLE + render(used_helpers(device_code)) + "\n" + device_code
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, err
    try:
        (result,) = nvrtc.nvrtcCompileProgram(prog, 2, [f"--gpu-architecture={arch}".encode(), b"-std=c++17"])
        err, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        text = log.rstrip(b"\x00").decode(errors="replace").strip()
        return CompileOutcome(result == nvrtc.nvrtcResult.NVRTC_SUCCESS, text, {"source": source})
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
