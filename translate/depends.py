"""What a kernel's generated file depends on, read from the Python side: the device functions it calls (directly or
through other device functions) and the module constants it reads (numbers and booleans from module globals or
closure cells).

Every backend's manifest entry hashes the same dependencies (``source_sha256``), so the verified-file guard and
``translate --check`` do not depend on which backend wrote a file, or on what its code happened to mention. Python
scoping decides what a name is: a name the function assigns or takes as an argument is local; any other name it loads
is looked up in the function's closure, then its module's globals (``numbakern.frontend.closures``).
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import inspect
import json
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numba.core.dispatcher import Dispatcher
from numba.cuda.dispatcher import CUDADispatcher

from numbakern.frontend import closures
from numbakern.frontend.codetext import code_text

from . import targets


@dataclass(frozen=True)
class Dependencies:
    device_functions: tuple[str, ...] = ()  # "module:qualname", callees before their callers
    constants: dict[str, bool | int | float] = field(default_factory=dict)  # name -> value, in first-use order
    sources: dict[str, str] = field(default_factory=dict)  # device function "module:qualname" -> its source, if any

    def manifest(self) -> dict:
        return {"device_functions": [labelled(q) for q in self.device_functions], "constants": dict(self.constants)}


def kernel_dependencies(pyfunc: Any, template_params: Iterable[str] = ()) -> Dependencies:
    """The dependencies of the kernel ``pyfunc``; ``template_params`` (its compile-time constants, hashed on their
    own) are not module constants."""
    walker = _Walker()
    walker.visit_function(pyfunc, frozenset(template_params))
    return Dependencies(tuple(walker.device_functions), dict(walker.constants), dict(walker.sources))


def function_tree(pyfunc: Any) -> ast.FunctionDef:
    tree = ast.parse(textwrap.dedent(inspect.getsource(pyfunc)))
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef):
        raise TypeError(f"{pyfunc!r} is not a function definition")
    return node


def number_value(obj: Any) -> bool | int | float | None:
    """``obj`` as the JSON number the manifest records, or None when it is not a number (bool before int)."""
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        return float(obj)
    return None


def _is_device_function(obj: Any) -> bool:
    """A function the kernel calls that the translator compiles into the file: a ``@cuda.jit(device=True)``
    function, or a ``@numba.jit`` one (numba-cuda compiles CPU-jitted functions for the device when a kernel calls
    them; ``numba.cuda.random`` is written that way)."""
    if isinstance(obj, CUDADispatcher):
        return bool(obj.targetoptions.get("device", False))
    return isinstance(obj, Dispatcher)


class _Walker:
    def __init__(self) -> None:
        self.device_functions: list[str] = []
        self.constants: dict[str, bool | int | float] = {}
        self.sources: dict[str, str] = {}
        self._seen: set[str] = set()

    def visit_function(self, fn: Any, skip: frozenset[str]) -> None:
        try:
            node = function_tree(fn)
        except (OSError, TypeError):  # no source (made by exec of a string): the global names its code reads
            for name in fn.__code__.co_names:
                if name in fn.__globals__ and name not in skip:
                    self._met(ast.Name(name, ast.Load()), fn.__globals__[name])
            return
        local = _local_names(node)
        for expr in _loads_in_order(node):
            obj = self._resolve(fn, expr, local | skip)
            if obj is not closures.MISSING:
                self._met(expr, obj)

    def _met(self, expr: ast.expr, obj: Any) -> None:
        if _is_device_function(obj):
            self._device_function(obj)
        elif isinstance(expr, ast.Name):  # a number read through a module attribute is not a module constant
            value = number_value(obj)
            if value is not None:
                self.constants.setdefault(expr.id, value)

    def _device_function(self, dispatcher: Any) -> None:
        py = dispatcher.py_func
        qualname = f"{py.__module__}:{py.__qualname__}"
        if qualname in self._seen:
            return
        self._seen.add(qualname)
        self.visit_function(py, frozenset())
        self.device_functions.append(qualname)
        with contextlib.suppress(OSError, TypeError):  # made by exec: no text to show (its hash digests its code)
            self.sources[qualname] = inspect.getsource(py)

    @staticmethod
    def _resolve(fn: Any, expr: ast.expr, local: frozenset[str] | set[str]) -> Any:
        chain: list[str] = []
        while isinstance(expr, ast.Attribute):
            chain.append(expr.attr)
            expr = expr.value
        if not isinstance(expr, ast.Name) or expr.id in local:
            return closures.MISSING
        obj = closures.lookup(fn, expr.id)
        for attr in reversed(chain):
            if obj is closures.MISSING:
                break
            obj = getattr(obj, attr, closures.MISSING)
        return obj


def _local_names(node: ast.FunctionDef) -> frozenset[str]:
    a = node.args
    names = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    names |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, (ast.Store, ast.Del)):
            names.add(sub.id)
    return frozenset(names)


def _loads_in_order(node: ast.FunctionDef) -> list[ast.expr]:
    """Each loaded name and the outermost attribute chain on it (``cuda.threadIdx.x``), in source order."""
    found: list[ast.expr] = []

    class Visitor(ast.NodeVisitor):
        def visit_Attribute(self, sub: ast.Attribute) -> None:
            root = sub
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and isinstance(sub.ctx, ast.Load):
                found.append(sub)
                found.append(root)  # the root alone too: `helpers.f` is a call, `helpers` a module
            else:
                self.generic_visit(sub)

        def visit_Name(self, sub: ast.Name) -> None:
            if isinstance(sub.ctx, ast.Load):
                found.append(sub)

    for stmt in node.body:
        Visitor().visit(stmt)
    return found


def labelled(qualname: str) -> str:
    """``module:qualname`` with the module as the user names it (a file imported by path is its path, never the
    internal module name it was imported under): what the manifest records and the source hash is keyed by."""
    mod, qual = qualname.split(":", 1)
    return f"{targets.module_label(mod)}:{qual}"


def source_sha256(pyfunc: Any, device_functions: Iterable[str], constants: Mapping[str, Any],
                  template_constants: Mapping[str, Any], codegen: dict | None = None) -> str:
    """sha256 of everything a generated file depends on (``translate --check`` recomputes it): the kernel's source,
    the sources of the device functions it calls (``module:qualname``), the module constants it reads, its
    compile-time constants and its code-generation options (fastmath / launch_bounds / max_registers)."""
    parts = {"kernel": _source_text(pyfunc), "device_functions": {}, "constants": dict(sorted(constants.items()))}
    for q in map(labelled, device_functions):
        mod, qual = q.split(":", 1)
        obj = targets.module_for(mod)  # None (an empty source, so a different hash) when not imported
        for p in qual.split("."):
            obj = getattr(obj, p, None)
        fn = getattr(obj, "py_func", obj)
        parts["device_functions"][q] = _source_text(fn) if fn is not None else ""
    parts["constants"].update({f"template:{k}": v for k, v in sorted(template_constants.items())})
    if codegen is not None:
        parts["codegen"] = codegen
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _source_text(fn: Any) -> str:
    """``fn``'s source, or for a function with none (made by ``exec`` of a string) a digest of its code object: it
    changes when the string does (and with the Python version, which compiles it)."""
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        code = getattr(fn, "__code__", None)
        return "code:" + hashlib.sha256(code_text(code).encode()).hexdigest() if code is not None else ""


def current_constants(pyfunc: Any, names: Iterable[str]) -> dict[str, Any]:
    """The values the module constants ``names`` have for ``pyfunc`` now (``translate --check``: a changed constant
    makes the file stale); a name that no longer resolves is None."""
    out = {}
    for name in names:
        value = closures.lookup(pyfunc, name)
        value = None if value is closures.MISSING else value
        out[name] = value.item() if value is not None and hasattr(value, "item") else value
    return out
