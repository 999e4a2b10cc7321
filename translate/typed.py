"""Numba's types of a function (``numbakern.frontend.function_types``) as the code generator declares them: one C
variable per Python name, Numba's SSA versions ``p``, ``p.1``, ... merged into one declaration where they can be.

Where one Python name takes different types in different places: integer versions are declared with the widest
integer type (every value of the narrower ones fits, and Numba widens integer arithmetic to 64 bits anyway);
any other mix (int and float, float32 and float64, array and scalar) is reported as a ``TranslationError`` at
the name's first assignment, asking for separate names, unless the code generator gives each type a variable of
its own (``retyped``: where each type is stored and read).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from numba.cuda import types

from numbakern.frontend.record import FunctionRecord, Versions, completed
from numbakern.frontend.record import type_function as record_function

from .cnames import _INT_BITS, is_int, is_signed, scalar_key


@dataclass(frozen=True)
class TypedFunction:
    argtypes: tuple[types.Type, ...]
    return_type: types.Type
    record: FunctionRecord                          # numba's operations, on the function's syntax tree
    var_types: dict[str, types.Type]                # Python name -> numba type (merged over SSA versions)
    conflicts: dict[str, list[str]] = field(default_factory=dict)  # name -> the differing types, as text
    #: for a name whose SSA versions have types that do not merge: where each type is stored and read (by source
    #: line) and where numba converts one version into another (the copies that its phi nodes become)
    retyped: dict[str, Versions] = field(default_factory=dict)
    #: locals numba types as a literal (a single assignment of a constant, e.g. ``N = 100``): name -> value
    literals: dict[str, Any] = field(default_factory=dict)


def evaluation(typed: TypedFunction, node, which: int, of: int) -> TypedFunction:
    """``typed`` as the ``which``-th of ``of`` evaluations of an expression Python compiles more than once sees it
    (``FunctionRecord.evaluation``: a while loop's test)."""
    record = typed.record.evaluation(node, which, of)
    return replace(typed, record=record, retyped={name: record.retyped[name] for name in typed.retyped})


def type_function(pyfunc, argtypes: tuple, return_type=None, others: tuple = ()) -> TypedFunction:
    """The front end's types of ``pyfunc`` for ``argtypes`` (``return_type`` None: a kernel), merged per name; raises
    numba's TypingError if numba rejects it. ``others``: the same kernel with the closure values of a template's
    other instantiations, whose records complete ``pyfunc``'s where numba pruned a branch on a constant."""
    found = record_function(pyfunc, argtypes, return_type)
    if others:
        found = completed(found, tuple(record_function(f, argtypes, return_type) for f in others))
    merged, conflicts = {}, {}
    for name, ts in sorted(found.versions.items()):
        t = _merge(ts)
        if t is None:
            conflicts[name] = sorted({str(types.unliteral(x)) for x in ts})
            merged[name] = ts[0]
        else:
            merged[name] = t
    retyped = {name: found.retyped[name] for name in conflicts}
    return TypedFunction(found.argtypes, found.return_type, found, merged, conflicts, retyped,
                         dict(found.literals))


def _merge(ts: list):
    """One type for all SSA versions of a name, when there is one: integers of any width merge into the widest
    integer type that holds every value (numba widens integer arithmetic to 64 bits anyway), tuples elementwise.
    None when the versions need separate C variables."""
    uniq = []
    for t in ts:
        t = types.unliteral(t)
        if t not in uniq:
            uniq.append(t)
    if len(uniq) == 1:
        return uniq[0]
    if all(isinstance(t, types.BaseTuple) for t in uniq) and len({len(t) for t in uniq}) == 1:
        items = [_merge([t[i] for t in uniq]) for i in range(len(uniq[0]))]
        return None if any(i is None for i in items) else types.BaseTuple.from_types(items)
    keys = [k for k in (scalar_key(t) for t in uniq) if k is not None]
    if len(keys) == len(uniq) and all(is_int(k) for k in keys):
        signed = [k for k in keys if is_signed(k)]
        unsigned = [k for k in keys if not is_signed(k)]
        widest = max(keys, key=lambda k: _INT_BITS[k])
        if not unsigned:
            return types.int64 if widest == "int64" else getattr(types, widest)
        if not signed:
            return getattr(types, widest)
        ws, wu = max(_INT_BITS[k] for k in signed), max(_INT_BITS[k] for k in unsigned)
        if ws > wu:
            return getattr(types, f"int{ws}")
    return None
