"""The builtins table: every callable a kernel may call, keyed by the object itself (or recognised by a family's
predicate: ``math.*``, numba's number types, device functions), and the function that writes its C (model: CuPy's
``cupyx.jit`` builtins, Triton's table). Result types always come from Numba's typing of the call.

The table is put together from the modules listed in ``PROVIDERS`` and checked when this module is imported: an
object claimed twice, a handler that is not a function of ``(tr, obj, node)`` or a family without a predicate stops
the import. To add a builtin, give its handler an entry in a provider's ``BUILTINS`` (``{cuda.popc: _bits}``), or
list a new module of such entries in ``PROVIDERS`` (a family: an entry ``(what, predicate, handler)`` in its
``FAMILIES``). A handler gets the translator ``tr`` (``translate.codegen.context.Translator``), the called object and
the ``ast.Call``; it returns a ``CExpr`` or a ``TupleVal``, or raises ``tr.src.error(...)``.
"""

from __future__ import annotations

import ast
import inspect

from numba import cuda
from numba.cuda import stubs, types

from ..cnames import c_name, is_int
from . import arrays, atomics, calls, hopper, intrinsics, mathfuncs, mma, pybuiltins, reductions, vectors
from .cexpr import PRIMARY, CExpr, Static, TupleVal

#: the modules whose ``BUILTINS`` ({object: handler}) and ``FAMILIES`` ((what, predicate, handler), ...) make the
#: table, in the order families are tried
PROVIDERS = (intrinsics, atomics, mathfuncs, reductions, mma, hopper, pybuiltins, vectors, calls)

DIM3 = {stubs.threadIdx: "threadIdx", stubs.blockIdx: "blockIdx", stubs.blockDim: "blockDim",
        stubs.gridDim: "gridDim"}

SUPPORTED_CALLS = ("cuda.grid/gridsize/syncthreads*/shfl_*_sync/ballot_sync/syncwarp/atomic.*, "
                   "cuda.shared.array/cuda.local.array (assigned to a name), math.*, cmath.*, min/max/abs/len/sum, "
                   "numpy's ufuncs of numbers and reductions of arrays (np.maximum, np.sum, x.argmax(), ...), "
                   "complex(), print(), numbakern.vector_io.vload4/vstore4 (as statements), numbakern.mma.*, "
                   "numbakern.mma.hopper.*, "
                   "int()/float()/bool()/np.float32() etc., @cuda.jit(device=True) and @numba.jit functions")


def _check_handler(where: str, handler) -> None:
    if not callable(handler):
        raise ImportError(f"translate.codegen.builtins: the handler of {where} is not callable")
    params = [p for p in inspect.signature(handler).parameters.values() if p.default is inspect.Parameter.empty]
    if len(params) != 3:
        raise ImportError(f"translate.codegen.builtins: the handler of {where} ({handler.__qualname__}) must take "
                          f"(tr, obj, node), it takes ({', '.join(p.name for p in params)})")


def build(providers) -> tuple[dict, tuple]:
    """The table ({object: handler}) and the families of the ``providers``, checked."""
    table: dict = {}
    owner: dict = {}
    families = []
    for module in providers:
        for obj, handler in getattr(module, "BUILTINS", {}).items():
            where = f"{getattr(obj, '__qualname__', obj)!s} ({module.__name__})"
            if obj in table:
                raise ImportError(f"translate.codegen.builtins: {where} is also claimed by {owner[obj]}")
            _check_handler(where, handler)
            table[obj], owner[obj] = handler, module.__name__
        for family in getattr(module, "FAMILIES", ()):
            if len(family) != 3 or not isinstance(family[0], str) or not callable(family[1]):
                raise ImportError(f"translate.codegen.builtins: a family of {module.__name__} is not "
                                  "(what, predicate, handler)")
            _check_handler(f"the family '{family[0]}' ({module.__name__})", family[2])
            families.append(family)
    return table, tuple(families)


TABLE, FAMILIES = build(PROVIDERS)


def handler_for(obj):
    """The handler of a called object, or None."""
    try:
        handler = TABLE.get(obj)
    except TypeError:  # an unhashable object: no entry, maybe a family's
        handler = None
    if handler is not None:
        return handler
    for _, predicate, family_handler in FAMILIES:
        if predicate(obj):
            return family_handler
    return None


def attribute(tr, obj, attr, sub, node):
    """An attribute of a CUDA object that is a C value (``cuda.threadIdx.x``, ``cuda.laneid``), else None."""
    if obj in DIM3 and attr in ("x", "y", "z"):
        return CExpr(f"{DIM3[obj]}.{attr}", "uint32", types.int32, nonneg=True)
    if sub is stubs.laneid:
        tr.helpers.add("nk_laneid")
        return CExpr("nk_laneid()", "int32", types.int32, nonneg=True)
    if sub is stubs.warpsize:
        return CExpr("warpSize", "int32", types.int32, nonneg=True)
    return None


def _method(tr, node: ast.Call):
    """A method call on a value (``x.bit_count()``, ``z.conjugate()``, ``grid.sync()``), or None."""
    if not isinstance(node.func, ast.Attribute):
        return None
    attr = node.func.attr
    if attr == "view" and len(node.args) == 1:
        return _view(tr, node)
    if attr in reductions.METHODS:
        return reductions.method(tr, node)
    if attr not in ("bit_count", "conjugate", "sync") or node.args:
        return None
    base = tr.value(node.func.value)
    if attr == "bit_count" and isinstance(base, CExpr) and is_int(base.key):  # numba-cuda: cuda.popc(x)
        popc = ast.copy_location(ast.Call(func=node.func, args=[node.func.value], keywords=[]), node)
        return intrinsics.call(tr, cuda.popc, popc)
    if attr == "conjugate" and isinstance(base, CExpr) and base.key is not None:
        return mathfuncs.conjugate(tr, base, node)
    if attr == "sync" and isinstance(base, Static) and isinstance(base.obj, intrinsics.GridGroup):
        return intrinsics.grid_sync(tr, node)
    return None


def _view(tr, node: ast.Call):
    """``x.view(np.int32)``: an array's memory, or a number's bits, as another type (numba's ``view``)."""
    assert isinstance(node.func, ast.Attribute)
    base = arrays.as_array(tr, tr.value(node.func.value), node.func.value)
    nbt = tr.signature(node).return_type
    if isinstance(base, arrays.ArrayInfo):
        return tr.viewed(arrays.reinterpreted(tr, base, nbt, node))
    if isinstance(base, CExpr) and base.key is not None:
        key = tr.scalar_key(nbt)
        if key is None or arrays.itemsize(key) != arrays.itemsize(base.key):
            raise tr.src.error(node, f"a view of {base.key} as {nbt}: numba views a number as a type of its size")
        tr.helpers.add("nk_bits")
        return CExpr(f"nk_bits<{c_name(key)}>({base.code})", key, nbt, PRIMARY, pure=base.pure)
    raise tr.src.error(node, "only arrays and numbers have a view(dtype)")


def call(tr, node: ast.Call) -> CExpr | TupleVal:
    """The C of a call in an expression."""
    method = _method(tr, node)
    if method is not None:
        return method
    f = tr.value(node.func)
    if not isinstance(f, Static):
        raise tr.src.error(node.func, "only functions can be called", hint=SUPPORTED_CALLS)
    obj = f.obj
    if node.keywords and obj is not cuda.syncwarp and not calls.is_device_function(obj) and \
            not pybuiltins.is_namedtuple_class(obj):
        raise tr.src.error(node, "keyword arguments are supported only in cuda.shared.array/local.array",
                           hint="pass the arguments by position")
    handler = handler_for(obj)
    if handler is None:
        name = getattr(obj, "__qualname__", None) or repr(obj)
        raise tr.src.error(node, f"calling '{name}' is not supported in a kernel", hint=SUPPORTED_CALLS)
    return handler(tr, obj, node)
