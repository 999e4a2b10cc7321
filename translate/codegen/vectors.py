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
Each emitter is registered on its instruction's Op (``numbakern.intrinsics.memory``); the helpers' PTX is the Op's.
"""

from __future__ import annotations

import ast

from numbakern.intrinsics import memory, op_of

from .arrays import ArrayInfo
from .cexpr import ADD, CExpr, Static, paren
from .sites import Site

LANES = ("x", "y", "z", "w")
_HINT = "vload4(src, (r, c), regs, i) / vstore4(dst, (r, c), regs, i) with regs a 1-D cuda.local.array"


def _copy_helper(name: str, op, dst: str, src: str, comment: str, template: str = "") -> str:
    nbytes = op.shape
    return f"""\
{comment}{template}
__device__ __forceinline__ void {name}({dst} *dst, const {src} *src, int64_t offset, bool valid) {{
    unsigned shared_addr = (unsigned)__cvta_generic_to_shared(dst);
    const {src} *from = valid ? src + offset : src;
    asm volatile("{op.ptx_text({}, "c")}" :: "r"(shared_addr), "l"(from), "r"(valid ? {nbytes} : 0)
                 : "memory");
}}
"""


def _group_helper(name: str, op) -> str:
    return f'__device__ __forceinline__ void {name}() {{ asm volatile("{op.ptx_text({}, "c")}" ::: "memory"); }}\n'


#: the cp.async helpers, in the order they are emitted (``translate/codegen/helpers.py`` includes them)
HELPERS = {
    "nk_cp_async": _copy_helper(
        "nk_copy_async4", memory.COPY_ASYNC4, "float", "float",
        "// cp.async (sm_80+): a 16-byte global -> shared copy of src[offset] that lands in the background; valid == "
        "false\n// reads nothing (from the array's start) and fills the 16 bytes with zeros. nk_async_wait_all: this "
        "thread's copies\n// have landed (others' after a barrier).")
    + _group_helper("nk_async_commit", memory.ASYNC_COMMIT) + _group_helper("nk_async_wait_all", memory.ASYNC_WAIT_ALL),
    "nk_cp_async16": _copy_helper(
        "nk_copy_async16", memory.COPY_ASYNC16, "D", "S",
        "// cp.async of 16 bytes of any element type (8 bf16/f16 values, 4 floats, ...) from src[offset]: the same\n"
        "// instruction as nk_copy_async4", "\ntemplate <typename D, typename S>"),
    "nk_cp_async1": _copy_helper(
        "nk_copy_async", memory.COPY_ASYNC, "float", "float",
        "// cp.async of one float (4 bytes, through L1: .ca is the only mode for copies under 16 bytes); any alignment"),
    "nk_cp_async_wait": f"""\
// cp.async.wait_group N: all but this thread's N most recent groups of copies have landed (N an immediate)
template <int N> __device__ __forceinline__ void nk_async_wait() {{
    asm volatile("{memory.ASYNC_WAIT.ptx_text({}, "c")}" :: "n"(N) : "memory");
}}
""",
}
DEPENDS = {"nk_cp_async16": ("nk_cp_async",)}

_OPS = (memory.VLOAD4, memory.VSTORE4, memory.COPY_ASYNC4, memory.COPY_ASYNC16, memory.COPY_ASYNC,
        memory.ASYNC_COMMIT, memory.ASYNC_WAIT_ALL, memory.ASYNC_WAIT)


def is_vector_access(f) -> bool:
    return isinstance(f, Static) and op_of(f.obj) in _OPS


def emit_vector_access(tr, call: ast.Call) -> None:
    """A statement that is a call of one of these instructions."""
    op = op_of(tr.value(call.func).obj)
    assert op is not None  # (is_vector_access chose the call)
    op.emitters["c"](Site(tr, op, call))


def _vector(site) -> None:
    what = site.op.name
    if site.nargs != 4 or site.keywords:
        raise site.error(None, f"{what} takes four arguments by position", hint=_HINT)
    mem, regs = site.value(0), site.value(2)
    if not isinstance(mem, ArrayInfo) or mem.key != "float32":
        raise site.error(0, f"{what}: the first argument must be a float32 array", hint=_HINT)
    if site.array(2, "local") is None or regs.ndim != 1:
        raise site.error(2, f"{what}: the register argument must be a 1-D cuda.local.array", hint=_HINT)
    at = site.expr(3)
    slots = [_slot(regs, at, q) for q in range(len(LANES))]
    address = f"&{site.element(0, 1).code}"
    if what == "vload4":
        site.writes(2)
        site.emit("{")
        site.emit(f"    const float4 nk_v = *reinterpret_cast<const float4 *>({address});")
        site.emit("    " + " ".join(f"{s} = nk_v.{lane};" for s, lane in zip(slots, LANES)))
        site.emit("}")
    else:
        site.writes(0)
        site.emit(f"*reinterpret_cast<float4 *>({address}) = make_float4({', '.join(slots)});")


def _slot(regs: ArrayInfo, at: CExpr, q: int) -> str:
    if at.literal is not None:
        return f"{regs.name}[{at.literal + q}]"
    return f"{regs.name}[{at.code}]" if q == 0 else f"{regs.name}[{paren(at, ADD)} + {q}]"


def _group(site) -> None:
    site.helper("nk_cp_async")
    if site.nargs or site.keywords:
        raise site.error(None, f"{site.op.name}() takes no arguments")
    site.emit(f"nk_{site.op.name}();")


def _wait(site) -> None:
    site.helper("nk_cp_async")
    site.helper("nk_cp_async_wait")  # cp.async.wait_group takes an immediate: a template argument in C++
    n = site.constant(0) if site.nargs == 1 and not site.keywords else None
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise site.error(None, "async_wait takes one compile-time integer (groups left in flight)",
                         hint="async_wait(wait_n) with wait_n a literal or a factory's constant")
    site.emit(f"nk_async_wait<{site.expr(0).code}>();")


_COPIES = {"copy_async4": ("nk_copy_async4", None), "copy_async16": ("nk_copy_async16", "nk_cp_async16"),
           "copy_async": ("nk_copy_async", "nk_cp_async1")}


def _copy(site) -> None:
    what = site.op.name
    site.helper("nk_cp_async")
    if site.nargs != 5 or site.keywords:
        raise site.error(None, f"{what} takes five arguments by position",
                         hint=f"{what}(shared, (s, r, c), global, (r, c), valid)")
    dst, src = site.value(0), site.value(2)
    if what == "copy_async16":  # any element type, the same size on both sides
        if site.array(0, "shared") is None:
            raise site.error(0, f"{what}: the destination must be a cuda.shared.array")
        if not isinstance(src, ArrayInfo) or src.kind != "param":
            raise site.error(2, f"{what}: the source must be an array argument (global memory)")
    else:
        if site.array(0, "shared") is None or dst.key != "float32":
            raise site.error(0, f"{what}: the destination must be a float32 cuda.shared.array")
        if not isinstance(src, ArrayInfo) or src.kind != "param" or src.key != "float32":
            raise site.error(2, f"{what}: the source must be a float32 array argument (global memory)")
    site.writes(0)
    valid = site.cond(4)
    if not valid.pure:
        raise site.error(4, f"{what}: valid is used twice in the C; it must have no side effects")
    d = site.element(0, 1).code
    if src.ndim > 1 and not site.is_tuple(3):  # a flat element offset into the source
        off = site.expr(3)
    else:
        off = site.element(2, 3, offset=True)
    fn, helper = _COPIES[what]
    if helper:
        site.helper(helper)
    site.emit(f"{fn}(&{d}, {src.name}, {off.code}, {valid.code});")


for _op, _emitter in ((memory.VLOAD4, _vector), (memory.VSTORE4, _vector), (memory.COPY_ASYNC4, _copy),
                      (memory.COPY_ASYNC16, _copy), (memory.COPY_ASYNC, _copy), (memory.ASYNC_COMMIT, _group),
                      (memory.ASYNC_WAIT_ALL, _group), (memory.ASYNC_WAIT, _wait)):
    _op.register("c", _emitter)


def _statement_only(tr, obj, node):
    raise tr.src.error(node, f"{obj.__name__} is a statement (it returns nothing)",
                       hint=f"{obj.__name__}(array, (r, c), regs, i) on a line of its own")


BUILTINS = {op.function: _statement_only for op in _OPS}
