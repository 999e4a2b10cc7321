"""Resolve what to translate: a registered kernel name, ``package.module:kernel`` or ``path/to/file.py:kernel``.

The kernel may be a ``@cuda.jit`` dispatcher or a plain Python function (a kernel that its caller compiles with
``cuda.jit(sig)(f)``). A module that compiles at import (``@cuda.jit("void(float32[::1])")``, ``cuda.jit(sig)(f)``)
would make numba ask the CUDA driver, which a machine without a GPU has not: modules are imported with
``cuda.jit`` recording the signatures of kernels instead of compiling them (``recording_signatures``), and the
first recorded signature is the kernel's default ``--signature``. Device functions with a signature are still
compiled by numba (for typing only, which needs no driver), so calls to them keep numba's conversions.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib
import importlib.util
import inspect
import linecache
import os
import sys
import sysconfig
import threading
import traceback
import types
from dataclasses import dataclass, field
from typing import Any

from numbakern import registry
from numbakern.frontend import mlir_view
from numbakern.frontend.choice import NUMBA_CUDA
from numbakern.specialize import Specialized, constants_of, factory_of
from numbakern.unroll import rolled_function  # the kernel as its author wrote it, before unroll() expanded it

from .definitions import definitions
from .errors import TranslationError

_SIGNATURES_ATTR = "_translate_signatures"
#: the name prefix of modules imported from a file path (``path/to/file.py:kernel``)
_PATH_MODULE_PREFIX = "_translate_"


@dataclass(frozen=True)
class KernelTarget:
    target: str                          # what the user named (re-resolvable by translate --check)
    name: str                            # output file stem and C kernel name
    kernel: Any                          # the @cuda.jit dispatcher (None for a plain function)
    pyfunc: types.FunctionType
    qualname: str                        # module:qualname
    registry_name: str | None = None
    signatures: tuple = ()               # signature strings or numba signature objects, first = default
    constants: dict = field(default_factory=dict)   # specialization constants (become template parameters)
    #: the @specialize factory that made the kernel (None for a plain kernel): the kernel of other constants
    factory: Specialized | None = None
    #: the front end the kernel is written against (``numbakern.frontend.mlir_view``); typed by numba-cuda either way
    frontend: str = NUMBA_CUDA


def resolve(name: str, constants: dict | None = None, by_path: bool = False, also: tuple[str, ...] = ()
            ) -> KernelTarget:
    """``name``: a registry name (``matmul_tiled``), ``package.module:kernel`` or ``path/file.py:kernel``.
    ``constants`` pick the variant of a ``@specialize`` factory. ``by_path``: a file is imported from its path even
    when its module is imported by name already (``translate --check``: the names a file kernel's labels use are
    the ones it had when translate imported it by path). ``also``: names a script's definitions must include
    besides the kernel's (the ones a ``--signature`` names: ``void(PAIR[::1])``)."""
    if ":" not in name:
        spec = registry.get(name)
        user_target = registry.kernel_target(spec) if spec.namespace == registry.PROJECT else None
        if user_target is not None:  # a user's kernel: found where its module binds it, like module:kernel
            return resolve(user_target, constants)
        kernel = spec.kernel
        pyfunc = rolled_function(getattr(kernel, "py_func", kernel))
        frontend = mlir_view.frontend_of(pyfunc)
        pyfunc = mlir_view.numba_cuda_view(pyfunc)
        consts = dict(spec.constants)
        return KernelTarget(name, spec.name, kernel, pyfunc, _qualname(pyfunc), spec.name,
                            tuple(spec.signatures), consts, factory_of(kernel), frontend)
    where, attr = name.rsplit(":", 1)
    try:
        with recording_signatures():
            if names_file(where):  # a script: its definitions only (its launches and work never run)
                module = _import_path(where, fresh=by_path, wanted=(attr.split(".")[0], *also))
            else:
                module = import_module(where)
    except (LookupError, ModuleNotFoundError):
        raise
    except Exception as e:  # the user's module fails to import: located where it fails, no traceback
        raise _import_error(where, e) from None
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise LookupError(f"'{where}' has no attribute '{attr}'")
        obj = getattr(obj, part)
    consts = {}
    if isinstance(obj, Specialized):
        if not constants:
            raise LookupError(f"'{name}' is a specialized kernel factory: pass its constants "
                              f"({', '.join(obj.constant_names)}) with --const NAME=VALUE")
        first = {k: (v[0] if isinstance(v, (list, tuple)) else v) for k, v in constants.items()}
        obj = obj(**first)
    if isinstance(obj, types.FunctionType):
        stem, qualname = _names(obj, module, attr)
        return KernelTarget(name, stem, None, obj, qualname, None, (), {})
    kernel = obj
    pyfunc = getattr(kernel, "py_func", None)
    if pyfunc is None:
        raise LookupError(f"'{name}' is neither a @cuda.jit kernel nor a Python function "
                          f"(it is {type(obj).__name__})")
    if getattr(kernel, "targetoptions", {}).get("device"):
        raise LookupError(f"'{name}' is a device function (@cuda.jit(device=True)); translate the kernel that "
                          "calls it")
    pyfunc = rolled_function(pyfunc)
    frontend = mlir_view.frontend_of(pyfunc)
    pyfunc = mlir_view.numba_cuda_view(pyfunc)
    consts.update(constants_of(kernel))
    registry_name = _registered_as(kernel)
    signatures = tuple(getattr(kernel, _SIGNATURES_ATTR, ()))
    if not signatures:  # a kernel its module declares (numbakern.declare): the types of the spec's example inputs
        declared = registry.spec_for_kernel(kernel)
        signatures = tuple(declared.signatures) if declared is not None else ()
    stem, qualname = _names(pyfunc, module, attr)
    return KernelTarget(name, stem, kernel, pyfunc, qualname, registry_name, signatures, consts, factory_of(kernel),
                        frontend)


def _names(pyfunc, module, attr: str) -> tuple[str, str]:
    """The file stem and ``module:qualname`` of the kernel ``module.attr``: the function's own, or for one made by
    ``exec`` of a string (no source; its ``__name__`` is the string's, shared by every kernel made from it) the
    names the module binds it to."""
    try:
        inspect.getsourcelines(pyfunc)
    except (OSError, TypeError):
        return attr.split(".")[-1], f"{module_label(module.__name__)}:{attr}"
    return pyfunc.__name__, _qualname(pyfunc)


def names_file(where: str) -> bool:
    """True when the part of a target before ``:kernel`` is a file's path (``path/to/file.py``), not a module's name."""
    return where.endswith(".py") or os.sep in where or "/" in where


def binding_error(tgt: KernelTarget, message: str) -> TranslationError:
    """A TranslationError located where the kernel's module binds its name (for a kernel with no source of its own,
    e.g. one made by ``exec``)."""
    if ":" not in tgt.target:
        return _module_error(sys.modules.get(tgt.pyfunc.__module__), tgt.name, message)
    where, attr = tgt.target.rsplit(":", 1)
    with recording_signatures():  # the module the user named (its functions' own __module__ can be anything)
        module = _import_path(where) if names_file(where) else import_module(where)
    return _module_error(module, attr.split(".")[-1], message)


def _module_error(module, name, message):
    """A TranslationError located where ``module`` assigns ``name`` (its first assignment)."""
    filename = getattr(module, "__file__", None) or "<unknown>"
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        return TranslationError(message, filename=filename)
    lines = source.splitlines()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            return TranslationError(message, filename=filename, line=node.lineno, col=node.col_offset,
                                    source_line=lines[node.lineno - 1], width=len(name))
    return TranslationError(message, filename=filename)


def _import_error(where: str, e: Exception):
    """A TranslationError at the line of the kernel's module (or the deepest file of the user's) that failed."""
    message = f"importing {where} failed: {type(e).__name__}: {e}"
    if isinstance(e, SyntaxError) and e.filename and e.lineno:
        text = (e.text or linecache.getline(e.filename, e.lineno)).rstrip("\n")
        return TranslationError(f"{where} is not valid Python: {e.msg}", filename=e.filename, line=e.lineno,
                                col=max(0, (e.offset or 1) - 1), source_line=text)
    # the user's frames: not Python's, not an installed package's, not numbakern's or translate's own
    library = tuple(os.path.realpath(sysconfig.get_paths()[k]) + os.sep for k in ("stdlib", "platstdlib")) + \
        tuple(os.path.dirname(os.path.realpath(str(m.__file__))) + os.sep for m in (registry, sys.modules[__name__]))
    frames = [f for f in traceback.extract_tb(e.__traceback__) if "site-packages" not in f.filename
              and not f.filename.startswith("<") and not os.path.realpath(f.filename).startswith(library)]
    if frames:
        f = frames[-1]
        text = linecache.getline(f.filename, f.lineno or 0).rstrip("\n")
        col = len(text) - len(text.lstrip())
        return TranslationError(message, filename=f.filename, line=f.lineno or 0, col=col, source_line=text,
                                width=max(1, len(text.strip())))
    return TranslationError(message, filename=where)


# -- importing without compiling ----------------------------------------------------------------------------------
_patch_lock = threading.RLock()


@contextlib.contextmanager
def recording_signatures():
    """``numba.cuda.jit`` records a kernel's signatures (on the dispatcher) instead of compiling it, while
    modules are imported for translation; device functions with a signature are compiled for typing with the
    device lookup answered without a driver."""
    # numba's real CUDA target, only when a module is imported for translation (this module is also imported in
    # simulator mode, where numba.cuda has no decorators module)
    from numba import cuda as cuda_module
    from numba.cuda import decorators

    real = decorators.jit
    if getattr(real, "_translate_recording", False):  # nested: already recording
        yield
        return

    def jit(func_or_sig=None, device=False, **options):
        from numba.cuda.core import sigutils  # the real target's, as above

        sigs = [func_or_sig] if sigutils.is_signature(func_or_sig) else (
            list(func_or_sig) if isinstance(func_or_sig, list) else None)
        if sigs is None:
            return real(func_or_sig, device=device, **options)
        if device:
            # numba's real CUDA front end: only in the process that translates (this module is also imported in
            # simulator mode, where it does not exist)
            from numbakern.frontend.target import cuda_typing

            def compile_device(func):
                with cuda_typing():
                    return real(sigs if len(sigs) > 1 else sigs[0], device=True, **options)(func)
            return compile_device

        def record(func):
            disp = real(func, device=False, **options)
            setattr(disp, _SIGNATURES_ATTR, tuple(sigs))
            return disp
        return record

    jit._translate_recording = True
    cuda: Any = cuda_module  # (attributes set at run time)
    with _patch_lock:
        saved = (decorators.jit, cuda.jit)
        decorators.jit = cuda.jit = jit
        try:
            yield
        finally:
            decorators.jit, cuda.jit = saved


def import_module(name: str):
    """``importlib.import_module``, finding a module of the current folder as ``python -m`` does (the
    ``translate`` command's own ``sys.path`` starts at its script's folder, not at the user's)."""
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        top = name.split(".")[0]
        if top not in sys.modules and importlib.util.find_spec(top) is None:
            sys.path.insert(0, cwd)
    return importlib.import_module(name)


def _qualname(pyfunc) -> str:
    return f"{module_label(pyfunc.__module__)}:{pyfunc.__qualname__}"


def module_label(module_name: str | None) -> str:
    """How a module is named to the user: its own name, or, for a file imported by path (an internal module name
    that nobody wrote), the file's path from the current folder. (A function made by ``exec`` may have none.)"""
    if not isinstance(module_name, str) or not module_name.startswith(_PATH_MODULE_PREFIX):
        return str(module_name)
    file = getattr(sys.modules.get(module_name), "__file__", None)
    if not file:
        return module_name
    rel = os.path.relpath(file)
    return file if rel.startswith(os.pardir + os.sep) else rel


def module_for(label: str):
    """The already imported module that ``module_label`` named (a file path, as ``path:kernel`` targets are imported,
    or a module name); None when no module of that name or file is imported. Never imports: the label may come from
    a manifest, and a kernel's device functions live in modules its own module imported already."""
    if label.endswith(".py"):
        full = os.path.abspath(label)
        for mod in list(sys.modules.values()):
            if getattr(mod, "__file__", None) and os.path.abspath(str(mod.__file__)) == full:
                return mod
        return None
    return sys.modules.get(label)


def _registered_as(kernel):
    """The library's registry name of ``kernel`` (None for a user's kernel: it is named by its module)."""
    spec = registry.spec_for_kernel(kernel)
    return spec.name if spec is not None and spec.namespace == registry.LIBRARY else None


def _import_path(path: str, fresh: bool = False, wanted: tuple[str, ...] | None = None):
    """The module of the file ``path``: one already imported by name, else the file executed afresh as a module of
    its own; with ``wanted``, only the definitions those names need (``translate.definitions``)."""
    full = os.path.abspath(path)
    if not os.path.exists(full):
        raise LookupError(f"no such file: {path}")
    linecache.checkcache(full)
    for mod in list(sys.modules.values()) if not fresh else ():
        if getattr(mod, "__file__", None) and os.path.abspath(str(mod.__file__)) == full and \
                not mod.__name__.startswith(_PATH_MODULE_PREFIX):
            return mod  # an importable module (e.g. the library's kernels): never import it twice
    # a standalone file: imported afresh each time, so an edited kernel is seen (translate --check)
    digest = hashlib.sha256(full.encode()).hexdigest()[:10]
    modname = f"{_PATH_MODULE_PREFIX}{os.path.splitext(os.path.basename(full))[0]}_{digest}"
    spec = importlib.util.spec_from_file_location(modname, full)
    if spec is None or spec.loader is None:
        raise LookupError(f"{path} cannot be imported as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    try:
        if wanted is None:
            spec.loader.exec_module(module)
        else:
            with open(full, encoding="utf-8") as f:
                tree = ast.parse(f.read(), filename=full)
            exec(compile(definitions(tree, wanted), full, "exec"), module.__dict__)  # noqa: S102 - the user's file
    except BaseException:
        sys.modules.pop(modname, None)
        raise
    return module
