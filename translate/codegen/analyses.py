"""What the translator knows of a function's integer values before it writes C, as one value the walk asks: which
names are >= 0 and what that assumes of the parameters (``ranges``), the value ranges along the function, statement
by statement (``valueflow``, built on first use), and the bounds of names the function never assigns."""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping

import numpy as np

from ..cnames import is_int
from . import nodetypes, ranges, valueflow
from .context import FunctionContext


class Values:
    def __init__(self, ctx: FunctionContext, consts: Mapping, scalars: Mapping[str, str], lookup_global: Callable,
                 truth: Callable):
        """``consts``: the template constants of the instantiation the walk reads; ``scalars``: the C type key of
        each number name; ``lookup_global``: name -> (found, value) of the module and closure; ``truth``: test ->
        True/False where every instantiation agrees."""
        self.ctx, self.consts, self.scalars = ctx, consts, scalars
        self.lookup_global, self.truth = lookup_global, truth
        self.assigned = {n.id for n in ast.walk(ctx.fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        int_params = {p for p in ctx.params if p in scalars and is_int(scalars[p])}
        int_params -= ranges.sign_tested(ctx.fn, int_params)
        #: names proven >= 0 -> the parameters that proof assumes >= 0
        self.facts = ranges.analyze(ctx.fn, self.static_nonneg, int_params)
        self._flow: valueflow.Flow | None = None
        self._loop_starts = None

    @property
    def flow(self) -> valueflow.Flow:
        """The value ranges along the function (built on first use)."""
        if self._flow is None:
            types = nodetypes.NodeTypes(self.ctx, self.consts, self.lookup_global, self.truth)
            self._flow = valueflow.Flow(self.ctx.fn, self.static_interval, types)
        return self._flow

    def relational_nonneg(self, node) -> bool:
        """Is the index ``node`` >= 0 by its loop variables' starts (``o >= -r`` so ``t + r + o >= t``)? Names it
        relies on must be non-negative without assumptions about parameters."""
        if self._loop_starts is None:
            self._loop_starts = ranges.loop_starts(self.ctx.fn)

        def nonneg_name(name):
            deps = self.facts.get(name)
            return (deps is not None and not deps) or self.static_nonneg(ast.Name(name, ast.Load()))

        return ranges.relational_nonneg(node, self._loop_starts, nonneg_name)

    def nonneg(self, node, stmt) -> bool:
        """Is the index ``node`` >= 0 by the value ranges where statement ``stmt`` is evaluated?"""
        state = self.flow.state_for(stmt)
        return state is not None and self.flow.nonneg(node, state)

    def interval(self, node, stmt) -> tuple:
        """The range of the integer ``node`` in statement ``stmt``; None for an unknown end."""
        state = self.flow.state_for(stmt)
        return (None, None) if state is None else self.flow.interval(node, state)

    def operation_ranges(self, node, stmt):
        """``(left, right, result, exact)`` of the integer operation ``node`` (a BinOp, or an AugAssign's) in
        statement ``stmt``: the intervals of its operands and its result, and whether numba's result is the exact
        one (no wraparound); None where the ranges do not know."""
        if isinstance(node, ast.AugAssign):
            node = ast.copy_location(ast.BinOp(node.target, node.op, node.value), node)
        state = self.flow.state_for(stmt)
        if not isinstance(node, ast.BinOp) or state is None:
            return None
        f = self.flow
        return f.interval(node.left, state), f.interval(node.right, state), f.interval(node, state), \
            f.exact(node, state)

    def fits(self, node, stmt) -> bool:
        """Does numba compute every operator of ``node`` exactly (no wraparound), by the ranges at ``stmt``?"""
        state = self.flow.state_for(stmt)
        if state is None:
            return False
        return not any(isinstance(sub, (ast.BinOp, ast.UnaryOp)) and not isinstance(sub.op, (ast.Not, ast.UAdd))
                       and not self.flow.exact(sub, state) for sub in ast.walk(node))

    def static_interval(self, name):
        """The range of a name the function never assigns: an unsigned parameter's type, a constant's value."""
        bound = self.ctx.bound
        if name in bound and isinstance(bound[name], int) and not isinstance(bound[name], bool):
            return bound[name], bound[name]
        if name in self.consts and isinstance(self.consts[name], int):
            values = [c[name] for c in self.ctx.instantiations if isinstance(c.get(name), int)]
            return min(values), max(values)
        if name in self.scalars and name in self.ctx.params:
            key = self.scalars[name]
            return (0, 2 ** int(key[4:]) - 1) if key.startswith("uint") else None
        if name in self.ctx.params or name in self.assigned:
            return None
        found, obj = self.lookup_global(name)
        if found and isinstance(obj, (int, np.integer)) and not isinstance(obj, bool):
            return int(obj), int(obj)
        return None

    def static_nonneg(self, node) -> bool:
        if isinstance(node, ast.Name):
            if node.id in self.scalars:
                return self.scalars[node.id].startswith("u")
            if node.id in self.consts:
                v = self.consts[node.id]
                return isinstance(v, (int, float)) and v >= 0
            if node.id in self.ctx.typed.var_types:
                return str(self.ctx.typed.var_types[node.id]) == "Dim3"  # an alias of cuda.threadIdx etc.
            found, obj = self.lookup_global(node.id)
            return bool(found and isinstance(obj, (int, float)) and not isinstance(obj, bool) and obj >= 0)
        return False
