"""Numba's typing context answering the translator's questions about a kernel it generates code for: the signature
numba gives a call or an operator, numba's type of a Python object the kernel uses, the type both branches of a
conditional expression unify to (in a process with numba's real CUDA target).
"""

from __future__ import annotations

from numba import cuda
from numba.cuda import stubs, types

from .target import cuda_typing, typing_context


def resolve_call(fn, argtypes, kws=None):
    """numba's signature for calling ``fn`` (a Python object or numba function type) with ``argtypes``."""
    # a numba type called as a function (float32(x)) is typed as its class; other types are function types
    called_type = isinstance(fn, (types.Number, types.Boolean))
    fnty = fn if isinstance(fn, types.Type) and not called_type else static_type(fn)
    if fnty is None:
        raise TypeError(f"numba has no type for {fn!r}")
    ctx = typing_context()
    with cuda_typing():
        return ctx.resolve_function_type(fnty, tuple(argtypes), dict(kws or {}))


def static_type(obj):
    """numba's type of a Python object used in a kernel: a function, a dtype, or a CUDA stub such as
    ``cuda.atomic.add`` or ``cuda.popc``, which numba types through the ``cuda`` module's attributes."""

    ctx = typing_context()
    with cuda_typing():
        try:
            return ctx.resolve_value_type(obj)
        except Exception:  # noqa: BLE001 - stubs have no typeof: below
            pass
        if isinstance(obj, type) and issubclass(obj, stubs.Stub):
            ctx.refresh()
            t = ctx.resolve_value_type(cuda)
            for part in obj.__qualname__.split("."):
                t = ctx.resolve_getattr(t, part) if t is not None else None
            return t
    return None


def unify_types(*ts):
    """The type numba unifies ``ts`` to (a conditional expression's branches), None where there is none."""
    return typing_context().unify_types(*ts)
