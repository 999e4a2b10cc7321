"""Integer value ranges along the function, statement by statement: proves an index non-negative where the
function-wide rules of ``ranges`` cannot (the Brent-Kung scan's ``s[idx - stride]`` with ``idx = (t + 1) * 2 *
stride - 1`` and ``stride`` doubling from 1).

A forward walk of the function keeps, before each statement:

- an interval per integer name (``numbakern.frontend.intervals``' arithmetic): an assignment sets it; a loop's body
  starts from the join of what enters the loop and what the body assigns (widened after a few rounds); after an
  ``if`` the two branches' intervals are joined;
- the current definition of each name assigned by a plain assignment whose operands have not changed since
  (``idx = (t + 1) * 2 * stride - 1``), so that ``idx - stride`` is read as a polynomial of ``t`` and ``stride``;
- the conditions known true (``while stride > 0``, ``if t >= step``, a conditional expression's test), as
  polynomials known ``>= 0``, until a name they mention is assigned.

An index is non-negative when its polynomial (definitions substituted, like terms collected) has a lower bound
``>= 0`` over the intervals of its atoms, by itself or after subtracting one known condition.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from numbakern.frontend import intervals as iv

WIDEN_AFTER = 6
DEPTH = 12


@dataclass
class State:
    ranges: dict = field(default_factory=dict)   # name -> (lo, hi), None for an unknown end
    defs: dict = field(default_factory=dict)     # name -> its current value (an AST expression)
    floors: list = field(default_factory=list)   # AST comparisons known true here

    def copy(self) -> State:
        return State(dict(self.ranges), dict(self.defs), list(self.floors))

    def assign(self, name: str, value, interval) -> None:
        self.defs = {n: v for n, v in self.defs.items() if n != name and name not in _names(v)}
        self.floors = [f for f in self.floors if name not in _names(f)]
        self.ranges[name] = interval
        if value is not None and name not in _names(value):
            self.defs[name] = value

    def forget(self, names: set) -> None:
        self.defs = {n: v for n, v in self.defs.items() if n not in names and not (names & _names(v))}
        self.floors = [f for f in self.floors if not (names & _names(f))]


def _names(node) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _join(a, b):
    if a is None:
        return b
    if b is None:
        return a
    lo = None if a[0] is None or b[0] is None else min(a[0], b[0])
    hi = None if a[1] is None or b[1] is None else max(a[1], b[1])
    return lo, hi


def _assigned(stmts) -> set:
    out = set()
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.add(n.id)
    return out


class Flow:
    """The states before each statement of ``fn`` (``at``), and the prover of non-negative indices."""

    def __init__(self, fn: ast.FunctionDef, static):
        self.static = static        # name -> interval of a name the function never assigns (or None)
        self.at: dict[int, State] = {}
        self.guards: dict[int, list] = {}  # id of a node inside a conditional expression's branch -> its tests
        self._atoms: dict = {}             # an atom of the polynomials (ast.dump of its node) -> the node
        self._guards(fn)
        self.block(fn.body, State())

    # -- the walk ----------------------------------------------------------------------------------------------
    def block(self, stmts, state: State) -> State:
        for s in stmts:
            state = self.stmt(s, state)
        return state

    def stmt(self, s, state: State) -> State:
        self.at[id(s)] = state.copy()
        if isinstance(s, (ast.Assign, ast.AnnAssign)) and s.value is not None:
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            for t in targets:
                self._bind(t, s.value, state)
            return state
        if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
            value = ast.BinOp(ast.Name(s.target.id, ast.Load()), s.op, s.value)
            state.assign(s.target.id, None, self.interval(value, state))
            return state
        if isinstance(s, ast.If):
            body = state.copy()
            body.floors.append(s.test)
            after_body = self.block(s.body, body)
            orelse = state.copy()
            orelse.floors.append(ast.UnaryOp(ast.Not(), s.test))
            after_else = self.block(s.orelse, orelse)
            return self._merge(state, after_body, after_else, _assigned(s.body) | _assigned(s.orelse))
        if isinstance(s, (ast.While, ast.For)):
            return self._loop(s, state)
        return state

    def _bind(self, target, value, state: State) -> None:
        if isinstance(target, ast.Name):
            state.assign(target.id, value, self.interval(value, state))
        elif isinstance(target, ast.Tuple):
            items = value.elts if isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts) else None
            for i, t in enumerate(target.elts):
                if items is not None:
                    self._bind(t, items[i], state)
                else:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            state.assign(n.id, None, (None, None))

    def _merge(self, before: State, a: State, b: State, names: set) -> State:
        out = before.copy()
        out.forget(names)
        for n in names:
            out.ranges[n] = _join(a.ranges.get(n, (None, None)), b.ranges.get(n, (None, None)))
        return out

    def _loop(self, s, state: State) -> State:
        names = _assigned(s.body)
        entry = state.copy()
        entry.forget(names)
        if isinstance(s, ast.For) and isinstance(s.target, ast.Name):
            names.add(s.target.id)
            entry.forget({s.target.id})
            entry.ranges[s.target.id] = self._range_var(s.iter, state)
        current = {n: entry.ranges.get(n) for n in names}
        for rounds in range(WIDEN_AFTER + 1):  # the body's entry: what comes in, joined with what it leaves
            trial = entry.copy()
            trial.ranges.update({n: v for n, v in current.items() if v is not None})
            if isinstance(s, ast.While):
                trial.floors.append(s.test)
            out = self._quiet_block(s.body, trial)
            new = {n: _join(current[n], out.ranges.get(n)) for n in names}
            if isinstance(s, ast.For) and isinstance(s.target, ast.Name):
                new[s.target.id] = entry.ranges[s.target.id]
            if new == current:
                break
            if rounds == WIDEN_AFTER:  # still moving: the ends that move are unknown
                new = {n: (None if new[n][0] != (current[n] or new[n])[0] else new[n][0],
                           None if new[n][1] != (current[n] or new[n])[1] else new[n][1]) for n in names}
            current = new
        body = entry.copy()
        body.ranges.update({n: v for n, v in current.items() if v is not None})
        if isinstance(s, ast.While):
            body.floors.append(s.test)
        self.block(s.body, body)
        after = state.copy()
        after.forget(names)
        for n in names:
            after.ranges[n] = current[n] if current[n] is not None else (None, None)
        return after

    def _quiet_block(self, stmts, state: State) -> State:
        saved = dict(self.at)
        try:
            return self.block(stmts, state)
        finally:
            self.at = saved

    def _range_var(self, it, state: State):
        from .unroll import range_call

        it = range_call(it)
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" and
                1 <= len(it.args) <= 3):
            return None, None
        args = [self.interval(a, state) for a in it.args]
        if len(args) == 1:
            return 0, None if args[0][1] is None else max(0, args[0][1] - 1)
        step = it.args[2] if len(it.args) == 3 else ast.Constant(1)
        if isinstance(step, ast.Constant) and isinstance(step.value, int) and step.value > 0:
            return args[0][0], None if args[1][1] is None else max(args[1][1] - 1, args[0][1] or 0)
        return None, None

    def _guards(self, fn) -> None:
        def visit(node, tests):
            if isinstance(node, ast.IfExp):
                visit(node.test, tests)
                visit(node.body, tests + [node.test])
                visit(node.orelse, tests + [ast.UnaryOp(ast.Not(), node.test)])
                return
            if tests:
                self.guards[id(node)] = tests
            for child in ast.iter_child_nodes(node):
                visit(child, tests)
        visit(fn, [])

    # -- intervals ---------------------------------------------------------------------------------------------
    def interval(self, node, state: State, depth: int = 0) -> tuple:
        if depth > DEPTH:
            return None, None
        d = depth + 1
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool):
                return int(v), int(v)
            return (v, v) if isinstance(v, int) else (None, None)
        if isinstance(node, ast.Name):
            if node.id in state.ranges:
                return state.ranges[node.id]
            return self.static(node.id) or (None, None)
        if isinstance(node, ast.Attribute):
            base = node.value
            name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", None)
            if (name, node.attr) in iv.ATTRIBUTE_BOUNDS:
                return iv.ATTRIBUTE_BOUNDS[(name, node.attr)]
            if node.attr in iv.NAME_BOUNDS:
                return iv.NAME_BOUNDS[node.attr]
            if node.attr == "size":
                return iv.EXTENT_BOUNDS
            return None, None
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
            return iv.EXTENT_BOUNDS
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return iv.scale(-1, self.interval(node.operand, state, d))
        if isinstance(node, ast.BinOp):
            a, b = self.interval(node.left, state, d), self.interval(node.right, state, d)
            op = type(node.op)
            if op is ast.Add:
                return iv.add(a, b)
            if op is ast.Sub:
                return iv.add(a, iv.scale(-1, b))
            if op is ast.Mult:
                return iv.mul(a, b)
            if op in (ast.FloorDiv, ast.Mod, ast.RShift) and None not in b and b[0] > 0 and op is not ast.RShift \
                    or op is ast.RShift and None not in b and b[0] >= 0:
                if None in a:
                    if op is ast.Mod:
                        return 0, b[1] - 1
                    lo = None if a[0] is None else (a[0] // b[1] if a[0] >= 0 else a[0] // b[0]) \
                        if op is ast.FloorDiv else (None if a[0] is None else min(a[0], 0))
                    return lo, None
                return iv.quotient_bounds(op, *a, *b)
            if op is ast.BitAnd and ((a[0] is not None and a[0] >= 0) or (b[0] is not None and b[0] >= 0)):
                his = [x[1] for x in (a, b) if x[0] is not None and x[0] >= 0]
                return 0, None if None in his else min(his)
            return None, None
        if isinstance(node, ast.IfExp):
            return _join(self.interval(node.body, state, d), self.interval(node.orelse, state, d))
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else (f.attr if isinstance(f, ast.Attribute) else None)
            if name in ("grid", "gridsize"):
                return iv.GRID_BOUNDS
            if name == "len":
                return iv.EXTENT_BOUNDS
            args = [self.interval(a, state, d) for a in node.args]
            if name in ("min", "max") and args:
                pick = min if name == "min" else max
                lo = None if any(a[0] is None for a in args) and name == "min" else \
                    pick(a[0] for a in args if a[0] is not None) if any(a[0] is not None for a in args) else None
                hi = None if any(a[1] is None for a in args) and name == "max" else \
                    pick(a[1] for a in args if a[1] is not None) if any(a[1] is not None for a in args) else None
                return lo, hi
            if name in ("int", "int32", "int64", "uint32", "uint64") and len(args) == 1:
                return args[0]
        return None, None

    # -- the prover ---------------------------------------------------------------------------------------------
    def nonneg(self, node, stmt) -> bool:
        """Is the integer ``node``, evaluated in statement ``stmt``, provably >= 0?"""
        state = self.at.get(id(stmt))
        if state is None:
            return False
        p = self.poly(node, state, 0)
        if p is None:
            return False
        if self.lower(p, state) is not None and self.lower(p, state) >= 0:
            return True
        floors = list(state.floors) + list(self.guards.get(id(node), ()))
        for f in floors:
            for q in self.floor_polys(f, state):
                diff = _plus(p, {m: -c for m, c in q.items()})
                low = self.lower(diff, state)
                if low is not None and low >= 0:
                    return True
        return False

    def floor_polys(self, test, state: State) -> list:
        """Polynomials ``>= 0`` that the true condition ``test`` gives."""
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return [q for v in test.values for q in self.floor_polys(v, state)]
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = test.operand
            if isinstance(inner, ast.Compare) and len(inner.ops) == 1:
                flip = {ast.Lt: ast.GtE, ast.LtE: ast.Gt, ast.Gt: ast.LtE, ast.GtE: ast.Lt}.get(type(inner.ops[0]))
                if flip is not None:
                    return self.floor_polys(ast.Compare(inner.left, [flip()], inner.comparators), state)
            return []
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            return []
        a, b = self.poly(test.left, state, 0), self.poly(test.comparators[0], state, 0)
        if a is None or b is None:
            return []
        op = type(test.ops[0])
        if op in (ast.Gt, ast.GtE):
            q = _plus(a, {m: -c for m, c in b.items()})
        elif op in (ast.Lt, ast.LtE):
            q = _plus(b, {m: -c for m, c in a.items()})
        else:
            return []
        if op in (ast.Gt, ast.Lt):  # integers: a > b is a - b - 1 >= 0
            q = _plus(q, {(): -1})
        return [q]

    def poly(self, node, state: State, depth: int):
        """``node`` as {monomial: coefficient} (a monomial: a sorted tuple of atoms), definitions substituted."""
        if depth > DEPTH:
            return None
        d = depth + 1
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return {(): int(node.value)}
        if isinstance(node, ast.Name) and node.id in state.defs:
            return self.poly(state.defs[node.id], state, d)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            p = self.poly(node.operand, state, d)
            return None if p is None else {m: -c for m, c in p.items()}
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            a, b = self.poly(node.left, state, d), self.poly(node.right, state, d)
            if a is None or b is None:
                return None
            if isinstance(node.op, ast.Add):
                return _plus(a, b)
            if isinstance(node.op, ast.Sub):
                return _plus(a, {m: -c for m, c in b.items()})
            out: dict = {}
            for ma, ca in a.items():
                for mb, cb in b.items():
                    m = tuple(sorted(ma + mb))
                    out[m] = out.get(m, 0) + ca * cb
            return {m: c for m, c in out.items() if c}
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("int", "int64") \
                and len(node.args) == 1:
            return self.poly(node.args[0], state, d)
        key = ast.dump(node)
        self._atoms[key] = node
        return {(key,): 1}

    def lower(self, p: dict, state: State):
        total = 0
        for m, c in p.items():
            r = (1, 1)
            for atom in m:
                r = iv.mul(r, self.interval(self._atoms[atom], state))
            lo = iv.scale(c, r)[0]
            if lo is None:
                return None
            total += lo
        return total


def _plus(a: dict, b: dict) -> dict:
    out = dict(a)
    for m, c in b.items():
        out[m] = out.get(m, 0) + c
    return {m: c for m, c in out.items() if c}
