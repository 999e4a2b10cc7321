"""What numba-cuda decided about each operation of a kernel, keyed by the node of the kernel's Python that performs
it (helper process).

Each function's Python is rebuilt from numba's typed IR (``decompile``), and every node of it that performs an IR
operation carries that operation's facts:

- ``BinOp``/``Compare`` ``binop``: the operand types, the signature numba chose (the types it converts the
  operands to) and the result type, e.g. ``int32 * int32`` is ``(int64, int64) -> int64`` (``x += y`` too);
- ``UnaryOp`` ``unary``; ``Call`` ``call`` (what is called: a cast, a builtin, a math or numpy function, a CUDA
  intrinsic, a device function with its own facts, a method); ``Subscript`` ``getitem`` and ``setitem``;
  ``Attribute`` ``getattr``; ``Name`` ``global`` (a module constant or closure value); ``Constant`` ``const``;
  ``Return`` ``return``. Every variable of the rebuilt Python has one type (``names``).

Facts are plain JSON: a type is ``{"t": "int32"}`` (``int8``..``uint64``, ``float16/32/64``, ``complex64/128``,
``bool``), ``{"t": "array", "dtype": ..., "ndim": ...}``, ``{"t": "tuple"}``, ``{"t": "record"}``,
``{"t": "none"}`` or ``{"t": "other", "name": ...}``; an integer literal adds ``"lit"``.
"""

from __future__ import annotations

import operator
from typing import Any

from . import closures, typer
from .compile import CodeRegistry

_OPERATORS = {
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/", operator.floordiv: "//",
    operator.mod: "%", operator.pow: "**", operator.lshift: "<<", operator.rshift: ">>", operator.and_: "&",
    operator.or_: "|", operator.xor: "^", operator.matmul: "@", operator.lt: "<", operator.le: "<=",
    operator.gt: ">", operator.ge: ">=", operator.eq: "==", operator.ne: "!=", operator.neg: "-",
    operator.pos: "+", operator.invert: "~", operator.not_: "not", operator.contains: "in",
    operator.is_: "is", operator.is_not: "is not",
}

#: where the typing keys of CUDA intrinsics live (numba-cuda's, numba-cuda-mlir's and its copy of numba-cuda's)
_CUDA_PACKAGES = ("numba.cuda", "numba_cuda_mlir")

_BUILTINS = {"int", "float", "bool", "abs", "min", "max", "round", "len", "range", "pow", "divmod", "complex"}


def describe_type(t) -> dict[str, Any]:
    types = typer.module("types")

    lit = None
    if isinstance(t, types.Literal):
        lit = t.literal_value
        t = t.literal_type
    out: dict[str, Any]
    if isinstance(t, types.Boolean):
        out = {"t": "bool"}
    elif isinstance(t, (types.Integer, types.Float, types.Complex)):
        out = {"t": str(t)}
    elif isinstance(t, types.Array):
        out = {"t": "array", "dtype": describe_type(t.dtype)["t"], "ndim": t.ndim}
    elif isinstance(t, types.BaseTuple):
        out = {"t": "tuple"}
    elif isinstance(t, types.Record):
        out = {"t": "record"}
    elif isinstance(t, types.NoneType):
        out = {"t": "none"}
    else:
        out = {"t": "other", "name": type(t).__name__}
    if isinstance(lit, (bool, int, float)) and out["t"] != "other":
        out["lit"] = lit
    return out


class FunctionFacts:
    """Facts of one compiled function (the kernel, or a device function for one signature), and its Python rebuilt
    from the typed IR (``decompile``), the facts keyed by the nodes of that text."""

    def __init__(self, label: str, cres, registry: CodeRegistry, devices: DeviceFacts):
        self.label = label
        self.cres = cres
        self.registry = registry
        self.devices = devices
        self.typemap = cres.fndesc.typemap
        self.calltypes = cres.fndesc.calltypes
        self.nodes: dict[str, dict[str, list]] = {}
        self.names: dict[str, list] = {}
        self.python: dict = {}
        self._by_item: dict[int, list] = {}  # id(IR expression or statement) -> [(kind, fact)]

    def to_json(self) -> dict:
        return {
            "label": self.label,
            "args": [describe_type(t) for t in self.cres.signature.args],
            "ret": describe_type(self.cres.signature.return_type),
            "names": self.names,
            "nodes": self.nodes,
            "python": self.python,
        }

    # -- collecting ----------------------------------------------------------------------------------------------

    def collect(self) -> None:
        ir = typer.module("core.ir")

        from .decompile import rebuild

        self.devices.note_nested(self)
        for block in self.cres.type_annotation.blocks.values():
            for stmt in block.body:
                if isinstance(stmt, ir.Assign):
                    self._assign(stmt)
                elif isinstance(stmt, (ir.SetItem, ir.StaticSetItem)):
                    self._setitem(stmt)
                elif isinstance(stmt, ir.Return):
                    self._return(stmt)
        found = rebuild(self.cres, lambda item: self._by_item.get(id(item), ()), self.registry)
        self.nodes = found.pop("nodes")
        for name, variables in found.pop("variables").items():
            self.names[name] = []
            for var in variables:
                d = describe_type(self.typemap[var])
                d.pop("lit", None)
                if d not in self.names[name]:
                    self.names[name].append(d)
        self.python = found

    def _record(self, item, kind: str, fact: dict) -> None:
        self._by_item.setdefault(id(item), []).append((kind, fact))

    def _type(self, var):
        return self.typemap[var.name]

    def _assign(self, stmt) -> None:
        ir = typer.module("core.ir")

        value, target_type = stmt.value, self.typemap.get(stmt.target.name)
        if isinstance(value, (ir.Global, ir.FreeVar)):
            self._record(value, "global", {"type": describe_type(target_type)})
        elif isinstance(value, ir.Const):
            self._record(value, "const", {"type": describe_type(target_type)})
        elif isinstance(value, ir.Expr):
            handler = getattr(self, "_expr_" + value.op, None)
            if handler is not None:
                handler(value, target_type)

    def _signature(self, expr):
        sig = self.calltypes.get(expr)
        if sig is None:
            return None, None
        return [describe_type(a) for a in sig.args], describe_type(sig.return_type)

    def _expr_binop(self, expr, target_type, kind="binop") -> None:
        args, ret = self._signature(expr)
        fn = expr.immutable_fn if kind == "inplace_binop" else expr.fn
        self._record(expr, kind, {
            "op": _OPERATORS.get(fn, getattr(fn, "__name__", "?")),
            "lhs": describe_type(self._type(expr.lhs)), "rhs": describe_type(self._type(expr.rhs)),
            "sig": args, "ret": ret if ret is not None else describe_type(target_type),
        })

    def _expr_inplace_binop(self, expr, target_type) -> None:
        self._expr_binop(expr, target_type, "inplace_binop")

    def _expr_unary(self, expr, target_type) -> None:
        args, ret = self._signature(expr)
        self._record(expr, "unary", {
            "op": _OPERATORS.get(expr.fn, getattr(expr.fn, "__name__", "?")),
            "arg": describe_type(self._type(expr.value)), "sig": args,
            "ret": ret if ret is not None else describe_type(target_type),
        })

    def _expr_getitem(self, expr, target_type, kind="getitem") -> None:
        index = _field(expr, "index_var") or _field(expr, "index")
        index_type = self._type(index) if index is not None and getattr(index, "name", None) in self.typemap \
            else None
        self._record(expr, "getitem", {
            "value": describe_type(self._type(expr.value)),
            "index": describe_type(index_type) if index_type is not None else {"t": "other", "name": "static"},
            "ret": describe_type(target_type),
        })

    def _expr_static_getitem(self, expr, target_type) -> None:
        self._expr_getitem(expr, target_type)

    def _expr_typed_getitem(self, expr, target_type) -> None:
        self._expr_getitem(expr, target_type)

    def _expr_getattr(self, expr, target_type) -> None:
        self._record(expr, "getattr", {
            "value": describe_type(self._type(expr.value)), "attr": expr.attr, "ret": describe_type(target_type),
        })

    def _expr_call(self, expr, target_type) -> None:
        args, ret = self._signature(expr)
        fact = {
            "fn": self._callee(expr),
            "args": [describe_type(self._type(a)) for a in expr.args],
            "kws": [k for k, _ in expr.kws],
            "sig": args,
            "ret": ret if ret is not None else describe_type(target_type),
        }
        sig = self.calltypes.get(expr)
        fnty = self._type(expr.func)
        dispatcher = getattr(fnty, "dispatcher", None)
        if dispatcher is not None and sig is not None:
            from .request import device_index

            index = device_index(dispatcher)
            if index is None:
                index = self.devices.nested.get(id(dispatcher), (None, None))[1]
            if index is not None:
                fact["fn"] = {"kind": "device", "function": self.devices.facts_for(dispatcher, index, sig)}
        self._record(expr, "call", fact)

    def _callee(self, expr) -> dict:
        types = typer.module("types")

        fnty = self._type(expr.func)
        if isinstance(fnty, types.NumberClass):
            return {"kind": "cast", "to": describe_type(fnty.instance_type)}
        if isinstance(fnty, types.BoundFunction):
            return {"kind": "method", "name": str(getattr(fnty.typing_key, "__name__", fnty.typing_key))}
        if isinstance(fnty, types.Dispatcher):
            return {"kind": "other", "name": "dispatcher"}
        key = getattr(fnty, "typing_key", None)
        name = getattr(key, "__name__", None) or str(key)
        module = getattr(key, "__module__", None) or ""
        if module == "builtins" and name in _BUILTINS or key in (int, float, bool, complex, range):
            return {"kind": "builtin", "name": name}
        if module == "math":
            return {"kind": "math", "name": name}
        if module.startswith("numpy") or type(key).__module__.startswith("numpy"):
            return {"kind": "numpy", "name": name}
        if module.startswith(_CUDA_PACKAGES) or type(key).__module__.startswith(_CUDA_PACKAGES):
            return {"kind": "cuda", "name": name}
        return {"kind": "other", "name": name}

    def _setitem(self, stmt) -> None:
        ir = typer.module("core.ir")

        sig = self.calltypes.get(stmt)
        array_type = self._type(stmt.target)
        index = stmt.index if isinstance(stmt, ir.SetItem) else getattr(stmt, "index_var", None)
        self._record(stmt, "setitem", {
            "array": describe_type(array_type),
            "value": describe_type(self._type(stmt.value)),
            "index": describe_type(self._type(index)) if index is not None else {"t": "other", "name": "static"},
            "sig": [describe_type(a) for a in sig.args] if sig is not None else None,
        })

    def _return(self, stmt) -> None:
        self._record(stmt, "return", {
            "value": describe_type(self._type(stmt.value)),
            "ret": describe_type(self.cres.signature.return_type),
        })

def _field(expr, name):
    # ir.Expr answers a missing attribute with KeyError
    try:
        return getattr(expr, name)
    except (AttributeError, KeyError):
        return None


class DeviceFacts:
    """The facts of every (device function, signature) a kernel reaches, numbered in the order they are met."""

    def __init__(self, registry: CodeRegistry):
        self.registry = registry
        self.functions: list[FunctionFacts | None] = [None]  # slot 0 is the kernel
        self._seen: dict[tuple, int] = {}
        self.cooperative = False
        #: id(dispatcher) -> (dispatcher, label) of the functions defined inside a function met so far
        self.nested: dict[int, tuple] = {}

    def note_nested(self, owner: FunctionFacts) -> None:
        """The functions ``owner`` defines inside it that numba made ``cuda.jit`` globals (they escape), each
        labelled ``nested:(owner's label, path, closure values, defaults)`` for the caller to make it again
        (``numbakern.sim.typed``): a call of one in a device function then runs its typed Python. One whose values
        have no Python literal stays unlabelled (it runs as Python, ``decompile._made_function``)."""
        import ast

        ir = typer.module("core.ir")

        from .decompile import nested_code_path

        root = owner.cres.type_annotation.func_id.func.__code__
        for block in owner.cres.type_annotation.blocks.values():
            for stmt in block.body:
                value: Any = getattr(stmt, "value", None)
                if not isinstance(stmt, ir.Assign) or not isinstance(value, ir.Global):
                    continue
                fn: Any = getattr(value.value, "py_func", None)
                code = getattr(fn, "__code__", None)
                path = nested_code_path(root, code) if code is not None else None
                if path is None or id(value.value) in self.nested:
                    continue
                made = (owner.label, path, closures.cell_values(fn), fn.__defaults__)
                try:
                    if ast.literal_eval(repr(made)) != made:
                        continue
                except (ValueError, SyntaxError):
                    continue
                self.nested[id(value.value)] = (value.value, "nested:" + repr(made))

    def facts_for(self, dispatcher, index: int | str, sig) -> int:
        """The slot of ``dispatcher``'s facts for ``sig``; ``index``: its index among the request's device
        functions, or the label of a nested function (``note_nested``)."""
        key = (index, tuple(sig.args))
        slot = self._seen.get(key)
        if slot is not None:
            return slot
        slot = self._seen[key] = len(self.functions)
        self.functions.append(None)
        cres = dispatcher.overloads.get(tuple(sig.args))
        if cres is None:
            return -1
        label = index if isinstance(index, str) else f"device:{index}"
        facts = FunctionFacts(label, cres, self.registry, self)
        self.cooperative |= bool(getattr(cres.library, "use_cooperative", False))
        facts.collect()
        self.functions[slot] = facts
        return slot


def kernel_facts(cres, registry: CodeRegistry) -> dict:
    devices = DeviceFacts(registry)
    kernel = FunctionFacts("kernel", cres, registry, devices)
    devices.functions[0] = kernel
    kernel.collect()
    cooperative = devices.cooperative or bool(getattr(cres.library, "use_cooperative", False))
    return {
        "ok": True,
        "cooperative": cooperative,
        "functions": [f.to_json() if f is not None else None for f in devices.functions],
    }
