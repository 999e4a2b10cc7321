"""Integer value ranges along the function, statement by statement: the one place the translator asks what values an
integer can take (with ``numbakern.frontend.intervals``' arithmetic, which the simulator's typed pass shares).

It proves an index non-negative where no simple rule can (the Brent-Kung scan's ``s[idx - stride]`` with ``idx = (t +
1) * 2 * stride - 1`` and ``stride`` doubling from 1), and a division or modulo to have a non-negative dividend and a
positive divisor (C's ``/`` and ``%`` then compute Python's floor ones: ``(lk + bn - 1) // bn``).

A forward walk of the function keeps, before each statement:

- an interval per integer name: an assignment sets it; a condition known true narrows it (``while stride <= n``,
  ``if t < stride``, and the negation on the other branch); a loop's body starts from the join of what enters the loop
  and what its iterations (and their ``continue``\\s) leave, widened after a few rounds and narrowed once; after a loop,
  that join and the states its ``break``\\s leave; after an ``if``, the two branches joined;
- the current definition of each name assigned by a plain assignment whose operands have not changed since (``idx =
  (t + 1) * 2 * stride - 1``), so that ``idx - stride`` is read as a polynomial of ``t`` and ``stride``;
- the conditions known true, as polynomials known ``>= 0``, until a name they mention is assigned.

The intervals are of the values Numba computes, in Numba's types (``types``: numba's type of an expression and the
signature of an operator, without generating code). Numba wraps integer arithmetic around at its type's width, so a
result is exact only when the exact result fits its type (and each operand fits the type numba converts it to);
otherwise its interval is its type's whole range, and a polynomial identity through it is not used.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from numba.cuda import types as nt

from numbakern.frontend import intervals as iv

WIDEN_AFTER = 6
DEPTH = 12
FLOAT_EXACT = {"float64": 2 ** 53, "float32": 2 ** 24}


@dataclass
class State:
    ranges: dict = field(default_factory=dict)   # name -> (lo, hi), None for an unknown end
    defs: dict = field(default_factory=dict)     # name -> its current value (an AST expression)
    floors: list = field(default_factory=list)   # AST comparisons known true here
    # id of an expression -> (it, the names it reads), shared by the states of one walk: every assignment asks it of
    # each value and comparison the state remembers, and a walk of each per ask made long bodies quadratic
    read_names: dict = field(default_factory=dict)

    def copy(self) -> State:
        return State(dict(self.ranges), dict(self.defs), list(self.floors), self.read_names)

    def names(self, node) -> frozenset:
        found = self.read_names.get(id(node))
        if found is None or found[0] is not node:
            found = self.read_names[id(node)] = (node, _names(node))
        return found[1]

    def assign(self, name: str, value, interval) -> None:
        self.defs = {n: v for n, v in self.defs.items() if n != name and name not in self.names(v)}
        self.floors = [f for f in self.floors if name not in self.names(f)]
        self.ranges[name] = interval
        if value is not None and name not in self.names(value):
            self.defs[name] = value

    def forget(self, names: set) -> None:
        self.defs = {n: v for n, v in self.defs.items() if n not in names and not (names & self.names(v))}
        self.floors = [f for f in self.floors if not (names & self.names(f))]


def _names(node) -> frozenset:
    return frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name))


def join(a, b):
    """The smallest interval holding both (None: nothing known yet on that side)."""
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


def type_range(t):
    """``(lo, hi)`` of numba's integer (or boolean) type ``t``; None for other types."""
    if isinstance(t, nt.IntegerLiteral):
        t = t.literal_type
    if isinstance(t, nt.BooleanLiteral) or isinstance(t, nt.Boolean):
        return 0, 1
    if isinstance(t, nt.Integer):
        return (-(2 ** (t.bitwidth - 1)), 2 ** (t.bitwidth - 1) - 1) if t.signed else (0, 2 ** t.bitwidth - 1)
    return None


def within(r, lo: int, hi: int) -> bool:
    return r is not None and r[0] is not None and r[1] is not None and lo <= r[0] and r[1] <= hi


def fits(r, t) -> bool:
    """Does every value of ``r`` convert to numba's type ``t`` unchanged?"""
    tr = type_range(t)
    if tr is not None:
        return within(r, *tr)
    limit = FLOAT_EXACT.get(str(t))
    return limit is not None and within(r, -limit, limit)


def converts_exactly(source, target) -> bool:
    """Does numba convert every value of integer type ``source`` into ``target`` unchanged (a widening)?"""
    if isinstance(source, nt.IntegerLiteral):
        return fits((source.literal_value, source.literal_value), target)
    if isinstance(source, nt.Boolean):
        return type_range(target) is not None or str(target) in FLOAT_EXACT
    if not (isinstance(source, nt.Integer) and isinstance(target, nt.Integer)):
        return False
    if source.signed:
        return target.signed and target.bitwidth >= source.bitwidth
    return target.bitwidth > source.bitwidth if target.signed else target.bitwidth >= source.bitwidth


def meet(r, bounds):
    """``r`` within ``bounds`` (both ends known): an unknown end of ``r`` becomes the bound's."""
    lo = bounds[0] if r[0] is None else max(r[0], bounds[0])
    hi = bounds[1] if r[1] is None else min(r[1], bounds[1])
    return (lo, hi) if lo <= hi else bounds


def fit(r, t):
    """The interval of a value numba computes in type ``t`` whose exact result is in ``r``: ``r`` when it fits, else
    the whole range of ``t`` (the arithmetic wrapped around)."""
    tr = type_range(t)
    if tr is None or within(r, *tr):
        return r
    return tr


class Flow:
    """The states before each statement of ``fn`` (``at``; a while loop's test: ``tests``), and the prover of
    non-negative indices.

    ``static(name)``: the interval of a name the function never assigns (or None); ``types``: numba's types of the
    function's expressions (``typeof(node)``, ``signature(node)`` of an operator or comparison, ``pure(call)``)."""

    def __init__(self, fn: ast.FunctionDef, static, types):
        self.static = static
        self.types = types
        self.at: dict[int, State] = {}
        self.tests: dict[int, State] = {}  # id of a While -> the state its test is evaluated in (every iteration)
        self.guards: dict[int, list] = {}  # id of a node inside a conditional expression's branch -> its tests
        self._atoms: dict = {}             # an atom of the polynomials (ast.dump of its node) -> the node
        self._exits: list = []             # per loop being walked: (states at its breaks, at its continues)
        self._relating = False             # a relational lower bound is being computed
        self._loop_floors: set = set()     # ids of the ``v >= start`` conditions of range loops (``_loop_floor``)
        self._keep: list = []              # (those nodes, so that their ids stay theirs)
        self._quiet = 0                    # > 0 while a loop's fixed point is sought (nothing recorded)
        self._dims = _dim_floors(fn, self._atoms)      # blockIdx.x <= gridDim.x - 1, threadIdx.x <= blockDim.x - 1, ...
        self._guards(fn)
        self.block(fn.body, State())

    # -- the walk ----------------------------------------------------------------------------------------------
    def block(self, stmts, state: State) -> State:
        for s in stmts:
            state = self.stmt(s, state)
        return state

    def stmt(self, s, state: State) -> State:
        if not self._quiet:
            self.at[id(s)] = state.copy()
        if isinstance(s, (ast.Assign, ast.AnnAssign)) and s.value is not None:
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            for t in targets:
                self._bind(t, s.value, state)
            return state
        if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
            value = ast.copy_location(ast.BinOp(ast.Name(s.target.id, ast.Load()), s.op, s.value), s)
            state.assign(s.target.id, None, self._fit_name(s.target.id, self.interval(value, state)))
            return state
        if isinstance(s, ast.If):
            known = self.types.truth(s.test)  # a compile-time condition: numba compiles one branch only
            if known is not None:
                return self.block(s.body if known else s.orelse, state)
            body = self.refine(state.copy(), s.test, True)
            body.floors.append(s.test)
            after_body = self.block(s.body, body)
            orelse = self.refine(state.copy(), s.test, False)
            orelse.floors.append(ast.UnaryOp(ast.Not(), s.test))
            after_else = self.block(s.orelse, orelse)
            return self._merge(state, [after_body, after_else], _assigned(s.body) | _assigned(s.orelse))
        if isinstance(s, (ast.While, ast.For)):
            return self._loop(s, state)
        if isinstance(s, (ast.Break, ast.Continue)) and self._exits:
            self._exits[-1][0 if isinstance(s, ast.Break) else 1].append(state.copy())
        return state

    def _fit_name(self, name: str, interval):
        """A value stored in the name: converted to its type (numba truncates an integer stored in a narrower one)."""
        t = self.types.name_type(name)
        return fit(interval, t) if t is not None else interval

    def _bind(self, target, value, state: State) -> None:
        if isinstance(target, ast.Name):
            interval = self._fit_name(target.id, self.interval(value, state))
            keep = value if self._definable(value, state) else None
            state.assign(target.id, keep, interval)
        elif isinstance(target, ast.Tuple):
            items = value.elts if isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts) else None
            each = iv.GRID_BOUNDS if _is_grid_call(value) else (None, None)  # r, c = cuda.grid(2)
            for i, t in enumerate(target.elts):
                if items is not None:
                    self._bind(t, items[i], state)
                else:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            state.assign(n.id, None, self._fit_name(n.id, each if n is t else (None, None)))

    def _definable(self, value, state: State) -> bool:
        """May ``value`` stand for its name in later polynomials? Only if it reads no array (an element may change
        while the name keeps its value), calls nothing impure, and its arithmetic cannot wrap around."""
        for n in ast.walk(value):
            if isinstance(n, ast.Subscript) and not _is_shape(n):
                return False
            if isinstance(n, ast.Call) and not self.types.pure(n):
                return False
        return self.poly(value, state, 0) is not None

    def _merge(self, before: State, states: list, names: set) -> State:
        out = before.copy()
        out.forget(names)
        for n in names:
            r = None
            for s in states:
                r = join(r, s.ranges.get(n, (None, None)))
            out.ranges[n] = r if r is not None else (None, None)
        return out

    def _loop(self, s, state: State) -> State:
        names = _assigned(s.body)
        entry = state.copy()
        entry.forget(names)
        target = s.target.id if isinstance(s, ast.For) and isinstance(s.target, ast.Name) else None
        if isinstance(s, ast.For) and target is None:
            names |= _assigned([ast.Assign([s.target], ast.Constant(0))])
        if target is not None:
            names.add(target)
            entry.forget({target})
            entry.ranges[target] = self.range_var(s.iter, state)
        current = {n: entry.ranges.get(n) for n in names}

        floor = self._loop_floor(s, names) if target is not None else None
        if floor is not None:
            self._loop_floors.add(id(floor))
            self._keep.append(floor)

        def head(values):  # the state at the top of the body, for the given ranges of the names the body assigns
            trial = entry.copy()
            trial.ranges.update({n: v for n, v in values.items() if v is not None})
            if target is not None:
                trial.ranges[target] = entry.ranges[target]
            if floor is not None:
                trial.floors.append(floor)
            if isinstance(s, ast.While):
                trial = self.refine(trial, s.test, True)
                trial.floors.append(s.test)
            return trial

        def round_(values):  # what one more iteration leaves (its end and its continues), joined with what entered
            self._exits.append(([], []))
            self._quiet += 1
            try:
                out = self.block(s.body, head(values))
            finally:
                self._quiet -= 1
                _, continues = self._exits.pop()
            return {n: _join_all([entry.ranges.get(n)] + [o.ranges.get(n, (None, None)) for o in [out, *continues]])
                    for n in names}

        for rounds in range(WIDEN_AFTER + 2 * len(names) + 2):
            new = {n: join(current[n], v) for n, v in round_(current).items()}
            if new == current:
                break
            if rounds >= WIDEN_AFTER:  # still moving: the ends that move are unknown (each end once: this ends)
                new = {n: (None if new[n] is None or current[n] is None or new[n][0] != current[n][0] else new[n][0],
                           None if new[n] is None or current[n] is None or new[n][1] != current[n][1] else new[n][1])
                       for n in names}
            current = new
        else:
            current = {n: (None, None) for n in names}
        narrowed = round_(current)  # one narrowing step: what entry and an iteration from the fixed point give
        current = {n: narrowed[n] if narrowed[n] is not None else current[n] for n in names}
        if isinstance(s, ast.While) and not self._quiet:
            test = entry.copy()
            test.ranges.update({n: v for n, v in current.items() if v is not None})
            self.tests[id(s)] = test
        self._exits.append(([], []))
        try:
            self.block(s.body, head(current))
        finally:
            breaks, _ = self._exits.pop()
        after = state.copy()
        after.forget(names)
        for n in names:
            after.ranges[n] = current[n] if current[n] is not None else (None, None)
        if isinstance(s, ast.While):  # left at the top, where the test was false, or at a break
            after = self.refine(after, s.test, False)
        if target is not None:
            after.ranges.pop(target, None)  # a loop variable is not read after its loop (loopvars checks)
        if s.orelse:  # the loop's else runs where it ended without a break
            after = self.block(s.orelse, after)
        for b in breaks:
            for n in (names | _assigned(s.orelse)) - {target}:
                after.ranges[n] = join(after.ranges.get(n, (None, None)), b.ranges.get(n, (None, None)))
        return after

    @staticmethod
    def _loop_floor(s, assigned: set):
        """``v >= start`` for ``for v in range(start, stop[, step])`` with a positive literal step, when the body
        assigns no name of ``start`` (range evaluates it once, before the loop)."""
        from .unroll import range_call

        it = range_call(s.iter)
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" and
                2 <= len(it.args) <= 3):
            return None
        step = it.args[2] if len(it.args) == 3 else ast.Constant(1)
        if not (isinstance(step, ast.Constant) and isinstance(step.value, int) and step.value > 0):
            return None
        if _names(it.args[0]) & (assigned - {s.target.id}):
            return None
        return ast.Compare(ast.Name(s.target.id, ast.Load()), [ast.GtE()], [it.args[0]])

    def range_var(self, it, state: State):
        """The interval of the variable of a loop over ``it`` (``range(...)``, also under ``unroll``)."""
        from .unroll import range_call

        it = range_call(it)
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" and
                1 <= len(it.args) <= 3):
            return None, None
        args = [self.interval(a, state) for a in it.args]
        if len(args) == 1:
            return 0, None if args[0][1] is None else max(0, args[0][1] - 1)
        step = self.interval(it.args[2], state) if len(it.args) == 3 else (1, 1)
        if step[0] is not None and step[0] > 0:
            return args[0][0], None if args[1][1] is None or args[0][1] is None else max(args[1][1] - 1, args[0][1])
        if step[1] is not None and step[1] < 0:  # counting down: from start to just above stop
            return None if args[1][0] is None or args[0][0] is None else min(args[1][0] + 1, args[0][0]), args[0][1]
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

    # -- conditions ---------------------------------------------------------------------------------------------
    def refine(self, state: State, test, truth: bool) -> State:
        """``state`` where ``test`` is known to be ``truth``: the names it compares with a bound are narrowed."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return self.refine(state, test.operand, not truth)
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And if truth else ast.Or):
            for v in test.values:  # every operand of a true `and` is true, of a false `or` false
                state = self.refine(state, v, truth)
            return state
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1) or not self._exact_compare(test, state):
            return state
        op = type(test.ops[0])
        if not truth:
            op = {ast.Lt: ast.GtE, ast.LtE: ast.Gt, ast.Gt: ast.LtE, ast.GtE: ast.Lt, ast.NotEq: ast.Eq}.get(op)
        left, right = test.left, test.comparators[0]
        flipped = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE, ast.Eq: ast.Eq}
        for name_node, other, o in ((left, right, op), (right, left, flipped.get(op))):
            if not isinstance(name_node, ast.Name) or o is None:
                continue
            lo, hi = self.interval(name_node, state)
            olo, ohi = self.interval(other, state)
            if o in (ast.Lt, ast.LtE, ast.Eq) and ohi is not None:
                bound = ohi - (1 if o is ast.Lt else 0)
                hi = bound if hi is None else min(hi, bound)
            if o in (ast.Gt, ast.GtE, ast.Eq) and olo is not None:
                bound = olo + (1 if o is ast.Gt else 0)
                lo = bound if lo is None else max(lo, bound)
            if lo is not None and hi is not None and lo > hi:  # a branch that cannot run: nothing to narrow
                continue
            state.ranges[name_node.id] = (lo, hi)
        return state

    def _exact_compare(self, test, state: State) -> bool:
        """Does numba compare the exact values of both sides (no operand changed by its conversion)?"""
        if id(test) in self._loop_floors:  # a range loop's variable and its start: of one type
            return True
        sig = self.types.signature(test)
        return sig is not None and all(self._converts(x, self.interval(x, state), t)
                                       for x, t in zip((test.left, test.comparators[0]), sig.args))

    # -- intervals ---------------------------------------------------------------------------------------------
    def interval(self, node, state: State, depth: int = 0) -> Any:
        """The interval of the integer value numba computes for ``node`` in ``state``; None for an unknown end."""
        if depth > DEPTH:
            return self._whole(node)
        r, _ = self._raw(node, state, depth + 1)
        t = self.types.typeof(node)
        if t is None:
            return r
        if isinstance(node, ast.Name) and type_range(t) is not None:  # a stored value: in its type's range
            return meet(r, type_range(t))
        return fit(r, t)

    def _converts(self, node, r, target) -> bool:
        """Does numba convert the value of ``node`` (in ``r``) into ``target`` unchanged?"""
        t = self.types.typeof(node)
        return (t is not None and converts_exactly(t, target)) or fits(r, target)

    def _whole(self, node):
        t = self.types.typeof(node)
        return type_range(t) or (None, None)

    def exact(self, node, state: State) -> bool:
        """Does numba compute ``node`` (an operator) without wrapping around, from operands it converts unchanged?"""
        return self._raw(node, state, 1)[1]

    def _raw(self, node, state: State, d: int):
        """(the exact interval of ``node``'s result, whether numba's result is that exact one)."""
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, bool):
                return (int(v), int(v)), True
            return ((v, v) if isinstance(v, int) else (None, None)), True
        if isinstance(node, ast.Name):
            if node.id in state.ranges:
                return state.ranges[node.id], True
            return (self.static(node.id) or self._whole(node)), True
        if isinstance(node, ast.Attribute):
            base = node.value
            name = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", None)
            if name is not None and (name, node.attr) in iv.ATTRIBUTE_BOUNDS:
                return iv.ATTRIBUTE_BOUNDS[(name, node.attr)], True
            if node.attr in iv.NAME_BOUNDS:
                return iv.NAME_BOUNDS[node.attr], True
            if node.attr == "size":
                return iv.EXTENT_BOUNDS, True
            if node.attr in ("x", "y", "z") and str(self.types.typeof(base)) == "Dim3":  # an alias of threadIdx
                return (0, iv.GRID_BOUNDS[1]), True
            return self._whole(node), True
        if isinstance(node, ast.Subscript) and _is_shape(node):
            return iv.EXTENT_BOUNDS, True
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            sig = self.types.signature(node)
            a = self.interval(node.operand, state, d)
            if sig is None or not self._converts(node.operand, a, sig.args[0]):
                return self._whole(node), False
            r = iv.scale(-1, a)
            return r, fits(r, sig.return_type)
        if isinstance(node, ast.BinOp):
            return self._binop(node, state, d)
        if isinstance(node, ast.IfExp):
            return join(self.interval(node.body, state, d), self.interval(node.orelse, state, d)), True
        if isinstance(node, ast.Call):
            return self._call(node, state, d), True
        return self._whole(node), True

    def _binop(self, node, state: State, d: int):
        sig = self.types.signature(node)
        if sig is None or len(sig.args) != 2:
            return self._whole(node), False
        a, b = self.interval(node.left, state, d), self.interval(node.right, state, d)
        if not (self._converts(node.left, a, sig.args[0]) and self._converts(node.right, b, sig.args[1])) or \
                type_range(sig.return_type) is None:
            return self._whole(node), False  # numba converts an operand into another value first
        op = type(node.op)
        r = (None, None)
        if op is ast.Add:
            r = iv.add(a, b)
        elif op is ast.Sub:
            r = iv.add(a, iv.scale(-1, b))
        elif op is ast.Mult:
            r = iv.mul(a, b)
        elif op in (ast.FloorDiv, ast.Mod) and b[0] > 0 or op in (ast.FloorDiv, ast.Mod) and b[1] < 0:
            r = iv.quotient_bounds(op, *a, *b)
        elif op is ast.FloorDiv:  # a divisor that may be 0: numba gives 0 for x // 0
            m = max(abs(a[0]), abs(a[1]))
            r = (-m, m)
        elif op is ast.Mod:
            m = max(abs(b[0]), abs(b[1]))
            r = (-m, m)
        elif op is ast.RShift and b[0] >= 0:
            r = iv.quotient_bounds(op, *a, *b)
        elif op is ast.LShift and b[0] >= 0 and b[1] < 64:
            r = iv.ring_bounds(op, *a, *b)
        elif op in (ast.BitAnd, ast.BitOr, ast.BitXor):
            r = iv.ring_bounds(op, *a, *b)
            if r[0] == -iv.UNBOUNDED:
                r = (None, None)
        if r[0] is None or r[1] is None:
            return self._whole(node), False
        if op in (ast.Add, ast.Sub) and r[0] < 0 and self._dims and not self._relating and \
                _mentions(node, self._dims):
            self._relating = True  # (the polynomial's own intervals without this refinement: no recursion)
            try:
                low = self._relational_lower(node, state)  # gridDim.x - 1 - blockIdx.x >= 0
            finally:
                self._relating = False
            if low is not None and low > r[0]:
                r = (low, r[1])
        return r, fits(r, sig.return_type)

    def _relational_lower(self, node, state: State):
        p = self.poly(node, state, 0)
        if p is None:
            return None
        best = None
        for q in self._dims.values():
            low = self.lower(_plus(p, {m: -c for m, c in q.items()}), state)
            if low is not None and (best is None or low > best):
                best = low
        return best

    def _call(self, node, state: State, d: int):
        f = node.func
        name = f.id if isinstance(f, ast.Name) else (f.attr if isinstance(f, ast.Attribute) else None)
        if name in ("grid", "gridsize"):
            return iv.GRID_BOUNDS
        if name == "len":
            return iv.EXTENT_BOUNDS
        t = self.types.typeof(node)
        cast = self.types.cast_type(node)
        if cast is not None and len(node.args) == 1:  # int(x), np.uint32(x): the value, converted
            return fit(self.interval(node.args[0], state, d), cast) if type_range(cast) else (None, None)
        if name in ("min", "max") and node.args and self.types.pure(node) and type_range(t):
            args = [self.interval(a, state, d) for a in node.args]
            if not all(fits(a, t) for a in args):
                return type_range(t)
            pick = min if name == "min" else max
            return pick(a[0] for a in args), pick(a[1] for a in args)
        if name == "abs" and len(node.args) == 1 and self.types.pure(node) and type_range(t):
            lo, hi = self.interval(node.args[0], state, d)
            if lo is None or hi is None:
                return 0, None
            return (0 if lo <= 0 <= hi else min(abs(lo), abs(hi))), max(abs(lo), abs(hi))
        return type_range(t) or (None, None)

    # -- the prover ---------------------------------------------------------------------------------------------
    def state_for(self, stmt) -> State | None:
        """The state the expressions of statement ``stmt`` are evaluated in (a while loop's test: at every
        iteration), or None for a statement the walk did not reach."""
        if isinstance(stmt, ast.While):
            return self.tests.get(id(stmt))
        return self.at.get(id(stmt))

    def nonneg(self, node, state: State) -> bool:
        """Is the integer ``node``, evaluated in ``state``, provably >= 0?"""
        lo = self.interval(node, state)[0]
        if lo is not None and lo >= 0:
            return True
        p = self.poly(node, state, 0)
        if p is None:
            return False
        low = self.lower(p, state)
        if low is not None and low >= 0:
            return True
        floors = list(state.floors) + list(self.guards.get(id(node), ()))
        known = [q for f in floors for q in self.floor_polys(f, state)]
        for a, q in enumerate(known):
            diff = _plus(p, {m: -c for m, c in q.items()})
            low = self.lower(diff, state)
            if low is not None and low >= 0:
                return True
            for b, r in enumerate(known):  # two steps: j >= beg + i (its loop's start) and beg + i >= 0 (a test)
                if b != a:
                    low = self.lower(_plus(diff, {m: -c for m, c in r.items()}), state)
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
                if flip is not None and self._exact_compare(inner, state):
                    return self._compare_polys(inner.left, flip, inner.comparators[0], state)
            return []
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1) or not self._exact_compare(test, state):
            return []
        return self._compare_polys(test.left, type(test.ops[0]), test.comparators[0], state)

    def _compare_polys(self, left, op, right, state: State) -> list:
        a, b = self.poly(left, state, 0, opaque=True), self.poly(right, state, 0, opaque=True)
        if a is None or b is None:
            return []
        if op in (ast.Gt, ast.GtE):
            q = _plus(a, {m: -c for m, c in b.items()})
        elif op in (ast.Lt, ast.LtE):
            q = _plus(b, {m: -c for m, c in a.items()})
        else:
            return []
        if op in (ast.Gt, ast.Lt):  # integers: a > b is a - b - 1 >= 0
            q = _plus(q, {(): -1})
        return [q]

    def poly(self, node, state: State, depth: int, opaque: bool = False):
        """``node`` as {monomial: coefficient} (a monomial: a sorted tuple of atoms), definitions substituted; None
        where numba's arithmetic may wrap around (no polynomial is its value then), or with ``opaque`` the value
        itself as an atom (a condition and a loop's start that compute the same ``beg + i`` know the same value)."""
        if depth > DEPTH:
            return None
        d = depth + 1
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return {(): int(node.value)}
        if isinstance(node, ast.Name) and node.id in state.defs:
            return self.poly(state.defs[node.id], state, d, opaque)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            p = self.poly(node.operand, state, d, opaque)
            return None if p is None or not self.exact(node, state) else {m: -c for m, c in p.items()}
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)) and \
                not (opaque and not self.exact(node, state)):
            if not self.exact(node, state):
                return None
            a, b = self.poly(node.left, state, d, opaque), self.poly(node.right, state, d, opaque)
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
        if isinstance(node, ast.Call):
            if not self.types.pure(node):
                return None  # two calls of one impure function are no one value
            cast = self.types.cast_type(node)
            if cast is not None and len(node.args) == 1 and type_range(cast) is not None and \
                    fits(self.interval(node.args[0], state), cast):
                return self.poly(node.args[0], state, d)  # int(x) of an integer that fits: x itself
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


DIM_PAIRS = {"blockIdx": "gridDim", "threadIdx": "blockDim"}


def _dim_floors(fn, atoms: dict) -> dict:
    """The polynomials ``gridDim.d - 1 - blockIdx.d`` and ``blockDim.d - 1 - threadIdx.d`` (each ``>= 0`` on a GPU)
    for the CUDA index attributes the function reads, keyed by the index attribute (``ast.dump``); their atoms go
    into ``atoms``."""
    found = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Attribute) and n.attr in ("x", "y", "z") and isinstance(n.value, ast.Attribute) and \
                n.value.attr in DIM_PAIRS:
            limit = ast.Attribute(ast.Attribute(n.value.value, DIM_PAIRS[n.value.attr], ast.Load()), n.attr,
                                  ast.Load())
            index, bound = ast.dump(n), ast.dump(limit)
            atoms[index], atoms[bound] = n, limit
            found[index] = {(bound,): 1, (index,): -1, (): -1}
    return found


def _mentions(node, dims: dict) -> bool:
    return any(isinstance(n, ast.Attribute) and ast.dump(n) in dims for n in ast.walk(node))


def _is_grid_call(node) -> bool:
    """``cuda.grid(n)`` or ``cuda.gridsize(n)``: a tuple whose every element is within the grid's bounds."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)) in ("grid", "gridsize")


def _is_shape(node) -> bool:
    return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape"


def _join_all(rs):
    out = None
    for r in rs:
        out = join(out, r)
    return out


def _plus(a: dict, b: dict) -> dict:
    out = dict(a)
    for m, c in b.items():
        out[m] = out.get(m, 0) + c
    return {m: c for m, c in out.items() if c}
