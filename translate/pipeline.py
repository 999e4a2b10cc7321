"""translate's spine: one kernel from its name to a written ``.cu`` and manifest entry, in order.

    resolve (targets) -> type (frontend) -> request -> device code (backend) -> assemble (emit) -> NVRTC -> write

NVRTC compiles the deterministic backend's file in this process; any other backend's (a model's code) in a
sandboxed child with time and memory limits (``translate.verify.sandboxed_compile``).

``translate`` runs the stages in this order and nothing runs them elsewhere: a stage never imports a later one, and
a backend that wants its candidates compiled or verified gets the pipeline's checks as callbacks
(``translate.candidates``). The pipeline needs numba's real CUDA target: callers that may run in simulator mode go
through ``translate.api``, which hands the work to a helper process.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from numba.cuda import types

from numbakern import registry
from numbakern.unroll import rolled_function

from . import closures, cnames, emit, frontends, manifest, options, targets
from .backends import get_backend
from .candidates import PipelineChecks
from .codegen.arrays import indirectly_written
from .codegen.diagnose import find_recursion, typing_error
from .codegen.source import NoSource, parse_function
from .depends import kernel_dependencies, source_sha256
from .errors import CompileError, SourceInfo
from .frontend import SignatureError, parse_signature, signature_text, type_function
from .nvrtc import nvrtc_compile
from .request import DeviceCode, KernelRequest, ParamSpec, TranslateOptions, TranslationResult
from .verify.sandboxed_compile import compile_untrusted
from .writes import written_arrays

TOOL_VERSION = "0.1.0"

#: ``--const`` values: name -> one value per instantiation
Constants = Mapping[str, Sequence[int | float | bool]]


def translate(target: str, *, signature: str | None = None, constants: Constants | None = None,
              opts: TranslateOptions | None = None, out_dir: str | None = None) -> TranslationResult:
    """Translate the kernel ``target`` (a name for ``translate.targets.resolve``); with ``out_dir``, write
    ``out_dir/<name>.cu`` and its manifest entry. Raises ``TranslationError`` (located) or ``CompileError``; a
    failure writes nothing."""
    opts = opts or TranslateOptions()
    constants = {k: list(v) for k, v in (constants or {}).items()}
    seconds: dict[str, float] = {}
    with _timed(seconds, "frontend"):
        tgt = targets.resolve(target, constants)
        request = build_request(tgt, signature, constants, opts)
    with _timed(seconds, "backend"):
        checks = PipelineChecks(request, verify_on_gpu=opts.verify, spec=registry.spec_for_kernel(tgt.kernel))
        backend = get_backend(opts.backend)
        device = backend.generate(request, checks)
        check_dependencies(request, device)
    with _timed(seconds, "emit"):
        code = emit.assemble(request, device, _header(tgt, request))
    with _timed(seconds, "nvrtc"):
        # only the project's own translator's code is compiled here; any other backend's in a sandboxed child
        compile_file = nvrtc_compile if getattr(backend, "TRUSTED", False) else compile_untrusted
        comp = compile_file(code, opts.arch, name=request.filename, options=request.build.nvrtc_options())
    if not comp.ok:
        raise CompileError(f"NVRTC rejected the generated {request.filename}:\n{comp.log}", filename=request.filename)
    entry = {
        "kernel": tgt.qualname,
        "target": tgt.target,
        "registry_name": tgt.registry_name,
        "source_sha256": source_sha256(tgt.pyfunc, request.dependencies.device_functions,
                                       request.dependencies.constants, tgt.constants, request.build.fingerprint()),
        "file_sha256": manifest.sha256_text(code),
        "signature": request.signature,
        "constants": {k: (v[0] if len(v) == 1 else v) for k, v in _template_values(request).items()},
        "backend": {"name": opts.backend, "tool_version": TOOL_VERSION, **device.notes},
        "depends": request.dependencies.manifest(),
        "launchers": [{**launcher, **request.build.launcher_manifest(i)}  # + launch_bounds / max_registers
                      for i, launcher in enumerate(emit.launcher_descriptions(request, device))],
        "build": request.build.manifest(),  # the build flags the file needs (fastmath): nvcc_flags, nvrtc_options
        "compile": comp.manifest(),
        "verification": None,
    }
    if tgt.frontend != frontends.NUMBA_CUDA:  # numba-cuda kernels' entries stay as they were
        entry["frontend"] = {"source": tgt.frontend, "typed_by": frontends.NUMBA_CUDA}
    path = None
    if out_dir is not None:
        entry = manifest.write_translation(out_dir, request.filename, code, entry, force=opts.force)
        path = os.path.join(out_dir, request.filename)
    return TranslationResult(request.name, path, code, entry, {**comp.manifest(), "log": comp.log}, seconds)


@contextmanager
def _timed(seconds: dict[str, float], stage: str) -> Iterator[None]:
    t0 = time.perf_counter()
    yield
    seconds[stage] = time.perf_counter() - t0


def _header(tgt: targets.KernelTarget, request: KernelRequest) -> str:
    return (f"// {request.filename}: generated by `translate` (numbakern {TOOL_VERSION}, backend "
            f"{request.options.backend}) from\n// {tgt.qualname} for {request.signature}.\n"
            "// Edit the Python kernel and re-run `translate`, not this file: `translate --check` detects edits.\n"
            + "\n".join(request.build.header_lines()))


def check_dependencies(request: KernelRequest, device: DeviceCode) -> None:
    """The dependencies every backend's source hash uses come from the kernel's Python (the same for every backend,
    so the verified-file guard and ``translate --check`` compare like with like); the backend's own record (the ast
    backend's) must not name anything the Python side missed."""
    deps = request.dependencies
    constants = {device.constant_names.get(c, c) for c in device.constants}
    missed = (set(device.device_functions) - set(deps.device_functions)) | (constants - set(deps.constants))
    if missed:
        raise AssertionError(f"{request.name}: the backend depends on {sorted(missed)}, which the Python-side "
                             "dependency analysis missed")


def _template_values(request: KernelRequest) -> dict:
    return {t: [inst[t] for inst in request.instantiations] for t in request.template_params}


def build_request(tgt: targets.KernelTarget, signature: str | None, constants: Constants,
                  opts: TranslateOptions) -> KernelRequest:
    """The request for ``tgt``: its argument types (``signature``, else the registry's), its compile-time constants
    (the specialization's, overridden by ``constants``), Numba's types, the launcher parameters, the codegen options
    of every instantiation and the kernel's dependencies."""
    sig = signature or (tgt.signatures[0] if tgt.signatures else None)
    try:
        fn, src = parse_function(tgt.pyfunc)
    except NoSource as e:  # made by exec(): located where its module binds it
        raise targets.binding_error(tgt, str(e)) from None
    if sig is None:
        raise src.error(fn, f"no argument types for {tgt.qualname}: pass --signature \"void(float32[::1], ...)\" "
                        "(or give the kernel a signature: @cuda.jit(\"void(float32[::1], ...)\"))")
    try:
        _, argtypes = parse_signature(sig, tgt.pyfunc.__globals__)
    except SignatureError as e:
        raise src.error(fn, str(e)) from None
    names = tuple(a.arg for a in fn.args.args)
    if len(names) != len(argtypes):
        raise src.error(fn, f"the signature has {len(argtypes)} argument(s), the kernel takes {len(names)}")
    freevars = closures.free_names(tgt.pyfunc)
    values = {k: [v] for k, v in tgt.constants.items()}
    for k, v in constants.items():
        if k in names:
            raise src.error(fn, f"'{k}' is a kernel argument, not a compile-time constant",
                            hint="--const for closure constants of a specialized kernel (e.g. tw)")
        if k not in freevars:
            raise src.error(fn, f"'{k}' is not a compile-time constant of this kernel "
                            f"(closure constants: {', '.join(freevars) or 'none'})")
        values[k] = list(v)
    template_params = tuple(k for k in freevars if k in values and isinstance(values[k][0], int))
    combos = itertools.product(*(values[k] for k in template_params))
    insts = tuple(dict(zip(template_params, combo)) for combo in combos)
    pyfunc = _instantiated_pyfunc(tgt, template_params, insts, src, fn) if template_params else tgt.pyfunc
    recursion = find_recursion(pyfunc)
    if recursion is not None:
        raise recursion
    try:
        typed = type_function(pyfunc, argtypes)
    except Exception as e:  # numba's TypingError: its first relevant line, where it says
        raise typing_error(e, src, fn, f"numba cannot type the kernel for {signature_text(sig)}") from None
    array_names = {n for n, t in zip(names, argtypes) if isinstance(t, types.Array)}
    written = written_arrays(fn, array_names) | indirectly_written(fn, array_names)
    kernel_c = cnames.kernel_cname(tgt.name)
    _, named = cnames.param_cnames(kernel_c, [(n, t.ndim if isinstance(t, types.Array) else 0,
                                              isinstance(t, types.Array) and t.layout != "C")
                                             for n, t in zip(names, argtypes)],
                                   reserved={*cnames.LAUNCHER_PARAMS, *template_params})
    params = []
    for n, t, (c, extents, strides) in zip(names, argtypes, named):
        if isinstance(t, types.Array) and isinstance(t.dtype, types.Record):
            key = cnames.record_key(t.dtype)
            if key is None:
                raise src.error(fn, f"argument '{n}' is an array of records whose layout C cannot reproduce "
                                f"({t.dtype})", hint="records of number fields, each at its natural alignment")
            params.append(ParamSpec(n, "array", "record", t.ndim, const=n not in written, layout=t.layout, cname=c,
                                    extents=extents, strides=strides, ctype=cnames.c_name(key),
                                    record=_record_layout(t.dtype)))
        elif isinstance(t, types.Array):
            params.append(ParamSpec(n, "array", str(t.dtype), t.ndim, const=n not in written, layout=t.layout,
                                    cname=c, extents=extents, strides=strides))
        else:
            params.append(ParamSpec(n, "scalar", str(t), cname=c))
    insts = insts or ({},)
    return KernelRequest(
        name=tgt.name, qualname=tgt.qualname, source="\n".join(src.lines), signature=signature_text(sig),
        arg_names=names, argtypes=tuple(argtypes), typemap={k: str(v) for k, v in typed.var_types.items()},
        params=tuple(params), pyfunc=pyfunc, typed=typed, build=options.from_target(tgt, insts),
        dependencies=kernel_dependencies(pyfunc, template_params), options=opts, template_params=template_params,
        instantiations=insts, kernel_cname=kernel_c,
    )


def _record_layout(t) -> tuple:
    """(itemsize, ((field, dtype, offset), ...)) of a numba Record: the launcher ABI's description of it."""
    return t.size, tuple((name, str(f.type), f.offset) for name, f in sorted(t.fields.items(),
                                                                           key=lambda kv: kv[1].offset))


def _instantiated_pyfunc(tgt: targets.KernelTarget, template_params: tuple[str, ...], insts: tuple[dict, ...],
                         src: SourceInfo, fn):
    """The kernel function for the first instantiation, with every closure constant right for it.

    A ``@specialize`` factory derives constants from its parameters (``la = bm * bk // threads``); overriding only
    the parameters' cells would leave the derived ones at the registered config's values. So each instantiation's
    kernel comes from the factory, and the derived constants, which the C file declares once at file scope, must
    agree across the instantiations."""
    first_values = {k: insts[0][k] for k in template_params}
    if tgt.factory is None:
        return closures.with_closure(tgt.pyfunc, first_values)
    funcs = [frontends.numba_cuda_view(rolled_function(getattr(tgt.factory(**{**tgt.constants, **inst}), "py_func",
                                                                None)))
             for inst in insts]
    if any(f is None or f.__code__ is not tgt.pyfunc.__code__ for f in funcs):
        return closures.with_closure(tgt.pyfunc, first_values)
    first = closures.closure_values(funcs[0])
    for inst, f in zip(insts[1:], funcs[1:]):
        for name, value in closures.closure_values(f).items():
            if name not in template_params and isinstance(value, (int, float)) and value != first.get(name):
                where = ", ".join(f"{k}={v}" for k, v in inst.items())
                raise src.error(fn,
                                f"the constant '{name}' derived by the factory is {first.get(name)!r} for the first "
                                f"instantiation but {value!r} for {where}; one file declares it once",
                                hint="translate these configurations separately (one value per --const)")
    return funcs[0]
