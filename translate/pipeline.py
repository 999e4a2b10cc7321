"""translate's spine: one kernel from its name to a written ``.cu`` and manifest entry, in order.

    resolve (targets) -> request, typed by numbakern.frontend (kernel_request) -> device code (backend)
        -> assemble (emit) -> NVRTC -> write

NVRTC compiles the deterministic backend's file in this process; any other backend's (a model's code) in a
sandboxed child with time and memory limits (``translate.verify.sandboxed_compile``).

``translate`` runs the stages in this order and nothing runs them elsewhere: a stage never imports a later one, and
a backend that wants its candidates compiled or verified gets the pipeline's checks as callbacks
(``translate.candidates``). The pipeline needs numba's real CUDA target: callers that may run in simulator mode go
through ``translate.api``, which hands the work to the front end's helper process (``translate.remote``).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager

from numba.cuda import types

from numbakern import registry
from numbakern.frontend.choice import NUMBA_CUDA

from . import derivations, emit, manifest, targets
from .backends import get_backend
from .candidates import PipelineChecks
from .codegen import hopper
from .depends import source_sha256
from .errors import CompileError, TranslationError
from .kernel_request import Constants, build_request, numba_rejection
from .nvrtc import nvrtc_compile
from .request import DeviceCode, KernelRequest, TranslateOptions, TranslationResult
from .verify.sandboxed_compile import compile_untrusted

TOOL_VERSION = "0.1.0"


def translate(target: str | targets.KernelTarget, *, signature: str | None = None, constants: Constants | None = None,
              opts: TranslateOptions | None = None, out_dir: str | None = None, nvrtc: bool = True
              ) -> TranslationResult:
    """Translate the kernel ``target`` (a name for ``translate.targets.resolve``, or what it resolved); with
    ``out_dir``, write ``out_dir/<name>.cu`` and its manifest entry. Raises ``TranslationError`` (located) or
    ``CompileError``; a failure writes nothing. ``nvrtc=False`` (only without ``out_dir``: ``translate --check``
    comparing bytes) skips the compile, which does not change the code."""
    opts = opts or TranslateOptions()
    constants = {k: list(v) for k, v in (constants or {}).items()}
    seconds: dict[str, float] = {}
    with _timed(seconds, "frontend"):
        tgt = target if isinstance(target, targets.KernelTarget) else targets.resolve(
            target, constants, also=signature_names(signature))
        request = build_request(tgt, signature, constants, opts)
    with _timed(seconds, "backend"):
        checks = PipelineChecks(request, verify_on_gpu=opts.verify, spec=registry.spec_for_kernel(tgt.kernel))
        backend = get_backend(opts.backend)
        try:
            device = backend.generate(request, checks)
        except TranslationError as e:
            raise numba_rejection(request, e) from None
        check_dependencies(request, device)
    with _timed(seconds, "emit"):
        code = emit.assemble(request, device, _header(tgt, request))
    if not nvrtc:
        if out_dir is not None:
            raise ValueError("a translation that is written is compiled first (nvrtc=False needs out_dir=None)")
        return TranslationResult(request.name, None, code, {}, {}, seconds)
    with _timed(seconds, "nvrtc"):
        # only the project's own translator's code is compiled here; any other backend's in a sandboxed child
        compile_file = nvrtc_compile if getattr(backend, "TRUSTED", False) else compile_untrusted
        arch = hopper.file_arch(opts.arch, device.helpers)  # sm_90a for wgmma and TMA
        comp = compile_file(code, arch, name=request.filename, options=request.build.nvrtc_options())
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
        "build": hopper.build_manifest(request.build.manifest(), arch),  # the build flags the file needs
        "compile": comp.manifest(),
        "verification": None,
    }
    if tgt.frontend != NUMBA_CUDA:  # numba-cuda kernels' entries stay as they were
        entry["frontend"] = {"source": tgt.frontend, "typed_by": NUMBA_CUDA}
    path = None
    if out_dir is not None:
        entry = manifest.write_translation(out_dir, request.filename, code, entry, force=opts.force)
        path = os.path.join(out_dir, request.filename)
        if getattr(backend, "TRUSTED", False):
            derivations.remember(tgt, entry)
    return TranslationResult(request.name, path, code, entry, {**comp.manifest(), "log": comp.log}, seconds)


@contextmanager
def _timed(seconds: dict[str, float], stage: str) -> Iterator[None]:
    t0 = time.perf_counter()
    yield
    seconds[stage] = time.perf_counter() - t0


def signature_names(signature) -> tuple[str, ...]:
    """The names a signature string reads besides numba's types (``PAIR`` of ``void(PAIR[::1])``): a script's
    definitions-only import must define them too."""

    if not isinstance(signature, str):
        return ()
    return tuple(sorted({n for n in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", signature)
                         if not isinstance(getattr(types, n, None), types.Type)}))


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
