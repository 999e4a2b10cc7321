"""The deterministic ``ast`` backend: walks the kernel's Python AST with Numba's types (translate.codegen)."""

from __future__ import annotations

from dataclasses import dataclass

from ..cnames import c_name, scalar_key
from ..codegen.stmts import FunctionTranslator
from ..frontend import type_function, typing_context
from ..request import DeviceCode, KernelRequest, kernel_declaration
from . import CandidateChecks

NAME = "ast"


@dataclass
class DeviceFn:
    cname: str
    params: list
    written: set
    code: list


class Unit:
    """What one generated file shares: helpers, module constants, device functions (one C overload per
    argument-type signature)."""

    def __init__(self, fastmath: bool = False):
        self.ctx = typing_context()
        self.fastmath = fastmath  # the kernel's: numba's fast float32 math (device functions inline into it)
        self.helpers: set = set()
        self.module_consts: dict = {}
        self.devices: dict = {}
        self.device_order: list = []

    def device_function(self, disp, sig, node, src):
        key = (id(disp), tuple(str(a) for a in sig.args))
        if key in self.devices:
            return self.devices[key]
        pyfunc = disp.py_func
        typed = type_function(pyfunc, tuple(sig.args), sig.return_type)
        tr = FunctionTranslator(self, pyfunc, typed, kind="device")
        body = tr.translate()
        params = tr.params
        cparams = []
        for name, t in zip(params, typed.argtypes):
            if name in tr.arrays:
                info = tr.arrays[name]
                const = "" if info.name in tr.written else "const "
                cparams.append(f"{const}{c_name(info.key)}* {info.name}")
                cparams += [f"int64_t {e.code}" for e in info.extents]
            else:
                cparams.append(f"{c_name(scalar_key(t))} {tr.cname(name)}")
        rkey = scalar_key(typed.return_type)
        rtype = "void" if rkey is None else c_name(rkey)
        code = [f"__device__ {rtype} {pyfunc.__name__}({', '.join(cparams)})", "{"] + body + ["}"]
        written = {n for n in params if n in tr.arrays and tr.arrays[n].name in tr.written}
        dev = DeviceFn(pyfunc.__name__, params, written, code)
        self.devices[key] = dev
        self.device_order.append((f"{pyfunc.__module__}:{pyfunc.__qualname__}", dev))
        return dev


def generate(request: KernelRequest, checks: CandidateChecks) -> DeviceCode:
    """The kernel's device code, deterministically (one answer: nothing for ``checks`` to choose between)."""
    if request.options.backend_options:
        raise ValueError(f"the ast backend takes no options, got {', '.join(sorted(request.options.backend_options))}")
    unit = Unit(fastmath=request.fastmath)
    consts = dict(request.instantiations[0]) if request.template_params else {}
    tr = FunctionTranslator(unit, request.pyfunc, request.typed, kind="kernel", name=request.name,
                            template_consts=consts,
                            all_template_consts=list(request.instantiations) if request.template_params else None)
    body = tr.translate()
    written = {p.name for p in request.params if p.kind == "array" and not p.const}
    for name in tr.written & {p.name for p in request.params}:
        if name not in written:
            raise AssertionError(f"the kernel writes '{name}', which the request marked const")
    lines = []
    for _, dev in unit.device_order:
        lines += dev.code + [""]
    if request.template_params:
        lines.append("template <" + ", ".join(f"int {t}" for t in request.template_params) + ">")
    lines.append(kernel_declaration(request))
    lines += ["{"] + body + ["}"]
    return DeviceCode(
        code="\n".join(lines) + "\n",
        helpers=tuple(sorted(unit.helpers)),
        constants=dict(sorted(unit.module_consts.items())),
        nonneg_params=tuple(sorted(tr.assumed)),
        device_functions=tuple(q for q, _ in unit.device_order),
    )
