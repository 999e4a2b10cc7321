"""``translate --check``'s derivations, remembered: the sha256 of the deterministic translation of a kernel for an
entry's signature, constants and architecture, so that a check of an unchanged folder takes seconds, not a minute.

An entry is found by the content of everything the translation reads, computed from the kernel as it is now and
never from the manifest: the code and source of the kernel and of every device function it calls
(``depends.kernel_dependencies``), the value of every global or closure name those functions read (numbers, arrays
by their bytes, the attributes they read of a module of the user's), the kernel's code-generation options, the
signature, constants and architecture, and the translator itself: numbakern's version, a digest of the sources of
``translate/`` and ``numbakern/`` (the kernel library aside: its kernels are keyed one by one), and the versions of
Python, numba, numba-cuda and numpy. A value of a kind the key cannot digest makes the kernel's derivation
unkeyable: it is translated every time.

The entries live in the user's private cache (``numbakern.frontend.cache``, area ``derivations``: its folders
0700, entries owned by the user and bound to their keys), never in the repository, so the manifest still proves
nothing by itself. An entry holds only what a derivation produced; the file on disk is still compared to it, and
when the two differ the kernel is translated afresh before the file is judged: a cache hit can make a check
faster, never make a file pass.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
import types
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from numbakern.frontend import cache, closures
from numbakern.frontend.codetext import code_text

from . import depends, options, trust
from .targets import KernelTarget

AREA = "derivations"
#: bump when what an entry holds, or how its key is made, changes
FORMAT = 1
#: how deep the key follows a user's module attributes (``config.THRESHOLD``, ``params.tile.N``)
_DEPTH = 3


class Unkeyable(Exception):
    """The translation reads a value whose content the key cannot digest."""


def sha256(tgt: KernelTarget, signature: str, constants: dict, arch: str, derive: Callable[[], str],
           fresh: bool = False) -> tuple[str, bool]:
    """``(sha256 of the deterministic translation, whether it came from the cache)``: ``derive()`` translates
    when the cache has no entry (or ``fresh``), and its answer is kept."""
    try:
        key = _key(tgt, signature, constants, arch)
    except Unkeyable:
        key = None
    if key is not None and not fresh:
        found = cache.load_bytes(key, AREA)
        if found is not None and trust.record({"ok": True, "file_sha256": found.decode(errors="replace")}):
            return found.decode(), True
    derived = derive()
    if key is not None:
        cache.store_bytes(key, derived.encode(), AREA)
    return derived, False


def remember(tgt: KernelTarget, entry: dict) -> None:
    """A deterministic translation just written: its file is what ``--check`` derives for the entry's signature,
    constants and architecture, so a check right after ``translate`` finds the derivation made (the code does not
    depend on the architecture it is compiled for; the key names the entry's)."""
    try:
        key = _key(tgt, entry["signature"], trust.constants(entry.get("constants")), entry["compile"]["arch"])
    except Exception:  # noqa: BLE001 - the file is written; not remembering it only makes the next check derive it
        return
    cache.store_bytes(key, entry["file_sha256"].encode(), AREA)


def _key(tgt: KernelTarget, signature: str, constants: dict, arch: str) -> str:
    deps = depends.kernel_dependencies(tgt.pyfunc)
    functions = [tgt.pyfunc, *(_device_function(q) for q in deps.device_functions)]
    parts = {
        "format": FORMAT, "translator": translator_fingerprint(), "target": tgt.target, "name": tgt.name,
        "frontend": tgt.frontend, "signature": signature, "constants": constants, "arch": arch,
        "template_constants": {k: _digest(v) for k, v in sorted(tgt.constants.items())},
        "sources": depends.source_sha256(tgt.pyfunc, deps.device_functions, deps.constants, tgt.constants),
        "code": [code_text(fn.__code__) for fn in functions],
        "reads": [_reads(fn) for fn in functions],
        "codegen": _digest(_codegen_options(tgt, constants)),
        "factory": code_text(tgt.factory.factory.__code__) if tgt.factory is not None else None,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _device_function(qualname: str):
    module, _, name = qualname.partition(":")
    obj: Any = sys.modules.get(module)
    for part in name.split("."):
        obj = getattr(obj, part, None)
    fn = getattr(obj, "py_func", obj)
    if not isinstance(fn, types.FunctionType):
        raise Unkeyable(f"device function {qualname} not found")
    return fn


def _codegen_options(tgt: KernelTarget, constants: dict) -> list:
    """The kernel's ``@cuda.jit`` options for every instantiation of the entry's constants."""
    names = list(constants)
    combos = [dict(zip(names, values)) for values in zip(*(constants[n] for n in names))] if names else [{}]
    try:
        return [sorted(o.items()) for o in options.kernel_options(tgt, combos)]
    except Exception as e:  # noqa: BLE001 - the translation will say what is wrong; here: no entry
        raise Unkeyable(str(e)) from None


def _reads(fn: types.FunctionType) -> dict[str, str]:
    """Every global or closure name ``fn``'s code (nested functions too) reads, with its value's digest."""
    names: set[str] = set(closures.free_names(fn))
    todo = [fn.__code__]
    while todo:
        code = todo.pop()
        names.update(code.co_names)
        todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    out = {}
    for name in sorted(names):
        value = closures.lookup(fn, name)
        if value is not closures.MISSING:
            out[name] = _digest(value, names)
    return out


def _digest(value: Any, attributes: AbstractSet[str] = frozenset(), depth: int = _DEPTH) -> str:
    """A text that changes when what the translation can read of ``value`` changes; ``Unkeyable`` for a kind of
    value it cannot tell. ``attributes``: the names the code reads, of which a module's are followed."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return repr(value)
    if isinstance(value, np.ndarray):
        return f"array {value.dtype.str} {value.shape} {_sha(np.ascontiguousarray(value).tobytes())}"
    if isinstance(value, (np.generic, np.dtype)):
        return f"{type(value).__name__} {value!r}"
    if isinstance(value, (tuple, list)) and len(value) <= 4096:
        return f"{type(value).__name__}({', '.join(_digest(v, attributes, depth) for v in value)})"
    if isinstance(value, types.FunctionType):
        return f"function {value.__module__}:{value.__qualname__} {_sha(code_text(value.__code__).encode())}"
    py_func = getattr(value, "py_func", None)
    if isinstance(py_func, types.FunctionType):  # a numba dispatcher: its Python function is what is compiled
        return f"{type(value).__name__} {_digest(py_func)}"
    if isinstance(value, types.ModuleType):
        if _part_of_the_translator(value) or depth <= 0:
            return f"module {value.__name__}"
        read = {a: _digest(getattr(value, a), attributes, depth - 1) for a in sorted(attributes)
                if hasattr(value, a)}
        return f"module {value.__name__} {read}"
    if isinstance(value, (type, types.BuiltinFunctionType)) or _part_of_the_translator(value):
        name = getattr(value, "__qualname__", None) or repr(value)
        return f"{type(value).__name__} {getattr(value, '__module__', '')}:{name}"
    raise Unkeyable(f"a value of type {type(value).__qualname__}")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


#: packages whose objects the translator knows by name (their versions and sources are in its fingerprint)
_KNOWN = ("numba", "numba_cuda", "numba_cuda_mlir", "numpy", "math", "cmath", "operator", "builtins", "numbakern",
          "cuda")


def _part_of_the_translator(value: Any) -> bool:
    module = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
    if not isinstance(module, str):
        module = getattr(type(value), "__module__", "") or ""
    top = module.split(".")[0]
    return top in _KNOWN and not module.startswith("numbakern.kernels")


@functools.cache
def translator_fingerprint() -> str:
    """numbakern's version and the digest of the translator's sources and its dependencies' versions."""
    h = hashlib.sha256()
    import numbakern  # (the package whose files are hashed; imported already by whoever translates)
    import translate

    for package in (translate, numbakern):
        top = Path(str(package.__file__)).parent
        for path in sorted(top.rglob("*")):
            if path.is_file() and path.suffix in (".py", ".cu", ".h", ".cuh") and "__pycache__" not in path.parts \
                    and not path.is_relative_to(top / "kernels"):
                h.update(str(path.relative_to(top.parent)).encode() + b"\0" + path.read_bytes() + b"\0")
    for dist in ("numbakern", "numba", "numba-cuda", "numpy"):
        try:
            h.update(f"{dist}={version(dist)}\0".encode())
        except PackageNotFoundError:
            h.update(f"{dist}=?\0".encode())
    h.update(sys.version.encode())
    return h.hexdigest()

