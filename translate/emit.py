"""File assembly: preamble, the helpers the device code uses, module constants, the device code, explicit
template instantiations and one ``extern "C"`` host launcher per instantiation (the contract's ABI)."""

from __future__ import annotations

from collections.abc import Mapping

from . import options
from .cnames import c_name
from .codegen import helpers as helper_lib
from .codegen import hopper
from .codegen.cexpr import float_literal
from .request import DeviceCode, KernelRequest, c_declaration

PREAMBLE = """\
#ifdef __CUDACC_RTC__
// NVRTC has no standard headers: the fixed-width integer types this file uses
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define INT64_MIN (-9223372036854775807LL - 1)
#else
#include <cuda_runtime.h>
#include <stdint.h>
#endif
"""


def launcher_symbol(name: str, consts: Mapping) -> str:
    return "launch_" + name + "".join(f"_{k}{_value_text(v)}" for k, v in consts.items())


def launcher_descriptions(request: KernelRequest, device: DeviceCode) -> list[dict]:
    """The manifest's ``launchers`` list: one per instantiation, with the ABI of its parameters."""
    return [
        {"symbol": launcher_symbol(request.name, inst), "constants": dict(inst),
         "params": [p.manifest() for p in request.params], "nonneg_params": list(device.nonneg_params),
         **({"cooperative": True} if device.cooperative else {})}
        for inst in request.instantiations
    ]


def _value_text(v) -> str:
    if isinstance(v, bool):
        return str(int(v))
    return str(v).replace("-", "m").replace(".", "p")


def _const_decl(name, key, value) -> str:
    if key == "bool":
        text = "true" if value else "false"
    elif key == "float64":
        text = float_literal(value)
    else:
        text = str(value) + ("LL" if not -(2**31) <= value < 2**31 else "")
    return f"constexpr {c_name(key)} {name} = {text};"


def assemble(request: KernelRequest, device: DeviceCode, header: str) -> str:
    """The whole file; the request's codegen options put ``__launch_bounds__`` / ``__maxnreg__`` on the
    ``__global__`` kernel."""
    prelude, attrs = request.build.attributes(request)
    parts = [header.rstrip() + "\n", PREAMBLE]
    helper_text = helper_lib.render(set(device.helpers) | hopper.launcher_helpers(request))
    if helper_text:
        parts.append(helper_text)
    if device.constants:
        parts.append("\n".join(_const_decl(n, k, v) for n, (k, v) in device.constants.items()) + "\n")
    if prelude:
        parts.append(prelude)
    parts.append(options.apply(device.code, request.c_name, attrs))
    if request.template_params:
        lines = []
        types_only = ", ".join(_param_type(p) for spec in request.params for p in spec.kernel_params())
        for inst in request.instantiations:
            args = ", ".join(str(int(inst[t])) for t in request.template_params)
            lines.append(f"template __global__ void {request.c_name}<{args}>({types_only});")
        parts.append("\n".join(lines) + "\n")
    parts.append("#ifndef __CUDACC_RTC__\n" + "\n".join(_launcher(request, device, inst)
                                                       for inst in request.instantiations) + "#endif\n")
    return "\n".join(parts)


def _param_type(p: str) -> str:
    return p.rsplit(" ", 1)[0]


def _launcher(request: KernelRequest, device: DeviceCode, inst: Mapping) -> str:
    groups = [spec.c_params() for spec in request.params] + [
        ["unsigned grid_x", "unsigned grid_y", "unsigned grid_z"],
        ["unsigned block_x", "unsigned block_y", "unsigned block_z"],
        ["size_t shared_bytes", "cudaStream_t stream"],
    ]
    decl = c_declaration(f'extern "C" cudaError_t {launcher_symbol(request.name, inst)}', groups, width=0)
    body = []
    cnames = {spec.name: spec.c for spec in request.params}
    for p in device.nonneg_params:
        c = cnames.get(p, p)
        body.append(f"    // the kernel's indices assume {c} >= 0 (numba would wrap a negative index around the end)")
        body.append(f"    if ({c} < 0) return cudaErrorInvalidValue;")
    targs = ""
    if request.template_params:
        targs = "<" + ", ".join(str(int(inst[t])) for t in request.template_params) + ">"
    body += hopper.launcher_lines(request, device, f"{request.c_name}{targs}")
    args = ", ".join(a for spec in request.params for a in spec.kernel_args())
    if device.cooperative:  # a grid-wide barrier needs every block resident: a cooperative launch guarantees it
        body.append(f"    void *args[] = {{{', '.join('&' + a for a in args.split(', '))}}};")
        body.append(f"    return cudaLaunchCooperativeKernel((const void *){request.c_name}{targs}, "
                    "dim3(grid_x, grid_y, grid_z), dim3(block_x, block_y, block_z), args, shared_bytes, stream);")
        return decl + "\n{\n" + "\n".join(body) + "\n}\n"
    body.append(f"    {request.c_name}{targs}<<<dim3(grid_x, grid_y, grid_z), dim3(block_x, block_y, block_z), "
                f"shared_bytes, stream>>>(")
    body.append(f"        {args});")
    body.append("    return cudaGetLastError();")
    return decl + "\n{\n" + "\n".join(body) + "\n}\n"
