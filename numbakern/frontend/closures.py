"""What a kernel function reads from outside itself: its closure cells (the constants a ``@specialize`` factory baked
in, ``tw``) and its module's globals. The one place in numbakern and ``translate`` that reads closure cells: the
simulator (swapping in its ``cuda`` module, rewriting a typed kernel), ``unroll`` and the translator (typing an
instantiation, the code generator, the dependency analysis, ``translate --check``) all ask here.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any

#: what ``lookup`` returns for a name the function can not see
MISSING = object()


def free_names(pyfunc: types.FunctionType) -> tuple[str, ...]:
    """The names ``pyfunc`` reads from its closure, in the order Python lists them."""
    return pyfunc.__code__.co_freevars


def closure_values(pyfunc: types.FunctionType) -> dict[str, Any]:
    """``{name: value}`` of ``pyfunc``'s closure cells (an empty cell, a name not yet bound, is left out)."""
    out = {}
    for name, cell in zip(pyfunc.__code__.co_freevars, pyfunc.__closure__ or ()):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    return out


def cells(pyfunc: types.FunctionType) -> tuple:
    """``pyfunc``'s closure cells themselves, in the order of ``free_names`` (to swap a value in for a while)."""
    return pyfunc.__closure__ or ()


def cell_values(pyfunc: types.FunctionType) -> tuple:
    """The values in ``pyfunc``'s closure cells, in the order of ``free_names`` (an empty cell: None)."""
    return tuple(cell_value(c) for c in cells(pyfunc))


def cell_value(cell, default: Any = None) -> Any:
    """The value in ``cell``; ``default`` for an empty cell (a name not yet bound)."""
    try:
        return cell.cell_contents
    except ValueError:
        return default


def set_cell_value(cell, value: Any) -> None:
    cell.cell_contents = value


def lookup(pyfunc: types.FunctionType, name: str) -> Any:
    """The value ``name`` has inside ``pyfunc``, as Python resolves a name the function does not assign: its closure,
    then its module's globals (builtins are the caller's business); ``MISSING`` when neither has it."""
    closure = closure_values(pyfunc)
    if name in closure:
        return closure[name]
    if name in pyfunc.__code__.co_freevars:
        return MISSING  # a closure name whose cell is still empty
    return pyfunc.__globals__.get(name, MISSING)


def with_closure(pyfunc: types.FunctionType, overrides: Mapping[str, Any],
                 namespace: dict | None = None) -> types.FunctionType:
    """A copy of ``pyfunc`` whose closure variables named in ``overrides`` have new values (``--const tw=32``);
    ``namespace``: the globals the copy reads instead of ``pyfunc``'s."""
    if not overrides and namespace is None:
        return pyfunc
    cells = []
    for name, cell in zip(pyfunc.__code__.co_freevars, pyfunc.__closure__ or ()):
        cells.append(types.CellType(overrides[name]) if name in overrides else cell)
    f = types.FunctionType(pyfunc.__code__, pyfunc.__globals__ if namespace is None else namespace,
                           pyfunc.__name__, pyfunc.__defaults__, tuple(cells) if pyfunc.__closure__ else None)
    f.__qualname__ = pyfunc.__qualname__
    f.__module__ = pyfunc.__module__
    return f
