"""Math in C: ``math.*``, ``min``/``max``/``abs``/``round``, ``cuda.fp16.*`` and complex numbers (``complex()``,
``abs``, ``cmath.*``), each with numba-cuda's meaning (its ``mathimpl.py``, ``cpython/cmathimpl.py``). Result types
come from Numba's typing of the call."""

from __future__ import annotations

import builtins as _py
import cmath
import math
from typing import Any

import numpy as np
from numba.cuda import types
from numba.cuda.np.numpy_support import ufunc_find_matching_loop

from ..cnames import COMPLEX, c_name, is_float, is_int, scalar_key
from . import reductions
from .cexpr import EQ, LAND, LOR, MUL, PRIMARY, REL, UNARY, CExpr, TupleVal, cast, float_literal, paren

MATH = {name: name for name in (
    "sqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin", "acos",
    "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "floor", "ceil", "trunc", "fabs", "pow",
    "hypot", "erf", "erfc", "lgamma", "copysign", "fmod", "isnan", "isinf", "isfinite", "remainder", "nextafter",
    "ldexp")}
MATH["gamma"] = "tgamma"
MATH_BOOL = {"isnan", "isinf", "isfinite"}
#: numpy's ufuncs on numbers whose CUDA loops are math's own functions (numba-cuda's ufuncs.py: ``np_unary_impl(
#: math.sin, ...)``, fastmath's variants included), by math's name
NP_UFUNCS = {np.sin: "sin", np.cos: "cos", np.tan: "tan", np.arcsin: "asin", np.arccos: "acos", np.arctan: "atan",
             np.arctan2: "atan2", np.hypot: "hypot", np.sinh: "sinh", np.cosh: "cosh", np.tanh: "tanh",
             np.arcsinh: "asinh", np.arccosh: "acosh", np.arctanh: "atanh", np.log: "log", np.log2: "log2",
             np.log10: "log10", np.isnan: "isnan"}
#: numba with fastmath, on float32 (numba_cuda mathimpl: ``unarys_fastmath``/``binarys_fastmath``, libdevice's
#: ``__nv_fast_*``, which are these intrinsics); tanh is ``tanh.approx.f32`` (cc >= 7.5)
FAST_F32 = {"sin": "__sinf", "cos": "__cosf", "tan": "__tanf", "exp": "__expf", "log": "__logf",
            "log2": "__log2f", "log10": "__log10f", "pow": "__powf", "tanh": "nk_fast_tanhf"}

#: the module of numba-cuda's cuda.fp16 functions (bindings of cuda_fp16.h)
FP16_BINDINGS = "numba.cuda._internal.cuda_fp16"


def _args(tr, node):
    return [tr.expr(a) for a in node.args]


def _math(tr, obj, node):
    args = _args(tr, node)
    sig = tr.signature(node)
    pyname = _math_name(obj)
    name = MATH[pyname]
    rkey = scalar_key(sig.return_type)
    # numba's signature of a ufunc keeps the operands' own types; its loop takes them in its output's type
    # ('dd->d' for a float32 and a float64)
    keys = [rkey] * len(args) if isinstance(obj, np.ufunc) and is_float(rkey) else [scalar_key(t) for t in sig.args]
    akey = keys[0]
    if not is_float(akey):
        if pyname in ("floor", "ceil", "trunc") and is_int(akey):
            return cast(args[0], rkey)
        module = "np" if isinstance(obj, np.ufunc) else "math"
        raise tr.src.error(node, f"{module}.{obj.__name__} on {akey} is not supported")
    cargs = [cast(a, k) for a, k in zip(args, keys)]
    fname = name + ("f" if akey == "float32" and name not in MATH_BOOL else "")
    if akey == "float32" and getattr(tr.unit, "fastmath", False) and name in FAST_F32:
        fname = FAST_F32[name]
        if fname.startswith("nk_"):
            tr.helpers.add(fname)
    e = CExpr(f"{fname}({', '.join(a.code for a in cargs)})", "bool" if name in MATH_BOOL else akey,
              sig.return_type, PRIMARY, pure=all(a.pure for a in cargs))
    return e if e.key == rkey else cast(e, rkey)


def _iterable(tr, node):
    """The one argument of ``min``/``max``/``sum`` over an iterable: a tuple's items, or an array (1-D)."""
    from . import arrays

    v = arrays.as_array(tr, tr.value(node.args[0]), node.args[0])
    if isinstance(v, TupleVal) and v.items and all(isinstance(x, CExpr) for x in v.items):
        return v.items
    if isinstance(v, arrays.ArrayInfo) and v.ndim == 1 and v.extents is not None:
        return v
    raise tr.src.error(node.args[0], "min/max/sum of a tuple of numbers or of a 1-D array")


def _minmax(tr, obj, node):
    if len(node.args) == 1 and not node.keywords:  # min(iterable): Python's algorithm over its items
        items = _iterable(tr, node)
        sig = tr.signature(node)
        rkey = scalar_key(sig.return_type)
        if not isinstance(items, list):
            return reductions.over_items(tr, f"nk_{obj.__name__}_of", items, rkey, sig.return_type)
        acc = cast(items[0], rkey)
        if len(items) > 1:
            tr.helpers.add("nk_min")
        for a in items[1:]:
            b = cast(a, rkey)
            acc = CExpr(f"nk_{obj.__name__}({acc.code}, {b.code})", rkey, sig.return_type, PRIMARY,
                        pure=acc.pure and b.pure)
        return acc
    args = _args(tr, node)
    if len(args) < 2:
        raise tr.src.error(node, f"{obj.__name__}() needs at least two numbers", hint="min(a, b)")
    sig = tr.signature(node)
    rkey = scalar_key(sig.return_type)
    if len(args) == 2 and all(is_float(scalar_key(t)) for t in sig.args):
        # numba-cuda lowers min/max of two floats to libdevice fmin/fmax (a NaN operand is ignored), not to
        # Python's comparison: fminf/fmaxf for two float32, else both in double
        wide = rkey == "float64"
        a, b = (cast(x, "float64") if wide else x for x in args)
        fname = f"f{obj.__name__}" + ("" if wide else "f")
        e = CExpr(f"{fname}({a.code}, {b.code})", "float64" if wide else "float32", sig.return_type, PRIMARY,
                  pure=a.pure and b.pure)
        return e if e.key == rkey else cast(e, rkey)
    tr.helpers.add("nk_min")
    acc = cast(args[0], rkey)
    for a in args[1:]:
        b = cast(a, rkey)
        nonneg = (acc.nonneg and b.nonneg) if obj is _py.min else (acc.nonneg or b.nonneg)
        acc = CExpr(f"nk_{obj.__name__}({acc.code}, {b.code})", rkey, sig.return_type, PRIMARY, nonneg,
                    acc.pure and b.pure, acc.deps | b.deps)
    return acc


def _sum(tr, obj, node):
    """``sum(t)`` / ``sum(x)``: numba's ``acc = start; for v in it: acc = acc + v``, in the type its typing gives
    the result."""
    if node.keywords or not 1 <= len(node.args) <= 2:
        raise tr.src.error(node, "sum(iterable[, start]) by position")
    items = _iterable(tr, node)
    sig = tr.signature(node)
    rkey = scalar_key(sig.return_type)
    if not isinstance(items, list):
        total = reductions.over_items(tr, "nk_sum_of", items, rkey, sig.return_type)
        if len(node.args) == 2:
            start = cast(tr.expr(node.args[1]), rkey)
            return CExpr(f"{paren(start, 12)} + {total.code}", rkey, sig.return_type, 12)
        return total
    terms = [cast(tr.expr(node.args[1]), rkey)] if len(node.args) == 2 else []
    terms += [cast(x, rkey) for x in items]
    return CExpr(" + ".join(paren(t, 12) for t in terms), rkey, sig.return_type, 12,
                 pure=all(t.pure for t in terms))


def _pow(tr, obj, node):
    """``pow(x, y)``: numba types and computes it as ``x ** y``."""
    if node.keywords or len(node.args) != 2:
        raise tr.src.error(node, "pow(x, y) by position, without a modulus", hint="x ** y")
    base, exponent = _args(tr, node)
    return tr.binop("**", base, exponent, node, sig=tr.signature(node))


def _abs(tr, obj, node):
    (a,) = _args(tr, node)
    sig = tr.signature(node)
    key = scalar_key(sig.return_type)
    if key is None:
        raise tr.src.error(node, f"abs() of {sig.return_type} has no C value")
    if a.key in COMPLEX:
        return _complex_abs(tr, a, key, sig.return_type)
    a = cast(a, key)
    fname = {"float32": "fabsf", "float64": "fabs", "int64": "llabs"}.get(key, "abs")
    if key.startswith("uint"):
        return a
    return CExpr(f"{fname}({a.code})", key, sig.return_type, PRIMARY, True, a.pure, a.deps)


def _fp16(tr, obj, node):
    """``cuda.fp16.*``: numba-cuda binds these to cuda_fp16.h's functions of the same name (``hadd`` is
    ``__hadd``)."""
    args = _args(tr, node)
    sig = tr.signature(node)
    args = [cast(a, scalar_key(t)) for a, t in zip(args, sig.args)]
    tr.helpers.add("nk_fp16")
    return CExpr(f"{obj.__name__}({', '.join(a.code for a in args)})", scalar_key(sig.return_type),
                 sig.return_type, PRIMARY, pure=all(a.pure for a in args))


def _modf(tr, obj, node):
    """math.modf(x) -> (fractional part, integral part)."""
    return _split(tr, math.modf, node, "modf", "frac", "int")


def _frexp(tr, obj, node):
    """math.frexp(x) -> (mantissa, exponent)."""
    return _split(tr, math.frexp, node, "frexp", "mant", "exp")


def _split(tr, fn, node, cname, ret_name, ptr_name):
    """A math function returning a pair whose libdevice version returns one part and writes the other
    through a pointer (modf, frexp): the call is a statement of its own before the expression."""
    (x,) = _args(tr, node)
    sig = tr.signature(node)
    key = scalar_key(sig.args[0])
    if not is_float(key):
        raise tr.src.error(node, f"math.{fn.__name__} of {key} is not supported",
                             hint="a float32 or float64 value")
    x = cast(x, key)
    tr.require_hoist(node)
    rt = sig.return_type
    ptr_key = "int32" if is_int(scalar_key(rt[1])) else key
    ptr, ret = tr.temp(f"{cname}_{ptr_name}"), tr.temp(f"{cname}_{ret_name}")
    tr.emit(f"{'int' if ptr_key == 'int32' else c_name(key)} {ptr};")
    tr.emit(f"const {c_name(key)} {ret} = {cname}{'f' if key == 'float32' else ''}({x.code}, &{ptr});")
    second = CExpr(ptr, ptr_key, rt[1])
    return TupleVal([CExpr(ret, key, rt[0]), cast(second, scalar_key(rt[1]), rt[1])])


def _round(tr, obj, node):
    args = _args(tr, node)
    sig = tr.signature(node)
    key = scalar_key(sig.args[0])
    if not is_float(key):
        raise tr.src.error(node, f"round() of {key} is not supported", hint="round(x) / round(x, n) of floats")
    x = cast(args[0], "float64")
    if len(args) == 1:  # numba-cuda: llrint of the value as a double (round half to even), an int64
        rounded = CExpr(f"llrint({x.code})", "int64", types.int64, PRIMARY, pure=x.pure)
        return cast(rounded, scalar_key(sig.return_type))
    tr.helpers.add("nk_round_ndigits")
    n = cast(args[1], "int64")
    e = CExpr(f"nk_round_ndigits({x.code}, {n.code})", "float64", types.float64, PRIMARY, pure=x.pure and n.pure)
    rkey = scalar_key(sig.return_type)
    return e if rkey == "float64" else cast(e, rkey, sig.return_type)


def _degrees_radians(tr, obj, node):
    """``math.degrees(x)``, ``np.radians(x)``, ...: the argument times the factor as a constant of its type (numba's
    ``degrees_float_impl``); a numpy ufunc's loop takes the argument in its output's type (``d->d`` for an integer)."""
    (a,) = _args(tr, node)
    sig = tr.signature(node)
    key = scalar_key(sig.return_type if isinstance(obj, np.ufunc) else sig.args[0])
    factor = (180.0 / math.pi) if obj in (math.degrees, np.degrees, np.rad2deg) else (math.pi / 180.0)
    if key == "float32":  # numba: the factor as a constant of the argument's type, times the argument
        factor = float(np.float32(factor))
    a = cast(a, key)
    e = CExpr(f"{float_literal(factor, f32=key == 'float32')} * {paren(a, 13 + 1)}", key, sig.return_type, 13,
              pure=a.pure)
    rkey = scalar_key(sig.return_type)
    return e if e.key == rkey else cast(e, rkey)


#: numpy's maximum/minimum (a NaN operand wins) and fmax/fmin (a NaN operand loses), numba-cuda's npyfuncs loops
NP_EXTREMES = {np.maximum: "nk_np_maximum", np.minimum: "nk_np_minimum", np.fmax: "nk_np_fmax",
               np.fmin: "nk_np_fmin"}


def _in_loop_types(tr, ufunc, node) -> tuple[list[CExpr], Any]:
    """The call's operands converted to the inputs of the loop numba picks for their types (its
    ``ufunc_find_matching_loop``: ``np.divide`` of two int64 is the ``dd->d`` loop), and that loop; a located error
    where no loop fits or the loop takes complex numbers."""
    loop = ufunc_find_matching_loop(ufunc, tr.signature(node).args)
    keys = [scalar_key(t) for t in loop.inputs] if loop is not None else [None]
    if None in keys or any(k in COMPLEX for k in keys):
        raise tr.src.error(node, f"np.{ufunc.__name__} of real numbers or booleans", hint="the operator itself")
    return [cast(a, k) for a, k in zip(_args(tr, node), keys)], loop


def _np_extreme(tr, obj, node):
    """``np.maximum(a, b)`` and the like, both operands in the type of the ufunc's loop."""
    (a, b), loop = _in_loop_types(tr, obj, node)
    tr.helpers.add("nk_np_extremes")
    out = loop.outputs[0]
    e = CExpr(f"{NP_EXTREMES[obj]}({a.code}, {b.code})", scalar_key(out), out, PRIMARY, pure=a.pure and b.pure)
    sig = tr.signature(node)
    return cast(e, scalar_key(sig.return_type), sig.return_type)


#: numpy's ufuncs whose CUDA loops are an operator of their loop's type (numba-cuda's ufuncs.py: ``int_and_impl``,
#: ``int_shl_impl``, ``real_gt_impl``, ``np_real_div_impl`` -- a division by zero is inf or NaN, numpy's)
NP_OPERATORS = {np.bitwise_and: "&", np.bitwise_or: "|", np.bitwise_xor: "^", np.left_shift: "<<",
                np.right_shift: ">>", np.divide: "/", np.greater: ">", np.greater_equal: ">=", np.less: "<",
                np.less_equal: "<=", np.equal: "==", np.not_equal: "!=", np.invert: "~"}


def _np_operator(tr, obj, node):
    """``np.bitwise_and(a, b)``, ``np.left_shift``, ``np.divide``, ``np.greater``, ``np.invert(a)``, ...: the
    operator in the type of the ufunc's loop (``_in_loop_types``)."""
    sig = tr.signature(node)
    args, loop = _in_loop_types(tr, obj, node)
    op, out = NP_OPERATORS[obj], loop.outputs[0]
    if op == "~":
        (a,) = args
        e = CExpr(f"!{paren(a, UNARY)}" if a.key == "bool" else f"~{paren(a, UNARY)}", a.key, out, UNARY, pure=a.pure)
    elif op in ("<", "<=", ">", ">=", "==", "!="):
        prec = REL if op in ("<", "<=", ">", ">=") else EQ
        e = CExpr(f"{paren(args[0], prec)} {op} {paren(args[1], prec + 1)}", "bool", out, prec,
                  pure=all(a.pure for a in args))
    else:
        e = tr.binop(op, args[0], args[1], node, sig=out(*loop.inputs))
    return cast(e, scalar_key(sig.return_type), sig.return_type)


def _truth(a: CExpr) -> CExpr:
    """``a`` as numba's truth of a number: not 0 (a NaN is true)."""
    if a.key == "bool":
        return a
    return CExpr(f"{paren(a, REL)} != 0", "bool", types.boolean, EQ, pure=a.pure)


def _np_logical(tr, obj, node):
    """``np.logical_and(a, b)``, ``np.logical_or``, ``np.logical_xor``, ``np.logical_not(a)``: on the operands'
    truth. numba evaluates both operands before its loop: C's ``&&`` and ``||`` must not skip the second, so
    operands with side effects are held first, in order."""
    args = _args(tr, node)
    sig = tr.signature(node)
    if any(a.key in (None, *COMPLEX) for a in args):
        raise tr.src.error(node, f"np.{obj.__name__} of real numbers or booleans", hint="and / or / not")
    if len(args) == 2 and not all(a.pure for a in args):
        args = [tr.hoist(a, f"{obj.__name__[8:]}_operand") for a in args]
    truths = [_truth(a) for a in args]
    if obj is np.logical_not:
        a = args[0]
        code, prec = (f"!{paren(a, UNARY)}", UNARY) if a.key == "bool" else (f"{paren(a, REL)} == 0", EQ)
    else:
        op, prec = {np.logical_and: ("&&", LAND), np.logical_or: ("||", LOR), np.logical_xor: ("!=", EQ)}[obj]
        # (x != 0) != (k != 0): the truths of logical_xor in parentheses, as a person writes them
        code = f"{paren(truths[0], prec + (op == '!='))} {op} {paren(truths[1], prec + 1)}"
    e = CExpr(code, "bool", types.boolean, prec, pure=all(a.pure for a in args))
    return cast(e, scalar_key(sig.return_type), sig.return_type)


def _np_sinc(tr, obj, node):
    """``np.sinc(x)`` of a number, numba's: ``x`` in the type numba unifies it to (its ``x = 1e-20`` at 0 makes it a
    float64), then ``sin(pi x) / (pi x)``."""
    (a,) = _args(tr, node)
    sig = tr.signature(node)
    key = scalar_key(sig.return_type)
    if not is_float(key):
        raise tr.src.error(node, "np.sinc of a real number", hint="math.sin(math.pi * x) / (math.pi * x)")
    tr.helpers.add("nk_sinc")
    return CExpr(f"nk_sinc({cast(a, key).code})", key, sig.return_type, PRIMARY, pure=a.pure)


def _np_angle(tr, obj, node):
    """``np.angle(z[, deg])`` of a number, numba's: ``np.arctan2(z.imag, z.real)`` in the loop numba picks for the
    parts (float32 for a complex64), times ``180 / pi`` (a float64) when ``deg`` is True."""
    args = _args(tr, node)
    deg = args[1] if len(args) > 1 else tr.expr(node.keywords[0].value) if node.keywords else None
    if deg is not None and not isinstance(deg.literal, bool):
        raise tr.src.error(node, "np.angle(z, deg) with deg True or False as written", hint="np.angle(z, True)")
    z = args[0]
    if z.key in COMPLEX:
        re, im = parts(tr, z)
        loop = ufunc_find_matching_loop(np.arctan2, (im.nbt, re.nbt))
    elif is_float(z.key) or is_int(z.key):  # a real number's imaginary part is 0 of its type
        re, im = z, None
        loop = ufunc_find_matching_loop(np.arctan2, (z.nbt, z.nbt))
    else:
        raise tr.src.error(node, "np.angle of a number", hint="cmath.phase(z)")
    key = scalar_key(loop.outputs[0])
    re = cast(re, key)
    im = cast(im, key) if im is not None else CExpr(float_literal(0.0, f32=key == "float32"), key, None, literal=0.0)
    e = CExpr(f"atan2{'f' if key == 'float32' else ''}({im.code}, {re.code})", key, loop.outputs[0], PRIMARY,
              pure=re.pure and im.pure)
    if deg is not None and deg.literal:
        e = CExpr(f"{paren(cast(e, 'float64'), MUL)} * {float_literal(180 / math.pi)}", "float64", types.float64, MUL,
                  pure=e.pure)
    sig = tr.signature(node)
    return cast(e, scalar_key(sig.return_type), sig.return_type)


def _np_conjugate(tr, obj, node):
    """``np.conjugate(z)`` of a number: a complex number's conjugate, a real number itself (numba-cuda's
    ``complex_conjugate_impl`` / ``real_conjugate_impl``)."""
    (a,) = _args(tr, node)
    sig = tr.signature(node)
    if a.key in COMPLEX:
        return conjugate(tr, a, node)
    return cast(a, scalar_key(sig.return_type), sig.return_type)


def _np_real_imag(tr, obj, node):
    """``np.real(x)`` / ``np.imag(x)`` of a number (numba: ``x.real`` / ``x.imag``): a real number is its own real
    part, and its imaginary part is 0."""
    (a,) = _args(tr, node)
    sig = tr.signature(node)
    rkey = scalar_key(sig.return_type)
    if a.key in COMPLEX:
        re, im = parts(tr, a)
        return cast(re if obj is np.real else im, rkey, sig.return_type)
    if a.key is None or rkey is None:
        raise tr.src.error(node, f"np.{obj.__name__} of a number", hint="x.real / x.imag of a complex number")
    if obj is np.real:
        return cast(a, rkey, sig.return_type)
    if not a.pure:
        tr.hoist(a, "x")  # numba evaluates the argument; its imaginary part is 0 whatever it is
    zero = float_literal(0.0, f32=rkey == "float32") if is_float(rkey) else "0"
    return cast(CExpr(zero, a.key if is_float(a.key) else "int64", sig.return_type, PRIMARY, literal=0), rkey,
                sig.return_type)


# -- complex numbers ------------------------------------------------------------------------------------------
def part_key(key: str) -> str:
    """The float type of a complex type's parts."""
    return "float32" if key == "complex64" else "float64"


def parts(tr, z: CExpr) -> tuple[CExpr, CExpr]:
    """``z.real`` and ``z.imag`` of a complex value (evaluated once: a value with side effects is held first)."""
    if not z.pure:
        z = tr.hoist(z, "z")
    f = "f" if z.key == "complex64" else ""
    key = part_key(str(z.key))
    nbt = getattr(types, key)
    return (CExpr(f"cuCreal{f}({z.code})", key, nbt, PRIMARY, pure=True),
            CExpr(f"cuCimag{f}({z.code})", key, nbt, PRIMARY, pure=True))


def make_complex(key: str, re: CExpr, im: CExpr, nbt=None) -> CExpr:
    maker = "make_cuFloatComplex" if key == "complex64" else "make_cuDoubleComplex"
    part = part_key(key)
    re, im = cast(re, part), cast(im, part)
    return CExpr(f"{maker}({re.code}, {im.code})", key, nbt or getattr(types, key), PRIMARY,
                 pure=re.pure and im.pure)


def _complex(tr, obj, node):
    """``complex(re)`` / ``complex(re, im)`` of real numbers: complex128 (complex64 from float32 parts, as numba
    types it)."""
    args = _args(tr, node)
    if not 1 <= len(args) <= 2 or any(a.key in COMPLEX for a in args):
        raise tr.src.error(node, "complex() takes one or two real numbers here", hint="complex(re, im)")
    sig = tr.signature(node)
    key = str(scalar_key(sig.return_type))
    zero = CExpr("0", "int32", types.literal(0), literal=0)
    return make_complex(key, args[0], args[1] if len(args) == 2 else zero, sig.return_type)


def _complex_abs(tr, z: CExpr, rkey: str, nbt) -> CExpr:
    """abs(z) is math.hypot(z.real, z.imag) in numba (numbers.py complex_abs_impl)."""
    re, im = parts(tr, z)
    fname = "hypotf" if re.key == "float32" else "hypot"
    e = CExpr(f"{fname}({re.code}, {im.code})", re.key, getattr(types, str(re.key)), PRIMARY, nonneg=True)
    return e if e.key == rkey else cast(e, rkey, nbt)


def conjugate(tr, z: CExpr, node) -> CExpr:
    """``z.conjugate()``: the imaginary part negated (a real number is its own conjugate)."""
    if z.key not in COMPLEX:
        return z
    f = "f" if z.key == "complex64" else ""
    return CExpr(f"cuConj{f}({z.code})", z.key, z.nbt, PRIMARY, pure=z.pure)


#: cmath functions with their C helper (``nk_cmath``: numba-cuda's algorithms line by line, special cases of infinite
#: and NaN parts and numba's float64 promotions included)
CMATH = {cmath.exp: "nk_cexp", cmath.log: "nk_clog", cmath.log10: "nk_clog10", cmath.sqrt: "nk_csqrt",
         cmath.isnan: "nk_cisnan", cmath.isinf: "nk_cisinf", cmath.isfinite: "nk_cisfinite",
         cmath.sin: "nk_csin", cmath.cos: "nk_ccos", cmath.tan: "nk_ctan", cmath.asin: "nk_casin",
         cmath.acos: "nk_cacos", cmath.atan: "nk_catan", cmath.sinh: "nk_csinh", cmath.cosh: "nk_ccosh",
         cmath.tanh: "nk_ctanh", cmath.asinh: "nk_casinh", cmath.acosh: "nk_cacosh", cmath.atanh: "nk_catanh"}


def _cmath(tr, obj, node):
    args = _args(tr, node)
    sig = tr.signature(node)
    rkey = scalar_key(sig.return_type)
    args = [cast(a, scalar_key(t)) for a, t in zip(args, sig.args)]
    pure = all(a.pure for a in args)
    tr.helpers.add("nk_cmath")
    if obj is cmath.log and len(args) == 2:  # cmath.log(z, base) = log(z) / log(base)
        tr.helpers.add("nk_cdiv")
        return CExpr(f"nk_cdiv(nk_clog({args[0].code}), nk_clog({args[1].code}))", rkey, sig.return_type, PRIMARY,
                     pure=pure)
    key = "bool" if rkey == "bool" else args[0].key
    e = CExpr(f"{CMATH[obj]}({args[0].code})", key, sig.return_type, PRIMARY, pure=pure)
    return e if e.key == rkey else cast(e, rkey, sig.return_type)


def _phase(tr, obj, node):
    """cmath.phase(z) = math.atan2(z.imag, z.real); cmath.polar(z) = (math.hypot(re, im), math.atan2(im, re))."""
    (z,) = _args(tr, node)
    sig = tr.signature(node)
    if z.key not in COMPLEX:
        z = cast(z, scalar_key(sig.args[0]))
    re, im = parts(tr, z)
    f = "f" if re.key == "float32" else ""
    angle = CExpr(f"atan2{f}({im.code}, {re.code})", re.key, getattr(types, str(re.key)), PRIMARY)
    if obj is cmath.phase:
        return angle
    size = CExpr(f"hypot{f}({re.code}, {im.code})", re.key, getattr(types, str(re.key)), PRIMARY, nonneg=True)
    return TupleVal([size, angle])


def _rect(tr, obj, node):
    """cmath.rect(r, phi) of two floats of one type (numba's overload: the special cases of infinite r)."""
    args = _args(tr, node)
    sig = tr.signature(node)
    keys = {scalar_key(t) for t in sig.args}
    if len(keys) != 1 or not keys <= {"float32", "float64"}:
        raise tr.src.error(node, "cmath.rect is translated for two float32 or two float64 arguments",
                           hint="convert both to one float type first")
    r, phi = args
    tr.helpers.add("nk_cmath")
    return CExpr(f"nk_crect({r.code}, {phi.code})", scalar_key(sig.return_type), sig.return_type, PRIMARY,
                 pure=r.pure and phi.pure)


def _sqrt_threshold(max_value) -> float:
    """numba-cuda's overflow threshold of cmath.sqrt, computed as its cmathimpl computes it."""
    return float(max_value / (1.0 + 1.414213562373095048801688724209698079e0))


CSQRT_THRESHOLD = {"float32": _sqrt_threshold(np.finfo(np.float32).max),
                   "float64": _sqrt_threshold(np.finfo(np.float64).max)}


# -- the table (translate.codegen.builtins merges it) -----------------------------------------------------------
BUILTINS = {
    _py.min: _minmax, _py.max: _minmax, _py.sum: _sum, _py.abs: _abs, _py.pow: _pow, _py.round: _round,
    _py.complex: _complex,
    math.degrees: _degrees_radians, math.radians: _degrees_radians,
    **{f: _degrees_radians for f in (np.degrees, np.radians, np.rad2deg, np.deg2rad)},
    **{f: _np_extreme for f in NP_EXTREMES}, **{f: _np_operator for f in NP_OPERATORS},
    np.real: _np_real_imag, np.imag: _np_real_imag, np.conjugate: _np_conjugate, np.sinc: _np_sinc,
    np.angle: _np_angle,
    **{f: _np_logical for f in (np.logical_and, np.logical_or, np.logical_xor, np.logical_not)},
    math.modf: _modf, math.frexp: _frexp,
    cmath.phase: _phase, cmath.polar: _phase, cmath.rect: _rect,
    **{f: _cmath for f in CMATH},
}


def is_math_function(obj) -> bool:
    """A function of math's, or a numpy ufunc whose CUDA loop is one (``NP_UFUNCS``)."""
    if isinstance(obj, np.ufunc):
        return obj in NP_UFUNCS
    name = getattr(obj, "__name__", "")
    return name in MATH and obj is math.__dict__.get(name)


def _math_name(obj) -> str:
    return NP_UFUNCS[obj] if isinstance(obj, np.ufunc) else obj.__name__


def is_fp16_binding(obj) -> bool:
    return getattr(obj, "__module__", None) == FP16_BINDINGS


# -- cuda.libdevice ------------------------------------------------------------------------------------------------
#: the module of numba-cuda's libdevice stubs (each calls the libdevice function ``__nv_<name>``)
LIBDEVICE = "numba.cuda.libdevice"


def is_libdevice(obj) -> bool:
    return getattr(obj, "__module__", None) == LIBDEVICE and callable(obj)


def _libdevice_table() -> dict:
    """numba-cuda's own table of libdevice functions: ``__nv_<name>`` -> (return type, [arg(name, ty, is_ptr)])."""
    from numba.cuda.libdevicefuncs import functions

    return functions


def libdevice_declaration(name: str) -> str:
    """The C declaration of libdevice function ``name``: the C calls the very function numba-cuda calls (NVRTC and
    nvcc link libdevice for it, as for CUDA's own math functions)."""
    retty, params = _libdevice_table()[name]
    ret = "void" if str(retty) == "none" else c_name(scalar_key(retty))
    args = ", ".join(f"{c_name(scalar_key(p.ty))}{'*' if p.is_ptr else ''} {p.name}" for p in params)
    return f'extern "C" __device__ {ret} {name}({args});'


def _libdevice(tr, obj, node):
    """``libdevice.sinf(x)``: ``__nv_sinf(x)``. A function with pointer arguments returns their values after its
    own result, as a tuple (numba-cuda's ``create_signature``): ``s, c = libdevice.sincosf(x)``."""
    name = "__nv_" + obj.__name__
    retty, params = _libdevice_table()[name]
    sig = tr.signature(node)
    values = iter(cast(tr.expr(a), scalar_key(t)) for a, t in zip(node.args, sig.args))
    outs = [p for p in params if p.is_ptr]
    tr.helpers.add("libdevice:" + name)
    if not outs:
        cargs = [next(values) for _ in params]
        rkey = scalar_key(retty)
        return CExpr(f"{name}({', '.join(a.code for a in cargs)})", rkey, sig.return_type, PRIMARY,
                     pure=all(a.pure for a in cargs))
    tr.require_hoist(node)
    results, cargs = [], []
    for p in params:
        if p.is_ptr:
            out = tr.temp(f"{obj.__name__}_{p.name}")
            tr.emit(f"{c_name(scalar_key(p.ty))} {out};")
            results.append(CExpr(out, scalar_key(p.ty), p.ty))
            cargs.append("&" + out)
        else:
            cargs.append(next(values).code)
    call = f"{name}({', '.join(cargs)})"
    if str(retty) == "none":
        tr.emit(f"{call};")
    else:
        value = tr.temp(f"{obj.__name__}_value")
        tr.emit(f"const {c_name(scalar_key(retty))} {value} = {call};")
        results.insert(0, CExpr(value, scalar_key(retty), retty))
    return TupleVal(results)


#: families of callables, each recognised by a predicate: (what they are, predicate, handler)
FAMILIES = (("math.* functions and numpy's ufuncs of them", is_math_function, _math),
            ("cuda.fp16.* functions", is_fp16_binding, _fp16),
            ("cuda.libdevice functions", is_libdevice, _libdevice))
