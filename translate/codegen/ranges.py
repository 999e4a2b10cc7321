"""Which integer names are provably non-negative: decides where an array index needs Numba's negative-index
wraparound (``x[-1]`` is the last element).

The rule (documented in docs/translate.md): an integer expression is non-negative if it is a non-negative
literal or constant, a value of an unsigned type, a thread/block index or dimension, ``cuda.grid``/
``cuda.gridsize``, an array extent, ``len()``, a ``range`` loop variable whose start is non-negative and whose
step is a positive literal (or whose stop is >= -1 for a negative literal step), or ``+``, ``*``, ``//``,
``%``, ``min``, ``max``, ``abs`` of non-negative operands. A variable is non-negative if every assignment to
it is (a greatest fixed point over the function, so loops are handled). Integer *kernel parameters* are
assumed non-negative where that proves an index non-negative; the launcher then checks them and returns
``cudaErrorInvalidValue`` for a negative value instead of computing something else. Everywhere else an index
that may be negative is wrapped with ``nk_wrap(i, extent)``.

What is left here is what the value ranges along the function (``valueflow``, the one place that knows intervals)
do not do: the proofs that *assume* an integer parameter non-negative (and name it for the launcher's check), and
sums whose lower bound through a loop variable's symbolic start is non-negative (``t + r + o`` for ``o in range(-r,
r + 1)``, which holds unless ``r`` is near 2**63, where no index is in bounds anyway). Whether arithmetic wraps
around is valueflow's (its intervals are of numba's typed, wrapping values).
"""

from __future__ import annotations

import ast

NONNEG_ATTRS = {"threadIdx", "blockIdx", "blockDim", "gridDim"}


def sign_tested(fn: ast.FunctionDef, params: set[str]) -> set[str]:
    """The parameters the kernel itself compares with zero or a negative number (``if beg + i >= 0:``, ``if beg <
    0:``): their negative values are meant, so no proof may assume them non-negative (the launcher would refuse
    what numba computes)."""
    out = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            sides = (node.left, node.comparators[0])
            for side, other in (sides, sides[::-1]):
                value = other.value if isinstance(other, ast.Constant) else None
                if isinstance(other, ast.UnaryOp) and isinstance(other.op, ast.USub) and \
                        isinstance(other.operand, ast.Constant) and isinstance(other.operand.value, (int, float)):
                    value = -other.operand.value
                if isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0:
                    out |= {n.id for n in ast.walk(side) if isinstance(n, ast.Name)} & params
    return out


def analyze(fn: ast.FunctionDef, is_nonneg_static, int_params: set[str]) -> dict[str, frozenset]:
    """Names proven >= 0 -> the parameters that proof assumes >= 0 (greatest fixed point)."""
    assigns = assignments(fn, lambda node: ("aug", node.target.id, node.value) if isinstance(
        node.op, (ast.Add, ast.Mult, ast.FloorDiv, ast.Mod, ast.BitAnd, ast.BitOr, ast.BitXor, ast.RShift)) else None)
    facts: dict[str, frozenset] = {name: frozenset() for name in assigns}
    for p in int_params:
        if p not in assigns:
            facts[p] = frozenset([p])
    changed = True
    while changed:
        changed = False
        for name, values in assigns.items():
            if name not in facts:
                continue
            deps = set()
            ok = True
            for v in values:
                r = _value(v, facts, is_nonneg_static)
                if r is None:
                    ok = False
                    break
                deps |= r
            if name in int_params:
                ok = False  # a reassigned parameter: no assumption
            if not ok:
                del facts[name]
                changed = True
            elif frozenset(deps) != facts[name]:
                facts[name] = frozenset(deps)
                changed = True
    return facts


def assignments(fn: ast.FunctionDef, augmented) -> dict[str, list]:
    """Every value each name is assigned: an expression, ``("item", value, i)`` for a tuple element,
    ``("for", iter)`` for a loop variable, ``augmented(node)`` for ``x op= v``, None for what no analysis reads."""
    assigns: dict[str, list] = {}

    def add(name, value):
        assigns.setdefault(name, []).append(value)

    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                _bind(t, node.value, add)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            add(node.target.id, augmented(node))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            add(node.target.id, node.value)
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            add(node.target.id, ("for", node.iter))
        elif isinstance(node, (ast.For, ast.comprehension)):
            for n in ast.walk(node.target):
                if isinstance(n, ast.Name):
                    add(n.id, None)
    return assigns


def _bind(target, value, add):
    if isinstance(target, ast.Name):
        add(target.id, value)
    elif isinstance(target, ast.Tuple):
        if isinstance(value, ast.Tuple) and len(value.elts) == len(target.elts):
            for t, v in zip(target.elts, value.elts):
                _bind(t, v, add)
        else:
            for i, t in enumerate(target.elts):
                _bind(t, ("item", value, i), add)


def _value(v, facts, static):
    if v is None:
        return None
    if isinstance(v, tuple):
        kind = v[0]
        if kind == "aug":
            a, b = nonneg(ast.Name(v[1]), facts, static), nonneg(v[2], facts, static)
            return None if a is None or b is None else a | b
        if kind == "item":
            return nonneg(v[1], facts, static, tuple_item=True)
        if kind == "for":
            return _range_var(v[1], facts, static)
    return nonneg(v, facts, static)


def _range_of(it):
    """The ``range(...)`` of a loop, also under ``numbakern.unroll(...)``."""
    from .unroll import range_call

    return range_call(it)


def _range_var(it, facts, static):
    it = _range_of(it)
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"):
        return None
    args = it.args
    if len(args) == 1:
        return frozenset()
    if len(args) == 2:
        return nonneg(args[0], facts, static)
    step = _literal_int(args[2])
    if step is None:  # a step proven >= 0 is > 0 (range rejects 0): the variable never drops below start
        a, b = nonneg(args[0], facts, static), nonneg(args[2], facts, static)
        return None if a is None or b is None else a | b
    if step > 0:
        return nonneg(args[0], facts, static)
    stop = _literal_int(args[1])
    if stop is not None and stop >= -1:
        return frozenset()
    return nonneg(args[1], facts, static)


def _literal_int(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _literal_int(node.operand)
        return None if v is None else -v
    return None


def nonneg(node, facts, static, tuple_item=False):
    """frozenset of assumed parameters if ``node`` is provably >= 0, else None."""
    if isinstance(node, ast.Constant):
        v = node.value
        return frozenset() if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 else (
            frozenset() if isinstance(v, bool) else None)
    if isinstance(node, ast.Name):
        if node.id in facts:
            return facts[node.id]
        return frozenset() if static(node) else None
    if isinstance(node, ast.Attribute):
        if node.attr == "shape":
            return frozenset() if tuple_item else None
        if node.attr in ("size", "ndim"):
            return frozenset()
        if node.attr in ("x", "y", "z"):
            base = node.value
            if isinstance(base, ast.Attribute) and base.attr in NONNEG_ATTRS:
                return frozenset()
            if isinstance(base, ast.Name) and static(base):
                return frozenset()
        return frozenset() if static(node) else None
    if isinstance(node, ast.Tuple):
        if not tuple_item:
            return None
        out = frozenset()
        for e in node.elts:
            r = nonneg(e, facts, static)
            if r is None:
                return None
            out |= r
        return out
    if isinstance(node, ast.Subscript):
        if isinstance(node.value, ast.Attribute) and node.value.attr == "shape":
            return frozenset()
        return frozenset() if static(node) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult, ast.FloorDiv, ast.Mod, ast.BitAnd,
                                                            ast.BitOr, ast.BitXor, ast.RShift, ast.Pow)):
        a, b = nonneg(node.left, facts, static), nonneg(node.right, facts, static)
        if isinstance(node.op, ast.BitAnd) and (a is None) != (b is None):  # a non-negative mask clears the sign bit
            return a if a is not None else b
        return None if a is None or b is None else a | b
    if isinstance(node, ast.IfExp):
        a, b = nonneg(node.body, facts, static), nonneg(node.orelse, facts, static)
        return None if a is None or b is None else a | b
    if isinstance(node, ast.Call):
        f = node.func
        name = f.id if isinstance(f, ast.Name) else (f.attr if isinstance(f, ast.Attribute) else None)
        if name in ("grid", "gridsize", "len", "laneid"):
            return frozenset()
        if name in ("abs",) and node.args:
            return frozenset()
        if name in ("min", "max", "int", "int32", "int64", "uint32", "uint64") and node.args:
            out = frozenset()
            for a in node.args:
                r = nonneg(a, facts, static, tuple_item)
                if r is None:
                    return None if name != "max" else _any_nonneg(node.args, facts, static)
                out |= r
            return out
        return frozenset() if static(node) else None
    return None


def _any_nonneg(args, facts, static):
    for a in args:
        r = nonneg(a, facts, static)
        if r is not None:
            return r
    return None


# -- relational non-negativity: `t + r + o` with `o in range(-r, ...)` is >= t >= 0 ------------------------------
def loop_starts(fn: ast.FunctionDef) -> dict:
    """Loop variable -> the start of its ``range`` (for loops that count up: a positive literal step or none).
    Loop variables are never assigned in their loop nor used after it (the translator checks), so inside the
    loop the variable is >= its start."""
    out, seen = {}, {}
    for node in ast.walk(fn):
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            it = _range_of(node.iter)
            name = node.target.id
            seen[name] = seen.get(name, 0) + 1
            if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" and \
                    1 <= len(it.args) <= 3:
                step = _literal_int(it.args[2]) if len(it.args) == 3 else 1
                if step is not None and step > 0:
                    out[name] = it.args[0] if len(it.args) > 1 else ast.Constant(0)
    return {n: s for n, s in out.items() if seen[n] == 1}


def linear_lower(node, starts: dict, nonneg_name, depth=0):
    """A lower bound of the integer ``node`` as ``{atom: coefficient}`` (the atom ``1`` is the constant term), or
    None. Atoms are names (their own value)."""
    if depth > 8:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return {1: node.value}
    if isinstance(node, ast.Name):
        if node.id in starts:
            return linear_lower(starts[node.id], {k: v for k, v in starts.items() if k != node.id}, nonneg_name,
                                depth + 1)
        return {node.id: 1}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        x = node.operand  # -x is exactly -x for a constant or a name that is no loop variable (an atom)
        if isinstance(x, ast.Constant) and isinstance(x.value, int) and not isinstance(x.value, bool):
            return {1: -x.value}
        if isinstance(x, ast.Name) and x.id not in starts:
            return {x.id: -1}
        return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        a, b = linear_lower(node.left, starts, nonneg_name, depth + 1), linear_lower(node.right, starts, nonneg_name,
                                                                                     depth + 1)
        return None if a is None or b is None else _plus(a, b)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
        a = linear_lower(node.left, starts, nonneg_name, depth + 1)
        right = node.right
        if isinstance(right, ast.Constant) and isinstance(right.value, int):
            b = {1: right.value}
        elif isinstance(right, ast.Name) and right.id not in starts:
            b = {right.id: 1}
        else:
            return None
        return None if a is None else _plus(a, {k: -v for k, v in b.items()})
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        for k_node, x_node in ((node.left, node.right), (node.right, node.left)):
            if isinstance(k_node, ast.Constant) and isinstance(k_node.value, int) and k_node.value >= 0:
                x = linear_lower(x_node, starts, nonneg_name, depth + 1)
                return None if x is None else {a: k_node.value * c for a, c in x.items()}
        return None
    return None


def _plus(a, b):
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


def relational_nonneg(node, starts: dict, nonneg_name) -> bool:
    """Is ``node`` >= 0 because its lower bound is a non-negative combination of non-negative names?"""
    lb = linear_lower(node, starts, nonneg_name)
    if lb is None:
        return False
    for atom, coeff in lb.items():
        if atom == 1:
            if coeff < 0:
                return False
        elif coeff < 0 or (coeff > 0 and not nonneg_name(atom)):
            return False
    return True
