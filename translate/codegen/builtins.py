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
from . import arrays
from .cexpr import PRIMARY, UNARY, CExpr, Static, TupleVal, cast, paren

DIM3 = {stubs.threadIdx: "threadIdx", stubs.blockIdx: "blockIdx", stubs.blockDim: "blockDim",
        stubs.gridDim: "gridDim"}

MATH = {name: name for name in (
    "sqrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin", "acos",
    "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "floor", "ceil", "trunc", "fabs", "pow",
    "hypot", "erf", "erfc", "lgamma", "copysign", "fmod", "isnan", "isinf", "isfinite")}
MATH["gamma"] = "tgamma"
MATH_BOOL = {"isnan", "isinf", "isfinite"}
#: numba with fastmath, on float32 (numba_cuda mathimpl: ``unarys_fastmath``/``binarys_fastmath``, libdevice's
#: ``__nv_fast_*``, which are these intrinsics); tanh is ``tanh.approx.f32`` (cc >= 7.5)
FAST_F32 = {"sin": "__sinf", "cos": "__cosf", "tan": "__tanf", "exp": "__expf", "log": "__logf",
            "log2": "__log2f", "log10": "__log10f", "pow": "__powf", "tanh": "nk_fast_tanhf"}

SIMPLE = {  # cuda function -> C function; result type from numba
    cuda.syncthreads: "__syncthreads", cuda.syncthreads_count: "__syncthreads_count",
    cuda.syncthreads_and: "__syncthreads_and", cuda.syncthreads_or: "__syncthreads_or",
    cuda.shfl_sync: "__shfl_sync", cuda.shfl_up_sync: "__shfl_up_sync", cuda.shfl_down_sync: "__shfl_down_sync",
    cuda.shfl_xor_sync: "__shfl_xor_sync", cuda.ballot_sync: "__ballot_sync", cuda.all_sync: "__all_sync",
    cuda.any_sync: "__any_sync", cuda.eq_sync: "__uni_sync", cuda.activemask: "__activemask",
    cuda.threadfence: "__threadfence", cuda.threadfence_block: "__threadfence_block",
    cuda.threadfence_system: "__threadfence_system", cuda.syncwarp: "__syncwarp",
}
STUB_RESULTS = {cuda.syncwarp: None, cuda.threadfence: None, cuda.threadfence_block: None,
                cuda.threadfence_system: None, cuda.activemask: types.uint32}
ATOMICS = {cuda.atomic.add: "add", cuda.atomic.sub: "sub", cuda.atomic.max: "max", cuda.atomic.min: "min",
           cuda.atomic.exch: "exch", cuda.atomic.cas: "cas"}

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

    def call(self, node: ast.Call) -> CExpr | TupleVal:
        f = self.value(node.func)
        if not isinstance(f, Static):
            raise self.src.error(node.func, "only functions can be called", hint=_SUPPORTED_CALLS)
        obj = f.obj
        if node.keywords and obj not in (cuda.syncwarp,):
            raise self.src.error(node, "keyword arguments are supported only in cuda.shared.array/local.array",
                                 hint="pass the arguments by position")
        if obj is cuda.grid or obj is cuda.gridsize:
            return self._grid(obj, node)
        if obj in SIMPLE:
            return self._simple(obj, node)
        if obj in ATOMICS:
            return self._atomic(ATOMICS[obj], node)
        if obj is math.__dict__.get(getattr(obj, "__name__", ""), None) and obj.__name__ in MATH:
            return self._math(obj, node)
        if obj in (_py.min, _py.max):
            return self._minmax(obj, node)
        if obj is _py.abs:
            return self._abs(node)
        if obj is _py.len:
            a = self.value(node.args[0]) if len(node.args) == 1 else None
            if not isinstance(a, arrays.ArrayInfo) or a.extents is None:
                raise self.src.error(node, "len() is supported on arrays with known extents", hint="len(x) of an argument")
            return a.extents[0]
        if obj in (_py.int, _py.float, _py.bool) or (isinstance(obj, type) and issubclass(obj, np.generic)):
            return self._cast(obj, node)
        if obj is _py.range:
            raise self.src.error(node, "range() is supported only as the iterable of a for loop",
                                 hint="for i in range(...):")
        if obj in (cuda.shared.array, cuda.local.array):
            raise self.src.error(node, "shared/local arrays must be assigned to a name where they are created",
                                 hint="tile = cuda.shared.array((16, 16), np.float32)")
        if _is_device_function(obj):
            return self.device_call(obj.py_func, node, obj)
        from .vectors import is_vector_access

        if is_vector_access(f):
            raise self.src.error(node, f"{obj.__name__} is a statement (it returns nothing)",
                                 hint=f"{obj.__name__}(array, (r, c), regs, i) on a line of its own")
        name = getattr(obj, "__qualname__", None) or repr(obj)
        raise self.src.error(node, f"calling '{name}' is not supported in a kernel", hint=_SUPPORTED_CALLS)

    def _args(self, node):
        return [self.expr(a) for a in node.args]

    def _grid(self, obj, node):
        n = self.const_value(node.args[0]) if len(node.args) == 1 else None
        if n not in (1, 2, 3):
            raise self.src.error(node, "cuda.grid/gridsize take a literal 1, 2 or 3", hint="cuda.grid(2)")
        items = []
        for d in "xyz"[:n]:
            code = (f"(int64_t)blockIdx.{d} * blockDim.{d} + threadIdx.{d}" if obj is cuda.grid
                    else f"(int64_t)blockDim.{d} * gridDim.{d}")
            items.append(CExpr(code, "int64", types.int64, 12 if obj is cuda.grid else 13, nonneg=True))
        return items[0] if n == 1 else TupleVal(items)

    def _simple(self, obj, node):
        args = self._args(node)
        kws = {}
        if obj is cuda.syncwarp and not args:
            args = [CExpr("0xffffffff", "uint32", types.uint32)]
        if obj in STUB_RESULTS:  # stub classes: numba typed them with the kernel; fixed results
            rt = STUB_RESULTS[obj]
            code = f"{SIMPLE[obj]}({', '.join(cast(a, 'uint32').code for a in args)})"
            return CExpr(code, scalar_key(rt) if rt is not None else None, rt if rt is not None else types.none,
                         PRIMARY, pure=False)
        sig = self.resolve(obj, [a.nbt for a in args], node, kws)
        args = [cast(a, scalar_key(t)) if scalar_key(t) and a.key != scalar_key(t) and not
                (is_int(a.key) and is_int(scalar_key(t)) and a.literal is not None) else a
                for a, t in zip(args, sig.args)]
        rkey = scalar_key(sig.return_type)
        code = f"{SIMPLE[obj]}({', '.join(a.code for a in args)})"
        return CExpr(code, rkey, sig.return_type, PRIMARY, pure=False)

    def _atomic(self, kind, node):
        n = 4 if kind == "cas" else 3
        if len(node.args) != n:
            raise self.src.error(node, f"cuda.atomic.{kind} takes {n} arguments")
        arr = self.value(node.args[0])
        if not isinstance(arr, arrays.ArrayInfo):
            raise self.src.error(node.args[0], "the first argument of an atomic must be an array")
        self.mark_written(arr.name)
        vals = [self.expr(a) for a in node.args[2:]]
        # numba typed the whole kernel already (compile_cuda): an atomic returns the old element value
        elem = arrays.element(self, arr, node.args[1], node)
        key = arr.key
        vals = [cast(v, key) for v in vals]
        ptr = f"&{elem.code}"
        ctype = c_name(key)
        if kind in ("max", "min") and is_float(key):
            self.helpers.add("nk_atomic_fminmax")
            return CExpr(f"nk_atomic_{kind}({ptr}, {vals[0].code})", key, arr.nbt.dtype, PRIMARY, pure=False)
        func = {"add": "atomicAdd", "sub": "atomicSub", "max": "atomicMax", "min": "atomicMin",
                "exch": "atomicExch", "cas": "atomicCAS"}[kind]
        if kind == "sub" and (is_float(key) or key in ("int64", "uint64")):
            func, vals = "atomicAdd", [CExpr(f"-{paren(vals[0], UNARY)}", key, vals[0].nbt, UNARY)]
        native = {"add": {"int32", "uint32", "uint64", "float32", "float64"}, "sub": {"int32", "uint32"},
                  "max": {"int32", "uint32", "uint64"}, "min": {"int32", "uint32", "uint64"},
                  "exch": {"int32", "uint32", "uint64", "float32"}, "cas": {"int32", "uint32", "uint64"}}[kind]
        if key == "uint64":
            via = "unsigned long long"
        elif key == "int64":
            via = "long long" if kind in ("max", "min") else "unsigned long long"
        elif key in native:
            via = None
        else:
            raise self.src.error(node, f"cuda.atomic.{kind} on {key} arrays is not supported",
                                 hint=f"cuda.atomic.{kind} on {', '.join(sorted(native | {'int64'}))}")
        if via is None:
            code = f"{func}({ptr}, {', '.join(v.code for v in vals)})"
        else:
            vs = ", ".join(f"({via}){paren(v, UNARY)}" for v in vals)
            code = f"({ctype}){func}(({via} *){ptr}, {vs})"
        return CExpr(code, key, arr.nbt.dtype, PRIMARY if via is None else UNARY, pure=False)

    def index_type(self, node):
        v = self.value(node)
        if isinstance(v, TupleVal):
            return types.UniTuple(types.int64, len(v.items))
        return v.nbt

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
