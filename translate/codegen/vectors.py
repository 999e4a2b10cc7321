"""16-byte accesses in C: ``numbakern.vector_io``'s ``vload4``/``vstore4`` become one ``float4`` access each, and
``numbakern.async_copy``'s ``copy_async4``/``copy_async16``/``async_commit``/``async_wait_all`` become ``cp.async``
helpers.

    vload4(m, (r, c), regs, i)    ->  { const float4 nk_v = *reinterpret_cast<const float4 *>(&m[r * m_shape1 + c]);
                                        regs[i] = nk_v.x; regs[i + 1] = nk_v.y; regs[i + 2] = nk_v.z; regs[i + 3] = nk_v.w; }
    vstore4(out, (r, c), regs, i) ->  *reinterpret_cast<float4 *>(&out[r * out_shape1 + c]) =
                                          make_float4(regs[i], regs[i + 1], regs[i + 2], regs[i + 3]);

    copy_async4(a_s, (st, r, c), mt, (gr, gc), ok)  ->  nk_copy_async4(&a_s[st][r][c], mt, gr * mt_shape1 + gc, ok);
    async_commit(); async_wait_all()              ->  nk_async_commit(); nk_async_wait_all();
    async_wait(n)                                 ->  nk_async_wait<n>();
    copy_async(a_s, (st, c, r), m, (gr, gc), ok)  ->  nk_copy_async(&a_s[st][c][r], m, gr * m_shape1 + gc, ok);
    copy_async16(t_s, (st, i), x, off, ok)        ->  nk_copy_async16(&t_s[st][i], x, off, ok);  (any type)

The copy helpers take the source array and the element's offset, and select the address themselves as numba-cuda's
intrinsic does (``valid ? src + offset : src``: one select, the condition evaluated once): a conditional pointer
written out at each call compiled to a branch per copy, and a kernel of 16 unrolled copies to 32 basic blocks that
ptxas allocated registers across worse than Numba's straight line (the attention kernels spilled).

The register side stays four scalar accesses (so the local array stays in registers); the 16-byte alignment of the
memory side is the kernel's precondition, as in Numba (``numbakern/vector_io.py``, ``numbakern/async_copy.py``).
"""

from __future__ import annotations

import ast

from .arrays import ArrayInfo, element, is_kind
from .cexpr import ADD, CExpr, Static, paren

LANES = ("x", "y", "z", "w")
_HINT = "vload4(src, (r, c), regs, i) / vstore4(dst, (r, c), regs, i) with regs a 1-D cuda.local.array"


def _vector_functions():
    from numbakern import vector_io

    return vector_io.vload4, vector_io.vstore4


def _async_functions():
    from numbakern import async_copy

    return {async_copy.copy_async4: "copy", async_copy.copy_async16: "copy16", async_copy.copy_async: "copy1",
            async_copy.async_commit: "nk_async_commit",
            async_copy.async_wait_all: "nk_async_wait_all", async_copy.async_wait: "nk_async_wait"}


def is_vector_access(f) -> bool:
    return isinstance(f, Static) and (any(f.obj is v for v in _vector_functions()) or
                                      any(f.obj is v for v in _async_functions()))


def emit_vector_access(tr, call: ast.Call) -> None:
    vload4, _ = _vector_functions()
    obj = tr.value(call.func).obj
    for fn, helper in _async_functions().items():
        if obj is fn:
            return _emit_async(tr, call, helper)
    what = "vload4" if obj is vload4 else "vstore4"
    if len(call.args) != 4 or call.keywords:
        raise tr.src.error(call, f"{what} takes four arguments by position", hint=_HINT)
    mem_node, index_node, regs_node, at_node = call.args
    mem, regs = tr.value(mem_node), tr.value(regs_node)
    if not isinstance(mem, ArrayInfo) or mem.key != "float32":
        raise tr.src.error(mem_node, f"{what}: the first argument must be a float32 array", hint=_HINT)
    if not is_kind(tr, regs, "local") or regs.ndim != 1:
        raise tr.src.error(regs_node, f"{what}: the register argument must be a 1-D cuda.local.array", hint=_HINT)
    at = tr.expr(at_node)
    slots = [_slot(regs, at, q) for q in range(len(LANES))]
    address = f"&{element(tr, mem, index_node, call).code}"
    if what == "vload4":
        tr.mark_written(regs.name)
        tr.emit("{")
        tr.emit(f"    const float4 nk_v = *reinterpret_cast<const float4 *>({address});")
        tr.emit("    " + " ".join(f"{s} = nk_v.{lane};" for s, lane in zip(slots, LANES)))
        tr.emit("}")
    else:
        tr.mark_written(mem.name)
        tr.emit(f"*reinterpret_cast<float4 *>({address}) = make_float4({', '.join(slots)});")


def _slot(regs: ArrayInfo, at: CExpr, q: int) -> str:
    if at.literal is not None:
        return f"{regs.name}[{at.literal + q}]"
    return f"{regs.name}[{at.code}]" if q == 0 else f"{regs.name}[{paren(at, ADD)} + {q}]"


def _emit_async(tr, call: ast.Call, helper: str) -> None:
    tr.helpers.add("nk_cp_async")
    if helper == "nk_async_wait":  # cp.async.wait_group takes an immediate: a template argument in C++
        tr.helpers.add("nk_cp_async_wait")
        n = tr.const_value(call.args[0]) if len(call.args) == 1 and not call.keywords else None
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise tr.src.error(call, "async_wait takes one compile-time integer (groups left in flight)",
                               hint="async_wait(wait_n) with wait_n a literal or a factory's constant")
        tr.emit(f"nk_async_wait<{tr.expr(call.args[0]).code}>();")
        return
    if helper not in ("copy", "copy16", "copy1"):
        if call.args or call.keywords:
            raise tr.src.error(call, f"{helper[3:]}() takes no arguments")
        tr.emit(f"{helper}();")
        return
    what = {"copy": "copy_async4", "copy16": "copy_async16", "copy1": "copy_async"}[helper]
    if len(call.args) != 5 or call.keywords:
        raise tr.src.error(call, f"{what} takes five arguments by position",
                           hint=f"{what}(shared, (s, r, c), global, (r, c), valid)")
    dst_node, dst_index, src_node, src_index, valid_node = call.args
    dst, src = tr.value(dst_node), tr.value(src_node)
    if helper == "copy16":  # any element type, the same size on both sides
        if not is_kind(tr, dst, "shared"):
            raise tr.src.error(dst_node, f"{what}: the destination must be a cuda.shared.array")
        if not isinstance(src, ArrayInfo) or src.kind != "param":
            raise tr.src.error(src_node, f"{what}: the source must be an array argument (global memory)")
    else:
        if not is_kind(tr, dst, "shared") or dst.key != "float32":
            raise tr.src.error(dst_node, f"{what}: the destination must be a float32 cuda.shared.array")
        if not isinstance(src, ArrayInfo) or src.kind != "param" or src.key != "float32":
            raise tr.src.error(src_node, f"{what}: the source must be a float32 array argument (global memory)")
    tr.mark_written(dst.name)
    valid = tr.cond(valid_node)
    if not valid.pure:
        raise tr.src.error(valid_node, f"{what}: valid is used twice in the C; it must have no side effects")
    d = element(tr, dst, dst_index, call).code
    if src.ndim > 1 and not isinstance(src_index, ast.Tuple):  # a flat element offset into the source
        off = tr.expr(src_index)
    else:
        off = element(tr, src, src_index, call, offset=True)
    if helper == "copy1":
        tr.helpers.add("nk_cp_async1")
    if helper == "copy16":
        tr.helpers.add("nk_cp_async16")
    fn = {"copy": "nk_copy_async4", "copy16": "nk_copy_async16", "copy1": "nk_copy_async"}[helper]
    tr.emit(f"{fn}(&{d}, {src.name}, {off.code}, {valid.code});")


def _statement_only(tr, obj, node):
    raise tr.src.error(node, f"{obj.__name__} is a statement (it returns nothing)",
                       hint=f"{obj.__name__}(array, (r, c), regs, i) on a line of its own")


def _statement_functions() -> tuple:
    return (*_vector_functions(), *_async_functions())


BUILTINS = {obj: _statement_only for obj in _statement_functions()}
