"""Expressions. Every operator's result type is the one numba chose (the function's typed record), and casts
are inserted exactly where C's promotions would compute in a different type (see ``cexpr``)."""

from __future__ import annotations

import ast
import builtins as _builtins
import operator
import types as pytypes
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from numba.cuda import types

from numbakern.frontend import closures

from ..cnames import _INT_BITS, c_arith, c_name, is_complex, is_float, is_int, is_signed, scalar_key
from ..errors import SourceInfo, TranslationError
from . import arrays, builtins, calls, inner, pybuiltins, variables
from .cexpr import (
    BINARY_PREC,
    COND,
    LAND,
    LOR,
    PRIMARY,
    REL,
    UNARY,
    CExpr,
    RangeVal,
    Static,
    TupleVal,
    arith_casts,
    cast,
    compare_casts,
    float_literal,
    paren,
)
from .context import FunctionContext
from .diagnose import internal_error
from .emitter import Emitter
from .valueflow import within

BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**",
          ast.LShift: "<<", ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^"}
INT64_MAX = 2 ** 63 - 1
#: C's 32-bit integer types and their values
C32 = {"uint32": (0, 2 ** 32 - 1), "int32": (-(2 ** 31), 2 ** 31 - 1)}
CMPOPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}

_UNSUPPORTED_EXPR_HINT = ("arithmetic, comparisons, and/or/not, conditional expressions, array indexing, "
                          "cuda.* intrinsics, math.* functions, min/max/abs, int()/float()/np.float32() casts")


class ExprMixin:
    """The expressions of ``stmts.FunctionTranslator``'s walk (what an operation means in C: Triton's ``semantic``)."""

    ctx: FunctionContext
    out: Emitter
    template_consts: Mapping
    # the C variables of the function's names (stmts.FunctionTranslator sets them up)
    aliases: dict
    inner: dict
    arrays: dict
    scalars: dict
    retyped: dict
    tuple_vars: dict
    present: dict
    facts: dict
    view_owners: dict

    if TYPE_CHECKING:  # the statements' side of the walk (stmts.FunctionTranslator)
        def cname(self, name: str) -> str: ...
        def static_truth(self, node: ast.AST) -> bool | None: ...
        def flow_interval(self, node: ast.AST) -> tuple: ...
        def flow_nonneg(self, node: ast.AST) -> bool: ...
        def operation_ranges(self, node: ast.AST) -> tuple | None: ...
        def bounded(self, node: ast.AST) -> bool: ...

    @property
    def src(self) -> SourceInfo:
        return self.ctx.src

    @property
    def unit(self) -> Any:
        return self.ctx.unit

    @property
    def helpers(self) -> set[str]:
        return self.ctx.unit.helpers

    # -- entry -------------------------------------------------------------------------------------------------
    def expr(self, node: ast.AST) -> CExpr:
        v = self.value(node)
        if isinstance(v, CExpr):
            return v
        if isinstance(v, arrays.Row):
            raise self.src.error(node, f"a row of '{v.name}' is used as a value here",
                                 hint="index every dimension: x[r][c] or x[r, c]")
        if isinstance(v, arrays.ArrayInfo):
            raise self.src.error(node, f"the array '{v.name}' is used as a value here",
                                 hint="index it (x[i]), or use x.shape / len(x)")
        raise self.src.error(node, "this expression has no C value here", hint=_UNSUPPORTED_EXPR_HINT)

    def value(self, node: ast.AST):
        """CExpr, TupleVal, ArrayInfo or Static."""
        method = getattr(self, "v_" + type(node).__name__, None)
        if method is None:
            raise self.src.error(node, f"unsupported expression ({type(node).__name__})", hint=_UNSUPPORTED_EXPR_HINT)
        try:
            return method(node)
        except TranslationError:
            raise
        except Exception as e:  # noqa: BLE001 - a bug of the code generator: located at this expression
            raise internal_error(self.ctx.src, node, e) from e

    def cond(self, node: ast.AST) -> CExpr:
        """An expression used for its truth value (if/while/ternary tests): any number is fine there."""
        if isinstance(node, ast.BoolOp):
            return self._boolop(node, truth=True)
        e = self.expr(node)
        if scalar_key(e.nbt) is None and e.key is None:
            raise self.src.error(node, "this value has no truth value in C", hint="a comparison or a number")
        return e

    # -- leaves ------------------------------------------------------------------------------------------------
    def v_Constant(self, node):
        v = node.value
        if isinstance(v, bool):
            return CExpr("true" if v else "false", "bool", types.literal(v), literal=v, nonneg=True)
        if isinstance(v, int):
            lit = types.literal(v)
            if -(2**31) <= v < 2**31:
                return CExpr(str(v), "int32", lit, literal=v, nonneg=v >= 0)
            if 2**31 <= v < 2**32:  # masks such as 0xFFFFFFFF
                return CExpr(f"{v:#x}u", "uint32", lit, literal=v, nonneg=True)
            return CExpr(f"{v}LL", "int64", lit, literal=v, nonneg=v >= 0)
        if isinstance(v, float):
            return CExpr(float_literal(v), "float64", types.float64, literal=v, nonneg=v >= 0)
        if isinstance(v, complex):  # 2j, 0j: complex128 to numba
            return CExpr(f"make_cuDoubleComplex({float_literal(v.real)}, {float_literal(v.imag)})", "complex128",
                         types.complex128, literal=v)
        if isinstance(v, str):
            raise self.src.error(node, "strings are not supported in kernels", hint="numbers and booleans")
        raise self.src.error(node, f"unsupported constant {v!r}", hint="int, float and bool literals")

    def v_Name(self, node):
        name = node.id
        if name in self.aliases:
            return self.aliases[name]
        if name in self.arrays:
            return self.arrays[name]
        if name in self.ctx.bound:
            return self.literal_value(self.ctx.bound[name], node)
        if name in self.inner:  # (called by v_Call, with what it reads of this function)
            return Static(self.inner[name].dispatcher)
        if name in self.retyped:
            loaded = variables.version_at(self, name, node, "load")
            var = self.retyped[name][loaded]
            if isinstance(var, list):
                return variables.tree_value(var, loaded)
            return CExpr(var.cname, var.key, var.nbt)
        if name in self.tuple_vars:
            return variables.tree_value(self.tuple_vars[name], self.ctx.var_type(name))
        if name in self.scalars:
            key = self.scalars[name]
            deps = self.facts.get(name)
            if is_int(key) and deps:
                lo = self.flow_interval(node)[0]
                if lo is not None and lo >= 0:  # non-negative without assuming anything of the parameters
                    deps = frozenset()
            elif is_int(key) and deps is None:
                lo = self.flow_interval(node)[0]
                deps = frozenset() if lo is not None and lo >= 0 else None
            return CExpr(self.cname(name), key, self.ctx.var_type(name), nonneg=deps is not None or key.startswith("u"),
                         deps=deps or frozenset(), present=self.present.get(name))
        if name in self.template_consts:
            v = self.template_consts[name]
            return CExpr(name, "int32" if isinstance(v, int) else scalar_key(types.typeof(v)),
                         types.literal(v), nonneg=v >= 0 if isinstance(v, int) else False, literal=None)
        found, obj = self.lookup_global(name)
        if not found:
            raise self.src.error(node, f"name '{name}' is not defined in the kernel",
                                 hint="a local, argument or global")
        return self.global_value(name, obj, node)

    def literal_value(self, v, node):
        """A compile-time Python value as a C value (numbers), a tuple of them, or a Static."""
        if isinstance(v, (bool, np.bool_)):
            return CExpr("true" if v else "false", "bool", types.literal(bool(v)), literal=bool(v), nonneg=True)
        if isinstance(v, (int, np.integer)):
            return self.v_Constant(ast.Constant(int(v)))
        if isinstance(v, (float, np.floating)):
            return self.v_Constant(ast.Constant(float(v)))
        if isinstance(v, tuple):
            return TupleVal([self.literal_value(x, node) for x in v])
        return Static(v)

    def global_value(self, name, obj, node):
        g = self.ctx.pyfunc.__globals__
        if isinstance(obj, (bool, np.bool_)):
            c = self.ctx.unit.constant(g, name, "bool", bool(obj))
            return CExpr(c, "bool", types.boolean, literal=None, nonneg=True)
        if isinstance(obj, (int, np.integer)):
            c = self.ctx.unit.constant(g, name, "int64", int(obj))
            return CExpr(c, "int64", types.literal(int(obj)), nonneg=int(obj) >= 0)
        if isinstance(obj, (float, np.floating)):
            if not np.isfinite(obj):  # inf/nan have no constexpr spelling NVRTC accepts: written where used
                return CExpr(float_literal(float(obj)), "float64", types.float64, literal=float(obj))
            c = self.ctx.unit.constant(g, name, "float64", float(obj))
            return CExpr(c, "float64", types.float64, nonneg=float(obj) >= 0)
        if isinstance(obj, (complex, np.complexfloating)):  # IMG = np.complex64(1j): written where used
            single = getattr(obj, "dtype", None) == np.dtype(np.complex64)
            make, key = ("make_cuFloatComplex", "complex64") if single else ("make_cuDoubleComplex", "complex128")
            parts = (float_literal(float(obj.real), single), float_literal(float(obj.imag), single))
            return CExpr(f"{make}({parts[0]}, {parts[1]})", key, types.complex64 if single else types.complex128)
        if _number_tuple(obj):  # SM_SIZE = (TPB, TPB): numba reads its values as constants
            return TupleVal([self.literal_value(v, node) for v in obj])
        if isinstance(obj, np.ndarray):  # a module-level array: numba freezes its values into the kernel
            return arrays.const_array(self, name, obj, node)
        return Static(obj)

    def const_value(self, node):
        """The compile-time Python value of ``node`` (literals, constants, + - * // of them), else None."""
        if isinstance(node, ast.Constant) and not isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.ctx.bound:
                v = self.ctx.bound[node.id]
                return v if isinstance(v, (int, float, bool, np.integer, np.floating, tuple)) else None
            if node.id in self.template_consts:
                return self.template_consts[node.id]
            if node.id in self.ctx.typed.literals and node.id not in self.ctx.params:  # `N = 100`: a constant to numba
                return self.ctx.typed.literals[node.id]
            if node.id in self.scalars or node.id in self.arrays or node.id in self.aliases:
                return None
            found, obj = self.lookup_global(node.id)
            if found and isinstance(obj, (int, float, bool, np.integer, np.floating)):
                return obj
            if found and _number_tuple(obj):
                return tuple(obj)
            return None
        if isinstance(node, ast.BinOp) and type(node.op) in (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv):
            a, b = self.const_value(node.left), self.const_value(node.right)
            if a is None or b is None:
                return None
            return {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
                    ast.FloorDiv: operator.floordiv}[type(node.op)](a, b)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            a = self.const_value(node.operand)
            return None if a is None else -a
        if isinstance(node, ast.Attribute) and node.attr == "ndim" and isinstance(node.value, ast.Name) and \
                node.value.id in self.arrays:  # an array's rank is part of its type: numba folds `x.ndim == 2`
            return self.arrays[node.value.id].ndim
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords and _dotted(node.func):
            f = self.value(node.func)  # int(c), u32(c), np.int64(c)
            obj = getattr(f, "obj", None)
            if obj is int or (isinstance(obj, type) and issubclass(obj, np.integer)):
                a = self.const_value(node.args[0])
                if isinstance(a, (int, np.integer)) and not isinstance(a, bool):
                    try:
                        return int(obj(a))
                    except (OverflowError, ValueError):
                        return None
        return None

    def v_Starred(self, node):
        raise self.src.error(node, "a starred tuple is unpacked here only into a device function's arguments",
                             hint="f(*t) of a @cuda.jit(device=True) function; elsewhere index it: max(t[0], t[1])")

    def v_Tuple(self, node):
        return TupleVal([self.value(e) for e in node.elts])

    def v_Attribute(self, node):
        base = self.value(node.value)
        if isinstance(base, TupleVal) and node.attr in base.fields:  # a namedtuple's field
            return base.items[base.fields.index(node.attr)]
        if isinstance(base, CExpr) and isinstance(base.nbt, types.Record):
            return self.record_field(base, node.attr, node)
        if isinstance(base, CExpr) and is_complex(base.key) and node.attr in ("real", "imag"):
            f = "f" if base.key == "complex64" else ""
            part = "float32" if base.key == "complex64" else "float64"
            fname = ("cuCreal" if node.attr == "real" else "cuCimag") + f
            return CExpr(f"{fname}({base.code})", part, getattr(types, part), PRIMARY, pure=base.pure)
        if isinstance(base, arrays.Row):
            base = self.viewed(arrays.row_array(self, base, node.value))
        if isinstance(base, arrays.ArrayInfo):
            return self.array_attr(base, node)
        if isinstance(base, Static):
            obj = base.obj
            if not hasattr(obj, node.attr):
                raise self.src.error(node, f"'{node.attr}' is not an attribute of {obj!r}")
            sub = getattr(obj, node.attr)
            special = builtins.attribute(self, obj, node.attr, sub, node)
            if special is not None:
                return special
            if isinstance(sub, (int, float, bool, np.integer, np.floating)) and (
                    isinstance(obj, pytypes.ModuleType) or pybuiltins.is_number_info(obj)):
                # math.pi, np.inf, np.iinfo(np.int32).max: numba reads these as constants when it compiles the kernel
                return self.literal_value(sub, node)
            return Static(sub)
        raise self.src.error(node, f"attribute '{node.attr}' is not supported here",
                             hint="x.shape / x.size / x.ndim of arrays, cuda.threadIdx.x and the like")

    def record_field(self, rec: CExpr, field, node) -> CExpr:
        """``r["s0"]`` / ``r.s0`` of a record value: the struct member."""
        fields = rec.nbt.fields
        if not isinstance(field, str) or field not in fields:
            raise self.src.error(node, f"the record has no field {field!r}",
                                 hint=f"one of {', '.join(fields)} (a constant string)")
        t = fields[field].type
        return CExpr(f"{paren(rec, PRIMARY)}.{field}", self.scalar_key(t), t, PRIMARY, pure=rec.pure)

    def array_attr(self, info, node):
        if node.attr == "shape":
            if info.extents is None:
                raise self.src.error(node, "the shape of dynamic shared memory is not known to the C code",
                                     hint="pass the extent as a kernel argument")
            return TupleVal(list(info.extents))
        if node.attr == "size":
            if info.extents is None:
                raise self.src.error(node, "the size of dynamic shared memory is not known to the C code")
            code = " * ".join(e.code for e in info.extents)
            return CExpr(code, "int64", types.int64, PRIMARY if len(info.extents) == 1 else 13, nonneg=True)
        if node.attr == "ndim":
            return CExpr(str(info.ndim), "int32", types.literal(info.ndim), literal=info.ndim, nonneg=True)
        if node.attr == "dtype":  # a compile-time value: the element type (cuda.local.array(n, dtype=x.dtype))
            return Static(info.nbt.dtype if info.nbt is not None else getattr(types, info.key))
        if node.attr in ("T", "real", "imag") and info.extents is None:
            raise self.src.error(node, f"'.{node.attr}' of dynamic shared memory: its extent is not known to the C "
                                 "code")
        if node.attr == "T":
            return self.viewed(arrays.transposed(info, self.ctx.typed.record.type_of(node)))
        if node.attr in ("real", "imag") and is_complex(info.key):
            return self.viewed(arrays.complex_part(self, info, node.attr, self.ctx.typed.record.type_of(node)))
        if node.attr == "real":  # of a real array: the array itself
            return info
        raise self.src.error(node, f"array attribute '.{node.attr}' is not supported",
                             hint=".shape, .size, .ndim, .dtype, .T, .real, .imag")

    def v_Subscript(self, node):
        base = self.value(node.value)
        if isinstance(base, CExpr) and isinstance(base.nbt, types.Record):
            return self.record_field(base, _str_constant(node.slice), node)
        if isinstance(base, TupleVal):
            i = self.const_value(node.slice)
            if i is None and homogeneous_tuple(base):
                return self._tuple_item(base, node)
            if not isinstance(i, int) or not -len(base.items) <= i < len(base.items):
                raise self.src.error(node.slice, "tuple index must be a constant within the tuple",
                                     hint="x.shape[0], t[1]")
            return base.items[i]
        if isinstance(base, arrays.ArrayInfo) and isinstance(node.slice, ast.Slice) and arrays.plain_tail(
                self, base, node.slice):
            return self.viewed(arrays.slice_view(self, base, node.slice, node))
        index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if isinstance(base, (arrays.ArrayInfo, arrays.Row)) and any(isinstance(i, ast.Slice) for i in index):
            return self.viewed(arrays.subscript_view(self, base, node.slice, node))
        if isinstance(base, (arrays.ArrayInfo, arrays.Row)):
            return arrays.element_or_row(self, base, node.slice, node)
        raise self.src.error(node, "only arrays and tuples can be indexed", hint="x[i], x[r, c], x.shape[0]")

    def viewed(self, view):
        """A view of an array: stores through its pointer write the array it is part of."""
        if isinstance(view, arrays.ArrayInfo) and view.owner is not None:
            self.view_owners[view.name] = self.view_owners.get(view.owner, view.owner)
        return view

    def _tuple_item(self, tup: TupleVal, node) -> CExpr | TupleVal:
        """``t[i]`` of a tuple of numbers of one type at a run-time index, as numba's switch over the items
        (``i`` or ``i - len(t)``): a chain of conditional expressions (of a tuple of tuples, one chain per number of
        the item). An index out of range is numba's IndexError (the thread stops); the C then reads the last
        item."""
        idx = self.expr(node.slice)
        if not is_int(idx.key):
            raise self.src.error(node.slice, "a tuple index must be an integer")
        if not idx.pure:
            idx = self.out.hoist(idx, "index")
        nonneg = idx.nonneg and not idx.deps or self.flow_nonneg(node.slice)
        i = paren(idx, REL)

        def chosen(items: list) -> CExpr | TupleVal:
            if isinstance(items[0], TupleVal):
                return TupleVal([chosen([t.items[j] for t in items]) for j in range(len(items[0].items))],
                                items[0].fields)
            n = len(items)
            code = paren(items[-1], COND)
            for k in range(n - 2, -1, -1):
                test = f"{i} == {k}" if nonneg else f"({i} == {k} || {i} == {k - n})"
                code = f"{test} ? {paren(items[k], COND + 1)} : {code}"
            return CExpr(code, items[0].key, items[0].nbt, COND, all(x.nonneg for x in items), idx.pure)

        return chosen(tup.items)

    # -- operators ---------------------------------------------------------------------------------------------
    def v_BinOp(self, node):
        op = BINOPS.get(type(node.op))
        if op is None:
            raise self.src.error(node, "unsupported operator", hint="+ - * / // % ** << >> & | ^")
        return self.binop(op, self.expr(node.left), self.expr(node.right), node)

    def binop(self, op, left: CExpr, right: CExpr, node, sig=None) -> CExpr:
        """``left op right`` as numba computes it; ``sig``: numba's signature of it (default: the record's of
        ``node``)."""
        sig = sig if sig is not None else self.signature(node)
        rkey = scalar_key(sig.return_type)
        akey = scalar_key(sig.args[0]) or rkey
        nonneg = left.nonneg and right.nonneg and op in ("+", "*", "//", "%", "&", "|", "^", ">>", "**")
        if op == "&" and is_int(rkey) and (left.nonneg or right.nonneg):  # a non-negative mask clears the sign bit
            nonneg = True
        deps = left.deps | right.deps
        pure = left.pure and right.pure
        if is_complex(rkey):
            return self._complex_binop(op, left, right, rkey, sig.return_type, node)
        ranges = self.operation_ranges(node) if is_int(rkey) and is_int(akey) else None
        if ranges is not None and ranges[2][0] is not None and ranges[2][0] >= 0:
            nonneg, deps = True, frozenset()  # the value ranges prove it, assuming nothing of the parameters
        natural = c_arith(left.key, right.key) if is_int(left.key) and is_int(right.key) else None
        if self.out.in_c_index and ranges is not None and ranges[3] and op in ("+", "-", "*") and \
                rkey in ("int64", "uint64") and natural in C32 and all(within(r, *C32[natural]) for r in ranges[:3]):
            # in an index of a shared or local array, 32-bit operands (threadIdx.x, an int32 local) whose values and
            # result the ranges keep in their C type: C's own arithmetic gives numba's value, no cast needed
            # (plane[ty][tx - 1] under `if tx >= 1`). Elsewhere the 64-bit arithmetic stays: 32-bit values that
            # meet 64-bit ones cost registers (reduce_sum went from 32 to 34, and from 100% to 75% occupancy)
            return self._infix(left, op, right, natural, sig.return_type, nonneg=ranges[2][0] >= 0)
        if op == "/":
            left, right = arith_casts(left, right, rkey)
            if rkey == "float32" and getattr(self.ctx.unit, "fastmath", False):
                # numba with fastmath: float32 / is libdevice's fast_fdividef (numba_cuda mathimpl)
                return CExpr(f"__fdividef({left.code}, {right.code})", rkey, sig.return_type, PRIMARY, False,
                             pure, deps)
            return self._infix(left, "/", right, rkey, sig.return_type, nonneg=False, deps=deps)
        if op in ("//", "%"):
            divisor = right.literal if right.literal is not None else self._named_const(right.code)
            left_node = node.left if isinstance(node, ast.BinOp) else getattr(node, "target", None)
            # (a proof that assumed a parameter >= 0 is good for indices only, where the launcher checks it; and
            # a value that may have wrapped around past INT64_MAX is negative to numba: the floor helper)
            plain = ranges is not None and within(ranges[0], 0, INT64_MAX) and within(ranges[1], 1, INT64_MAX)
            if plain or is_int(akey) and left.nonneg and not left.deps and isinstance(divisor, int) and \
                    divisor > 0 and left_node is not None and self.bounded(left_node):
                left, right = arith_casts(left, right, rkey)
                return self._infix(left, "/" if op == "//" else "%", right, c_arith(left.key, right.key),
                                   sig.return_type, nonneg=True, deps=deps)
            helper = "nk_floordiv" if op == "//" else "nk_floormod"
            hk = akey if is_float(akey) else ("int64" if is_signed(akey) else "uint64")
            self.ctx.unit.helpers.add(f"{helper}_{hk}")  # only the overload it calls
            if left_node is None or not self.bounded(left_node):
                left = wrapping(left)  # numba's wraparound of the operand, not C's undefined signed overflow
            a, b = cast(left, hk), cast(right, hk)
            return CExpr(f"{helper}({a.code}, {b.code})", hk, sig.return_type, PRIMARY, nonneg, pure, deps)
        if op == "**":
            bkey = scalar_key(sig.args[1])
            if is_float(akey) and is_int(bkey):  # numba: repeated squaring, not pow()
                self.ctx.unit.helpers.add("nk_powi")
                a, b = cast(left, rkey), cast(right, "int64")
                return CExpr(f"nk_powi({a.code}, {b.code})", rkey, sig.return_type, PRIMARY, False, pure, deps)
            if is_float(akey):
                fname = "powf" if akey == "float32" else "pow"
                a, b = cast(left, akey), cast(right, akey)
                return CExpr(f"{fname}({a.code}, {b.code})", akey, sig.return_type, PRIMARY, False, pure, deps)
            if is_int(akey):
                self.ctx.unit.helpers.add("nk_ipow")
                a, b = cast(left, "int64"), cast(right, "int64")
                e = CExpr(f"nk_ipow({a.code}, {b.code})", "int64", sig.return_type, PRIMARY, nonneg, pure, deps)
                return e if rkey == "int64" else cast(e, rkey, sig.return_type)
            raise self.src.error(node, f"** on {akey} is not supported", hint="** on numbers")
        if op in ("<<", ">>"):
            left = cast(left, akey)
            right = cast(right, akey) if right.literal is None else right
            left_node = node.left if isinstance(node, ast.BinOp) else getattr(node, "target", None)
            if op == "<<" and is_signed(akey) and not (
                    left.nonneg and not left.deps and isinstance(node, ast.BinOp) and self.bounded(node)):
                # numba shifts the bits (LLVM shl); a C left shift of a negative or overflowing signed value is
                # undefined: shift the unsigned bits and convert back
                ukey = "u" + str(akey)
                shifted = self._infix(cast(left, ukey), "<<", right, ukey, sig.return_type)
                return CExpr(f"({c_name(akey)})({shifted.code})", akey, sig.return_type, UNARY, False, pure, deps)
            return self._infix(left, op, right, akey, sig.return_type, nonneg=nonneg, deps=deps)
        # numba converts both operands to the signature's argument types and gives the result its return type:
        # uint32 + int64 is (uint64, int64) -> int64. For + - * & | ^ the bits do not depend on signedness, so C
        # computes in the result type when it has the arguments' width (int64 here, as numba's typemap says).
        target = akey
        if op in ("+", "-", "*", "&", "|", "^") and rkey and is_int(akey) and is_int(rkey) and \
                _INT_BITS.get(akey or "") == _INT_BITS.get(rkey or ""):
            target = rkey
        left, right = arith_casts(left, right, target)
        return self._infix(left, op, right, c_arith(left.key, right.key), sig.return_type, nonneg=nonneg, deps=deps)

    def _complex_binop(self, op, left, right, rkey, nbt, node):
        """Complex + - * / as numba computes them: componentwise, (ac - bd) + (ad + bc)i, and CPython's division
        (numba_cuda numbers.py), on cuComplex values."""
        f = "f" if rkey == "complex64" else ""
        a, b = cast(left, rkey), cast(right, rkey)
        if op in ("+", "-", "*"):
            fname = {"+": "cuCadd", "-": "cuCsub", "*": "cuCmul"}[op] + f
        elif op == "/":
            self.ctx.unit.helpers.add("nk_cdiv")
            fname = "nk_cdiv"
        else:
            raise self.src.error(node, f"the operator {op} on complex numbers is not supported",
                                 hint="+ - * / of complex numbers, .real, .imag, .conjugate()")
        return CExpr(f"{fname}({a.code}, {b.code})", rkey, nbt, PRIMARY, pure=a.pure and b.pure)

    def _named_const(self, code):
        if code in self.template_consts:
            return self.template_consts[code]
        if code in self.ctx.unit.module_consts:
            return self.ctx.unit.module_consts[code][1]
        return None

    def _infix(self, left, op, right, key, nbt, nonneg=False, deps=frozenset()):
        prec = BINARY_PREC[op]
        lp, rp = prec, prec + 1
        if op in ("<<", ">>", "&", "|", "^"):  # `(a + 128) >> 8`, `(a & 3) | 8`: as a reader (and -Wparentheses) wants
            lp = rp = UNARY
            if op in ("&", "|", "^") and left.infix is not None and left.infix[1] == op:
                lp = prec  # a & b & c: one operator, read left to right
        code = f"{paren(left, lp)} {op} {paren(right, rp)}"
        return CExpr(code, key, nbt, prec, nonneg, left.pure and right.pure, deps,
                     infix=(left.code, op, paren(right, rp)))

    def v_UnaryOp(self, node):
        if isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) and \
                isinstance(node.operand.value, (int, float, complex)) and not isinstance(node.operand.value, bool):
            v = -node.operand.value
            e = self.v_Constant(ast.Constant(v))
            nbt = self.signature(node).return_type
            return CExpr(e.code, e.key, nbt, UNARY if e.key != "complex128" else PRIMARY, e.nonneg, literal=v)
        if isinstance(node.op, ast.Not):
            e = self.cond(node.operand)
            return CExpr(f"!{paren(e, UNARY)}", "bool", types.boolean, UNARY, pure=e.pure)
        e = self.expr(node.operand)
        op = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~"}[type(node.op)]
        sig = self.signature(node)
        rkey = scalar_key(sig.return_type)
        if is_complex(rkey) and op == "-":  # numba negates both parts (signed zeros too)
            f, make = ("f", "make_cuFloatComplex") if rkey == "complex64" else ("", "make_cuDoubleComplex")
            x = self.out.hoist(cast(e, rkey), "z") if not e.pure else cast(e, rkey)
            return CExpr(f"{make}(-cuCreal{f}({x.code}), -cuCimag{f}({x.code}))", rkey, sig.return_type, PRIMARY,
                         pure=x.pure)
        e = cast(e, rkey) if op != "+" or e.key != rkey else e
        if op == "+":
            return e
        return CExpr(f"{op}{paren(e, UNARY)}", rkey, sig.return_type, UNARY, False, e.pure, e.deps)

    def v_Compare(self, node):
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            return self._is_none(node)
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            return self._membership(node)
        parts = []
        left_node = node.left
        left = self.expr(left_node)
        for i, (opnode, right_node) in enumerate(zip(node.ops, node.comparators)):
            op = CMPOPS.get(type(opnode))
            if op is None:
                raise self.src.error(node, "unsupported comparison", hint="< <= > >= == != (not `is`/`in`)")
            if i == 0:
                right = self.expr(right_node)
            else:
                with self.out.no_hoist():
                    right = self.expr(right_node)
            if i + 1 < len(node.ops) and not right.pure:
                raise self.src.error(right_node, "a chained comparison evaluates this operand twice in C",
                                     hint="assign it to a variable first")
            sig = self.signature(node, i)  # each comparison of a chain is an operation of its own
            target = scalar_key(sig.args[0])
            a, b = compare_casts(left, right, target)
            parts.append(self._compared(a, op, b, target))
            left = right
        if len(parts) == 1:
            return parts[0]
        return CExpr(" && ".join(paren(p, LAND + 1) for p in parts), "bool", types.boolean, LAND,
                     pure=all(p.pure for p in parts))

    def _compared(self, a: CExpr, op: str, b: CExpr, key: str | None) -> CExpr:
        """``a op b`` of two values already converted for the comparison numba makes in ``key``; complex numbers,
        which numba compares with == and != only, part by part (``nk_ceq``: cuComplex has no operator ==)."""
        if key is not None and "complex" in key:
            self.helpers.add("nk_ceq")
            equal = f"nk_ceq({a.code}, {b.code})"
            return CExpr(equal if op == "==" else f"!{equal}", "bool", types.boolean,
                         PRIMARY if op == "==" else UNARY, pure=a.pure and b.pure)
        prec = BINARY_PREC[op]
        return CExpr(f"{paren(a, prec)} {op} {paren(b, prec + 1)}", "bool", types.boolean, prec,
                     pure=a.pure and b.pure)

    def _membership(self, node):
        """``x in items`` / ``x not in items`` as numba computes it: over a tuple ``x == a || x == b`` (numba compares
        each item with ``==`` in the order of the tuple and stops at the first equal one), over an array
        ``nk_contains`` (each item against ``x``), both in the type numba's implementation compares an item and ``x``
        in (the record's ``item_comparison``: ``==``'s for a tuple, np.equal's loop for an array); over
        ``range(...)`` ``nk_in_range`` (numba's range test: a float only when integral)."""
        sig = self.signature(node)  # numba's contains(container, value)
        container, value_type = sig.args if sig is not None else (None, None)
        negate = isinstance(node.ops[0], ast.NotIn)
        if isinstance(container, types.RangeType):
            found = self._in_range(node, value_type)
        elif isinstance(container, types.Array):
            found = self._in_array(node, value_type)
        elif isinstance(container, types.UniTuple):
            return self._in_tuple(node, container, value_type, negate)
        else:
            raise self.src.error(node, "`in` is supported over a tuple, an array or range(...) of numbers",
                                 hint="x in (1, 3)")
        return CExpr(f"!{found.code}", "bool", types.boolean, UNARY, pure=found.pure) if negate else found

    def _compared_in(self, node, items_type, value_type) -> str:
        """The type ``item == x`` compares in inside numba's ``x in items`` (the record's ``item_comparison``)."""
        compared = self.ctx.typed.record.item_comparison(node)
        keys = [scalar_key(t) for t in compared.args] if compared is not None else [None]
        key = keys[0]
        if key is None or set(keys) != {key} or None in (scalar_key(items_type), scalar_key(value_type)):
            raise self.src.error(node, "`in` is supported over numbers", hint="x in (1, 3)")
        return key

    def _in_tuple(self, node, container, value_type, negate):
        if isinstance(container.dtype, types.BaseTuple):
            return self._in_tuples(node, container, value_type, negate)
        key = self._compared_in(node, container.dtype, value_type)
        x = self.expr(node.left)  # first, as Python evaluates it; once, however many items it meets
        if not x.pure:
            x = self.out.hoist(x, "value")
        items = self.value(node.comparators[0])
        if not isinstance(items, TupleVal) or not all(isinstance(v, CExpr) for v in items.items):
            raise self.src.error(node.comparators[0], "`in` is supported over a tuple of numbers",
                                 hint="x in (1, 3)")
        op, join, prec = ("!=", " && ", LAND) if negate else ("==", " || ", LOR)
        tests = [self._compared(a, op, b, key) for a, b in (compare_casts(x, v, key) for v in items.items)]
        if len(tests) == 1:
            return tests[0]
        return CExpr(join.join(paren(t, prec + 1) for t in tests), "bool", types.boolean, prec,
                     pure=all(t.pure for t in tests))

    def _in_tuples(self, node, container, value_type, negate):
        """``(a, b) in ((1, 2), (3, 4))``: numba's tuple ``==`` of each item and the value, every pair of numbers
        compared in the type of its own ``==`` (the record's ``item_comparison``), all of them joined by ``&&``."""
        compared = self.ctx.typed.record.item_comparison(node)
        keys = [scalar_key(t.args[0]) if len(set(t.args)) == 1 else None for t in compared] \
            if isinstance(compared, tuple) else [None]
        if None in keys:
            raise self.src.error(node, "`in` over a tuple of tuples is supported for tuples of numbers of one shape",
                                 hint="(a, b) in ((1, 2), (3, 4))")
        x = self.value(node.left)  # first, as Python evaluates it; once, however many items it meets
        items = self.value(node.comparators[0])
        if not isinstance(x, TupleVal) or not isinstance(items, TupleVal):
            raise self.src.error(node, "`in` over a tuple of tuples needs a tuple on the left",
                                 hint="(a, b) in ((1, 2), (3, 4))")
        values = [v if v.pure else self.out.hoist(v, "value") for v in variables.leaf_values(x)]
        tests = []
        for item in items.items:
            numbers = variables.leaf_values(item) if isinstance(item, TupleVal) else []
            if len(numbers) != len(values) or not all(isinstance(v, CExpr) for v in numbers):
                raise self.src.error(node.comparators[0], "`in` over a tuple of tuples of numbers of one shape",
                                     hint="(a, b) in ((1, 2), (3, 4))")
            same = [self._compared(a, "==", b, key) for v, n, key in zip(values, numbers, keys)
                    for a, b in [compare_casts(v, n, key)]]
            tests.append(same[0] if len(same) == 1 else CExpr(" && ".join(paren(t, LAND + 1) for t in same), "bool",
                                                               types.boolean, LAND))
        found = tests[0] if len(tests) == 1 else CExpr(" || ".join(paren(t, LAND + 1) for t in tests), "bool",
                                                         types.boolean, LOR)  # (a && b) || (c && d)
        return CExpr(f"!({found.code})", "bool", types.boolean, UNARY) if negate else found

    def _in_array(self, node, value_type):
        x = self.expr(node.left)  # first, as Python evaluates it
        if not x.pure:
            x = self.out.hoist(x, "value")
        info = arrays.as_array(self, self.value(node.comparators[0]), node.comparators[0])
        if not isinstance(info, arrays.ArrayInfo) or info.extents is None:
            raise self.src.error(node.comparators[0], "`in` over an array whose extents the translator knows",
                                 hint="x in a")
        key = self._compared_in(node, info.nbt.dtype, value_type)
        dims = ", ".join(f"{e.code}, {s.code}" for e, s in zip(info.extents, arrays.element_strides(info)))
        self.helpers.add("nk_contains")
        return CExpr(f"nk_contains<{c_name(key)}>({arrays.base_pointer(info)}, {x.code}, {dims})", "bool",
                     types.boolean, PRIMARY)

    def _in_range(self, node, value_type):
        call = node.comparators[0]
        held = self.aliases.get(call.id) if isinstance(call, ast.Name) else None
        if not isinstance(held, RangeVal) and not (
                isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "range"
                and 1 <= len(call.args) <= 3 and not call.keywords):
            raise self.src.error(call, "`in` a range is supported over range(...) written in place or held in a "
                                 "variable", hint="x in range(a, b, step)")
        vkey = scalar_key(value_type)
        if vkey is None or not (vkey == "bool" or is_float(vkey) or (is_int(vkey) and is_signed(vkey))):
            raise self.src.error(node, "`in` a range is supported for a signed integer, bool or float value",
                                 hint="x in range(a, b) with an int64 x")
        x = self.expr(node.left)  # first, as Python evaluates it (C leaves the order of a call's arguments open)
        if not x.pure:
            x = self.out.hoist(x, "value")
        if isinstance(held, RangeVal):  # (its bounds held in constants when it was made)
            start, stop, step = held.start.code, held.stop.code, held.step.code
        else:  # (range(...) written in place, checked above)
            bounds = [self.expr(a) for a in getattr(call, "args", ())]  # numba's range takes integers: int64_t in C
            bounds = [b if b.pure else self.out.hoist(b, "bound") for b in bounds]
            start, stop, step = (["0", bounds[0].code, "1"] if len(bounds) == 1 else
                                 [b.code for b in bounds] + (["1"] if len(bounds) == 2 else []))
        self.helpers.add("nk_in_range")
        v = cast(x, "float64" if is_float(vkey) else "int64")
        return CExpr(f"nk_in_range({v.code}, {start}, {stop}, {step})", "bool", types.boolean, PRIMARY)

    def _is_none(self, node):
        """``x is None`` / ``x is not None`` of an Optional value: its flag."""
        a, b = node.left, node.comparators[0]
        if isinstance(a, ast.Constant) and a.value is None:
            a, b = b, a
        if not (isinstance(b, ast.Constant) and b.value is None):
            raise self.src.error(node, "`is` / `is not` is supported against None only", hint="x is None")
        v = self.expr(a)
        if v.present is None:  # numba's type is no Optional: the answer is known
            known = isinstance(v.nbt, types.NoneType)
            truth = known if isinstance(node.ops[0], ast.Is) else not known
            return CExpr("true" if truth else "false", "bool", types.boolean, literal=truth)
        code = f"!{v.present}" if isinstance(node.ops[0], ast.Is) else v.present
        return CExpr(code, "bool", types.boolean, UNARY if code.startswith("!") else PRIMARY)

    def v_BoolOp(self, node):
        return self._boolop(node, truth=False)

    def _boolop(self, node, truth):
        op, prec = ("&&", LAND) if isinstance(node.op, ast.And) else ("||", LOR)
        operands = self._live_operands(node)
        if len(operands) == 1:
            return self.cond(operands[0]) if truth else self.expr(operands[0])
        first = self.cond(operands[0]) if truth else self.expr(operands[0])
        with self.out.no_hoist():  # C (and Python) evaluate the other operands only if needed
            vals = [first] + [self.cond(v) if truth else self.expr(v) for v in operands[1:]]
        if not truth and not all(isinstance(v.nbt, types.Boolean) for v in vals):
            raise self.src.error(node, "`and`/`or` on non-boolean values return an operand in Python, not a bool",
                                 hint="use and/or on comparisons or in if/while tests")
        code = f" {op} ".join(paren(v, prec + 1) if v.prec != prec else v.code for v in vals)
        return CExpr(code, "bool", types.boolean, prec, pure=all(v.pure for v in vals))

    def _live_operands(self, node):
        """The operands of an ``and``/``or`` that numba compiles: after an operand that is a compile-time constant
        deciding the result in every instantiation (False in `and`, True in `or`) nothing is evaluated, and numba
        prunes it; a constant that decides nothing (True in `and`, False in `or`) numba folds away, leaving no
        operation to type (the last operand stays: the value when every other is such a constant)."""
        deciding = isinstance(node.op, ast.Or)
        live = []
        for i, v in enumerate(node.values):
            truth = self.static_truth(v)
            if truth == deciding:
                return [*live, v]
            if truth is None or i == len(node.values) - 1:
                live.append(v)
        return live

    def v_IfExp(self, node):
        known = self.static_truth(node.test)
        if known is not None:  # numba compiles the branch a compile-time condition takes, and nothing of the other
            return self.value(node.body if known else node.orelse)
        t = self.ctx.typed.record.unified(node)
        if variables.is_number_tuple(t, scalar_key):
            return self._tuple_if(node, t)
        test = self.cond(node.test)
        with self.out.no_hoist():
            a, b = self.expr(node.body), self.expr(node.orelse)
        key = scalar_key(t)
        if key is None:
            raise self.src.error(node, "the branches of this conditional expression have no common type")
        if a.key is not None and b.key is not None and c_arith(a.key, b.key) != key:
            a, b = cast(a, key), cast(b, key)
        tcode = f"({test.code})" if test.prec < REL else paren(test, COND + 1)
        return CExpr(f"{tcode} ? {paren(a, COND + 1)} : {paren(b, COND)}", key, t, COND,
                     a.nonneg and b.nonneg, test.pure and a.pure and b.pure, a.deps | b.deps)

    def _tuple_if(self, node, t) -> TupleVal:
        """``(a, b) if c else (d, e)``: the test once, then each number of the tuple chosen by it
        (``chosen ? a : d``), converted to the type numba unifies the branches to."""
        test = self.cond(node.test)
        if not test.pure or len(variables.leaf_types(t)) > 1:
            test = self.out.hoist(test, "chosen")
        with self.out.no_hoist():
            a, b = self.value(node.body), self.value(node.orelse)
        if not (isinstance(a, TupleVal) and isinstance(b, TupleVal)):
            raise self.src.error(node, "the branches of this conditional expression are not both tuples of numbers")
        pairs = list(zip(variables.leaf_values(a), variables.leaf_values(b), variables.leaf_types(t)))
        if len(pairs) != len(variables.leaf_types(t)) or not all(isinstance(x, CExpr) and isinstance(y, CExpr)
                                                                  for x, y, _ in pairs):
            raise self.src.error(node, "the branches of this conditional expression are not both tuples of numbers")
        tcode = paren(test, COND + 1)
        numbers = []
        for x, y, leaf in pairs:
            key = scalar_key(leaf)
            x, y = cast(x, key), cast(y, key)
            numbers.append(CExpr(f"{tcode} ? {paren(x, COND + 1)} : {paren(y, COND)}", key, leaf, COND,
                                 x.nonneg and y.nonneg, x.pure and y.pure, x.deps | y.deps))
        return variables.shaped(numbers, t)

    def v_Call(self, node):
        if isinstance(node.func, ast.Name) and node.func.id in self.inner:  # a function defined in this one
            fn = self.inner[node.func.id]
            return calls.device_call(self, fn.dispatcher.py_func, inner.call_node(node, fn), fn.dispatcher)
        return builtins.call(self, node)

    def signature(self, node, index=0):
        """The signature numba chose for the operation ``node`` performs (the ``index``-th of a chained
        comparison), from the function's typed record; a located error where the record has none."""
        sig = self.ctx.typed.record.signature(node, index)
        if sig is None:
            raise self.src.error(node, "numba's typed IR has no operation here (the code generator asked about an "
                                 "expression numba did not compile)")
        return sig

    def dtype_key(self, node, where):
        """The scalar key of a dtype argument: a numpy or numba type, or a string (``"int32"``)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            obj = node.value
        else:
            v = self.value(node)
            obj = v.obj if isinstance(v, Static) else None
        key = None
        if isinstance(obj, types.Type):
            key = self.scalar_key(obj)
        elif obj is not None:
            try:
                key = self.scalar_key(getattr(types, str(np.dtype(obj))))
            except Exception:  # noqa: BLE001 - not a dtype: the error below
                key = None
        if key is None:
            raise self.src.error(node, f"unsupported dtype {obj!r}",
                                 hint="np.float32, np.float64, np.int32, ... (numpy or numba types, or their names)")
        return key

    def lookup_global(self, name) -> tuple[bool, Any]:
        value = closures.lookup(self.ctx.pyfunc, name)
        if value is not closures.MISSING:
            return True, value
        if hasattr(_builtins, name):
            return True, getattr(_builtins, name)
        return False, None

    def scalar_key(self, t):
        """The C type key of a numba type that is a C value: a number, a bool, or a record (a C struct)."""
        key = scalar_key(t)
        if key is None:
            from ..cnames import record_key

            key = record_key(t)
            if key is not None:
                self.ctx.unit.records.setdefault(key, t)
        return key


def _dotted(node) -> bool:
    """A name or a chain of attributes of one (``np.int64``), not an attribute of a value (``x.view``)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def homogeneous_tuple(tup: TupleVal) -> bool:
    """A tuple of C values of one type, or of tuples of one shape of them (numba's UniTuple, which a run-time
    index may index)."""
    shapes = {_shape(x) for x in tup.items}
    return len(shapes) == 1 and None not in shapes


def _shape(v):
    """A C value's type key, a tuple's the shapes of its items; None where some item has no C value."""
    if isinstance(v, CExpr):
        return v.key
    if isinstance(v, TupleVal) and v.items:
        shapes = tuple(_shape(x) for x in v.items)
        return None if None in shapes else shapes
    return None


def _number_tuple(obj) -> bool:
    return isinstance(obj, tuple) and len(obj) > 0 and all(
        isinstance(v, (int, float, bool, np.integer, np.floating)) for v in obj)


def _str_constant(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def wrapping(e: CExpr) -> CExpr:
    """A signed ``a + b``, ``a - b`` or ``a * b`` computed as numba computes it when it overflows: wrapping around
    (in unsigned arithmetic, converted back); other values as they are."""
    if e.infix is None or e.key not in ("int32", "int64") or e.infix[1] not in ("+", "-", "*"):
        return e
    a, op, b = e.infix
    u = c_name("u" + e.key)
    return CExpr(f"({c_name(e.key)})(({u})({a}) {op} ({u})({b}))", e.key, e.nbt, UNARY, False, e.pure, e.deps)
