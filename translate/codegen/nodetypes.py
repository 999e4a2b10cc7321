"""Numba's types of a function's expressions, read off its typed record: what the value ranges (``valueflow``) need
to know where numba's integer arithmetic wraps around and what it converts its operands to. An expression the record
does not type is None (its range is then unknown)."""

from __future__ import annotations

import ast
from typing import Any

from numba.cuda import types

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
        t = self._types[node] = self._typeof(node)
        return t

    def signature(self, node):
        """numba's signature of an operator, a single comparison or a call of a module's function (the types it
        converts the operands to); None where an operand has no type here (a name of several types)."""
        operands = _operands(node, self.static)
        if operands is None or any(self.typeof(a) is None for a in operands):
            return None
        return self.ctx.typed.record.signature(node)

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
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return types.boolean
        if isinstance(node, ast.BoolOp):
            ts = [self.typeof(v) for v in node.values]
            return types.boolean if all(isinstance(t, types.Boolean) for t in ts) else None
        if isinstance(node, ast.Compare):
            return types.boolean
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Call)):
            sig = self.signature(node)
            return sig and sig.return_type
        return self.ctx.typed.record.type_of(node)


def _operands(node, static) -> list | None:
    if isinstance(node, ast.BinOp) and not isinstance(node.op, ast.MatMult):
        return [node.left, node.right]
    if isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not):
        return [node.operand]
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and \
            not isinstance(node.ops[0], (ast.Is, ast.IsNot, ast.In, ast.NotIn)):
        return [node.left, node.comparators[0]]
    if isinstance(node, ast.Call) and not node.keywords and static(node.func) is not None:
        return node.args
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

