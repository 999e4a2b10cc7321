"""``unroll`` on numba-cuda-mlir where a loop was not expanded (``numbakern.unroll``): the range itself, so the loop
stays rolled and correct, as numba-cuda's overload of it does."""

from __future__ import annotations

from .support import TypingError, check_integer, define, signature, types


def _typer(r=None, times=None, *rest):
    if r is None or rest:
        raise TypingError("unroll: takes range(...) and, optionally, the copies of the body per iteration")
    if not isinstance(r, types.RangeType):
        raise TypingError(f"unroll: takes a range(...), got {r}")
    if times is None:
        return signature(r, r)
    check_integer("unroll", "times", times)
    return signature(r, r, times)


def register(unroll) -> None:
    define(unroll, _typer, lambda builder, args: builder.load_var(args[0]))
