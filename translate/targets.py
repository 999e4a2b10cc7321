"""Resolve what to translate: a registered kernel name, ``package.module:kernel`` or ``path/to/file.py:kernel``."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import linecache
import os
import sys
import types
from dataclasses import dataclass, field
from typing import Any

from numbakern import registry
from numbakern.specialize import Specialized, constants_of, factory_of
from numbakern.unroll import rolled_function  # the kernel as its author wrote it, before unroll() expanded it


@dataclass(frozen=True)
class KernelTarget:
    target: str                          # what the user named (re-resolvable by translate --check)
    name: str                            # output file stem and C kernel name
    kernel: Any                          # the @cuda.jit dispatcher (numba's CUDADispatcher)
    pyfunc: types.FunctionType
    qualname: str                        # module:qualname
    registry_name: str | None = None
    signatures: tuple[str, ...] = ()
    constants: dict = field(default_factory=dict)   # specialization constants (become template parameters)
    #: the @specialize factory that made the kernel (None for a plain kernel): the kernel of other constants
    factory: Specialized | None = None


def resolve(name: str, constants: dict | None = None) -> KernelTarget:
    """``name``: a registry name (``matmul_tiled``), ``package.module:kernel`` or ``path/file.py:kernel``.
    ``constants`` pick the variant of a ``@specialize`` factory."""
    if ":" not in name:
        spec = registry.get(name)
        kernel = spec.kernel
        pyfunc = rolled_function(getattr(kernel, "py_func", kernel))
        consts = dict(spec.constants)
        return KernelTarget(name, spec.name, kernel, pyfunc, _qualname(pyfunc), spec.name,
                            tuple(spec.signatures), consts, factory_of(kernel))
    where, attr = name.rsplit(":", 1)
    if where.endswith(".py") or os.sep in where or "/" in where:
        module = _import_path(where)
    else:
        module = importlib.import_module(where)
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
    kernel = obj
    pyfunc = getattr(kernel, "py_func", None)
    if pyfunc is None:
        raise LookupError(f"'{name}' is not a @cuda.jit kernel")
    pyfunc = rolled_function(pyfunc)
    consts.update(constants_of(kernel))
    registry_name = _registered_as(kernel)
    return KernelTarget(name, pyfunc.__name__, kernel, pyfunc, _qualname(pyfunc), registry_name, (), consts,
                        factory_of(kernel))


def _qualname(pyfunc) -> str:
    return f"{pyfunc.__module__}:{pyfunc.__qualname__}"


def _registered_as(kernel):
    for spec in registry.all_specs():
        if spec.kernel is kernel:
            return spec.name
    return None


def _import_path(path: str):
    full = os.path.abspath(path)
    if not os.path.exists(full):
        raise LookupError(f"no such file: {path}")
    linecache.checkcache(full)
    for mod in list(sys.modules.values()):
        if getattr(mod, "__file__", None) and os.path.abspath(mod.__file__) == full and \
                not mod.__name__.startswith("_translate_"):
            return mod  # an importable module (e.g. the library's kernels): never import it twice
    # a standalone file: imported afresh each time, so an edited kernel is seen (translate --check)
    digest = hashlib.sha256(full.encode()).hexdigest()[:10]
    modname = f"_translate_{os.path.splitext(os.path.basename(full))[0]}_{digest}"
    spec = importlib.util.spec_from_file_location(modname, full)
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    spec.loader.exec_module(module)
    return module
