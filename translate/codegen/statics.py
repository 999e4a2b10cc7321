"""Which arguments of a device-function call numba treats as compile-time values, and where a callee needs such a
value at compile time (so the C must specialise the function for it instead of passing it)."""

from __future__ import annotations

import ast

from numba.cuda import types


#: numba types of arguments that are compile-time values in a call (the callee is specialized for them)
def is_static_type(t) -> bool:
    if isinstance(t, (types.Literal, types.NumberClass, types.DType, types.Function, types.Dispatcher,
                      types.Module, types.Omitted, types.NoneType)):
        return True
    if isinstance(t, types.BaseTuple):
        return any(is_static_type(x) for x in t)
    return False


def needs_value(fn, name: str, static_names: set) -> bool:
    """Does the function use its literal parameter ``name`` where numba needs the value at compile time: a
    shared/local/const array shape, ``cuda.grid``'s argument, an argument passed on, or a condition that only
    compile-time names make up (numba prunes such a branch; the C keeps only the side numba typed)?"""
    def names(node):
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}

    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            f = node.func
            attr = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if attr in ("array", "array_like", "grid", "gridsize"):
                shape = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "shape")]
                if any(name in names(s) for s in shape):
                    return True
            elif any(isinstance(a, ast.Name) and a.id == name for a in node.args):
                return True  # passed on: the callee may need it
        if isinstance(node, (ast.If, ast.While, ast.IfExp)):
            used = names(node.test)
            if name in used and used <= static_names:
                return True
    return False
