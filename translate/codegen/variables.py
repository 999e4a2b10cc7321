"""C variables for Python names whose SSA versions have different types, and for tuple-typed locals.

Numba gives every assignment its own SSA version, each with its own type: ``m = -math.inf`` (float64) ...
``m = part[0]`` (float32) is valid Numba. A C variable has one type, so such a name gets one C variable per type:
the first type keeps the name (``m``), the others get a type suffix (``m_f32``). Which variable a use of the name
means comes from numba's typed IR (the versions stored and read on that source line); where numba converts one
version into another (its phi copies, at the end of the assignment's block) the C assigns the converted value
right after the assignment, which is the same: no other version of the name is live in between.

A tuple-typed local (``bin = (tx, ty)``) is one C variable per element (``bin_0``, ``bin_1``); a tuple of tuples
one per number, nested as the tuple is (``pairs = ((1, 2), (3, 4))``: ``pairs_0_0`` ... ``pairs_1_1``)."""

from __future__ import annotations

from dataclasses import dataclass

from numba.cuda import types

from .cexpr import CExpr, TupleVal

SUFFIX = {"float16": "f16", "float32": "f32", "float64": "f64", "int8": "i8", "int16": "i16", "int32": "i32",
          "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64", "bool": "b",
          "complex64": "c64", "complex128": "c128"}


@dataclass
class CVar:
    cname: str
    key: str | None   # scalar key of its C type
    nbt: object       # numba type


def is_number_tuple(t, scalar_key) -> bool:
    """A tuple whose items are numbers, or tuples of them at any depth: C holds it as one variable per number."""
    return isinstance(t, types.BaseTuple) and len(t) > 0 and all(
        scalar_key(x) is not None or is_number_tuple(x, scalar_key) for x in t)


def tuple_cvars(t, scalar_key, claim, stem, given=None) -> list:
    """One CVar per number of the tuple type ``t``, nested as ``t`` is: item ``j`` of item ``i`` is ``stem_i_j``.
    ``given``: the C names of a flat tuple's items, where they are named already (a kernel's parameters)."""
    return [tuple_cvars(x, scalar_key, claim, f"{stem}_{i}") if isinstance(x, types.BaseTuple) else
            CVar(given[i] if given else claim(f"{stem}_{i}"), scalar_key(x), x) for i, x in enumerate(t)]


def leaves(tree) -> list:
    """The CVars (or values) of a nested list, in order."""
    if not isinstance(tree, list):
        return [tree]
    return [leaf for item in tree for leaf in leaves(item)]


def leaf_types(t) -> list:
    """The number types of a (nested) tuple type, in order."""
    return [y for x in t for y in (leaf_types(x) if isinstance(x, types.BaseTuple) else [x])]


def leaf_values(v) -> list:
    """The items of a (nested) tuple value, in order."""
    return [y for x in v.items for y in (leaf_values(x) if isinstance(x, TupleVal) else [x])]


def shaped(values: list, t) -> TupleVal:
    """The tuple of type ``t`` whose numbers, in order, are ``values``."""
    items, rest = [], iter(values)
    for x in t:
        if isinstance(x, types.BaseTuple):
            n = len(leaf_types(x))
            items.append(shaped([next(rest) for _ in range(n)], x))
        else:
            items.append(next(rest))
    return TupleVal(items, tuple(getattr(t, "fields", ())))


def tree_value(tree, t) -> TupleVal:
    """The tuple of type ``t`` that a nested list of CVars holds."""
    return shaped([CExpr(v.cname, v.key, v.nbt) for v in leaves(tree)], t)


def retyped_vars(tr, name, versions) -> dict | None:
    """{numba type: CVar (a scalar) or [CVar] (a tuple)} for a name stored with several types; None if some
    version is neither."""
    out = {}
    stem = tr.local_c[name].rstrip("_")
    for i, t in enumerate(versions.types):
        key = tr.scalar_key(t)
        if key is not None:
            out[t] = CVar(tr.local_c[name] if i == 0 else tr.out.names.claim(f"{stem}_{SUFFIX.get(key, key)}"), key, t)
        elif is_number_tuple(t, tr.scalar_key):
            prefix = stem if i == 0 else tr.out.names.claim(f"{stem}_{i + 1}")
            out[t] = tuple_cvars(t, tr.scalar_key, tr.out.names.claim, prefix)
        else:
            return None
    return out


def version_at(tr, name, node, kind: str):
    """The type of the version of ``name`` stored (``kind='store'``) or read (``'load'``) at ``node``'s line, or a
    located TranslationError when numba's IR does not tell one type there."""
    versions = tr.ctx.typed.retyped[name]
    line = tr.src.first_line + node.lineno - 1
    found = (versions.stores if kind == "store" else versions.loads).get(line, [])
    uniq = []
    for t in found:
        if t not in uniq:
            uniq.append(t)
    if len(uniq) != 1:
        what = ", ".join(str(t) for t in uniq) or "none"
        raise tr.src.error(node, f"'{name}' takes different types in different places and this line "
                           f"{'assigns' if kind == 'store' else 'reads'} {what}: the C code cannot tell which "
                           "variable it means", hint="use a separate name for each type")
    return uniq[0]


def copies_after_store(tr, name, node, stored_type) -> list[tuple]:
    """(from CVar, to CVar) for each conversion numba makes of the version stored at ``node``'s line."""
    versions = tr.ctx.typed.retyped[name]
    line = tr.src.first_line + node.lineno - 1
    cvars = tr.retyped[name]
    out, current = [], {stored_type}
    for src, dst in versions.copies.get(line, []):  # in IR order: a copy of a copy follows the first
        if src in current and dst not in current:
            out.append((cvars[src], cvars[dst]))
            current.add(dst)
    return out
