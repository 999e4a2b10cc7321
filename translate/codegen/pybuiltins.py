"""Python's own builtins in C: ``len``, the number types used as casts (``int(x)``, ``np.float32(x)``, numba's
``float32(x)``), ``print`` (``printf`` with numba-cuda's formats), ``range`` as a value (its bounds: a loop over it,
``in`` and ``len`` read them), and shared/local arrays, valid only assigned to a name."""

from __future__ import annotations

import ast
import builtins as _py

import numpy as np
from numba import cuda
from numba.cuda import types

from ..cnames import is_int, is_signed, scalar_key
from . import arrays
from .cexpr import ADD, LOR, MUL, PRIMARY, UNARY, CExpr, RangeVal, Static, TupleVal, cast, paren


def _len(tr, obj, node):
    a = tr.value(node.args[0]) if len(node.args) == 1 else None
    if isinstance(a, RangeVal):
        return range_len(tr, a)
    if isinstance(a, TupleVal):
        return CExpr(str(len(a.items)), "int64", types.literal(len(a.items)), literal=len(a.items), nonneg=True)
    if not isinstance(a, arrays.ArrayInfo) or a.extents is None:
        raise tr.src.error(node, "len() is supported on arrays with known extents, tuples and ranges",
                           hint="len(x) of an argument")
    return a.extents[0]


def _cast(tr, obj, node):
    if len(node.args) != 1:
        raise tr.src.error(node, "casts take exactly one argument", hint="np.float32(x), int(x)")
    a = tr.expr(node.args[0])
    sig = tr.signature(node)
    key = tr.scalar_key(sig.return_type)
    if key == "bool":
        return CExpr(f"{paren(a, 10)} != 0", "bool", types.boolean, 9, pure=a.pure)
    e = cast(a, key, sig.return_type)
    if e is a:
        e = CExpr(a.code, a.key, sig.return_type, a.prec, a.nonneg, a.pure, a.deps, a.literal)
    return e


def is_number_type(obj) -> bool:
    """``int``, ``float``, ``bool``, numpy's scalar types and numba's number types: called, they are casts."""
    return obj in (_py.int, _py.float, _py.bool) or (isinstance(obj, type) and issubclass(obj, np.generic)) or \
        isinstance(obj, (types.Number, types.Boolean))


def _print(tr, obj, node):
    """print(...) -> printf with numba-cuda's formats (its printimpl.py): values separated by spaces and a newline,
    integers as %lld/%llu, floats as %f of the double, booleans as True/False, strings as written, tuples in
    parentheses."""
    if node.keywords:
        raise tr.src.error(node, "print() keyword arguments are not supported (numba-cuda has none either)",
                           hint="print(a, b)")
    formats, values = [], []
    for a in node.args:
        if isinstance(a, ast.Constant) and isinstance(a.value, str):
            formats.append(c_string(a.value).replace("%", "%%"))
            continue
        v = tr.value(a)
        items = v.items if isinstance(v, TupleVal) else [v]
        parts = []
        for item in items:
            printed = print_item(item) if isinstance(item, CExpr) and item.key is not None else None
            if printed is None:
                raise tr.src.error(a, "print() takes numbers, booleans, strings and tuples of them")
            fmt, val = printed
            parts.append(fmt)
            values.append(val)
        if isinstance(v, TupleVal):
            formats.append("(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")")
        else:
            formats.append(parts[0])
    args = "".join(f", {v}" for v in values)
    return CExpr(f'printf("{" ".join(formats)}\\n"{args})', None, types.none, PRIMARY, pure=False)


def print_item(e: CExpr) -> tuple[str, str] | None:
    """(printf format, C argument) of one printed value, as numba-cuda formats it; None for other types."""
    if e.key == "bool":
        return "%s", f'{paren(e, LOR)} ? "True" : "False"'
    if is_int(e.key):
        numba_key = scalar_key(types.unliteral(e.nbt)) if e.nbt is not None else None
        if not is_signed(numba_key if is_int(numba_key) else e.key):  # numba's type: threadIdx.x is int32
            return "%llu", f"(unsigned long long){paren(e, UNARY)}"
        return "%lld", f"(long long){paren(e, UNARY)}"
    if e.key in ("float32", "float64"):
        return "%f", cast(e, "float64").code
    if e.key == "float16":
        return "%f", f"(double)__half2float({e.code})"
    return None


def c_string(text: str) -> str:
    """A Python string as the body of a C string literal (other characters as octal escapes of their UTF-8 bytes:
    an octal escape ends after three digits, a hex escape would swallow a following hex digit)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 32 or ord(ch) > 126:
            out.append("".join(f"\\{b:03o}" for b in ch.encode()))
        elif ch == "?":  # no trigraphs (??=)
            out.append("\\?")
        else:
            out.append(ch)
    return "".join(out)


def _divmod(tr, obj, node):
    """``divmod(a, b)``: numba's ``(a // b, a % b)``, each as the operator computes it."""
    from numba.cuda.typing.templates import signature

    if len(node.args) != 2 or node.keywords:
        raise tr.src.error(node, "divmod(a, b) takes two numbers")
    a, b = (tr.expr(x) for x in node.args)
    a = a if a.pure else tr.hoist(a, "a")
    b = b if b.pure else tr.hoist(b, "b")
    sig = tr.signature(node)
    q, r = sig.return_type
    return TupleVal([tr.binop("//", a, b, node, signature(q, *sig.args)),
                     tr.binop("%", a, b, node, signature(r, *sig.args))])


def is_namedtuple_class(obj) -> bool:
    return isinstance(obj, type) and issubclass(obj, tuple) and hasattr(obj, "_fields")


def _namedtuple(tr, cls, node):
    """``Point(x, y)`` (or ``Point(x=x, y=y)``): a tuple whose items have names."""
    values = list(node.args) + [None] * (len(cls._fields) - len(node.args))
    for k in node.keywords:
        if k.arg not in cls._fields or values[cls._fields.index(k.arg)] is not None:
            raise tr.src.error(k.value, f"{cls.__name__}() has no field {k.arg!r} to set here")
        values[cls._fields.index(k.arg)] = k.value
    if any(v is None for v in values):
        raise tr.src.error(node, f"{cls.__name__}() needs a value for each of {', '.join(cls._fields)}")
    return TupleVal([tr.value(v) for v in values], tuple(cls._fields))


def _range(tr, obj, node) -> RangeVal:
    """``range(...)`` as a value: its bounds converted to the type it counts in (numba's range type's), as Python
    evaluates them, in order (a loop over ``range(...)`` written in place reads its own bounds: ``stmts.s_For``)."""
    if not 1 <= len(node.args) <= 3 or node.keywords:
        raise tr.src.error(node, "range takes 1 to 3 positional arguments")
    key = tr.scalar_key(tr.signature(node).return_type.dtype)
    bounds = [b if b.literal is not None else cast(b, key) for b in map(tr.expr, node.args)]
    one, zero = (CExpr(str(v), "int32", None, literal=v, nonneg=True) for v in (1, 0))
    start, stop, step = ([zero, *bounds, one] if len(bounds) == 1 else bounds + [one] * (3 - len(bounds)))
    return RangeVal(start, stop, step)


def range_len(tr, r: RangeVal) -> CExpr:
    """``len(r)``: the number of its items, as numba's range counts them (of literal bounds, a literal)."""
    if all(isinstance(b.literal, int) for b in (r.start, r.stop, r.step)):
        n = len(range(r.start.literal, r.stop.literal, r.step.literal))
        return CExpr(str(n), "int64", types.literal(n), literal=n, nonneg=True)
    tr.helpers.add("nk_range_len")
    return CExpr(f"nk_range_len({r.start.code}, {r.stop.code}, {r.step.code})", "int64", types.int64, PRIMARY,
                 nonneg=True, pure=r.start.pure and r.stop.pure and r.step.pure)


def range_item(start: CExpr, index: str, step: CExpr) -> CExpr:
    """Item ``index`` (a C int64) of ``range(start, ..., step)``, as numba's range iterator makes it from the count
    of trips: ``start + index * step``, ``start - index * 3`` for a literal negative step, ``index * step`` from 0."""
    down = isinstance(step.literal, int) and step.literal < 0
    by = str(-step.literal) if down else paren(step, MUL + 1)
    times = "" if by == "1" else f" * {by}"
    if start.literal == 0 and not down:
        return CExpr(f"{index}{times}", "int64", types.int64, MUL if times else PRIMARY)
    return CExpr(f"{paren(start, ADD)} {'-' if down else '+'} {index}{times}", "int64", types.int64, ADD)


def _array_here(tr, obj, node):
    raise tr.src.error(node, "shared/local arrays must be assigned to a name where they are created",
                       hint="tile = cuda.shared.array((16, 16), np.float32)")


def _number_info(tr, obj, node):
    """``np.iinfo(t)`` / ``np.finfo(t)`` of a number type (``np.int32``, ``x.dtype``): numba reads its fields
    (``.max``, ``.eps``) as constants when it compiles the kernel, and so does the C."""
    from numba.np.numpy_support import as_dtype

    arg = tr.value(node.args[0]) if len(node.args) == 1 and not node.keywords else None
    if not isinstance(arg, Static):
        raise tr.src.error(node, f"np.{obj.__name__}() of a number type", hint=f"np.{obj.__name__}(np.int32)")
    t = arg.obj
    return Static(obj(as_dtype(t) if isinstance(t, types.Type) else t))


def is_number_info(obj) -> bool:
    """``np.iinfo(np.int32)`` and the like: their fields are numbers known when the kernel is compiled."""
    return isinstance(obj, (np.iinfo, np.finfo))


BUILTINS = {_py.len: _len, _py.print: _print, _py.divmod: _divmod, _py.range: _range, cuda.shared.array: _array_here,
            cuda.local.array: _array_here, np.iinfo: _number_info, np.finfo: _number_info}

FAMILIES = (("number types as casts", is_number_type, _cast), ("namedtuple classes", is_namedtuple_class, _namedtuple))
