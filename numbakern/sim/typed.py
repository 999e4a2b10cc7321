"""A kernel rewritten to compute with Numba's types: numba-cuda's facts (``numbakern.frontend``) applied to its AST.

The simulator runs a kernel's own Python code, and Python's arithmetic is not Numba's: ``int32 * int32`` is
int64 in Numba (exact) and int32 in numpy (it wraps); ``uint32 - uint32`` is uint64 in Numba (it wraps) and may
go negative in Python; ``float32 + 0.1`` is float64 in Numba and float32 in numpy. For each launch's argument
types the front end says what Numba decided for every operation; this module rewrites the kernel once per such
decision set so that every value stays in its canonical form (``numerics``), inserting conversions only where
Python's or numpy's result would differ. Most float kernels need none in their inner loops.

The rewritten function keeps the kernel's file name and line numbers (error messages and the checkers' reports
point at the kernel's own lines); it gets a globals dict of its own, holding what the kernel reads, the
conversion helpers (``__nk_*``), the rewritten device functions it calls and the ``cuda`` module of the launch.
"""

from __future__ import annotations

import ast
import builtins as builtins_module
import copy
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..frontend import closures, intervals
from ..frontend.decompile import INLINED, MAKE_FUNCTION, node_key
from . import intrinsics, numerics
from .numerics import BOOL, FLOAT64, INT64, Num, num

CANON = "canon"  # canonical for its type (numerics)
RAW = "raw"  # an integer computed by ring operations, not yet reduced to its type's range
NP = "np"  # a numpy scalar of its type (numpy integers are not canonical: their arithmetic is not Numba's)
ANY = "any"  # not known

_RING = {ast.Add, ast.Sub, ast.Mult, ast.BitAnd, ast.BitOr, ast.BitXor}
_OP_TEXT = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**",
    ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.MatMult: "@",
}
#: integer attributes and names with known ranges (the values a GPU allows): numbakern.frontend.intervals
_ATTRIBUTE_BOUNDS = intervals.ATTRIBUTE_BOUNDS
_NAME_BOUNDS = intervals.NAME_BOUNDS
#: the global a rewritten loop calls at the start of each pass, ``__nk_loop(n)``, and after it ends, ``__nk_loop(-n)``
#: (``n``: the loop's number, one of its kernel's): a no-op, but for the profiler, which learns from it which pass of
#: each loop a lane is in (``numbakern.profiler.collect``)
LOOP_HOOK = "__nk_loop"
#: the variable of a rebuilt function that runs as a loop over its blocks (``decompile._Decompiler._dispatch_loop``;
#: named there by its value only: a change to the front end's sources retypes every kernel)
_DISPATCH_STATE = "_nk_block"
#: math functions that return a Python int (Numba's may return a float)
_MATH_RETURNING_INT = {"ceil", "floor", "trunc", "factorial", "gcd", "lcm", "isqrt", "comb", "perm"}


@dataclass
class Val:
    """A rewritten expression and what is known of its value at run time."""

    node: ast.expr
    ty: Num | None = None
    state: str = ANY
    lo: int | None = None  # integer bounds (None: the type's range)
    hi: int | None = None

    def bounds(self) -> tuple[int, int]:
        if self.lo is not None and self.hi is not None:
            return self.lo, self.hi
        if self.ty is not None and self.ty.is_int:
            return self.ty.lo, self.ty.hi
        if self.ty is BOOL:
            return 0, 1
        return -(2**64), 2**64


class FunctionFacts:
    """One function's facts (``numbakern.frontend.facts``), looked up by AST node."""

    def __init__(self, data: dict):
        self.nodes: dict = data["nodes"]
        self.names = {name: [num(t) if num(t) else t for t in ts] for name, ts in data["names"].items()}
        self.ret = num(data["ret"])
        self.args = [num(t) for t in data["args"]]

    def get(self, node: ast.AST, kind: str, i: int = 0):
        entries = self.nodes.get(_key(node), {}).get(kind)
        if not entries:
            return None
        if i < len(entries):
            return entries[i]
        return None

    def all(self, node: ast.AST, kind: str) -> list:
        return self.nodes.get(_key(node), {}).get(kind) or []

    def name_type(self, name: str):
        """The one Numba type of a local name (None if it has several, or none that is a number)."""
        ts = self.names.get(name)
        if ts and len(ts) == 1 and isinstance(ts[0], Num):
            return ts[0]
        return None

    def polymorphic(self, name: str) -> bool:
        ts = self.names.get(name)
        return bool(ts) and len(ts) > 1


def _key(node: ast.AST) -> str:
    # a rebuilt function's nodes carry the key of their place in the rebuilt text (their positions are the
    # kernel's own, which copies of an unrolled loop body share)
    return getattr(node, "_nk_key", None) or node_key(node)


class Helpers:
    """Names of the conversion helpers a rewritten function calls, and their values."""

    def __init__(self):
        self.values: dict[str, Any] = {"__nk_int": int, "__nk_float": float, "__nk_bool": bool,
                                       "__nk_float32": numerics.float32, "__nk_float16": numerics.float16,
                                       # what a function rebuilt from numba's IR may call
                                       "__nk_iter_next": _iter_next, "__nk_import": _import, "__nk_numpy": np,
                                       "__nk_undefined": _UNDEFINED}

    def name(self, key: str, value) -> str:
        name = "__nk_" + key
        self.values.setdefault(name, value)
        return name


def _call(fn_name: str, arg: ast.expr, like: ast.AST) -> ast.expr:
    return ast.copy_location(ast.Call(ast.Name(fn_name, ast.Load()), [arg], []), like)


class Rewriter:
    """Rewrites one function (kernel or device function) for one set of facts."""

    def __init__(self, facts: FunctionFacts, helpers: Helpers, device_names: dict[int, str],
                 global_values: dict[str, Any], loop_numbers: Iterator[int]):
        self.facts = facts
        self.loop_numbers = loop_numbers  # shared by the functions of one kernel (``compile_kernel``)
        self.h = helpers
        self.device_names = device_names
        self.global_values = global_values
        self.locals: set[str] = set()
        self.name_state: dict[str, str] = {}
        self._temps = itertools.count()
        self.changed = 0  # conversions inserted (for tests and statistics)

    # -- entry -----------------------------------------------------------------------------------------------------

    def function(self, fdef: ast.FunctionDef) -> ast.FunctionDef:
        fdef = copy.deepcopy(fdef)
        fdef.decorator_list = []
        params = [a.arg for a in fdef.args.posonlyargs + fdef.args.args + fdef.args.kwonlyargs]
        self.locals = set(params) | _assigned_names(fdef)
        self.name_state = {n: CANON for n in self.locals}
        # a name bound by one plain assignment holds what that expression gives: its integer bounds carry over
        stores = _store_counts(fdef)
        self.single = {n for n, count in stores.items() if count == 1 and n not in params}
        self.bounds: dict[str, tuple[int, int]] = {}
        self.canonical_tuples: dict[str, str] = {}  # names bound once to a shape ("shape") or cuda.grid(n)
        for name in _loosely_bound_names(fdef):
            self.name_state[name] = ANY
        fdef.body = self.block(fdef.body)
        return fdef

    def block(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            result = self.stmt(s)
            out.extend(result if isinstance(result, list) else [result])
        return out

    # -- statements --------------------------------------------------------------------------------------------------

    def stmt(self, s: ast.stmt):
        method = getattr(self, "stmt_" + type(s).__name__, None)
        if method is None:
            return s  # nested function definitions, try blocks, ...: left as written
        return method(s)

    def stmt_Expr(self, s: ast.Expr):
        s.value = self.expr(s.value).node
        return s

    def stmt_Assign(self, s: ast.Assign):
        if len(s.targets) != 1:
            s.value = self.expr(s.value).node
            return s
        target = s.targets[0]
        if isinstance(target, ast.Name):
            if target.id in self.single and _canonical_tuple(s.value):
                self.canonical_tuples[target.id] = "shape" if isinstance(s.value, ast.Attribute) else "call"
            v = self.expr(s.value, expect=self.facts.name_type(target.id))
            t = self._assigned_type(target.id, v)
            s.value = self.canon(v, t)
            self._remember_bounds(target.id, v, t)
            return s
        if isinstance(target, ast.Subscript):
            v = self.expr(s.value)
            self.subscript_target(target)
            s.value = self.store_value(v, self.facts.get(target, "setitem"), target)
            return s
        if isinstance(target, ast.Tuple) and isinstance(s.value, ast.Tuple) and \
                len(target.elts) == len(s.value.elts) and not any(isinstance(e, ast.Starred) for e in target.elts):
            values = []
            for t, e in zip(target.elts, s.value.elts):
                v = self.expr(e, expect=self.facts.name_type(t.id) if isinstance(t, ast.Name) else None)
                if isinstance(t, ast.Name):
                    values.append(self.canon(v, self._assigned_type(t.id, v)))
                elif isinstance(t, ast.Subscript):
                    self.subscript_target(t)
                    values.append(self.store_value(v, self.facts.get(t, "setitem"), t))
                else:
                    values.append(v.node)
            s.value.elts = values
            return s
        s.value = self.expr(s.value).node
        for t in ast.walk(target):
            if isinstance(t, ast.Subscript):
                self.subscript_target(t)
        return s

    def _remember_bounds(self, name: str, v: Val, t: Num | None) -> None:
        if name in self.single and t is not None and t.is_int and v.ty is not None and v.ty.is_int:
            lo, hi = v.bounds()
            if t.lo <= lo and hi <= t.hi:
                self.bounds[name] = (lo, hi)  # (a value outside t's range was reduced: then nothing is known)

    def _assigned_type(self, name: str, v: Val) -> Num | None:
        # A name with one type holds that type; a name with several keeps each value in the form of its own type
        return self.facts.name_type(name) or v.ty

    def stmt_AugAssign(self, s: ast.AugAssign):
        fact = self.facts.get(s, "inplace_binop")
        if isinstance(s.target, ast.Name):
            name = s.target.id
            left = self.name_load(ast.copy_location(ast.Name(name, ast.Load()), s.target),
                                  num(fact["lhs"]) if fact else None)
            right = self.expr(s.value, expect=num(fact["rhs"]) if fact else None)
            result = self.arith(s, s.op, left, right, fact)
            if result.node is None:
                s.value = right.node
                return s
            target_type = self.facts.name_type(name) or result.ty
            value = self.canon(result, target_type)
            if isinstance(value, ast.BinOp) and value.left is left.node and value.right is right.node and \
                    value is result.node:
                s.value = right.node  # nothing to convert: keep the statement as written
                return s
            return ast.copy_location(ast.Assign([ast.Name(name, ast.Store())], value), s)
        if isinstance(s.target, ast.Subscript):
            return self._augassign_subscript(s, fact)
        s.value = self.expr(s.value).node
        return s

    def _augassign_subscript(self, s: ast.AugAssign, fact):
        target = s.target
        load = self.facts.get(target, "getitem")
        store = self.facts.get(target, "setitem")
        self.subscript_target(target)
        right = self.expr(s.value, expect=num(fact["rhs"]) if fact else None)
        element = num(load["ret"]) if load else None
        left = Val(ast.Constant(0), element, NP)  # stands for the element read
        if fact is None or store is None or element is None:
            s.value = right.node
            return s
        result = self.arith(s, s.op, left, right, fact)
        dtype = num({"t": store["array"].get("dtype")})
        if result.node is not None and isinstance(result.node, ast.BinOp) and result.node.left is left.node and \
                result.node.right is right.node and result.ty is not None and dtype is not None and \
                (result.ty == dtype or (dtype.is_float and result.ty.is_float and result.ty.bits <= dtype.bits)):
            s.value = right.node  # element op value computes in the element's own type: keep `a[i] op= v`
            return s
        # a[i] op= v computed in a wider type: a[i] = convert(convert(a[i]) op convert(v)), a and i evaluated once
        array_name, index_name = self._temp(), self._temp()
        pre = [
            ast.copy_location(ast.Assign([ast.Name(array_name, ast.Store())], target.value), s),
            ast.copy_location(ast.Assign([ast.Name(index_name, ast.Store())], target.slice), s),
        ]
        read = ast.copy_location(ast.Subscript(ast.Name(array_name, ast.Load()), ast.Name(index_name, ast.Load()),
                                               ast.Load()), target)
        left = Val(read, element, NP)
        result = self.arith(s, s.op, left, right, fact)
        write = ast.copy_location(ast.Subscript(ast.Name(array_name, ast.Load()), ast.Name(index_name, ast.Load()),
                                                ast.Store()), target)
        value = self.store_value(result, store, target)
        self.changed += 1
        return pre + [ast.copy_location(ast.Assign([write], value), s)]

    def _temp(self) -> str:
        return f"_nk_tmp{next(self._temps)}"

    def stmt_Return(self, s: ast.Return):
        if s.value is not None:
            v = self.expr(s.value)
            fact = self.facts.get(s, "return")
            ret = num(fact["ret"]) if fact else self.facts.ret
            s.value = self.canon(v, ret) if ret is not None else v.node
        return s

    def stmt_If(self, s: ast.If):
        s.test = self.test(s.test)
        s.body = self.block(s.body)
        s.orelse = self.block(s.orelse)
        return s

    def stmt_While(self, s: ast.While):
        dispatch = _is_dispatch_loop(s)
        s.test = self.test(s.test)
        body = self.block(s.body)
        if not _synchronises_every_pass(s.body):
            # every pass reports to the scheduler: a spin-wait no one ends is found (DeadlockError). A loop that
            # reaches a barrier on every pass needs none: the thread yields there anyway.
            body.insert(0, _statement(ast.Call(ast.Name(self.h.name("spin", None), ast.Load()), [], []), s))
        s.body = body
        s.orelse = self.block(s.orelse)
        # a loop over the blocks of a graph Python's statements cannot express: its passes are no loop's
        return s if dispatch else self._hooked(s)

    def stmt_For(self, s: ast.For):
        s.iter = self.expr(s.iter).node
        for t in ast.walk(s.target):
            if isinstance(t, ast.Subscript):
                self.subscript_target(t)
        s.body = self.block(s.body)
        s.orelse = self.block(s.orelse)
        return self._hooked(s)

    def _hooked(self, s: ast.For | ast.While) -> list[ast.stmt]:
        """The loop calling ``LOOP_HOOK`` at the start of each pass, and when it ends: after it, and first thing in
        its ``else`` (which runs after the last pass; a ``break`` skips it)."""
        n = next(self.loop_numbers)

        def hook(number: int) -> ast.stmt:
            return _statement(ast.Call(ast.Name(LOOP_HOOK, ast.Load()), [ast.Constant(number)], []), s)

        s.body.insert(0, hook(n))
        if s.orelse:
            s.orelse.insert(0, hook(-n))
        return [s, hook(-n)]

    def stmt_With(self, s: ast.With):
        s.body = self.block(s.body)
        return s

    # -- expressions ---------------------------------------------------------------------------------------------

    def test(self, e: ast.expr) -> ast.expr:
        """A condition: only its truth matters (raw integers are reduced first)."""
        v = self.expr(e)
        if v.state == RAW:
            return self.canon(v)
        return v.node

    def expr(self, e: ast.expr, expect: Num | None = None) -> Val:
        method = getattr(self, "expr_" + type(e).__name__, None)
        if method is None:
            self._visit_children(e)
            return Val(e)
        if isinstance(e, ast.Name):
            return method(e, expect)
        return method(e)

    def _visit_children(self, e: ast.AST) -> None:
        for name, value in ast.iter_fields(e):
            if isinstance(value, ast.expr):
                setattr(e, name, self.expr(value).node)
            elif isinstance(value, list):
                setattr(e, name, [self.expr(x).node if isinstance(x, ast.expr) else x for x in value])

    def expr_Constant(self, e: ast.Constant) -> Val:
        value = e.value
        if isinstance(value, bool):
            return Val(e, BOOL, CANON, int(value), int(value))
        if isinstance(value, int):
            fact = self.facts.get(e, "const")
            t = num(fact["type"]) if fact else INT64
            return Val(e, t or INT64, CANON, value, value)
        if isinstance(value, float):
            return Val(e, FLOAT64, CANON)
        return Val(e)

    def expr_Name(self, e: ast.Name, expect: Num | None = None) -> Val:
        if e.id in self.locals:
            return self.name_load(e, expect)
        fact = self.facts.get(e, "global")
        t = num(fact["type"]) if fact else None
        value = self.global_values.get(e.id)
        if t is None:
            return Val(e)
        if t.is_int:
            if isinstance(value, (bool, int)) and not isinstance(value, np.integer):
                v = int(value)
                return Val(e, t, CANON, v, v)
            return Val(e, t, NP if isinstance(value, np.generic) else ANY)
        if t.is_float:
            if (t is FLOAT64 and isinstance(value, float)) or (t.name == "float32" and isinstance(value, np.float32)):
                return Val(e, t, CANON)
            return Val(e, t, ANY)
        return Val(e, t, CANON if isinstance(value, (bool, np.bool_)) else ANY)

    def name_load(self, e: ast.Name, expect: Num | None) -> Val:
        name = e.id
        state = self.name_state.get(name, ANY)
        if self.facts.polymorphic(name):
            if expect is None:
                return Val(e, None, ANY)
            convert = numerics.TO.get(expect.name)
            if convert is None:
                return Val(e, expect, ANY)
            self.changed += 1
            return Val(_call(self.h.name("to_" + expect.name, convert), e, e), expect, CANON)
        t = self.facts.name_type(name)
        if t is None:
            return Val(e, expect, ANY if expect is not None else state)
        return Val(e, t, state, *self.bounds.get(name, (None, None)))

    def expr_Attribute(self, e: ast.Attribute) -> Val:
        base = self.expr(e.value)
        # a value in no known form (an unknown call's) first takes its type's (z.imag of a complex64 is a float32)
        e.value = self.canon(base) if base.state == ANY else base.node
        fact = self.facts.get(e, "getattr")
        t = num(fact["ret"]) if fact else None
        if t is None:
            return Val(e)
        lo = hi = None
        if isinstance(e.value, ast.Attribute):
            lo, hi = _ATTRIBUTE_BOUNDS.get((e.value.attr, e.attr), (None, None))
        elif e.attr in _NAME_BOUNDS:
            lo, hi = _NAME_BOUNDS[e.attr]
        value_type = fact["value"].get("t") if fact else None
        state = NP if value_type == "record" else CANON
        return Val(e, t, state, lo, hi)

    def expr_Subscript(self, e: ast.Subscript) -> Val:
        base = self.expr(e.value)
        e.value = base.node
        e.slice = self.index(e.slice)
        fact = self.facts.get(e, "getitem")
        t = num(fact["ret"]) if fact else None
        if t is None:
            return Val(e)
        container = fact["value"].get("t")
        if container == "array":
            return Val(e, t, NP)
        if container == "tuple":
            # shapes hold Python ints; a tuple of float32 elements holds np.float32s; other integers: unknown form
            # (a name bound once to a shape or cuda.grid(n) holds what they give)
            made = self.canonical_tuples.get(e.value.id) if isinstance(e.value, ast.Name) else None
            shape = made == "shape" or isinstance(e.value, ast.Attribute) and e.value.attr in ("shape", "strides")
            return Val(e, t, CANON if (shape or made or t.is_float or t is BOOL) else ANY, 0 if shape else None,
                       2**62 if shape else None)
        return Val(e, t, NP if container == "record" else ANY)

    def index(self, e: ast.expr) -> ast.expr:
        """An index: raw signed integers may stay unreduced (an overflowing index is out of bounds either way), but
        an unsigned one is reduced: ``u - 1`` at ``u == 0`` is a huge index on the GPU, not -1."""
        if isinstance(e, ast.Tuple):
            e.elts = [self.index(x) for x in e.elts]
            return e
        if isinstance(e, ast.Slice):
            self._visit_children(e)
            return e
        v = self.expr(e)
        if v.state == RAW and v.ty is not None and v.ty.kind == "u":
            return self.canon(v)
        return v.node

    def subscript_target(self, t: ast.Subscript) -> None:
        t.value = self.expr(t.value).node
        t.slice = self.index(t.slice)

    def expr_UnaryOp(self, e: ast.UnaryOp) -> Val:
        fact = self.facts.get(e, "unary")
        if fact is None and isinstance(e.op, ast.USub) and isinstance(e.operand, ast.Constant) and \
                type(e.operand.value) in (int, float):
            # Python folds -1 into one constant: the bytecode (and numba) never see a negation
            value = -e.operand.value
            if isinstance(value, float):
                return Val(e, FLOAT64, CANON)
            return Val(e, INT64 if INT64.lo <= value else numerics.UINT64, CANON, value, value)
        operand = self.expr(e.operand, expect=num(fact["arg"]) if fact else None)
        e.operand = operand.node
        if isinstance(e.op, ast.Not):
            return Val(e, BOOL, CANON, 0, 1)
        if fact is None:
            return Val(e)
        ret = num(fact["ret"])
        if ret is None:
            return Val(e)
        if ret.is_int:
            e.operand = self.ring_operand(operand)
            lo, hi = operand.bounds()
            if isinstance(e.op, ast.USub):
                lo, hi = -hi, -lo
            elif isinstance(e.op, ast.Invert):
                lo, hi = -hi - 1, -lo - 1
            return self._int_result(e, ret, lo, hi)
        if ret.is_float:
            target = num(fact["sig"][0]) if fact.get("sig") else ret
            e.operand = self.operand(operand, target)
            return Val(e, ret, CANON)
        return Val(e, ret, CANON)

    def expr_BinOp(self, e: ast.BinOp) -> Val:
        fact = self.facts.get(e, "binop")
        left = self.expr(e.left, expect=num(fact["lhs"]) if fact else None)
        right = self.expr(e.right, expect=num(fact["rhs"]) if fact else None)
        result = self.arith(e, e.op, left, right, fact)
        if result.node is None:
            e.left, e.right = left.node, right.node
            return Val(e)
        return result

    def arith(self, at: ast.AST, op: ast.operator, left: Val, right: Val, fact) -> Val:
        """``left op right`` as Numba computes it (``fact``: the signature numba chose); node None if untyped."""
        if fact is None or not fact.get("sig") or len(fact["sig"]) != 2:
            return Val(None)
        a, b, ret = num(fact["sig"][0]), num(fact["sig"][1]), num(fact["ret"])
        if a is None or b is None or ret is None:
            return Val(None)
        node = ast.copy_location(ast.BinOp(left.node, op, right.node), at)
        kind = type(op)
        if ret.is_int:
            if kind in _RING or (kind is ast.LShift):
                node.left = self.ring_operand(left)
                node.right = self.ring_operand(right) if kind in _RING else self.canon(right, b)
                (llo, lhi), (rlo, rhi) = left.bounds(), right.bounds()
                lo, hi = _ring_bounds(kind, llo, lhi, rlo, rhi)
                return self._int_result(node, ret, lo, hi)
            node.left, node.right = self.canon(left, a), self.canon(right, b)
            lo, hi = _quotient_bounds(kind, Val(None, a, CANON, *_clip(left, a)), Val(None, b, CANON, *_clip(right, b)))
            if kind is ast.Pow:
                return Val(node, ret, RAW)
            return Val(node, ret, CANON, lo, hi)
        if ret.is_float or ret is BOOL or ret.kind == "c":
            node.left, node.right = self.operand(left, a), self.operand(right, b)
            return Val(node, ret, CANON, 0 if ret is BOOL else None, 1 if ret is BOOL else None)
        return Val(None)

    def _int_result(self, node: ast.expr, t: Num, lo: int, hi: int) -> Val:
        if t.lo <= lo and hi <= t.hi:
            return Val(node, t, CANON, lo, hi)
        return Val(node, t, RAW, lo, hi)

    def expr_Compare(self, e: ast.Compare) -> Val:
        facts = self.facts.all(e, "binop")
        n = len(e.ops)
        if facts and len(facts) % n == 0:
            facts = facts[:n]  # a while loop's condition is compiled twice
        else:
            facts = [None] * n
        operands = [e.left] + e.comparators
        vals = []
        for i, x in enumerate(operands):
            fact = facts[i - 1] if i > 0 else facts[0]
            expect = None
            if fact is not None:
                expect = num(fact["rhs"] if i > 0 else fact["lhs"])
            vals.append(self.expr(x, expect=expect))
        nodes = [v.node for v in vals]
        for i, fact in enumerate(facts):
            if fact is None or not fact.get("sig") or len(fact["sig"]) != 2:
                continue
            a, b = num(fact["sig"][0]), num(fact["sig"][1])
            if a is None or b is None or not (i == 0 or n == 1):
                # a chained comparison's middle operand is evaluated once: convert only at the two ends
                if a is not None and i == 0:
                    nodes[0] = self.operand(vals[0], a)
                continue
            nodes[i] = self.operand(vals[i], a)
            nodes[i + 1] = self.operand(vals[i + 1], b)
        e.left, e.comparators = nodes[0], nodes[1:]
        return Val(e, BOOL, CANON, 0, 1)

    def expr_BoolOp(self, e: ast.BoolOp) -> Val:
        join = self.facts.get(e, "join")
        t = num(join["type"]) if join else None
        vals = [self.expr(v) for v in e.values]
        if t is not None and t is not BOOL:
            e.values = [self.canon(v, t) for v in vals]
            return Val(e, t, CANON)
        e.values = [v.node for v in vals]
        return Val(e, t, CANON if t is BOOL else ANY)

    def expr_IfExp(self, e: ast.IfExp) -> Val:
        e.test = self.test(e.test)
        join = self.facts.get(e, "join")
        t = num(join["type"]) if join else None
        body, orelse = self.expr(e.body, expect=t), self.expr(e.orelse, expect=t)
        if t is None:
            e.body, e.orelse = body.node, orelse.node
            return Val(e)
        e.body, e.orelse = self.canon(body, t), self.canon(orelse, t)
        lo = hi = None
        if t.is_int:
            (blo, bhi), (olo, ohi) = _clip(body, t), _clip(orelse, t)
            lo, hi = min(blo, olo), max(bhi, ohi)
        return Val(e, t, CANON, lo, hi)

    def expr_Tuple(self, e: ast.Tuple) -> Val:
        e.elts = [self.expr(x).node for x in e.elts]
        return Val(e)

    def expr_Call(self, e: ast.Call) -> Val:
        fact = self.facts.get(e, "call")
        e.func = self.expr(e.func).node
        args = [self.expr(a) for a in e.args]
        for k in e.keywords:
            k.value = self.expr(k.value).node
        if fact is None or any(isinstance(a, ast.Starred) for a in e.args):
            # (a starred argument: the signature's positions are not the call's)
            e.args = [a.node for a in args]
            return Val(e) if fact is None else Val(e, num(fact["ret"]), ANY)
        fn, sig, ret = fact["fn"], [num(t) for t in (fact.get("sig") or [])], num(fact["ret"])
        kind = fn.get("kind")
        if kind == "cast" and len(args) == 1 and not e.keywords:
            return self._cast(e, args[0], num(fn["to"]))
        if kind == "builtin" and fn.get("name") in ("int", "float", "bool") and len(args) == 1 and not e.keywords:
            # Numba's int()/float() convert to its own types: float() of a float32 stays a float32
            return self._cast(e, args[0], ret)
        positional = sig[: len(args)] if len(sig) >= len(args) else [None] * len(args)
        if kind in ("device", "builtin", "math", "numpy", "cuda"):
            e.args = [self.canon(a, t) if t is not None else a.node for a, t in zip(args, positional)]
        else:
            e.args = [a.node for a in args]
        if kind == "cuda" and fn.get("name") in ("popc", "brev", "clz", "ffs") and len(positional) == 1 and \
                positional[0] is not None and positional[0].is_int and ret is not None:
            # on the value's own bit width (Python ints have no width): a helper per type
            op = numerics.BIT_OPERATIONS[(fn["name"], positional[0].name)]
            e.func = ast.copy_location(ast.Name(self.h.name(op.__name__, op), ast.Load()), e.func)
            return Val(e, ret, CANON)
        if kind == "device":
            if fn.get("function", -1) in self.device_names:
                e.func = ast.copy_location(ast.Name(self.device_names[fn["function"]], ast.Load()), e.func)
            return Val(e, ret, CANON) if ret is not None else Val(e)
        if ret is None:
            return Val(e)
        if kind == "math":
            # Python's math works in double and returns a float (an int from ceil, floor, trunc, ...); Numba's
            # returns its own type (numba-cuda: float64 from ceil and floor of a float64, float32 from sqrt of one)
            if ret.is_float and (ret.bits < 64 or fn.get("name") in _MATH_RETURNING_INT):
                self.changed += 1
                return Val(_call("__nk_float" if ret.bits == 64 else f"__nk_{ret.name}", e, e), ret, CANON)
            return Val(e, ret, CANON)
        if kind == "builtin" and fn.get("name") == "round" and len(args) == 2 and args[0].ty is not None and \
                args[0].ty.is_float:
            # numba-cuda's round(x, ndigits): CPython's algorithm in float64, then x's type (numpy's differs)
            helper = numerics.round_ndigits if args[0].ty.bits == 64 else numerics.round_ndigits_float32
            e.func = ast.copy_location(ast.Name(self.h.name(helper.__name__, helper), ast.Load()), e.func)
            return Val(e, ret, CANON)
        if kind == "builtin" and fn.get("name") in ("min", "max", "abs", "round", "len"):
            return Val(e, ret, CANON)
        if kind == "numpy":
            return Val(e, ret, NP if ret.is_int else CANON)
        if kind == "cuda":
            return Val(e, ret, CANON)
        return Val(e, ret, ANY)

    def _cast(self, e: ast.Call, arg: Val, to: Num | None) -> Val:
        """``np.int32(x)``, ``numba.uint32(x)``, ``np.float32(x)``, ...: Numba's conversion, not numpy's (which
        refuses out-of-range integers instead of wrapping them)."""
        if to is None:
            e.args = [arg.node]
            return Val(e)
        if to.is_int or to.is_float or to is BOOL:
            node = self.canon(arg, to, force=to.name in ("float32", "float16"))
            lo, hi = _clip(arg, to) if to.is_int else (None, None)
            return Val(node, to, CANON, lo, hi)
        e.args = [arg.node]
        return Val(e, to, CANON)

    # -- conversions ---------------------------------------------------------------------------------------------

    def ring_operand(self, v: Val) -> ast.expr:
        """An operand of ``+ - * & | ^ << ~`` in integer arithmetic: any Python int will do (raw included)."""
        if v.ty is not None and v.ty.is_int and v.state in (CANON, RAW):
            return v.node
        self.changed += 1
        if v.ty is not None and v.ty.is_float:
            return _call(self.h.name("float_to_int64", numerics.FROM_FLOAT["int64"]), v.node, v.node)
        return _call("__nk_int", v.node, v.node)

    def operand(self, v: Val, t: Num) -> ast.expr:
        """An operand converted to ``t`` the way Python's and numpy's own arithmetic then computes in ``t``."""
        if v.ty is None or t is None:
            return v.node
        if t.is_float:
            if v.ty.is_float:
                if v.ty.bits < t.bits and t.bits == 64:
                    self.changed += 1
                    return _call("__nk_float", v.node, v.node)
                if v.ty.bits < t.bits:
                    return self.canon(v, t, force=True)
                return v.node if v.state != ANY else self.canon(v, t)
            if v.ty.is_int:
                # an integer meets a float of type t: numpy and Python convert it exactly as Numba does, as long
                # as its value is the right one (reduced) and the float partner is of type t
                if v.state == RAW:
                    return self.canon(v)
                if v.state == ANY:
                    return self.canon(v, t)
                return v.node
            if v.ty is BOOL:
                return v.node
            return v.node
        if t.is_int:
            return self.canon(v, t)
        return v.node

    def canon(self, v: Val, t: Num | None = None, force: bool = False) -> ast.expr:
        """``v`` in the canonical form of ``t`` (default: its own type)."""
        t = t or v.ty
        if t is None or v.node is None:
            return v.node
        if v.ty is None:
            if v.state == ANY and t.name in numerics.TO:
                self.changed += 1
                return _call(self.h.name("to_" + t.name, numerics.TO[t.name]), v.node, v.node)
            return v.node
        if v.state == ANY and t.name in numerics.TO:
            self.changed += 1
            return _call(self.h.name("to_" + t.name, numerics.TO[t.name]), v.node, v.node)
        if t.is_int:
            return self._canon_int(v, t)
        if t.is_float:
            if v.ty.is_float:
                if v.ty == t and not force:
                    return v.node
                if v.ty == t and v.state in (CANON, NP) and t.bits < 64:
                    return v.node
                self.changed += 1
                return self._to_float(t, v.node, v.node)
            if v.ty.is_int or v.ty is BOOL:
                inner = self._canon_int(v, v.ty) if v.ty.is_int else v.node
                self.changed += 1
                return self._to_float(t, inner, v.node)
            return v.node
        if t is BOOL:
            if v.ty is BOOL:
                return v.node
            self.changed += 1
            inner = self._canon_int(v, v.ty) if v.ty.is_int else v.node
            return _call("__nk_bool", inner, v.node)
        return v.node

    def _canon_int(self, v: Val, t: Num) -> ast.expr:
        node = v.node
        if v.ty is not None and v.ty.is_float:
            self.changed += 1
            return _call(self.h.name("float_to_" + t.name, numerics.FROM_FLOAT[t.name]), node, node)
        if v.ty is BOOL or v.state in (NP, ANY) or v.ty is None:
            self.changed += 1
            node = _call("__nk_int", node, node)
            state = CANON if v.ty is not None and (v.ty.is_int or v.ty is BOOL) else RAW
            lo, hi = v.bounds() if v.ty is not None else (-(2**64), 2**64)
            if state == CANON and t.lo <= lo and hi <= t.hi:
                return node
            return self._wrap(node, t)
        lo, hi = v.bounds()
        if t.lo <= lo and hi <= t.hi:
            return node
        return self._wrap(node, t)

    def _to_float(self, t: Num, node: ast.expr, like: ast.AST) -> ast.expr:
        """``node`` as a float of type ``t``; a constant converted once, here (``np.float32(0.5)`` in a loop is
        a name, not a call per pass)."""
        value = _constant_value(node)
        if value is None:
            return _call("__nk_float" if t.bits == 64 else f"__nk_{t.name}", node, like)
        if t.bits == 64:
            return ast.copy_location(ast.Constant(float(value)), like)
        with np.errstate(over="ignore"):  # a constant too large for the type is inf, as on the GPU
            converted = numerics.float32(value) if t.name == "float32" else numerics.float16(value)
        name = self.h.name(_constant_helper(converted), converted)
        return ast.copy_location(ast.Name(name, ast.Load()), like)

    def _wrap(self, node: ast.expr, t: Num) -> ast.expr:
        self.changed += 1
        if t.kind == "u":  # inline: one operation, no call
            return ast.copy_location(ast.BinOp(node, ast.BitAnd(), ast.Constant(t.hi)), node)
        return _inline_signed_wrap(node, t)

    def store_value(self, v: Val, fact, at: ast.AST) -> ast.expr:
        """A value stored into an array element: numpy converts floats as Numba does, integers it must be given
        reduced to the element type (numpy refuses out-of-range Python ints; Numba truncates)."""
        if fact is None or v.ty is None:
            return v.node
        if fact["array"].get("t") != "array":
            # a record's field (or anything else numba stores into): at least the value's own canonical form
            sig = fact.get("sig") or []
            target = num(sig[2]) if len(sig) == 3 else None
            return self.canon(v, target) if v.state in (RAW, ANY) or (target and target != v.ty) else v.node
        dtype = num({"t": fact["array"].get("dtype")})
        if dtype is None:
            return v.node
        if dtype.is_float:
            if v.ty.is_int and v.state in (RAW, ANY):
                return self.canon(v)
            return v.node
        if dtype.is_int:
            if v.ty.is_int and v.state == NP and dtype.holds(v.ty):
                return v.node  # numpy stores a numpy integer of a narrower (or the same) type as it is
            if v.ty.is_int and v.state == CANON:
                lo, hi = v.bounds()
                if dtype.lo <= lo and hi <= dtype.hi:
                    return v.node
            return self.canon(v, dtype)
        return v.node


#: the local a signed wrap-around holds its operand in (one name serves every wrap: each reads it right after
#: binding it, before any other wrap can run)
WRAP_TEMP = "_nk_wrapped"


def _inline_signed_wrap(node: ast.expr, t: Num) -> ast.expr:
    """``numerics.WRAP[t]`` inline, without a call: ``v if lo <= v <= hi else ((v + half) & mask) - half``, with
    ``v`` evaluated once (bound by ``:=``). Most values are in range: then it costs two comparisons."""
    half, mask = -t.lo, (1 << t.bits) - 1

    def temp(ctx):
        return ast.Name(WRAP_TEMP, ctx)

    test = ast.Compare(ast.Constant(t.lo), [ast.LtE(), ast.LtE()],
                       [ast.NamedExpr(temp(ast.Store()), node), ast.Constant(t.hi)])
    wrapped = ast.BinOp(ast.BinOp(ast.BinOp(temp(ast.Load()), ast.Add(), ast.Constant(half)), ast.BitAnd(),
                                  ast.Constant(mask)), ast.Sub(), ast.Constant(half))
    result = ast.IfExp(test, temp(ast.Load()), wrapped)
    for n in ast.walk(result):
        if n is not node and "lineno" in n._attributes and not hasattr(n, "lineno"):
            ast.copy_location(n, node)
    return result


def _constant_value(node: ast.expr) -> int | float | None:
    """The value of an int or float literal (``-2.5`` included), else None."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _constant_value(node.operand)
        return -value if value is not None else None
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    return None


def _constant_helper(value) -> str:
    """The helper name of a float32 or float16 constant: its type and bit pattern (``float32_3f800000``)."""
    bits = {4: np.uint32, 2: np.uint16}[value.dtype.itemsize]
    return f"{value.dtype.name}_{int(np.asarray(value).view(bits)):0{2 * value.dtype.itemsize}x}"


_BARRIERS = {"syncthreads", "syncthreads_count", "syncthreads_and", "syncthreads_or", "syncwarp", "sync"}


def _statement(call: ast.Call, at: ast.stmt) -> ast.stmt:
    """``call`` as a statement placed at ``at``."""
    return ast.copy_location(ast.Expr(ast.copy_location(call, at)), at)


def _is_dispatch_loop(s: ast.While) -> bool:
    """The rebuilt function's loop over its blocks (``decompile``: ``while True:`` around ``if <state> == label``)."""
    body = s.body
    return (len(body) == 1 and isinstance(body[0], ast.If) and isinstance(body[0].test, ast.Compare)
            and isinstance(body[0].test.left, ast.Name) and body[0].test.left.id == _DISPATCH_STATE)


def _synchronises_every_pass(body: list[ast.stmt]) -> bool:
    """A statement of the loop body itself (not under an ``if``) calls a barrier: ``cuda.syncthreads()`` and the
    like, or a cooperative group's ``sync()``."""
    for stmt in body:
        value = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign)) else None
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _BARRIERS:
            return True
    return False


def _clip(v: Val, t: Num) -> tuple[int, int]:
    lo, hi = v.bounds()
    if t.is_int and (lo < t.lo or hi > t.hi):
        return t.lo, t.hi
    return lo, hi


_ring_bounds = intervals.ring_bounds


def _quotient_bounds(kind, left: Val, right: Val) -> tuple[int | None, int | None]:
    return intervals.quotient_bounds(kind, *left.bounds(), *right.bounds())


def _assigned_names(fdef: ast.FunctionDef) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(fdef):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
    return names


def _store_counts(fdef: ast.FunctionDef) -> dict[str, int]:
    """How many places bind each name (assignments, loop targets, augmented assignments, ...)."""
    counts: dict[str, int] = {}
    for node in ast.walk(fdef):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            counts[node.id] = counts.get(node.id, 0) + 1
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            counts[node.target.id] = counts.get(node.target.id, 0) + 1
    return counts


def _loosely_bound_names(fdef: ast.FunctionDef) -> set[str]:
    """Names bound where the rewriter does not control the form of the value (a loop over an array, unpacking a
    call's result, ``with ... as``): their values are treated as of unknown form."""
    loose: set[str] = set()
    for node in ast.walk(fdef):
        targets = []
        if isinstance(node, ast.For):
            it = node.iter
            if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"):
                targets.append(node.target)
            elif not isinstance(node.target, ast.Name):
                targets.append(node.target)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, (ast.Tuple, ast.List)) and not (
                        isinstance(node.value, (ast.Tuple, ast.List)) or _canonical_tuple(node.value)):
                    targets.append(t)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            targets.extend(i.optional_vars for i in node.items if i.optional_vars is not None)
        elif isinstance(node, ast.NamedExpr):
            targets.append(node.target)
        elif isinstance(node, (ast.comprehension,)):
            targets.append(node.target)
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    loose.add(n.id)
    return loose


def _canonical_tuple(value: ast.expr) -> bool:
    """Tuples the simulator fills with canonical values: array shapes, ``cuda.grid(n)``, ``cuda.gridsize(n)``,
    CUDA intrinsics returning pairs."""
    if isinstance(value, ast.Attribute) and value.attr in ("shape", "strides"):
        return True
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in (
            "grid", "gridsize", "match_all_sync"):
        return True
    return False


# -- building a typed kernel ---------------------------------------------------------------------------------------


@dataclass
class TypedFunction:
    """A rewritten function: its code, the globals it runs with, and the names in them that stand for ``cuda``."""

    function: Any
    globals: dict
    cuda_names: list[str]
    conversions: int


@dataclass
class TypedKernel:
    kernel: TypedFunction
    functions: list[TypedFunction] = field(default_factory=list)  # kernel first, then device functions
    cooperative: bool = False

    def bind(self, cuda_module, spin) -> None:
        """Point every rewritten function at this launch's ``cuda`` module and spin counter."""
        for f in self.functions:
            for name in f.cuda_names:
                f.globals[name] = cuda_module
            f.globals["__nk_spin"] = spin


@dataclass
class CompiledFunction:
    """A rewritten function as code, with no value of the process that made it (so it can be kept on disk)."""

    label: str  # "kernel" or "device:<i>"
    code: Any  # the code of a module that defines the function
    name: str
    reads: list[str]  # the names it reads from the kernel's globals and closure (and builtins)
    helpers: list[str]  # the conversion helpers it calls (``helper_value``)
    conversions: int

    def to_data(self) -> tuple:
        return (self.label, self.code, self.name, list(self.reads), list(self.helpers), self.conversions)


@dataclass
class CompiledKernel:
    """The rewritten kernel and device functions of one set of facts (slot i: the facts' function i)."""

    functions: list[CompiledFunction | None]
    cooperative: bool

    def to_data(self) -> tuple:
        return ([f.to_data() if f is not None else None for f in self.functions], self.cooperative)

    @classmethod
    def from_data(cls, data) -> CompiledKernel:
        functions, cooperative = data
        return cls([CompiledFunction(*f) if f is not None else None for f in functions], bool(cooperative))


def compile_kernel(facts: dict, kernel_fn, device_fns: list) -> CompiledKernel:
    """The kernel and the device functions it calls, rewritten from their facts (the Python numba-cuda's front end
    rebuilt from its typed IR, and what numba decided for each of its operations)."""
    functions_facts = facts.get("functions")
    if not functions_facts or functions_facts[0] is None:
        raise RebuildError(f"numbakern cannot run kernel '{kernel_fn.__name__}' with Numba's types: the typing "
                           "helper returned no Python for it")
    names: dict[int, str] = {i: f"__nk_device_{i}" for i in range(1, len(functions_facts))}
    compiled: list[CompiledFunction | None] = []
    loop_numbers = itertools.count(1)  # one numbering over all the functions: a loop's number names it
    for data in functions_facts:
        if data is None:
            compiled.append(None)
            continue
        compiled.append(_rewrite(_function_of(data["label"], kernel_fn, device_fns), data, names, device_fns,
                                 loop_numbers))
    return CompiledKernel(compiled, bool(facts.get("cooperative")))


def bind(compiled: CompiledKernel, kernel_fn, device_fns: list, is_cuda_module) -> TypedKernel:
    """Functions that run ``compiled`` with the values ``kernel_fn`` and its device functions read now (numpy
    arrays copied: numba compiles them in as constants)."""
    built: list[TypedFunction | None] = []
    for f in compiled.functions:
        if f is None:
            built.append(None)
            continue
        built.append(_bind(f, _function_of(f.label, kernel_fn, device_fns), is_cuda_module, device_fns))
    for f in built:
        if f is None:
            continue
        for i in range(1, len(built)):
            if built[i] is not None:
                f.globals[f"__nk_device_{i}"] = built[i].function
    return TypedKernel(built[0], [f for f in built if f is not None], compiled.cooperative)


def _function_of(label: str, kernel_fn, device_fns: list):
    """The Python function of a facts label: ``kernel``, ``device:<i>`` (the request's device function i), or
    ``nested:(owner's label, path, closure values, defaults)`` (a function the owner defines inside it, made
    again from the owner's code constant: ``numbakern.frontend.facts.DeviceFacts.note_nested``)."""
    if label == "kernel":
        return kernel_fn
    if label.startswith("nested:"):
        owner, path, cells, defaults = ast.literal_eval(label[len("nested:"):])
        return _nested_function(_function_of(owner, kernel_fn, device_fns), path, cells, defaults, None)
    return device_fns[int(label.split(":")[1])]


def _values(pyfunc, names, device_fns: list) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name in names:
        owner, own_name = pyfunc, name
        if name.startswith(INLINED):  # a value of a device function numba-cuda-mlir inlined (``decompile``)
            index, _, own_name = name[len(INLINED):].partition("_")
            owner = device_fns[int(index)]
        value = closures.lookup(owner, own_name)
        if value is closures.MISSING:
            continue
        if type(value) is np.ndarray:
            # numba compiles a global array in as a constant: later changes to it are not seen
            value = value.copy()
            value.flags.writeable = False
        values[name] = value
    return values


def _rewrite(pyfunc, data: dict, device_names: dict[int, str], device_fns: list,
             loop_numbers: Iterator[int]) -> CompiledFunction:
    python = data["python"]
    fdef = ast.parse(python["text"]).body[0]
    _place(fdef, python["positions"])
    read = sorted(_free_names(fdef))
    values = _values(pyfunc, read, device_fns)
    helpers = Helpers()
    rewriter = Rewriter(FunctionFacts(data), helpers, device_names, values, loop_numbers)
    new_def = rewriter.function(fdef)
    module = ast.Module([new_def], [])
    ast.fix_missing_locations(module)
    code = compile(module, pyfunc.__code__.co_filename, "exec")
    used = sorted(n for n in helpers.values if n != "__nk_spin")
    reads = [n for n in read if not n.startswith("__nk_") or n.startswith(INLINED)]
    return CompiledFunction(data["label"], code, new_def.name, reads, used, rewriter.changed)


def _bind(f: CompiledFunction, pyfunc, is_cuda_module, device_fns: list) -> TypedFunction:
    values = _values(pyfunc, f.reads, device_fns)
    glob = pyfunc.__globals__
    builtins = glob.get("__builtins__")
    missing = [n for n in f.reads if n not in values and not hasattr(builtins_module, n)]
    if missing:
        raise RebuildError(f"kernel '{pyfunc.__name__}' reads {', '.join(repr(n) for n in missing)}, which numba "
                           "found when it compiled the kernel but its globals and closure no longer hold")
    namespace = dict(values)
    namespace["__builtins__"] = builtins
    namespace["__name__"] = glob.get("__name__")
    for name in f.helpers:
        namespace[name] = helper_value(name)
    namespace["__nk_spin"] = _no_spin
    namespace[LOOP_HOOK] = _no_loop_hook
    namespace[MAKE_FUNCTION] = _FunctionMaker(pyfunc)
    exec(f.code, namespace)  # noqa: S102 - the kernel's own (rewritten) definition
    function = namespace[f.name]
    function.__defaults__ = pyfunc.__defaults__
    function.__kwdefaults__ = pyfunc.__kwdefaults__
    cuda_names = [n for n, v in values.items() if is_cuda_module(v)]
    return TypedFunction(function, namespace, cuda_names, f.conversions)


_FIXED_HELPERS: dict[str, Any] = {}


def helper_value(name: str):
    """The value of a conversion helper a rewritten function calls, by its name (``__nk_wrap_int32``): what
    ``Helpers`` gave it when the function was rewritten, perhaps in another process."""
    if not _FIXED_HELPERS:
        _FIXED_HELPERS.update(Helpers().values)
        _FIXED_HELPERS.update({"__nk_round_ndigits": numerics.round_ndigits,
                               "__nk_round_ndigits_float32": numerics.round_ndigits_float32})
    found = _FIXED_HELPERS.get(name)
    if found is not None:
        return found
    key = name[len("__nk_"):]
    for prefix, dtype, bits in (("float32_", np.float32, np.uint32), ("float16_", np.float16, np.uint16)):
        if key.startswith(prefix):
            return bits(int(key[len(prefix):], 16)).view(dtype)
    for prefix, table in (("float_to_", numerics.FROM_FLOAT), ("to_", numerics.TO), ("wrap_", numerics.WRAP)):
        if key.startswith(prefix) and key[len(prefix):] in table:
            return table[key[len(prefix):]]
    op, _, t = key.partition("_")
    found = numerics.BIT_OPERATIONS.get((op, t))
    if found is None:
        raise RebuildError(f"numbakern: no conversion helper is named {name}")
    return found


def _no_spin():
    pass


def _no_loop_hook(number: int) -> None:
    pass


class _Undefined:
    """A value numba never reads, which the rebuilt function still converts to its variable's type: the value
    ``iternext`` pairs with False, a variable left undefined on a path. Zero, whatever the type."""

    def __int__(self):
        return 0

    __index__ = __int__

    def __float__(self):
        return 0.0

    def __bool__(self):
        return False


_UNDEFINED = _Undefined()


def _iter_next(iterator):
    """numba's ``iternext``: ``(value, True)``, or ``(a stand-in, False)`` when the iterator is exhausted."""
    for value in iterator:
        return value, True
    return _UNDEFINED, False


class _FunctionMaker:
    """``__nk_make_function`` of one rebuilt function (``decompile``'s ``_made_function``): a function defined inside
    it, which numba compiled as a device function of its own, made again from the caller's own code constant, with
    numba's values of its free variables (cells) and its defaults, and the caller's globals as they were when it
    first made one (numba froze the values it read when it compiled the kernel, at its first launch).

    A device function that calls the value by name calls the nested function's typed Python instead (its facts
    come labelled ``nested:...``: ``_function_of``); what this makes is what Python calls (an ``@overload``'d
    function's Python, a call with ``*args``), and it computes as Python: its arithmetic is Python's and numpy's,
    not Numba's, and the rebuilt code that receives its result (a device function's return, a store into an
    array) converts it to the type numba gave it there."""

    def __init__(self, pyfunc):
        self.pyfunc = pyfunc
        self.made: dict = {}
        self.globals: dict | None = None

    def __call__(self, path: tuple, cells: tuple, defaults):
        key = (path, repr(cells), repr(defaults))  # by repr: 1, 1.0 and True are equal keys, not equal values
        made = self.made.get(key)
        if made is not None:
            return made
        if self.globals is None:
            self.globals = dict(self.pyfunc.__globals__)
        fn = _nested_function(self.pyfunc, path, cells, defaults, self.globals)

        def nested(*args, **kwargs):
            # the cuda of its globals the running launch's, as for a device function (through the seam: typed
            # must not import the engine that imports it)
            launch = intrinsics.active_launch()
            if launch is not None:
                launch._swap_cuda_module(fn)
            return fn(*args, **kwargs)

        nested.__name__, nested.__qualname__, nested.__wrapped__ = fn.__name__, fn.__qualname__, fn
        self.made[key] = nested
        return nested


def _nested_function(pyfunc, path: tuple, cells: tuple, defaults, globals_: dict | None):
    """The function ``pyfunc`` defines at ``path`` (indices through ``co_consts``), with these closure values and
    defaults, and ``globals_`` (None: ``pyfunc``'s)."""
    import types

    code = pyfunc.__code__
    for i in path:
        code = code.co_consts[i] if i < len(code.co_consts) else None
        if not isinstance(code, types.CodeType):
            raise RebuildError(f"function '{pyfunc.__name__}' has no nested function at {path} (its code changed "
                               "since numba compiled it)")
    return types.FunctionType(code, pyfunc.__globals__ if globals_ is None else globals_, code.co_name, defaults,
                              tuple(types.CellType(v) for v in cells))


def _import(module: str, qualname: str):
    import importlib

    value = importlib.import_module(module)
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


class RebuildError(RuntimeError):
    """A function rebuilt from numba's typed IR cannot run here (the message says what and why)."""


def _place(fdef: ast.FunctionDef, positions: list) -> None:
    """Give a rebuilt function's nodes the kernel's own source positions, keeping the key of their place in the
    rebuilt text for the facts (``_key``)."""
    for node, pos in zip(ast.walk(fdef), positions):
        if "lineno" not in node._attributes:
            continue
        node._nk_key = node_key(node)
        if pos is not None:
            line, col, end_line, end_col = pos
            if end_line is None:  # only the line is known
                end_line, end_col = line, col
            node.lineno, node.col_offset, node.end_lineno, node.end_col_offset = line, col, end_line, end_col


def _free_names(fdef: ast.FunctionDef) -> set[str]:
    """Names a function reads that it does not bind itself (globals, closure values, builtins)."""
    bound = _assigned_names(fdef) | {a.arg for a in fdef.args.posonlyargs + fdef.args.args + fdef.args.kwonlyargs}
    if fdef.args.vararg:
        bound.add(fdef.args.vararg.arg)
    if fdef.args.kwarg:
        bound.add(fdef.args.kwarg.arg)
    return {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound
