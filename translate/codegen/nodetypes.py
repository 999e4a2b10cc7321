"""Numba's types of a function's expressions, asked of numba's typing context without generating any code: what the
value ranges (``valueflow``) need to know where numba's integer arithmetic wraps around and what it converts its
operands to. An expression this cannot type is None (its range is then unknown)."""

from __future__ import annotations

import ast
import operator
from typing import Any

from numba.cuda import types

OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
             ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
             ast.LShift: operator.lshift, ast.RShift: operator.rshift, ast.BitAnd: operator.and_,
             ast.BitOr: operator.or_, ast.BitXor: operator.xor}
COMPARISONS = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
               ast.Eq: operator.eq, ast.NotEq: operator.ne}
UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}
#: calls whose result depends on their arguments only (two calls with the same arguments are one value)
PURE = {min, max, abs, len, round}


class NodeTypes:
    """``typeof(node)``, ``signature(node)`` of an operator or a comparison, ``cast_type(call)`` of a number-type
    cast, ``pure(call)``, ``truth(test)`` of a compile-time condition, ``name_type(name)``, for the function ``tr``
    translates (its typed names, bound values, template constants and globals)."""

    def __init__(self, ctx, consts, lookup_global, truth):
        self.ctx = ctx                        # the function (its typed record, bound parameters)
        self.consts = consts                  # its template constants
        self.lookup_global = lookup_global    # name -> (found, value) of the module and closure
        self.truth = truth                    # test -> True/False where every instantiation agrees, else None
        self._types: dict = {}
        self._sigs: dict = {}

    def name_type(self, name: str):
        typed = self.ctx.typed
        if name in self.ctx.bound:
            return _value_type(self.ctx.bound[name])
        if name in self.consts:
            return _value_type(self.consts[name])
        if name in typed.retyped or name in typed.conflicts:
            return None
        if name in typed.var_types:
            return typed.var_types[name]
        found, obj = self.lookup_global(name)
        return _value_type(obj) if found else None

    def typeof(self, node) -> Any:
        if node in self._types:
            return self._types[node]
        try:
            t = self._typeof(node)
        except Exception:  # noqa: BLE001 - numba cannot type it: unknown
            t = None
        self._types[node] = t
        return t

    def signature(self, node):
        """numba's signature of a BinOp, UnaryOp or single Compare (the types it converts the operands to)."""
        self.typeof(node)
        return self._sigs.get(node)

    def static(self, node):
        """The Python object an expression names (a module's function, a number type), or None."""
        if isinstance(node, ast.Name):
            if node.id in self.ctx.typed.var_types or node.id in self.ctx.bound:
                return None
            found, obj = self.lookup_global(node.id)
            return obj if found else None
        if isinstance(node, ast.Attribute):
            base = self.static(node.value)
            return getattr(base, node.attr, None) if base is not None else None
        return None

    def cast_type(self, node):
        """The type a call of a number type converts its argument to (``int(x)``: int64, ``np.uint32(x)``)."""
        if not isinstance(node, ast.Call) or node.keywords:
            return None
        from .pybuiltins import is_number_type

        obj = self.static(node.func)
        if obj is None or not is_number_type(obj):
            return None
        return self.typeof(node)

    def pure(self, node) -> bool:
        obj = self.static(node.func) if isinstance(node, ast.Call) else None
        if obj is None:
            return False
        from numba import cuda

        from .pybuiltins import is_number_type

        try:
            return obj in PURE or is_number_type(obj) or obj in (cuda.grid, cuda.gridsize)
        except TypeError:  # unhashable
            return False

    def _typeof(self, node) -> Any:
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool):
                return types.boolean
            if isinstance(v, int):
                return types.literal(v)
            if isinstance(v, float):
                return types.float64
            return None
        if isinstance(node, ast.Name):
            return self.name_type(node.id)
        if isinstance(node, ast.Attribute):
            return self._attribute(node)
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                return types.boolean
            return self._resolve(node, UNARY[type(node.op)], [node.operand])
        if isinstance(node, ast.BinOp):
            return self._resolve(node, OPERATORS[type(node.op)], [node.left, node.right])
        if isinstance(node, ast.Compare):
            if len(node.ops) == 1 and type(node.ops[0]) in COMPARISONS:
                self._resolve(node, COMPARISONS[type(node.ops[0])], [node.left, node.comparators[0]])
            return types.boolean
        if isinstance(node, ast.BoolOp):
            ts = [self.typeof(v) for v in node.values]
            return types.boolean if all(isinstance(t, types.Boolean) for t in ts) else None
        if isinstance(node, ast.IfExp):
            return self.ctx.typed.record.unified(node)
        if isinstance(node, ast.Call) and not node.keywords:
            obj = self.static(node.func)
            if obj is None:
                return None
            return self._resolve(node, obj, node.args)
        return None

    def _resolve(self, node, fn, args):
        argtypes = [self.typeof(a) for a in args]
        if any(t is None for t in argtypes):
            return None
        sig = self.ctx.typed.record.signature(node)
        if sig is None:
            return None
        self._sigs[node] = sig
        return sig.return_type

    def _attribute(self, node):
        from . import builtins

        base = self.static(node.value)
        if base is not None:
            if base in builtins.DIM3 and node.attr in ("x", "y", "z"):
                return types.int32
            sub = getattr(base, node.attr, None)
            return _value_type(sub) if isinstance(sub, (int, float)) else None
        from numba.cuda import stubs

        obj = self.static(node)
        if obj in (stubs.laneid, stubs.warpsize):
            return types.int32
        t = self.typeof(node.value)
        if t is not None and str(t) == "Dim3" and node.attr in ("x", "y", "z"):
            return types.int32
        if isinstance(t, types.Array) and node.attr == "size":
            return types.intp
        if isinstance(t, types.Array) and node.attr == "ndim":
            return types.literal(t.ndim)
        return None

    def _subscript(self, node):
        if isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
            return types.intp
        t = self.typeof(node.value)
        index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if isinstance(t, types.Array) and len(index) == t.ndim and not any(isinstance(i, ast.Slice) for i in index):
            return t.dtype
        if isinstance(t, types.BaseTuple) and isinstance(node.slice, ast.Constant) and \
                isinstance(node.slice.value, int) and -len(t) <= node.slice.value < len(t):
            return t[node.slice.value]
        return None


def _value_type(v):
    """numba's type of a compile-time value the kernel reads as a constant."""
    import numpy as np

    if isinstance(v, (bool, np.bool_)):
        return types.boolean
    if isinstance(v, (int, np.integer)):
        return types.literal(int(v))
    if isinstance(v, (float, np.floating)):
        return types.float64
    return None

