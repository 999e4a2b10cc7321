"""Arrays: a kernel's array argument is a pointer plus its extents (``m.shape`` -> ``m_shape0, m_shape1``,
``m[r, c]`` -> ``m[r * m_shape1 + c]``, C-contiguous); shared and local arrays are C arrays
(``__shared__ float tile[TILE][TILE + 1];``); the dynamic shared array is ``extern __shared__ float shar[];``
and 1-D slices of it are pointer views (``float *ns = shar + tw * tw;``)."""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from ..cnames import c_name, is_int, scalar_key
from ..writes import root_name
from .cexpr import ADD, MUL, PRIMARY, CExpr, TupleVal, cast, paren


@dataclass
class ArrayInfo:
    name: str
    kind: str                  # 'param' | 'shared' | 'local' | 'dynamic' | 'view' | 'const'
    key: str                   # element type
    ndim: int
    extents: Any               # CExpr per dimension (a list), or None where unknown (dynamic shared memory)
    nbt: Any = None
    strides: list | None = None  # CExpr per dimension (in elements) for arrays that are not C-contiguous
    owner: str | None = None     # a view: the C name of the array it is part of (written through the view)


def is_kind(tr, info, *kinds: str) -> bool:
    """``info`` is an array of one of ``kinds``, or an array parameter of a device function: that one is whatever
    array its caller passes (a shared tile, a register array), as a pointer in the C."""
    return isinstance(info, ArrayInfo) and (info.kind in kinds or tr.ctx.kind == "device" and info.kind == "param")


@dataclass
class Row:
    """``a[i]`` of an array with more dimensions than indices: the indices given so far, so that ``tile[a][b]``
    indexes on into ``tile[a, b]`` (numba's view of a row, then its element)."""
    array: ArrayInfo
    values: list               # the evaluated indices, one per leading dimension
    nodes: list                # their AST nodes (to locate errors)

    @property
    def name(self) -> str:
        return self.array.name


def param_array(name: str, nbt, extents, strides, tr) -> ArrayInfo:
    """A kernel or device function array parameter: the pointer ``name``, its extents and (for an array that is
    not C-contiguous) its strides, all C parameters."""
    from numba.cuda import types

    key = tr.scalar_key(nbt.dtype)
    ext = [CExpr(e, "int64", types.int64, nonneg=True) for e in extents]
    st = [CExpr(s, "int64", types.int64) for s in strides] if strides else None
    return ArrayInfo(name, "param", key, nbt.ndim, ext, nbt, st)


def element(tr, info, index: ast.AST, node: ast.AST, offset: bool = False) -> CExpr:
    """The C lvalue for ``info[index]`` (``index``: the subscript's AST; a name holding a tuple indexes every
    dimension with its elements); ``info`` may be a ``Row`` (``tile[a]``, indexed on). With ``offset``: the element's
    offset from the array's pointer."""
    found = _indexed(tr, info, index, node, False, offset)
    assert isinstance(found, CExpr)
    return found


def element_or_row(tr, info, index: ast.AST, node: ast.AST) -> CExpr | Row:
    """``element``, or with fewer indices than dimensions a ``Row`` (``tile[a]``: indexed on as ``tile[a, b]``)."""
    return _indexed(tr, info, index, node, True, False)


def _indexed(tr, info, index: ast.AST, node: ast.AST, partial: bool, offset: bool) -> CExpr | Row:
    idx_nodes = index.elts if isinstance(index, ast.Tuple) else [index]
    if any(isinstance(i, ast.Slice) for i in idx_nodes):
        raise tr.src.error(node, "slicing is supported only to make a 1-D view of the dynamic shared array",
                           hint="index every dimension (m[r, c]); or `ms = shar[a:b]` of cuda.shared.array(0, ...)")
    if isinstance(info, (ArrayInfo, Row)) and (info.array if isinstance(info, Row) else info).kind in ("shared",
                                                                                                        "local"):
        with tr.c_index():  # an index of a C array: C's own 32-bit arithmetic where it is exact
            values = [tr.value(i) for i in idx_nodes]
    else:
        values = [tr.value(i) for i in idx_nodes]
    if len(values) == 1 and isinstance(values[0], TupleVal):  # x[t] with t = (i, j)
        values, idx_nodes = list(values[0].items), idx_nodes * len(values[0].items)
    if isinstance(info, Row):
        values, idx_nodes, info = info.values + values, info.nodes + idx_nodes, info.array
    if partial and len(values) < info.ndim:
        return Row(info, values, idx_nodes)
    return element_at(tr, info, values, node, idx_nodes, offset)


def row_array(tr, row: Row, node: ast.AST) -> ArrayInfo:
    """``a[i]`` of an array with more dimensions, as an array of its own (numba's view: passed to a device function):
    a pointer to the row's first element, the remaining extents (and strides, if the array has them)."""
    from numba.cuda import types

    info, k = row.array, len(row.values)
    if info.extents is None:
        raise tr.src.error(node, f"a row of '{info.name}' (dynamic shared memory) cannot be passed on: its extent is "
                           "not known to the C code")
    idxs = _indices(tr, info, row.values, row.nodes)
    zero = CExpr("0", "int64", types.literal(0), literal=0, nonneg=True)
    if info.kind in ("shared", "local"):
        pointer = "&" + info.name + "".join(f"[{i.code}]" for i in idxs) + "[0]" * (info.ndim - k)
    else:
        off = flat_offset(info, idxs + [zero] * (info.ndim - k))
        pointer = f"({info.name} + {paren(off, ADD + 1)})" if off.code != "0" else info.name
    layout = "C" if getattr(info.nbt, "layout", "C") == "C" and not info.strides else "A"
    nbt = types.Array(info.nbt.dtype, info.ndim - k, layout) if info.nbt is not None else None
    return ArrayInfo(pointer, "view_expr", info.key, info.ndim - k, list(info.extents[k:]), nbt,
                     list(info.strides[k:]) if info.strides else None, owner=info.owner or info.name)


def _indices(tr, info: ArrayInfo, values: list, idx_nodes: list) -> list:
    """The evaluated indices of ``info``'s leading dimensions, wrapped where they may be negative."""
    idxs = []
    for d, (inode, i) in enumerate(zip(idx_nodes, values)):
        if not isinstance(i, CExpr):
            raise tr.src.error(inode, "array indices must be integers", hint="int(...) the index")
        if i.key in ("float32", "float64"):  # numba typed it: an atomic's index, converted like numba's fptosi
            i = cast(i, "int64")
        elif not is_int(i.key) and not is_int(scalar_key(i.nbt)):
            raise tr.src.error(inode, "array indices must be integers", hint="int(...) the index")
        idxs.append(_wrapped(tr, info, d, i, inode))
    return idxs


def element_at(tr, info: ArrayInfo, values: list, node: ast.AST, idx_nodes=None, offset: bool = False) -> CExpr:
    """The C lvalue for ``info`` indexed by the (already evaluated) ``values``, one per dimension (with ``offset``,
    an array with a pointer: the element's offset from it instead)."""
    idx_nodes = idx_nodes or [node] * len(values)
    if len(values) != info.ndim:
        raise tr.src.error(node, f"'{info.name}' has {info.ndim} dimension(s) but is indexed with {len(values)}",
                           hint="index every dimension of an array: whole-row views are not supported")
    idxs = _indices(tr, info, values, idx_nodes)
    elem_nbt = getattr(info.nbt, "dtype", None) if info.nbt is not None else None
    if info.kind in ("shared", "local"):
        code = info.name + "".join(f"[{i.code}]" for i in idxs)
        return CExpr(code, info.key, elem_nbt, PRIMARY, pure=all(i.pure for i in idxs))
    off = flat_offset(info, idxs)
    if offset:
        return CExpr(off.code, "int64", None, off.prec, pure=all(i.pure for i in idxs))
    return CExpr(f"{info.name}[{off.code}]", info.key, elem_nbt, PRIMARY, pure=all(i.pure for i in idxs))


def flat_offset(info: ArrayInfo, idxs: list) -> CExpr:
    """The element offset of (already wrapped) indices ``idxs`` into an array with a pointer and extents."""
    if info.strides:
        terms = [f"{paren(i, MUL)} * {st.code}" for i, st in zip(idxs, info.strides) if i.literal != 0]
        return CExpr(' + '.join(terms) or '0', "int64", None, ADD if len(terms) > 1 else MUL)
    off = idxs[0]
    for d in range(1, info.ndim):
        ext = info.extents[d]
        prod = CExpr(f"{paren(off, MUL)} * {ext.code}", "int64", None, MUL) if off.literal != 0 else None
        if prod is None:
            off = idxs[d]
        elif idxs[d].literal == 0:
            off = prod
        else:
            off = CExpr(f"{prod.code} + {paren(idxs[d], ADD)}", "int64", None, ADD)  # integer + is associative
    return off


def _wrapped(tr, info: ArrayInfo, d: int, i: CExpr, inode) -> CExpr:
    if i.nonneg:
        tr.assumed |= i.deps
        return i
    if inode is not None and (tr.relational_nonneg(inode) or tr.flow_nonneg(inode)):
        return i  # t + r + o with o in range(-r, ...); s[idx - stride] with idx = (t + 1) * 2 * stride - 1
    if info.extents is None or info.extents[d] is None:
        raise tr.src.error(
            inode, f"this index into '{info.name}' (a view of dynamic shared memory) may be negative, and numba "
            "would wrap it around the view's end, whose extent the C code does not keep",
            hint="an index that is provably >= 0 (thread/block indices, range loop variables, non-negative "
                 "arithmetic of those), or index the dynamic shared array itself")
    tr.helpers.add("nk_wrap")
    return CExpr(f"nk_wrap({i.code}, {info.extents[d].code})", "int64", i.nbt, PRIMARY, True, i.pure)


def declare_static(tr, kind: str, name: str, shape_node: ast.AST, dtype_node: ast.AST, node,
                   alignment: ast.AST | None = None, pyname: str | None = None) -> tuple[str, ArrayInfo]:
    """``cuda.shared.array(shape, dtype[, alignment=N])`` / ``cuda.local.array`` -> declaration line and ArrayInfo.
    The shape is a compile-time integer or tuple of them: literals and constants keep their names in the C
    (``[TPB][TPB]``), a tuple constant (``SM_SIZE = (tpb, tpb)``) gives its values."""
    from numba.cuda import types

    key = tr.dtype_key(dtype_node, node)
    nbt = tr.ctx.var_type(pyname or name)
    align = ""
    if alignment is not None:
        value = tr.const_value(alignment)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1 or value & (value - 1):
            raise tr.src.error(alignment, "alignment must be a compile-time power of two (bytes)", hint="alignment=16")
        align = f"__align__({value}) "
    ctype = c_name(key)
    exts = []
    whole = tr.const_value(shape_node)
    if isinstance(shape_node, ast.Tuple) or not isinstance(whole, tuple):
        for dnode in (shape_node.elts if isinstance(shape_node, ast.Tuple) else [shape_node]):
            value = tr.const_value(dnode)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise tr.src.error(dnode, "shared and local array shapes must be compile-time integer constants",
                                   hint="literals, module-level constants or specialization constants (tw)")
            e = tr.expr(dnode)
            if isinstance(dnode, ast.Name) and dnode.id in tr.ctx.typed.literals:  # a local: C needs the constant
                e = CExpr(str(value), "int64", e.nbt)
            exts.append(CExpr(e.code, e.key, e.nbt, e.prec, True, literal=value))
    else:
        for value in whole:
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise tr.src.error(shape_node, "shared and local array shapes must be compile-time integer constants")
            exts.append(CExpr(str(value), "int64", types.literal(value), nonneg=True, literal=value))
    if kind == "shared" and len(exts) == 1 and exts[0].literal == 0:
        # numba's extent of the dynamic array: the launch's dynamic shared bytes (%dynamic_smem_size) / itemsize
        extent = CExpr(f"nk_dynamic_smem_bytes() / {itemsize(key)}", "int64", types.int64, MUL, nonneg=True)
        info = ArrayInfo(name, "dynamic", key, 1, [extent], nbt)
        return f"extern __shared__ {ctype} {name}[];", info
    qual = ("__shared__ " if kind == "shared" else "") + align
    decl = f"{qual}{ctype} {name}" + "".join(f"[{e.code}]" for e in exts) + ";"
    return decl, ArrayInfo(name, kind, key, len(exts), exts, nbt)


def itemsize(key: str) -> int:
    import numpy as np

    if key.startswith("complex"):
        return int(key[7:]) // 8
    return np.dtype(key if key != "bool" else np.bool_).itemsize


def view(tr, name: str, base: ArrayInfo, sl: ast.Slice, node, pyname: str | None = None) -> tuple[str, ArrayInfo]:
    """``ms = shar[a:b]`` of the dynamic shared array -> ``float *ms = shar + a;``"""
    if base.kind not in ("dynamic", "view") or base.ndim != 1:
        raise tr.src.error(node, "slices are supported only of the 1-D dynamic shared array",
                           hint="`ms = shar[a:b]` where `shar = cuda.shared.array(0, dtype)`")
    if sl.step is not None:
        raise tr.src.error(sl.step, "slices with a step are not supported", hint="shar[a:b]")
    ctype = c_name(base.key)
    nbt = tr.ctx.var_type(pyname or name)
    if sl.lower is None:
        return f"{ctype} *{name} = {base.name};", ArrayInfo(name, "view", base.key, 1, None, nbt)
    lo = tr.expr(sl.lower)
    if not lo.nonneg:
        raise tr.src.error(sl.lower, "a slice start that may be negative counts from the array's end, which the C "
                                     "code does not know for dynamic shared memory",
                           hint="a slice start that is provably >= 0")
    tr.assumed |= lo.deps
    return (f"{ctype} *{name} = {base.name} + {paren(lo, ADD + 1)};",
            ArrayInfo(name, "view", base.key, 1, None, nbt))


def call_args(tr, info: ArrayInfo, want, node) -> list[str]:
    """The C arguments that pass array ``info`` to a function parameter of numba type ``want``: the pointer, the
    extents and (for a parameter that is not C-contiguous) the strides, computed for a C-contiguous array."""
    if info.extents is None:
        raise tr.src.error(node, "dynamic shared memory cannot be passed to a function (its extent is unknown)")
    pointer = info.name
    if info.kind in ("shared", "local", "const") and info.ndim > 1:  # a C array of arrays: its first element
        pointer = "&" + info.name + "[0]" * info.ndim
    out = [pointer] + [e.code for e in info.extents]
    if getattr(want, "layout", "C") != "C":
        if info.strides:
            out += [s.code for s in info.strides]
        else:  # C-contiguous: the stride of a dimension is the product of the extents after it
            out += [" * ".join(e.code for e in info.extents[d + 1:]) or "1" for d in range(info.ndim)]
    return out


# -- arrays that name other arrays ------------------------------------------------------------------------------
def alias_names(fn, array_locals: set, dynamic: Collection[str] = frozenset()) -> set:
    """Array-typed locals that name another array or a view of one (``data = buf_0``, ``seg = out[a:b]``, ``row =
    m[i]``, ``t = a.T``, ``bits = x.view(np.int32)``, ``a, b = pair``, ``for arr in (x, y)``): a C pointer with
    its extents (and strides), assigned where Python assigns the name. Not: arrays made by
    ``cuda.shared.array``/``local.array``/``const.array_like``, and views of the dynamic shared array ``dynamic``
    (``ms = shar[a:b]``: a pointer into it, its extent unknown)."""
    values: dict = {}
    unpacked: set = set()  # bound by unpacking or by a loop: `a, b = pair`, `for arr in (x, y)`
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                pairs = [(t, node.value)]
                while any(isinstance(t, ast.Tuple) and isinstance(v, ast.Tuple) and len(t.elts) == len(v.elts)
                          for t, v in pairs):  # `lo, hi = a[:n], a[n:]`: name by name, as the C assigns them
                    pairs = [p for t, v in pairs for p in (zip(t.elts, v.elts) if isinstance(t, ast.Tuple) and
                             isinstance(v, ast.Tuple) and len(t.elts) == len(v.elts) else [(t, v)])]
                for target, value in pairs:
                    if isinstance(target, ast.Name):
                        values.setdefault(target.id, []).append(value)
                    else:
                        unpacked |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.For):
            unpacked |= {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
    return {n for n in array_locals if (n in values or n in unpacked)
            and all(_names_an_array(v, dynamic) for v in values.get(n, ()))}


def _names_an_array(value, dynamic: Collection[str]) -> bool:
    if isinstance(value, ast.Name):
        return True
    if isinstance(value, ast.Call):
        return not (isinstance(value.func, ast.Attribute) and value.func.attr in ("array", "array_like"))
    if isinstance(value, (ast.Subscript, ast.Attribute)):
        return root_name(value) not in dynamic
    return isinstance(value, ast.IfExp)


def dynamic_names(tr, fn) -> set:
    """The names of the dynamic shared array (``cuda.shared.array(0, T)``) and of the views of it."""
    found: set = set()
    changed = True
    while changed:
        changed = False
        for node in ast.walk(fn):
            if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
                continue
            name, v = node.targets[0].id, node.value
            if name in found:
                continue
            shape = v.args[0] if isinstance(v, ast.Call) and v.args else next(
                (k.value for k in getattr(v, "keywords", ()) if k.arg == "shape"), None)
            dynamic = isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "array" and \
                isinstance(v.func.value, ast.Attribute) and v.func.value.attr == "shared" and shape is not None and \
                tr.const_value(shape) == 0
            if dynamic or isinstance(v, ast.Subscript) and root_name(v) in found:
                found.add(name)
                changed = True
    return found


def indirectly_written(fn, array_params: set, array_locals: Collection[str] = frozenset()) -> set:
    """Array parameters the kernel may write through another name (conservatively): those assigned to a local
    name (``data = buf_0``), those a local array names a view of (``seg = out[a:b]``, ``t = a.T``: the
    ``array_locals``), those sliced into a call's argument (``atomic.cas(res[gid:], ...)``) and those made items of
    a tuple (``for arr in (x, y)``)."""
    out = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in array_params and \
                all(isinstance(t, ast.Name) for t in node.targets):
            out.add(node.value.id)
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in array_locals
                                                for t in node.targets):
            root = root_name(node.value)
            if root in array_params:
                out.add(root)
        if isinstance(node, ast.For) and any(isinstance(n, ast.Name) and n.id in array_locals
                                             for n in ast.walk(node.target)):  # for row in m
            root = root_name(node.iter)
            if root in array_params:
                out.add(root)
        if isinstance(node, ast.Tuple) and isinstance(node.ctx, ast.Load):  # (x, y): each item named elsewhere
            out |= {e.id for e in node.elts if isinstance(e, ast.Name) and e.id in array_params}
        if isinstance(node, ast.Call):
            for a in node.args:
                if isinstance(a, ast.Subscript) and isinstance(a.slice, ast.Slice) and \
                        isinstance(a.value, ast.Name) and a.value.id in array_params:
                    out.add(a.value.id)
                elif isinstance(a, ast.Attribute) and a.attr in VIEW_ATTRIBUTES and isinstance(a.value, ast.Name) \
                        and a.value.id in array_params:  # cuda.atomic.add(acc.real, 0, v)
                    out.add(a.value.id)
    return out


#: the attributes of an array that are views of its memory
VIEW_ATTRIBUTES = ("T", "real", "imag")



def alias_info(tr, name: str, cname: str, nbt) -> ArrayInfo:
    """The C variables of an array alias: ``T *data`` and ``int64_t data_shape0`` (and strides for a layout that is
    not C-contiguous)."""
    from numba.cuda import types

    stem = cname.rstrip("_")
    ext = [CExpr(tr.out.names.claim(f"{stem}_shape{d}"), "int64", types.int64, nonneg=True) for d in range(nbt.ndim)]
    st = [CExpr(tr.out.names.claim(f"{stem}_stride{d}"), "int64", types.int64) for d in range(nbt.ndim)] \
        if nbt.layout != "C" else None
    return ArrayInfo(cname, "alias", tr.scalar_key(nbt.dtype), nbt.ndim, ext, nbt, st)


def alias_declarations(info: ArrayInfo) -> list[str]:
    return [f"{ctype}{var};" for ctype, var in zip(alias_ctypes(info), alias_variables(info))]


def alias_assignment(tr, info: ArrayInfo, src, node, declare: bool = False) -> list[str]:
    """``info`` made to name the array ``src``: its variables assigned (with ``declare``, declared there too)."""
    ctypes = alias_ctypes(info) if declare else [""] * len(alias_variables(info))
    return [f"{ctype}{name} = {value};"
            for ctype, name, value in zip(ctypes, alias_variables(info), alias_parts(tr, info, src, node))]


def alias_variables(info: ArrayInfo) -> list[str]:
    """The C variables of an alias: its pointer, then its extents, then its strides."""
    return [info.name] + [e.code for e in info.extents] + [s.code for s in info.strides or ()]


def alias_items(tr, info: ArrayInfo, items: list, node) -> tuple[list[str], list[str]]:
    """A loop over a tuple of arrays (``for arr in (x, y)``) that binds the alias ``info``: the C arrays of the
    items' pointers, extents and strides, declared before the loop, and what the loop's counter indexes in them to
    assign the alias (the lines and the names, pointer first)."""
    parts = [alias_parts(tr, info, item, node) for item in items]
    names = [tr.out.temp(f"{v.rstrip('_')}_items") for v in alias_variables(info)]
    ctypes = alias_ctypes(info)
    lines = [f"{ctype}{name}[{len(items)}] = {{{', '.join(p[k] for p in parts)}}};"
             for k, (ctype, name) in enumerate(zip(ctypes, names))]
    return lines, names


def alias_ctypes(info: ArrayInfo) -> list[str]:
    """The C types of ``alias_variables``, each followed by what separates it from the name."""
    return [f"{c_name(info.key)} *"] + ["int64_t "] * (len(alias_variables(info)) - 1)


def alias_parts(tr, info: ArrayInfo, src, node) -> list[str]:
    """What the alias ``info`` takes of the array ``src`` it names, as ``alias_variables`` lists them: the pointer,
    the extents and (where ``info`` has them) the strides, as C code; a located error where ``src`` is no array of
    its kind."""
    src = as_array(tr, src, node)
    if not isinstance(src, ArrayInfo):
        raise tr.src.error(node, "this value is not an array", hint="an array, a slice or row of one")
    if src.extents is None:
        raise tr.src.error(node, "dynamic shared memory has no extent the C code knows: only `ms = shar[a:b]` "
                           "views of it", hint="index the dynamic shared array directly")
    if src.key != info.key or src.ndim != info.ndim:
        raise tr.src.error(node, f"'{src.name}' is not an array of the same dtype and dimensions")
    tr.mark_written(src.owner or src.name)  # (conservatively: a view of an argument is no longer const)
    if src.kind not in ("param", "alias") and not info.strides and src.strides:
        raise tr.src.error(node, "numba's type of this name says its elements are contiguous, but this view's "
                           "are not", hint="a name for each kind of view")
    strides = []
    if info.strides:
        strides = [s.code for s in src.strides] if src.strides else \
            [" * ".join(e.code for e in src.extents[d + 1:]) or "1" for d in range(src.ndim)]
    return [base_pointer(src)] + [e.code for e in src.extents] + strides


# -- cuda.const.array_like --------------------------------------------------------------------------------------
def const_array(tr, name: str, value, node) -> ArrayInfo:
    """``cuda.const.array_like(ARR)`` of a module-level numpy array: a ``__constant__`` array at file scope with
    the array's elements in memory order (numba copies them into constant memory when it compiles the kernel);
    indexed with its strides when it is not C-contiguous."""
    import numpy as np
    from numba.cuda import types

    if not isinstance(value, np.ndarray):
        raise tr.src.error(node, "cuda.const.array_like takes a numpy array defined at module level")
    from numba.cuda.np.numpy_support import from_dtype

    try:
        dtype = from_dtype(value.dtype)
    except Exception:  # noqa: BLE001 - a dtype numba has no type for
        raise tr.src.error(node, f"constant arrays of dtype {value.dtype} are not supported") from None
    key = tr.scalar_key(dtype)
    if key is None:
        raise tr.src.error(node, f"constant arrays of dtype {value.dtype} (records) are not supported",
                           hint="a constant array of numbers")
    c, layout = tr.unit.const_array(tr.ctx.pyfunc.__globals__, name, key, value)
    ext = [CExpr(str(n), "int64", types.literal(int(n)), nonneg=True, literal=int(n)) for n in value.shape]
    strides = None
    if layout != "C":
        strides = [CExpr(str(s // value.itemsize), "int64", types.int64, literal=s // value.itemsize)
                   for s in value.strides]
    return ArrayInfo(c, "const", key, value.ndim, ext, types.Array(dtype, value.ndim, layout), strides)


# -- views: slices, rows, transposes, reinterpretations ----------------------------------------------------------------
def base_pointer(info: ArrayInfo) -> str:
    """A C pointer to the array's first element (a C array of arrays: its first element's address)."""
    if info.kind in ("shared", "local", "const") and info.ndim > 1:
        return "&" + info.name + "[0]" * info.ndim
    return info.name


def element_strides(info: ArrayInfo) -> list:
    """The stride of each dimension, in elements: the array's own, or a C-contiguous array's (the product of the
    extents after the dimension)."""
    from numba.cuda import types

    if info.strides:
        return list(info.strides)
    out = []
    for d in range(info.ndim):
        after = info.extents[d + 1:]
        if not after:
            out.append(CExpr("1", "int64", types.literal(1), literal=1, nonneg=True))
        elif all(e.literal is not None for e in after):
            n = 1
            for e in after:
                n *= e.literal
            out.append(CExpr(str(n), "int64", types.literal(n), literal=n, nonneg=True))
        else:
            out.append(CExpr(" * ".join(paren(e, MUL) for e in after), "int64", types.int64,
                             MUL if len(after) > 1 else after[0].prec, nonneg=True))
    return out


def _times(a: CExpr, b: CExpr) -> CExpr | None:
    """``a * b`` of two int64 values (None: a zero), without the factors that are 1."""
    from numba.cuda import types

    if a.literal == 0 or b.literal == 0:
        return None
    if a.literal == 1:
        return b
    if b.literal == 1:
        return a
    return CExpr(f"{paren(a, MUL)} * {paren(b, MUL + 1)}", "int64", types.int64, MUL, pure=a.pure and b.pure)


def _sum(terms: list) -> CExpr | None:
    from numba.cuda import types

    terms = [t for t in terms if t is not None]
    if not terms:
        return None
    if len(terms) == 1:
        return terms[0]
    return CExpr(" + ".join(paren(t, ADD) for t in terms), "int64", types.int64, ADD,
                 pure=all(t.pure for t in terms))


def offset_view(info: ArrayInfo, offset: CExpr | None, key: str, extents: list, strides: list | None, nbt,
                pointer: str | None = None) -> ArrayInfo:
    """A view of ``info``: its pointer moved by ``offset`` elements, with its own extents and strides (None:
    C-contiguous)."""
    ptr = pointer or base_pointer(info)
    if offset is not None:
        ptr = f"({ptr} + {paren(offset, ADD + 1)})"
    return ArrayInfo(ptr, "view_expr", key, len(extents), extents, nbt, strides, owner=info.owner or info.name)


def _int64(tr, node) -> CExpr:
    e = tr.expr(node)
    if not is_int(e.key):
        raise tr.src.error(node, "slice bounds and steps must be integers")
    return cast(e, "int64") if e.key in ("uint64",) else e


def slice_bounds(tr, sl: ast.Slice, extent: CExpr) -> tuple[CExpr, CExpr, CExpr]:
    """The first index, the length and the step of ``a[lo:hi:step]`` along a dimension of ``extent`` elements, as
    numba computes them (Python's ``slice.indices``: a negative bound counts from the end, bounds are clamped)."""
    from numba.cuda import types

    def const(v):
        return CExpr(str(v), "int64", types.literal(v), literal=v, nonneg=v >= 0)

    zero, one = const(0), const(1)
    step = _int64(tr, sl.step) if sl.step is not None else one
    n = extent.code
    bounds = [_int64(tr, b) if b is not None else None for b in (sl.lower, sl.upper)]
    if extent.literal is not None and all(b is None or b.literal is not None for b in bounds) and step.literal:
        lo_hi = [b.literal if b is not None else None for b in bounds]
        r = range(extent.literal)[slice(lo_hi[0], lo_hi[1], step.literal)]
        return const(r.start if len(r) else 0), const(len(r)), step  # (a local array's constant extent)
    if step.literal is not None and step.literal != 1 and bounds == [None, None]:  # x[::2], x[::-1]
        if step.literal > 0:
            return zero, CExpr(f"({paren(extent, ADD)} + {step.literal - 1}) / {step.literal}", "int64",
                               types.int64, MUL, True), step
        last = CExpr(f"{paren(extent, ADD)} - 1", "int64", types.int64, ADD)
        if step.literal == -1:
            return last, extent, step
        return last, CExpr(f"({paren(extent, ADD)} + {-step.literal - 1}) / {-step.literal}", "int64",
                           types.int64, MUL, True), step
    if step.literal == 1:
        lo, hi = bounds
        if lo is not None and lo.literal == 0:
            lo = None
        tr.helpers.add("nk_slice")
        if lo is None and hi is None:
            return zero, extent, one
        if lo is None:
            assert hi is not None
            return zero, CExpr(f"nk_bound({hi.code}, {n})", "int64", types.int64, PRIMARY, True), one
        start = CExpr(f"nk_bound({lo.code}, {n})", "int64", types.int64, PRIMARY, True)
        if hi is None:
            return start, CExpr(f"{paren(extent, ADD)} - {start.code}", "int64", types.int64, ADD, True), one
        return start, CExpr(f"nk_span({lo.code}, {hi.code}, {n})", "int64", types.int64, PRIMARY, True), one
    if step.literal is None:
        tr.require_hoist(sl.step)  # a step of either sign, known at run time: once, here
        step = tr.hoist(step, "step")
    tr.helpers.add("nk_slice")
    lo = bounds[0].code if bounds[0] is not None else "NK_NO_BOUND"
    hi = bounds[1].code if bounds[1] is not None else "NK_NO_BOUND"
    start = CExpr(f"nk_slice_first({lo}, {step.code}, {n})", "int64", types.int64, PRIMARY)
    count = CExpr(f"nk_slice_count({lo}, {hi}, {step.code}, {n})", "int64", types.int64, PRIMARY, True)
    return start, count, step


def subscript_view(tr, info, index: ast.AST, node) -> ArrayInfo:
    """``a[i, lo:hi, ...]`` with at least one slice, or fewer indices than dimensions: numba's view (its type from
    the typed record), as a pointer into the array with the view's extents and strides."""
    if isinstance(info, Row):
        row = info
        info = info.array
        fixed = list(zip(row.values, row.nodes))
    else:
        fixed = []
    idx_nodes = index.elts if isinstance(index, ast.Tuple) else [index]
    if any(isinstance(i, ast.Starred) or (isinstance(i, ast.Constant) and i.value in (None, Ellipsis))
           for i in idx_nodes):
        raise tr.src.error(node, "an index with None or ... makes a view the C code does not make",
                           hint="integers and slices")
    if info.extents is None:
        raise tr.src.error(node, f"'{info.name}' (dynamic shared memory) has no extent the C code knows: only "
                           "`ms = shar[a:b]` views of it", hint="slice a kernel argument, a shared or local array")
    if len(fixed) + len(idx_nodes) > info.ndim:
        raise tr.src.error(node, f"'{info.name}' has {info.ndim} dimension(s) but is indexed with "
                           f"{len(fixed) + len(idx_nodes)}")
    strides = element_strides(info)
    offsets, extents, out_strides = [], [], []
    d = 0
    for value, inode in fixed:
        offsets.append(_times(_indices(tr, info, [value], [inode])[0], strides[d]))
        d += 1
    with tr.c_index() if info.kind in ("shared", "local") else contextlib.nullcontext():
        for inode in idx_nodes:
            if isinstance(inode, ast.Slice):
                start, length, step = slice_bounds(tr, inode, info.extents[d])
                offsets.append(_times(start, strides[d]))
                extents.append(length)
                out_strides.append(_times(step, strides[d]) or step)
            else:
                i = tr.value(inode)
                offsets.append(_times(_indices(tr, info, [i], [inode])[0], strides[d]))
            d += 1
    extents += list(info.extents[d:])
    out_strides += strides[d:]
    nbt = tr.ctx.typed.record.type_of(node)
    contiguous = nbt is not None and getattr(nbt, "layout", "A") == "C"
    return offset_view(info, _sum(offsets), info.key, extents, None if contiguous else out_strides,
                       nbt if nbt is not None else info.nbt)


def as_array(tr, v, node):
    """A value that is an array as numba sees it: a row (``m[i]``, so far kept for indexing on) as its view."""
    if isinstance(v, Row):
        return row_array(tr, v, node)
    return v


def transposed(info: ArrayInfo, nbt) -> ArrayInfo:
    """``a.T``: the same memory, the dimensions in reverse order."""
    strides = element_strides(info)
    return ArrayInfo(base_pointer(info), "view_expr", info.key, info.ndim, list(reversed(info.extents)), nbt,
                     list(reversed(strides)), owner=info.owner or info.name)


def complex_part(tr, info: ArrayInfo, part: str, nbt) -> ArrayInfo:
    """``z.real`` / ``z.imag`` of a complex array: its floats, every other one (the imaginary parts from the
    second), as numba's view of the same memory."""
    from numba.cuda import types

    key = "float32" if info.key == "complex64" else "float64"
    two = CExpr("2", "int64", types.literal(2), literal=2, nonneg=True)
    strides = [_times(two, s) for s in element_strides(info)]
    ptr = f"(({c_name(key)}*){base_pointer(info)})"
    if part == "imag":
        ptr = f"({ptr} + 1)"
    return ArrayInfo(ptr, "view_expr", key, info.ndim, list(info.extents), nbt, strides,
                     owner=info.owner or info.name)


def reinterpreted(tr, info: ArrayInfo, nbt, node) -> ArrayInfo:
    """``a.view(np.int32)``: the same bytes as another type of the same size (numba's ``view`` of a C-contiguous
    array; another size changes the last extent)."""
    key = tr.scalar_key(nbt.dtype)
    if key is None:
        raise tr.src.error(node, f"a view as {nbt.dtype} has no C type")
    old, new = itemsize(info.key), itemsize(key)
    extents = list(info.extents)
    if old != new:
        from numba.cuda import types

        if info.strides:
            raise tr.src.error(node, "a view as a type of another size needs a C-contiguous array")
        last = extents[-1]
        extents[-1] = CExpr(f"{paren(last, MUL)} * {old} / {new}", "int64", types.int64, MUL, True)
    ptr = f"(({c_name(key)}*){base_pointer(info)})"
    return ArrayInfo(ptr, "view_expr", key, info.ndim, extents, nbt, info.strides,
                     owner=info.owner or info.name)


def plain_tail(tr, info: ArrayInfo, sl: ast.Slice) -> bool:
    """Is ``x[start:]`` of a 1-D array with a start provably >= 0 (``slice_view``'s plain pointer, no clamping)?"""
    if info.ndim != 1 or info.extents is None or sl.step is not None or sl.upper is not None:
        return False
    return sl.lower is None or tr.expr(sl.lower).nonneg


def slice_view(tr, info: ArrayInfo, sl: ast.Slice, node) -> ArrayInfo:
    """``x[start:]`` of a 1-D array (start provably >= 0): the array from ``start`` on, as an expression
    (``(res + gid)``), e.g. for ``cuda.atomic.compare_and_swap(res[gid:], old, val)``."""
    from numba.cuda import types

    if info.ndim != 1 or info.extents is None or sl.step is not None or sl.upper is not None:
        raise tr.src.error(node, "slices are supported as x[start:] of a 1-D array (and views of the dynamic "
                           "shared array)", hint="index the element instead: x[i]")
    start = tr.expr(sl.lower) if sl.lower is not None else CExpr("0", "int64", types.int64, literal=0, nonneg=True)
    if not start.nonneg:
        raise tr.src.error(sl.lower, "a slice start that may be negative counts from the array's end; the C view "
                           "needs one that is provably >= 0", hint="x[i:] with i >= 0 (a thread index, say)")
    tr.assumed |= start.deps
    offset = start.code if not info.strides else f"{paren(start, MUL)} * {info.strides[0].code}"
    extent = CExpr(f"{info.extents[0].code} - {paren(start, ADD + 1)}", "int64", types.int64, ADD)
    return ArrayInfo(f"({info.name} + {offset})", "view_expr", info.key, 1, [extent], info.nbt, info.strides)
