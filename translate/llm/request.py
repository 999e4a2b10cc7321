"""From the translator's ``KernelRequest`` (docs/design/translate-contract.md, section 3) to a ``PromptSpec``.

The request is read by attribute, with the few spellings the pipeline may use, so this module is the only place
that knows its shape. The C parameters of each argument are taken from the emitter's exact kernel signature, so
the prompt can never disagree with the launcher.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from typing import Any

from .prompt import Argument, PromptSpec, local_variable_types
from .source import code_only


def _first(obj: Any, *names: str, default: Any = None) -> Any:
    for name in names:
        value = obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)
        if value is not None:
            return value
    return default


def kernel_name(request: Any) -> str:
    name = _first(request, "kernel_name", "c_name", "name", "registry_name")
    if name is None:
        func = _first(request, "pyfunc", "py_func", "function")
        name = getattr(func, "__name__", None)
    if not name:
        raise ValueError("the kernel request names no kernel")
    return str(name)


def python_source(request: Any) -> str:
    """The kernel's Python source as the prompt carries it: code only (no comments, no docstrings)."""
    src = _first(request, "python_source", "source")
    if isinstance(src, str) and src.strip():
        return code_only(src)
    if src is not None and hasattr(src, "lines"):  # translate.errors.SourceInfo
        return code_only("\n".join(getattr(src, "lines")))  # noqa: B009
    func = _first(request, "pyfunc", "py_func", "function")
    return code_only(inspect.getsource(func))


def dependencies(request: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The sources of the device functions the kernel calls (code only) and the module constants it reads: the
    request's ``dependencies`` (``translate.depends``, the analysis every backend's source hash uses), or given as
    ``device_function_sources`` and ``module_constants``."""
    found = _first(request, "dependencies")
    if found is not None:
        sources, constants = tuple(found.sources.values()), dict(found.constants)
    else:
        sources = tuple(_first(request, "device_function_sources", "device_functions_source", default=()) or ())
        constants = dict(_first(request, "module_constants", default={}) or {})
    return tuple(code_only(s) for s in sources), constants


def signature_params(signature: str) -> list[tuple[str, str]]:
    """``(type, name)`` of each parameter of a C declaration ``... name(T a, U b)``."""
    inside = signature[signature.index("(") + 1 : signature.rindex(")")]
    params = []
    for p in (x.strip() for x in inside.split(",")):
        if not p or p == "void":
            continue
        m = re.match(r"^(.*?)([A-Za-z_]\w*)$", p)
        if not m:
            raise ValueError(f"cannot read parameter '{p}' of {signature}")
        params.append((" ".join(m.group(1).split()), m.group(2)))
    return params


def arguments(arg_names: list[str], argtypes: list[Any], signature: str) -> tuple[Argument, ...]:
    """Each Python argument with its Numba type and the C parameters it becomes in ``signature``."""
    params = signature_params(signature)
    out = []
    for i, name in enumerate(arg_names):
        mine = [f"{t} {n}" for t, n in params
                if n == name or re.fullmatch(rf"{re.escape(name)}_shape\d+", n)]
        numba_type = str(argtypes[i]) if i < len(argtypes) else "?"
        out.append(Argument(name, numba_type, ", ".join(mine) or "(not a kernel parameter: a compile-time constant)"))
    return tuple(out)


def spec_from_request(request: Any, *, signature: str, launcher: str | None = None,
                      helpers: Mapping[str, str] | None = None, allow_printf: bool = False) -> PromptSpec:
    """The prompt spec for ``request``; ``signature`` is the emitter's exact ``__global__`` declaration."""
    typed = _first(request, "typed", "typed_function")
    arg_names: list[str] = list(_first(request, "arg_names", default=()) or ())
    if not arg_names:
        func = _first(request, "pyfunc", "py_func", "function") or getattr(typed, "pyfunc", None)
        if func is not None:
            code = func.__code__
            arg_names = list(code.co_varnames[: code.co_argcount])
    argtypes = list(_first(request, "argtypes", "arg_types", default=()) or getattr(typed, "argtypes", ()) or ())
    var_types = _first(request, "var_types", "typemap") or getattr(typed, "var_types", None) or {}
    variables = local_variable_types(var_types, arg_names)
    constants = dict(_first(request, "constants", default={}) or {})
    device_functions, module_constants = dependencies(request)
    numba_sig = _first(request, "numba_signature", "signature_text")
    if numba_sig is None:
        sig = _first(request, "signature")
        numba_sig = sig if isinstance(sig, str) else None
    return PromptSpec(
        kernel_name=kernel_name(request),
        python_source=python_source(request),
        arguments=arguments(arg_names, argtypes, signature),
        signature=signature,
        variables=variables,
        constants=constants,
        launcher=launcher,
        helpers=dict(helpers or {}),
        device_functions=device_functions,
        module_constants=module_constants,
        numba_signature=numba_sig,
        allow_printf=allow_printf,
    )
