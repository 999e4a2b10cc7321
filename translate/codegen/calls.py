"""Calls of device functions (``@cuda.jit(device=True)``, ``@numba.jit``) from the function being translated: the
arguments numba types as compile-time values specialise the C function, the others are passed."""

from __future__ import annotations

import ast

from numba.cuda import types

from numbakern.frontend.record import inlined_signature

from ..cnames import c_name
from . import arrays
from .cexpr import CExpr, Static, TupleVal, cast
from .diagnose import typing_error
from .source import NoSource, parse_function, rebuilt_function
from .statics import is_static_type, needs_value
from .variables import leaf_types, leaf_values, leaves, shaped, tuple_cvars


def device_call(tr, pyfunc, node, fnobj=None, outs=None, present=None):
    """A call of a ``@cuda.jit(device=True)`` or ``@numba.jit`` function: its arguments that numba types as
    compile-time values (functions, dtypes, literals) specialize the C function; the others are passed."""
    vals, given = positional_args(tr, node)
    npos = len(vals)
    vals += [tr.value(k.value) for k in node.keywords]
    given += [k.value for k in node.keywords]
    vals = [arrays.row_array(tr, v, a) if isinstance(v, arrays.Row) else v for v, a in zip(vals, given)]
    sig = call_signature(tr, pyfunc, vals[:npos], given[:npos], node)
    try:
        fn = parse_function(pyfunc)[0]
    except NoSource:  # made by exec(): its Python rebuilt from numba's IR for these argument types
        try:
            pyfunc = rebuilt_function(pyfunc, tuple(sig.args), sig.return_type)
        except NoSource as e:
            raise tr.src.error(node, str(e)) from None
        fn = parse_function(pyfunc)[0]
    names = [a.arg for a in fn.args.args]
    vals, given = _by_parameter(tr, pyfunc, names, sig, node, npos, vals, given)
    static_names = {p for p, t in zip(names, sig.args) if is_static_type(t)} | _global_names(fn, names)
    bound, runtime = {}, []
    for pname, v, t, a in zip(names, vals, sig.args, given):
        number = isinstance(t, types.Literal) and isinstance(t.literal_value, (int, float))
        if number and isinstance(v, CExpr) and v.literal is None:
            # the caller's template parameter: numba saw one instantiation's value, the C passes each one's
            runtime.append((pname, v, types.unliteral(t), a))
        elif is_static_type(t) and not (number and not needs_value(fn, pname, static_names)):
            if isinstance(v, Static) and any(f.dispatcher is v.obj and f.free for f in tr.inner.values()):
                raise tr.src.error(a, f"'{ast.unparse(a)}' reads names of the function it is defined in, so it is "
                                   "passed those at each call: pass it on as a value, it could not be",
                                   hint="call it here, or pass what it reads as arguments")
            bound[pname] = static_value(tr, v, a)
        else:  # a number literal the callee uses as a number: passed, as C code would
            runtime.append((pname, v, types.unliteral(t), a))
    if runtime and any(isinstance(t, types.Literal) for t in sig.args):
        sig = sig.replace(args=tuple(types.unliteral(t) if p not in bound else t
                                     for p, t in zip(names, sig.args)))
    dev = tr.unit.device_function(pyfunc, sig, bound, node, tr.src, forceinline=forced_inline(fnobj))
    cargs = []
    for pname, v, t, a in runtime:
        if isinstance(v, arrays.ArrayInfo):
            if pname in dev.written:
                tr.mark_written(v.owner or v.name)
            cargs.append(", ".join(arrays.call_args(tr, v, t, a)))
        elif isinstance(v, CExpr):
            k = tr.scalar_key(t)
            cargs.append((v if v.key == k else cast(v, k)).code)
        elif isinstance(v, TupleVal) and v.items and all(isinstance(i, arrays.ArrayInfo) for i in v.items):
            for k, (info, x) in enumerate(zip(v.items, t)):  # each array as an array argument
                if (pname, k) in dev.written:
                    tr.mark_written(info.owner or info.name)
                cargs.append(", ".join(arrays.call_args(tr, info, x, a)))
        elif isinstance(v, TupleVal) and isinstance(t, types.BaseTuple):  # one C parameter per number
            cargs += [cast(tr.as_cexpr(i, a), tr.scalar_key(x)).code
                      for i, x in zip(leaf_values(v), leaf_types(t))]
        else:
            raise tr.src.error(a, f"this argument of '{pyfunc.__name__}' has no C value",
                                 hint="numbers and arrays (functions, dtypes and constants as compile-time "
                                      "arguments)")
    if dev.returns_array:  # the pointer, and its extents (and strides) through pointers, into new variables
        tr.require_hoist(node)
        rt = sig.return_type
        stem = dev.cname.rstrip("_")
        extents = [tr.temp(f"{stem}_shape{d}") for d in range(rt.ndim)]
        strides = [tr.temp(f"{stem}_stride{d}") for d in range(rt.ndim)] if rt.layout != "C" else []
        for n in (*extents, *strides):
            tr.emit(f"int64_t {n};")
        key = tr.scalar_key(rt.dtype)
        ptr = tr.temp(f"{stem}_data")
        tr.emit(f"{c_name(key)} *{ptr} = {dev.cname}({', '.join(cargs + ['&' + n for n in (*extents, *strides)])});")
        owners = [v.owner or v.name for pname, v, _, _ in runtime if isinstance(v, arrays.ArrayInfo)]
        return arrays.ArrayInfo(ptr, "view_expr", key, rt.ndim,
                                [CExpr(n, "int64", types.int64, nonneg=True) for n in extents], rt,
                                [CExpr(n, "int64", types.int64) for n in strides] or None,
                                owner=owners[0] if len(owners) == 1 else None)
    if dev.outs:  # a tuple result: into variables of the caller (given, or new ones)
        if outs is None:
            tr.require_hoist(node)
            outs = []  # named as the result's numbers: `minmax_1_0` is item 0 of item 1
            for var in leaves(tuple_cvars(sig.return_type, tr.scalar_key, tr.temp, dev.cname.rstrip("_"))):
                tr.emit(f"{c_name(var.key)} {var.cname};")
                outs.append(CExpr(var.cname, var.key, var.nbt))
        tr.emit(f"{dev.cname}({', '.join(cargs + ['&' + o.code for o in outs])});")
        return shaped(list(outs), sig.return_type)
    if dev.optional:  # the flag into the caller's variable, or a new one
        if present is None:
            tr.require_hoist(node)
            present = tr.temp(f"{dev.cname.rstrip('_')}_present")
            tr.emit(f"bool {present};")
            value = tr.temp(f"{dev.cname.rstrip('_')}_value")
            rkey = tr.scalar_key(sig.return_type.type)
            tr.emit(f"const {c_name(rkey)} {value} = {dev.cname}({', '.join(cargs + ['&' + present])});")
            return CExpr(value, rkey, sig.return_type.type, present=present)
        rkey = tr.scalar_key(sig.return_type.type)
        return CExpr(f"{dev.cname}({', '.join(cargs + ['&' + present])})", rkey, sig.return_type.type, pure=False)
    rkey = tr.scalar_key(sig.return_type)
    return CExpr(f"{dev.cname}({', '.join(cargs)})", rkey, sig.return_type, pure=False)


def positional_args(tr, node: ast.Call) -> tuple[list, list]:
    """The values of a call's positional arguments and the node of each, a starred tuple (``f(x, *t)``) as its items
    (numba passes them one by one: the callee's parameters are the items)."""
    vals, nodes = [], []
    for a in node.args:
        if isinstance(a, ast.Starred):
            t = tr.value(a.value)
            if not isinstance(t, TupleVal):
                raise tr.src.error(a, "only a tuple can be unpacked into a call's arguments here",
                                   hint="f(*t) with t a tuple")
            vals += t.items
            nodes += [a] * len(t.items)
        else:
            vals.append(tr.value(a))
            nodes.append(a)
    return vals, nodes


def _by_parameter(tr, pyfunc, names, sig, node, npos, vals, given):
    """The call's values and their nodes in the order of ``pyfunc``'s parameters, as numba folds a call (numba has
    checked the names and counts): positional arguments first, then keyword arguments by name; a parameter left out
    is its default, which numba types as a compile-time value (``omitted(default=...)``) and the C function is
    specialised for."""
    slots = dict(enumerate(zip(vals[:npos], given[:npos])))
    for k, v, a in zip(node.keywords, vals[npos:], given[npos:]):
        slots[names.index(k.arg)] = (v, a)
    for i, t in enumerate(sig.args):
        if i not in slots and isinstance(t, types.Omitted):
            slots[i] = (Static(t.value), node)
    if sorted(slots) != list(range(len(names))):  # a function numba calls otherwise (*args): not by its source
        raise tr.src.error(node, f"'{pyfunc.__name__}' takes {len(names)} arguments, {len(slots)} given")
    ordered = [slots[i] for i in range(len(names))]
    return [v for v, _ in ordered], [a for _, a in ordered]


def call_signature(tr, pyfunc, vals, nodes, node):
    """numba's signature of the call ``node`` of device function ``pyfunc`` (its positional arguments' values
    ``vals``, at ``nodes``), from the typed record; for a call numba inlined (``inline="always"``), the callee typed
    for the arguments' types."""
    for v, a in zip(vals, nodes):
        if isinstance(v, arrays.ArrayInfo):
            arg_type(tr, v, a)  # an array the C cannot pass on is refused whatever numba says
    sig = _recorded_call(tr.ctx.typed.record, node, pyfunc)
    if sig is not None:
        return sig
    if node.keywords:
        raise tr.src.error(node, f"keyword arguments to '{pyfunc.__name__}', which numba inlines, are not supported",
                           hint="pass the arguments by position")
    argtypes = [arg_type(tr, v, a) for v, a in zip(vals, nodes)]
    try:
        return inlined_signature(pyfunc, tuple(argtypes))
    except Exception as e:  # noqa: BLE001 - numba's typing error of the callee
        raise typing_error(e, tr.src, node, f"numba cannot type '{pyfunc.__name__}' for "
                           f"({', '.join(str(t) for t in argtypes)})") from None


def _recorded_call(record, node, pyfunc):
    """The record's signature of ``node``'s call of ``pyfunc``, or None where numba inlined it. Other calls can share
    the call's position: ``if f(x):`` tests the result with ``bool()``, which Python 3.12 places on the call itself,
    so only a call of a dispatcher counts, and of ``pyfunc``'s where the record says whose."""
    calls = [op for op in record.operations(node) if op.signature is not None
             and getattr(op.callee, "dispatcher", None) is not None]
    own = [op for op in calls if getattr(op.callee.dispatcher, "py_func", None) is pyfunc]
    op = (own or calls or [None])[0]
    if op is None:
        return None
    return op.signature.as_function() if op.signature.recvr is not None else op.signature


def forced_inline(fnobj) -> bool:
    """Does numba inline this device function by force: ``forceinline=True`` (NVVM's ``alwaysinline``) or
    ``inline="always"`` (numba's IR)? The C says ``__forceinline__`` then."""
    options = getattr(fnobj, "targetoptions", None) or {}
    return bool(options.get("forceinline")) or options.get("inline") == "always"


def arg_type(tr, v, node):
    """numba's type of an argument value."""
    if isinstance(v, arrays.ArrayInfo):
        if v.nbt is None:
            raise tr.src.error(node, "this array cannot be passed to a function",
                                 hint="pass kernel array arguments, shared or local arrays")
        return v.nbt
    if isinstance(v, CExpr):
        return v.nbt
    if isinstance(v, TupleVal):
        items = [arg_type(tr, i, node) for i in v.items]
        return types.BaseTuple.from_types(items)
    if isinstance(v, Static):  # a function, a dtype: the type numba gave the value it read
        t = tr.ctx.typed.record.type_of(node)
        if t is None:
            raise tr.src.error(node, f"numba has no type for {v.obj!r} as an argument")
        return t
    raise tr.src.error(node, "this argument has no numba type")

def static_value(tr, v, node):
    """The Python value of a compile-time argument."""
    if isinstance(v, Static):
        return v.obj
    if isinstance(v, CExpr) and v.literal is not None:
        return v.literal
    if isinstance(v, TupleVal):
        return tuple(static_value(tr, i, node) for i in v.items)
    raise tr.src.error(node, "numba treats this argument as a compile-time value, but it has none here",
                         hint="literals, module constants, functions and dtypes")


def direct_outs(tr, names, value_node, stmt):
    """``lo, hi = f(a, b)`` for a device function returning a tuple into plain number variables of its element
    types: the C call writes them directly (``f(a, b, &lo, &hi);``). None when that does not apply."""
    if not isinstance(value_node, ast.Call) or not all(isinstance(n, ast.Name) for n in names):
        return None
    f = tr.value(value_node.func)
    if not (isinstance(f, Static) and is_device_function(f.obj)):
        return None
    rt = tr.unit.return_type_of(tr, f.obj, value_node)
    if not isinstance(rt, types.BaseTuple) or len(rt) != len(names):
        return None
    outs = []
    for n, t in zip(names, rt):
        if n.id not in tr.scalars or n.id in tr.retyped or tr.scalars[n.id] != tr.scalar_key(t):
            return None
        outs.append(CExpr(tr.cname(n.id), tr.scalars[n.id], t))
    for n in names:
        if (id(stmt), n.id) in tr.plan.inline:
            for line in tr.declarations(n.id):
                tr.emit(line)
    return outs




def is_device_function(obj) -> bool:
    """A ``@cuda.jit(device=True)`` function or a ``@numba.jit`` one (numba compiles those for the GPU too)."""
    from numba.cuda.dispatcher import CUDADispatcher

    if isinstance(obj, CUDADispatcher):
        return bool(obj.targetoptions.get("device", False))
    try:
        from numba.core.dispatcher import Dispatcher
    except ImportError:  # numba-cuda without numba
        return False
    return isinstance(obj, Dispatcher) and hasattr(obj, "py_func")


def _device(tr, obj, node):
    return device_call(tr, obj.py_func, node, obj)


FAMILIES = (("device functions", is_device_function, _device),)


def _global_names(fn, params) -> set:
    """Names a function reads that it never assigns and that are not its parameters: globals and constants."""
    stored = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} - stored - set(params)
