"""numpy's reductions of a whole array in C: ``x.sum()``, ``np.prod(x)``, ``x.argmin()``, ``np.var(x)``, ... each as
numba-cuda computes it (its ``np/arraymath.py``: a loop over the items in one order, in the types its typing
gives), by a helper of ``helpers.py`` that walks the array's (extent, stride) pairs. Result types come from Numba's
typing of the call."""

from __future__ import annotations

import ast

import numpy as np
from numba.cuda import types

from ..cnames import COMPLEX, c_name, is_float, scalar_key
from .cexpr import MUL, PRIMARY, CExpr, cast, float_literal, paren

#: the reductions, by the name of numba's method; np.<name>(x) is the same loop (``np.nansum`` and
#: ``np.count_nonzero`` have no method)
METHODS = ("sum", "mean", "prod", "argmin", "argmax", "all", "any", "var", "std")
FUNCTIONS = {getattr(np, name): name for name in (*METHODS, "nansum", "count_nonzero")}
#: reductions whose helper takes the items in numba's ``.flat`` order (the array's index order whatever its layout);
#: the others follow ``np.nditer``, the memory's order of an array numba types as Fortran-ordered
FLAT_ORDER = ("argmin", "argmax")
#: the helpers.py block of each helper that is not in "nk_array_reductions"
HELPER_BLOCKS = {"nk_sum_of": "nk_reductions", "nk_min_of": "nk_reductions", "nk_max_of": "nk_reductions",
                 "nk_sum_nd": "nk_sum_nd"}


def over_items(tr, helper, info, rkey, nbt, layout="C", extra=()):
    """``helper<R>(pointer, [extra...,] extent, stride, ...)``: numba's loop over the items of ``info``, an (extent,
    stride) pair per dimension, outermost loop first. numba's ``np.nditer`` goes in C order (the last index fastest),
    or the reverse for an array numba types as Fortran-ordered (``layout`` "F": the first index fastest, a ``.T`` of
    a C-contiguous array in its memory's order); ``.flat`` goes in C order whatever the layout. ``rkey``: the
    helper's type argument (None: it takes none); it returns ``nbt``."""
    from . import arrays

    pairs = [f"{e.code}, {s.code}" for e, s in zip(info.extents, arrays.element_strides(info))]
    dims = ", ".join(reversed(pairs) if layout == "F" else pairs)
    if helper == "nk_sum_of" and info.ndim > 1:
        helper = "nk_sum_nd"
    tr.helpers.add(HELPER_BLOCKS.get(helper, "nk_array_reductions"))
    template = f"<{c_name(rkey)}>" if rkey is not None else ""
    args = ", ".join([arrays.base_pointer(info), *extra, dims])
    return CExpr(f"{helper}{template}({args})", scalar_key(nbt), nbt, PRIMARY)


def _item_count(info) -> str:
    """The C of the number of items of ``info`` (``x.size``)."""
    if info.ndim == 1:
        return paren(info.extents[0], MUL + 1)
    return "(" + " * ".join(paren(e, MUL if k == 0 else MUL + 1) for k, e in enumerate(info.extents)) + ")"


def reduce(tr, name: str, info, node, spelled: str) -> CExpr:
    """``x.<name>()`` / ``np.<name>(x)`` (as the kernel ``spelled`` it) of ``info``, an array of real numbers or
    booleans (counted as 0 and 1), as numba-cuda computes it:

    - ``sum``: ``c = R(0); for v in np.nditer(x): c = c + v``, R the type numba gives the result (the item type, an
      integer widened to 64 bits); ``mean``: the sum in float64 for integers (else the item type), divided by the
      number of items; ``prod``: from ``R(1)``, times each item; ``nansum``: the sum of the items that are not NaN;
    - ``argmin``/``argmax``: the ``.flat`` index of the first smallest/largest item, or of the first NaN; no items
      raise, which ends the thread;
    - ``all``/``any``: whether every/some item is true (not 0: NaN is true); ``count_nonzero``: how many are;
    - ``var``: the mean as above, then the sum of the squared differences from it, in float64, over the number of
      items; ``std``: ``var ** 0.5``."""
    sig = tr.signature(node)
    rkey = scalar_key(sig.return_type)
    if info.extents is None or rkey is None or info.key in (None, *COMPLEX):
        raise tr.src.error(node, f"{spelled} is supported on arrays of real numbers", hint="a loop over the items")
    layout = getattr(info.nbt, "layout", "C")  # numba's type of the array: a .T of a C-contiguous one is "F"
    if name == "sum":
        return over_items(tr, "nk_sum_of", info, rkey, sig.return_type, layout)
    if name == "mean":
        acc = info.key if is_float(info.key) else "float64"
        total = cast(over_items(tr, "nk_sum_of", info, acc, getattr(types, acc), layout), rkey)
        return CExpr(f"{paren(total, MUL)} / {_item_count(info)}", rkey, sig.return_type, MUL)
    if name in ("prod", "nansum"):
        return over_items(tr, f"nk_{name}_of", info, rkey, sig.return_type, layout)
    if name in ("all", "any", "count_nonzero", *FLAT_ORDER):  # the first three do not depend on the order
        result = types.boolean if name in ("all", "any") else types.int64
        return cast(over_items(tr, f"nk_{name}_of", info, None, result), rkey, sig.return_type)
    acc = info.key if is_float(info.key) else "float64"  # var, std: the mean's sum, as ``mean`` adds it
    var = over_items(tr, "nk_var_of", info, acc, types.float64, layout, extra=(_item_count(info),))
    if name == "var":
        return cast(var, rkey, sig.return_type)
    half = CExpr(float_literal(0.5), "float64", types.float64, PRIMARY, literal=0.5)
    std = tr.binop("**", var, half, node, sig=types.float64(types.float64, types.float64))
    return cast(std, rkey, sig.return_type)


def method(tr, node: ast.Call):
    """``x.sum()``, ``x.argmax()``, ... of an array, or None when ``node`` is no such call."""
    from . import arrays

    assert isinstance(node.func, ast.Attribute)
    if node.func.attr not in METHODS or node.args or node.keywords:
        return None
    info = arrays.as_array(tr, tr.value(node.func.value), node.func.value)
    if not isinstance(info, arrays.ArrayInfo):
        return None
    return reduce(tr, node.func.attr, info, node, f".{node.func.attr}()")


def _function(tr, obj, node):
    """``np.sum(x)``, ``np.argmax(x)``, ``np.count_nonzero(x)``, ...: the whole array's reduction."""
    from . import arrays

    name = FUNCTIONS[obj]
    if len(node.args) != 1 or node.keywords:
        raise tr.src.error(node, f"np.{name}(x) of a whole array, without an axis or dtype",
                           hint="a loop over the items")
    info = arrays.as_array(tr, tr.value(node.args[0]), node.args[0])
    if not isinstance(info, arrays.ArrayInfo):
        raise tr.src.error(node.args[0], f"np.{name}() of an array", hint="a loop over the items")
    return reduce(tr, name, info, node, f"np.{name}(x)")


def _trace(tr, obj, node):
    """``np.trace(a[, offset])`` of a 2-D array, numba's (its linalg ``matrix_trace_impl``): the diagonal's sum
    from 0 in the type its typing gives the result (float64 for float32 items, int64 for integers)."""
    from . import arrays

    info = arrays.as_array(tr, tr.value(node.args[0]), node.args[0]) if node.args else None
    if not isinstance(info, arrays.ArrayInfo) or info.ndim != 2 or info.extents is None or \
            info.key in (None, "bool", *COMPLEX):
        raise tr.src.error(node, "np.trace of a 2-D array of real numbers", hint="a loop over the diagonal")
    offset = tr.expr(node.args[1]) if len(node.args) > 1 else tr.expr(node.keywords[0].value) if node.keywords \
        else CExpr("0", "int64", types.literal(0), literal=0)
    sig = tr.signature(node)
    rkey = scalar_key(sig.return_type)
    return over_items(tr, "nk_trace_of", info, rkey, sig.return_type, extra=(cast(offset, "int64").code,))


# -- the table (translate.codegen.builtins merges it) -----------------------------------------------------------
BUILTINS = {**{obj: _function for obj in FUNCTIONS}, np.trace: _trace}
