"""The builtins table: each supported Python/CUDA/math callable, keyed by the object itself, knows its C
(model: CuPy's ``cupyx.jit`` builtins). Result types always come from Numba's typing of the call."""

from __future__ import annotations

import ast
import builtins as _py
import math

import numpy as np
from numba import cuda
from numba.cuda import stubs, types

from ..cnames import c_name, is_float, is_int, scalar_key
from . import arrays, intrinsics, mma
from .atomics import ATOMICS, atomic
from .cexpr import PRIMARY, UNARY, CExpr, Static, TupleVal, cast, float_literal, paren

DIM3 = {stubs.threadIdx: "threadIdx", stubs.blockIdx: "blockIdx", stubs.blockDim: "blockDim",
        stubs.gridDim: "gridDim"}

MATH = {name: name for name in (
    "sqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin", "acos",
    "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "floor", "ceil", "trunc", "fabs", "pow",
    "hypot", "erf", "erfc", "lgamma", "copysign", "fmod", "isnan", "isinf", "isfinite", "remainder", "nextafter",
    "ldexp")}
MATH["gamma"] = "tgamma"
MATH_BOOL = {"isnan", "isinf", "isfinite"}
#: numba with fastmath, on float32 (numba_cuda mathimpl: ``unarys_fastmath``/``binarys_fastmath``, libdevice's
#: ``__nv_fast_*``, which are these intrinsics); tanh is ``tanh.approx.f32`` (cc >= 7.5)
FAST_F32 = {"sin": "__sinf", "cos": "__cosf", "tan": "__tanf", "exp": "__expf", "log": "__logf",
            "log2": "__log2f", "log10": "__log10f", "pow": "__powf", "tanh": "nk_fast_tanhf"}

#: the module of numba-cuda's cuda.fp16 functions (bindings of cuda_fp16.h)
FP16_BINDINGS = "numba.cuda._internal.cuda_fp16"

_SUPPORTED_CALLS = ("cuda.grid/gridsize/syncthreads*/shfl_*_sync/ballot_sync/syncwarp/atomic.*, "
                    "cuda.shared.array/cuda.local.array (assigned to a name), math.*, min/max/abs/len, "
                    "numbakern.vector_io.vload4/vstore4 (as statements), "
                    "int()/float()/bool()/np.float32() etc., @cuda.jit(device=True) functions")


class BuiltinsMixin:
    def builtin_attr(self, obj, attr, sub, node):
        if obj in DIM3 and attr in ("x", "y", "z"):
            return CExpr(f"{DIM3[obj]}.{attr}", "uint32", types.int32, nonneg=True)
        if sub is stubs.laneid:
            self.helpers.add("nk_laneid")
            return CExpr("nk_laneid()", "int32", types.int32, nonneg=True)
        if sub is stubs.warpsize:
            return CExpr("warpSize", "int32", types.int32, nonneg=True)
        return None

    def call(self, node: ast.Call, outs=None) -> CExpr | TupleVal:
        if isinstance(node.func, ast.Attribute) and node.func.attr == "bit_count" and not node.args:
            base = self.value(node.func.value)
            if isinstance(base, CExpr) and is_int(base.key):  # numba-cuda: x.bit_count() is cuda.popc(x)
                popc = ast.copy_location(ast.Call(func=node.func, args=[node.func.value], keywords=[]), node)
                return intrinsics.call(self, cuda.popc, popc)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "sync":
            group = self.value(node.func.value)
            if isinstance(group, Static) and isinstance(group.obj, intrinsics.GridGroup):
                return intrinsics.grid_sync(self, node)
        f = self.value(node.func)
        if not isinstance(f, Static):
            raise self.src.error(node.func, "only functions can be called", hint=_SUPPORTED_CALLS)
        obj = f.obj
        if node.keywords and obj not in (cuda.syncwarp,):
            raise self.src.error(node, "keyword arguments are supported only in cuda.shared.array/local.array",
                                 hint="pass the arguments by position")
        if intrinsics.is_intrinsic(obj):
            return intrinsics.call(self, obj, node)
        if mma.is_mma(obj):  # numbakern.mma: tensor cores (translate/codegen/mma.py)
            return mma.call(self, obj, node)
        if obj in ATOMICS:
            return atomic(self, obj, node)
        if getattr(obj, "__module__", None) == FP16_BINDINGS:
            return self._fp16(obj, node)
        if obj is math.__dict__.get(getattr(obj, "__name__", ""), None) and obj.__name__ in MATH:
            return self._math(obj, node)
        if obj in (_py.min, _py.max):
            return self._minmax(obj, node)
        if obj is _py.abs:
            return self._abs(node)
        if obj is _py.len:
            a = self.value(node.args[0]) if len(node.args) == 1 else None
            if not isinstance(a, arrays.ArrayInfo) or a.extents is None:
                raise self.src.error(node, "len() is supported on arrays with known extents",
                                     hint="len(x) of an argument")
            return a.extents[0]
        if obj in (_py.int, _py.float, _py.bool) or (isinstance(obj, type) and issubclass(obj, np.generic)) or \
                isinstance(obj, (types.Number, types.Boolean)):  # np.float32(x), int(x), numba's float32(x)
            return self._cast(obj, node)
        if obj is _py.round:
            return self._round(node)
        if obj in (math.degrees, math.radians):
            return self._degrees_radians(obj, node)
        if obj is math.modf:
            return self._modf(node)
        if obj is math.frexp:
            return self._frexp(node)
        if obj is _py.print:
            return self._print(node)
        if obj is _py.range:
            raise self.src.error(node, "range() is supported only as the iterable of a for loop",
                                 hint="for i in range(...):")
        if obj in (cuda.shared.array, cuda.local.array):
            raise self.src.error(node, "shared/local arrays must be assigned to a name where they are created",
                                 hint="tile = cuda.shared.array((16, 16), np.float32)")
        if _is_device_function(obj):
            return self.device_call(obj.py_func, node, obj, outs=outs)
        from .vectors import is_vector_access

        if is_vector_access(f):
            raise self.src.error(node, f"{obj.__name__} is a statement (it returns nothing)",
                                 hint=f"{obj.__name__}(array, (r, c), regs, i) on a line of its own")
        name = getattr(obj, "__qualname__", None) or repr(obj)
        raise self.src.error(node, f"calling '{name}' is not supported in a kernel", hint=_SUPPORTED_CALLS)

    def _args(self, node):
        return [self.expr(a) for a in node.args]


    def _math(self, obj, node):
        args = self._args(node)
        sig = self.resolve(obj, [a.nbt for a in args], node)
        name = MATH[obj.__name__]
        akey = scalar_key(sig.args[0])
        rkey = scalar_key(sig.return_type)
        if not is_float(akey):
            if obj.__name__ in ("floor", "ceil", "trunc") and is_int(akey):
                return cast(args[0], rkey)
            raise self.src.error(node, f"math.{obj.__name__} on {akey} is not supported")
        cargs = [cast(a, scalar_key(t)) for a, t in zip(args, sig.args)]
        fname = name + ("f" if akey == "float32" and name not in MATH_BOOL else "")
        if akey == "float32" and getattr(self.unit, "fastmath", False) and name in FAST_F32:
            fname = FAST_F32[name]
            if fname.startswith("nk_"):
                self.helpers.add(fname)
        e = CExpr(f"{fname}({', '.join(a.code for a in cargs)})", "bool" if name in MATH_BOOL else akey,
                  sig.return_type, PRIMARY, pure=all(a.pure for a in cargs))
        return e if e.key == rkey else cast(e, rkey)

    def _minmax(self, obj, node):
        args = self._args(node)
        if len(args) < 2:
            raise self.src.error(node, f"{obj.__name__}() needs at least two numbers", hint="min(a, b)")
        sig = self.resolve(obj, [a.nbt for a in args], node)
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
        self.helpers.add("nk_min")
        acc = cast(args[0], rkey)
        for a in args[1:]:
            b = cast(a, rkey)
            nonneg = (acc.nonneg and b.nonneg) if obj is _py.min else (acc.nonneg or b.nonneg)
            acc = CExpr(f"nk_{obj.__name__}({acc.code}, {b.code})", rkey, sig.return_type, PRIMARY, nonneg,
                        acc.pure and b.pure, acc.deps | b.deps)
        return acc

    def _abs(self, node):
        (a,) = self._args(node)
        sig = self.resolve(_py.abs, [a.nbt], node)
        key = scalar_key(sig.return_type)
        a = cast(a, key)
        fname = {"float32": "fabsf", "float64": "fabs", "int64": "llabs"}.get(key, "abs")
        if key.startswith("uint"):
            return a
        return CExpr(f"{fname}({a.code})", key, sig.return_type, PRIMARY, True, a.pure, a.deps)

    def _fp16(self, obj, node):
        """``cuda.fp16.*``: numba-cuda binds these to cuda_fp16.h's functions of the same name (``hadd`` is
        ``__hadd``)."""
        args = self._args(node)
        sig = self.resolve(obj, [a.nbt for a in args], node)
        args = [cast(a, scalar_key(t)) for a, t in zip(args, sig.args)]
        self.helpers.add("nk_fp16")
        return CExpr(f"{obj.__name__}({', '.join(a.code for a in args)})", scalar_key(sig.return_type),
                     sig.return_type, PRIMARY, pure=all(a.pure for a in args))

    def _modf(self, node):
        """math.modf(x) -> (fractional part, integral part)."""
        return self._split(math.modf, node, "modf", "frac", "int")

    def _frexp(self, node):
        """math.frexp(x) -> (mantissa, exponent)."""
        return self._split(math.frexp, node, "frexp", "mant", "exp")

    def _split(self, fn, node, cname, ret_name, ptr_name):
        """A math function returning a pair whose libdevice version returns one part and writes the other
        through a pointer (modf, frexp): the call is a statement of its own before the expression."""
        (x,) = self._args(node)
        sig = self.resolve(fn, [x.nbt], node)
        key = scalar_key(sig.args[0])
        if not is_float(key):
            raise self.src.error(node, f"math.{fn.__name__} of {key} is not supported",
                                 hint="a float32 or float64 value")
        x = cast(x, key)
        self.require_hoist(node)
        rt = sig.return_type
        ptr_key = "int32" if is_int(scalar_key(rt[1])) else key
        ptr, ret = self.temp(f"{cname}_{ptr_name}"), self.temp(f"{cname}_{ret_name}")
        self.emit(f"{'int' if ptr_key == 'int32' else c_name(key)} {ptr};")
        self.emit(f"const {c_name(key)} {ret} = {cname}{'f' if key == 'float32' else ''}({x.code}, &{ptr});")
        second = CExpr(ptr, ptr_key, rt[1])
        return TupleVal([CExpr(ret, key, rt[0]), cast(second, scalar_key(rt[1]), rt[1])])

    def _round(self, node):
        args = self._args(node)
        sig = self.resolve(_py.round, [a.nbt for a in args], node)
        key = scalar_key(sig.args[0])
        if not is_float(key):
            raise self.src.error(node, f"round() of {key} is not supported", hint="round(x) / round(x, n) of floats")
        x = cast(args[0], "float64")
        if len(args) == 1:  # numba-cuda: llrint of the value as a double (round half to even), an int64
            rounded = CExpr(f"llrint({x.code})", "int64", types.int64, PRIMARY, pure=x.pure)
            return cast(rounded, scalar_key(sig.return_type))
        self.helpers.add("nk_round_ndigits")
        n = cast(args[1], "int64")
        e = CExpr(f"nk_round_ndigits({x.code}, {n.code})", "float64", types.float64, PRIMARY, pure=x.pure and n.pure)
        rkey = scalar_key(sig.return_type)
        return e if rkey == "float64" else cast(e, rkey, sig.return_type)

    def _degrees_radians(self, obj, node):
        (a,) = self._args(node)
        sig = self.resolve(obj, [a.nbt], node)
        key = scalar_key(sig.args[0])
        factor = (180.0 / math.pi) if obj is math.degrees else (math.pi / 180.0)
        if key == "float32":  # numba: the factor as a constant of the argument's type, times the argument
            factor = float(np.float32(factor))
        a = cast(a, key)
        e = CExpr(f"{float_literal(factor, f32=key == 'float32')} * {paren(a, 13 + 1)}", key, sig.return_type, 13,
                  pure=a.pure)
        rkey = scalar_key(sig.return_type)
        return e if e.key == rkey else cast(e, rkey)

    def _cast(self, obj, node):
        if len(node.args) != 1:
            raise self.src.error(node, "casts take exactly one argument", hint="np.float32(x), int(x)")
        a = self.expr(node.args[0])
        sig = self.resolve(obj, [a.nbt], node)
        key = scalar_key(sig.return_type)
        if key == "bool":
            return CExpr(f"{paren(a, 10)} != 0", "bool", types.boolean, 9, pure=a.pure)
        e = cast(a, key, sig.return_type)
        if e is a:
            e = CExpr(a.code, a.key, sig.return_type, a.prec, a.nonneg, a.pure, a.deps, a.literal)
        return e


def _is_device_function(obj) -> bool:
    """A ``@cuda.jit(device=True)`` function or a ``@numba.jit`` one (numba compiles those for the GPU too)."""
    from numba.cuda.dispatcher import CUDADispatcher

    if isinstance(obj, CUDADispatcher):
        return bool(obj.targetoptions.get("device", False))
    try:
        from numba.core.dispatcher import Dispatcher
    except ImportError:  # numba-cuda without numba
        return False
    return isinstance(obj, Dispatcher) and hasattr(obj, "py_func")


def _print_item(e: CExpr) -> tuple[str, str]:
    if e.key == "bool":
        return "%s", f'{paren(e, 4)} ? "True" : "False"'
    if is_int(e.key):
        if e.key.startswith("u"):
            return "%llu", f"(unsigned long long){paren(e, UNARY)}"
        return "%lld", f"(long long){paren(e, UNARY)}"
    if e.key in ("float16", "float32", "float64"):
        return "%f", cast(e, "float64").code
    raise ValueError(e.key)


def _c_string(text: str) -> str:
    """A Python string as the body of a C string literal."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 32 or ord(ch) > 126:
            out.append("".join(f"\\x{b:02x}" for b in ch.encode()))
        else:
            out.append(ch)
    return "".join(out)
