"""A real NVRTC compile of device code for the backend tests (no GPU needed), standing in for the translator's
compile step: fixed-width integer typedefs, the project helpers the code calls, then the device code behind the
``#line`` marker the repair loop reads diagnostics by."""

from __future__ import annotations

from translate.llm.feedback import mark_candidate
from translate.llm.helpers import used_helpers
from translate.llm.repair import CompileOutcome

PREAMBLE = """\
typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long long int64_t;
typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define INT64_MIN (-9223372036854775807LL - 1)
"""


def nvrtc_compile(device_code: str, name: str = "kernel.cu", arch: str = "compute_90") -> CompileOutcome:
    from translate.codegen.helpers import render
    from translate.nvrtc import nvrtc_compile as project_nvrtc_compile

    source = PREAMBLE + render(used_helpers(device_code)) + "\n" + mark_candidate(device_code)
    result = project_nvrtc_compile(source, arch, name=name, resources=False)
    return CompileOutcome(result.ok, result.log.strip(), {"source": source})
