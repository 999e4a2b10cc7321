"""The deterministic ``ast`` backend: walks the kernel's Python AST with Numba's types (translate.codegen)."""

from __future__ import annotations

from ..codegen.diagnose import internal_error
from ..codegen.source import parse_function
from ..codegen.stmts import FunctionTranslator
from ..codegen.unit import Unit
from ..errors import TranslationError
from ..request import DeviceCode, KernelRequest, kernel_declaration
from . import CandidateChecks

NAME = "ast"
#: the project's own translator writes this code: NVRTC compiles it in the translating process
TRUSTED = True


def generate(request: KernelRequest, checks: CandidateChecks) -> DeviceCode:
    """The kernel's device code, deterministically (one answer: nothing for ``checks`` to choose between)."""
    if request.options.backend_options:
        raise ValueError(f"the ast backend takes no options, got {', '.join(sorted(request.options.backend_options))}")
    unit = Unit(fastmath=request.fastmath)
    # tensor-map parameters are __grid_constant__ values in C (translate/codegen/hopper.py), made by the launcher
    unit.tensor_maps = {p.c for p in request.params if p.tensor_map}
    unit.file_names.reserve(request.c_name, *request.template_params)
    unit.template_params = set(request.template_params)
    consts = dict(request.instantiations[0]) if request.template_params else {}
    def named(p):  # (C name, extents or a tuple's numbers, strides); a tuple of arrays: one of those per array
        if p.arrays:
            return [named(a) for a in p.arrays]
        return p.c, tuple(p.c_args()) if p.kind == "tuple" else tuple(p.extent_names()), tuple(p.stride_names())

    params = [named(p) for p in request.params]
    try:
        tr = FunctionTranslator(unit, request.pyfunc, request.typed, kind="kernel", name=request.name,
                                cname=request.c_name, params=params, template_consts=consts,
                                all_template_consts=list(request.instantiations) if request.template_params else None)
        body = tr.translate()
    except TranslationError:
        raise
    except Exception as e:  # noqa: BLE001 - a bug of the code generator outside any statement: at the kernel's def
        fn, src = parse_function(request.pyfunc)
        raise internal_error(src, fn, e) from e
    arrays = [a for p in request.params for a in (p.arrays or [p])]
    written = {a.c for a in arrays if a.kind == "array" and not a.const}
    for name in tr.written & {a.c for a in arrays}:
        if name not in written:
            raise AssertionError(f"the kernel writes '{name}', which the request marked const")
    lines = unit.prelude()
    if request.template_params:
        lines.append("template <" + ", ".join(f"int {t}" for t in request.template_params) + ">")
    lines.append(kernel_declaration(request))
    lines += ["{"] + body + ["}"]
    text = "\n".join(lines)
    if "nk_dynamic_smem_bytes()" in text:
        unit.helpers.add("nk_dynamic_smem_bytes")
    if "__half" in text:
        unit.helpers.add("nk_fp16")
    if "__nv_bfloat16" in text:
        unit.helpers.add("nk_bf16")
    if "ComplexFloat" in text or "cuFloatComplex" in text or "cuDoubleComplex" in text:
        unit.helpers.add("nk_complex")
    return DeviceCode(
        code="\n".join(lines) + "\n",
        helpers=tuple(sorted(unit.helpers)),
        constants=dict(sorted(unit.module_consts.items())),
        nonneg_params=tuple(sorted(tr.assumed)),
        device_functions=tuple(dict.fromkeys(q for q, _ in unit.device_order if q is not None)),
        cooperative=unit.cooperative,
        constant_names={c: key[1] for key, c in unit.const_cnames.items() if isinstance(c, str) and c != key[1]},
    )
