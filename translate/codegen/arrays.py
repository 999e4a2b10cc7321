"""Arrays: a kernel's array argument is a pointer plus its extents (``m.shape`` -> ``m_shape0, m_shape1``,
``m[r, c]`` -> ``m[r * m_shape1 + c]``, C-contiguous); shared and local arrays are C arrays
(``__shared__ float tile[TILE][TILE + 1];``); the dynamic shared array is ``extern __shared__ float shar[];``
and 1-D slices of it are pointer views (``float *ns = shar + tw * tw;``)."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from ..cnames import c_name, is_int, scalar_key
from .cexpr import ADD, MUL, PRIMARY, CExpr, TupleVal, cast, paren


@dataclass
class ArrayInfo:
    name: str
    kind: str                  # 'param' | 'shared' | 'local' | 'dynamic' | 'view' | 'const'
    key: str                   # element type
    ndim: int
    extents: list | None       # CExpr per dimension, or None where unknown (dynamic shared memory)
    nbt: Any = None
    strides: list | None = None  # CExpr per dimension (in elements) for arrays that are not C-contiguous
    owner: str | None = None     # a view: the C name of the array it is part of (written through the view)


def is_kind(tr, info, *kinds: str) -> bool:
    """``info`` is an array of one of ``kinds``, or an array parameter of a device function: that one is whatever
    array its caller passes (a shared tile, a register array), as a pointer in the C."""
    return isinstance(info, ArrayInfo) and (info.kind in kinds or tr.kind == "device" and info.kind == "param")


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


def element(tr, info, index: ast.AST, node: ast.AST, partial: bool = False, offset: bool = False):
    """The C lvalue for ``info[index]`` (``index``: the subscript's AST; a name holding a tuple indexes every
    dimension with its elements). ``info`` may be a ``Row`` (``tile[a]``, indexed on); with ``partial``, fewer
    indices than dimensions give a ``Row``."""
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
    nbt = tr.var_type(pyname or name)
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
            if isinstance(dnode, ast.Name) and dnode.id in tr.typed.literals:  # a local: C needs the constant
                e = CExpr(str(value), "int64", e.nbt)
            exts.append(CExpr(e.code, e.key, e.nbt, e.prec, True, literal=value))
    else:
        for value in whole:
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise tr.src.error(shape_node, "shared and local array shapes must be compile-time integer constants")
            exts.append(CExpr(str(value), "int64", types.literal(value), nonneg=True, literal=value))
    if kind == "shared" and len(exts) == 1 and exts[0].literal == 0:
        # numba's extent of the dynamic array: the launch's dynamic shared bytes (%dynamic_smem_size) / itemsize
        extent = CExpr(f"nk_dynamic_smem_bytes() / {_itemsize(key)}", "int64", types.int64, MUL, nonneg=True)
        info = ArrayInfo(name, "dynamic", key, 1, [extent], nbt)
        return f"extern __shared__ {ctype} {name}[];", info
    qual = ("__shared__ " if kind == "shared" else "") + align
    decl = f"{qual}{ctype} {name}" + "".join(f"[{e.code}]" for e in exts) + ";"
    return decl, ArrayInfo(name, kind, key, len(exts), exts, nbt)


def _itemsize(key: str) -> int:
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
    nbt = tr.var_type(pyname or name)
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
def alias_names(fn, array_locals: set) -> set:
    """Array-typed locals that only ever name another array (``data = buf_0`` / ``data = buf_1``): a C pointer
    with its extents, assigned where Python assigns the name."""
    values: dict = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            values.setdefault(node.targets[0].id, []).append(node.value)
    return {n for n in array_locals if n in values and all(isinstance(v, ast.Name) for v in values[n])}


def indirectly_written(fn, array_params: set) -> set:
    """Array parameters the kernel may write through another name (conservatively): those assigned to a local
    name (``data = buf_0``) and those sliced into a call's argument (``atomic.cas(res[gid:], ...)``)."""
    out = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in array_params and \
                all(isinstance(t, ast.Name) for t in node.targets):
            out.add(node.value.id)
        if isinstance(node, ast.Call):
            for a in node.args:
                if isinstance(a, ast.Subscript) and isinstance(a.slice, ast.Slice) and \
                        isinstance(a.value, ast.Name) and a.value.id in array_params:
                    out.add(a.value.id)
    return out


def alias_info(tr, name: str, cname: str, nbt) -> ArrayInfo:
    """The C variables of an array alias: ``T *data`` and ``int64_t data_shape0`` (and strides for a layout that is
    not C-contiguous)."""
    from numba.cuda import types

    stem = cname.rstrip("_")
    ext = [CExpr(tr.names.claim(f"{stem}_shape{d}"), "int64", types.int64, nonneg=True) for d in range(nbt.ndim)]
    st = [CExpr(tr.names.claim(f"{stem}_stride{d}"), "int64", types.int64) for d in range(nbt.ndim)] \
        if nbt.layout != "C" else None
    return ArrayInfo(cname, "alias", tr.scalar_key(nbt.dtype), nbt.ndim, ext, nbt, st)


def alias_declarations(info: ArrayInfo) -> list[str]:
    lines = [f"{c_name(info.key)} *{info.name};"]
    lines += [f"int64_t {e.code};" for e in info.extents]
    lines += [f"int64_t {s.code};" for s in info.strides or ()]
    return lines


def alias_assignment(tr, info: ArrayInfo, src: ArrayInfo, node) -> list[str]:
    if src.extents is None or src.kind not in ("param", "alias"):
        raise tr.src.error(node, "an array name can name a kernel argument or another such name only",
                           hint="index the array directly")
    if src.key != info.key or src.ndim != info.ndim:
        raise tr.src.error(node, f"'{src.name}' is not an array of the same dtype and dimensions")
    lines = [f"{info.name} = {src.name};"] + [f"{e.code} = {s.code};" for e, s in zip(info.extents, src.extents)]
    if info.strides:
        strides = [s.code for s in src.strides] if src.strides else \
            [" * ".join(e.code for e in src.extents[d + 1:]) or "1" for d in range(src.ndim)]
        lines += [f"{s.code} = {v};" for s, v in zip(info.strides, strides)]
    return lines


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
    c, layout = tr.unit.const_array(tr.pyfunc.__globals__, name, key, value)
    ext = [CExpr(str(n), "int64", types.literal(int(n)), nonneg=True, literal=int(n)) for n in value.shape]
    strides = None
    if layout != "C":
        strides = [CExpr(str(s // value.itemsize), "int64", types.int64, literal=s // value.itemsize)
                   for s in value.strides]
    return ArrayInfo(c, "const", key, value.ndim, ext, types.Array(dtype, value.ndim, layout), strides)


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
