"""``numbakern.mma`` (tensor cores) in C: each intrinsic becomes the PTX instruction Numba emits, in a small inline
helper (``asm volatile``), or the CUDA headers' conversion that computes the same bits.

    mma_m16n8k16_bf16(d, i, a, j, b, k, c, l)  ->  nk_mma_m16n8k16_bf16(&d[i], &a[j], &b[k], &c[l]);
        (mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32; the .f16 and the m16n8k8 .tf32 ones alike)
    ldmatrix_x4(regs, i, tile, (r, c))         ->  nk_ldmatrix_x4(&regs[i], &tile[r][c]);   (x1, x2, _trans)
    pack_bf16x2(lo, hi)                        ->  nk_pack_bf16x2(lo, hi)     (__floats2bfloat162_rn: lo in bits 0-15)
    pack_f16x2(lo, hi)                         ->  nk_pack_f16x2(lo, hi)      (__floats2half2_rn)
    pack_b16x2(lo, hi)                         ->  ((uint32_t)lo & 0xFFFF) | ((uint32_t)hi & 0xFFFF) << 16
    unpack_bf16x2(r) / unpack_f16x2(r)         ->  two floats: __uint_as_float(r << 16), ... / __half2float(...)
    f32_to_bf16(x) / f32_to_f16(x)             ->  __bfloat16_as_ushort(__float2bfloat16_rn(x)) / __half_as_ushort(...)
    bf16_to_f32(bits) / f16_to_f32(bits)       ->  __uint_as_float(bits << 16) / __half2float(__ushort_as_half(bits))
    f32_to_tf32(x)                             ->  nk_f32_to_tf32(x)          (cvt.rna.tf32.f32)
    split_tf32(x)                              ->  big = nk_f32_to_tf32(x); small = nk_f32_to_tf32(x - big)

Fragment registers are elements of local arrays passed by address to force-inlined helpers; after inlining the
indices are constants and the arrays registers, as in Numba. bf16 data stays ``uint16_t`` bit patterns, as in the
kernel; f16 arrays are ``__half``.
"""

from __future__ import annotations

import ast

from numba.cuda import types

from .arrays import ArrayInfo, element, is_kind
from .cexpr import ADD, BAND, BOR, PRIMARY, SHIFT, UNARY, CExpr, TupleVal, cast, paren

_MMA = {  # name -> (PTX, A registers, B registers, operand C type)
    "mma_m16n8k16_bf16": ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", 4, 2, "unsigned"),
    "mma_m16n8k16_f16": ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", 4, 2, "unsigned"),
    "mma_m16n8k8_tf32": ("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 4, 2, "float"),
}
_LDMATRIX = {f"ldmatrix_x{n}{'_trans' if t else ''}": (n, t) for n in (1, 2, 4) for t in (False, True)}


def _mma_helper(name: str) -> str:
    ptx, na, nb, operand = _MMA[name]
    reg = (lambda x: f"__float_as_uint({x})") if operand == "float" else (lambda x: x)
    ops = [f'"r"({reg(f"a[{i}]")})' for i in range(na)] + [f'"r"({reg(f"b[{i}]")})' for i in range(nb)]
    ops += [f'"f"(c[{i}])' for i in range(4)]
    a_ops = ", ".join(f"%{4 + i}" for i in range(na))
    b_ops = ", ".join(f"%{4 + na + i}" for i in range(nb))
    c_ops = ", ".join(f"%{4 + na + nb + i}" for i in range(4))
    return (f"__device__ __forceinline__ void nk_{name}(float *d, const {operand} *a, const {operand} *b, "
            f"const float *c) {{\n"
            f'    asm volatile("{ptx} {{%0, %1, %2, %3}}, {{{a_ops}}}, {{{b_ops}}}, {{{c_ops}}};"\n'
            f'                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])\n'
            f"                 : {', '.join(ops)});\n}}\n")


def _ldmatrix_helper(name: str) -> str:
    n, trans = _LDMATRIX[name]
    outs = ", ".join(f"%{i}" for i in range(n))
    cons = ", ".join(f'"=r"(r[{i}])' for i in range(n))
    return (f"__device__ __forceinline__ void nk_{name}(unsigned *r, const void *row) {{\n"
            f"    unsigned addr = (unsigned)__cvta_generic_to_shared(row);\n"
            f'    asm volatile("ldmatrix.sync.aligned.m8n8.x{n}{".trans" if trans else ""}.shared.b16 {{{outs}}}, '
            f'[%{n}];" : {cons} : "r"(addr) : "memory");\n}}\n')


#: C helpers by name, in the order they are emitted (``translate/codegen/helpers.py`` includes them)
HELPERS: dict[str, str] = {
    "nk_mma_headers": "#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n",
    **{f"nk_{name}": ("// warp-level tensor-core product d = a @ b + c, fragments laid out as the PTX ISA's "
                      f"{name[4:]} tables\n" + _mma_helper(name)) for name in _MMA},
    **{f"nk_{name}": ("// ldmatrix: eight rows of 16 bytes per matrix, lanes 8j..8j+7 naming matrix j's rows\n"
                      + _ldmatrix_helper(name)) for name in _LDMATRIX},
    "nk_pack_bf16x2": """\
// two floats rounded to bf16 (nearest even) in one register, lo in bits 0-15 (cvt.rn.bf16x2.f32)
__device__ __forceinline__ unsigned nk_pack_bf16x2(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<unsigned *>(&v);
}
""",
    "nk_pack_f16x2": """\
// two floats rounded to f16 (nearest even) in one register, lo in bits 0-15 (cvt.rn.f16x2.f32)
__device__ __forceinline__ unsigned nk_pack_f16x2(float lo, float hi) {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<unsigned *>(&v);
}
""",
    "nk_f32_to_tf32": """\
// float -> tf32, rounded to nearest with ties away from zero (cvt.rna.tf32.f32): a float with its low 13 bits zero
__device__ __forceinline__ float nk_f32_to_tf32(float x) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return __uint_as_float(r);
}
""",
}
#: helpers that need others
DEPENDS = {**{f"nk_{name}": ("nk_mma_headers",) for name in (*_MMA, *_LDMATRIX)},
           "nk_pack_bf16x2": ("nk_mma_headers",), "nk_pack_f16x2": ("nk_mma_headers",)}


def _functions() -> dict:
    """numbakern.mma's functions (as the kernel's module sees them: intrinsics on a GPU, stand-ins in the simulator)
    by name."""
    import numbakern.mma as mma
    from numbakern.mma import sim

    out = {}
    for name in mma.NAMES:
        out[id(getattr(mma, name))] = name
        out[id(getattr(sim, name))] = name
    return out


def is_mma(obj) -> bool:
    return id(obj) in _functions()


def _objects() -> list:
    import numbakern.mma as mma
    from numbakern.mma import sim

    return [getattr(module, name) for module in (mma, sim) for name in mma.NAMES]


def call(tr, obj, node: ast.Call):
    """The C for a call of a ``numbakern.mma`` function (statements return a void call expression)."""
    name = _functions()[id(obj)]
    if node.keywords:
        raise tr.src.error(node, f"{name} takes its arguments by position")
    if name in _MMA:
        return _mma(tr, name, node)
    if name in _LDMATRIX:
        return _ldmatrix(tr, name, node)
    return _SCALARS[name](tr, name, node)


def _regs(tr, name, node, what, dtypes) -> ArrayInfo:
    info = tr.value(node)
    if not is_kind(tr, info, "local") or info.ndim != 1 or info.key not in dtypes:
        raise tr.src.error(node, f"{name}: {what} must be a 1-D {' or '.join(dtypes)} cuda.local.array")
    return info


def _slot(info: ArrayInfo, at: CExpr) -> str:
    return f"&{info.name}[{at.code}]"


def _void(code: str) -> CExpr:
    return CExpr(code, None, types.none, PRIMARY, pure=False)


def _mma(tr, name, node):
    if len(node.args) != 8:
        raise tr.src.error(node, f"{name} takes eight arguments: d, d_at, a, a_at, b, b_at, c, c_at")
    operand = ("float32",) if _MMA[name][3] == "float" else ("uint32",)
    d = _regs(tr, name, node.args[0], "d", ("float32",))
    a = _regs(tr, name, node.args[2], "a", operand)
    b = _regs(tr, name, node.args[4], "b", operand)
    c = _regs(tr, name, node.args[6], "c", ("float32",))
    ats = [tr.expr(node.args[i]) for i in (1, 3, 5, 7)]
    tr.mark_written(d.name)
    tr.helpers.add(f"nk_{name}")
    slots = [_slot(x, at) for x, at in zip((d, a, b, c), ats)]
    return _void(f"nk_{name}({', '.join(slots)})")


def _ldmatrix(tr, name, node):
    if len(node.args) != 4:
        raise tr.src.error(node, f"{name} takes four arguments: regs, at, smem, index")
    regs = _regs(tr, name, node.args[0], "regs", ("uint32", "float32"))
    at = tr.expr(node.args[1])
    smem = tr.value(node.args[2])
    if not is_kind(tr, smem, "shared", "dynamic", "view"):
        raise tr.src.error(node.args[2], f"{name}: smem must be a shared array")
    row = element(tr, smem, node.args[3], node)
    tr.mark_written(regs.name)
    tr.helpers.add(f"nk_{name}")
    slot = _slot(regs, at) if regs.key == "uint32" else f"reinterpret_cast<unsigned *>({_slot(regs, at)})"
    return _void(f"nk_{name}({slot}, &{row.code})")


# -- scalars -----------------------------------------------------------------------------------------------------

def _float_arg(tr, name, node) -> CExpr:
    e = tr.expr(node)
    if e.key not in ("float32", "float64", "float16") and not (e.key or "").startswith(("int", "uint")):
        raise tr.src.error(node, f"{name}: expected a number")
    return cast(e, "float32")


def _bits_arg(tr, name, node, key="uint32") -> CExpr:
    e = tr.expr(node)
    if not (e.key or "").startswith(("int", "uint")):
        raise tr.src.error(node, f"{name}: expected an integer (a bit pattern)")
    return cast(e, key)


def _args(tr, name, node, n):
    if len(node.args) != n:
        raise tr.src.error(node, f"{name} takes {n} argument{'s' if n > 1 else ''}")
    return node.args


def _pack(tr, name, node):
    lo_n, hi_n = _args(tr, name, node, 2)
    if name == "pack_b16x2":
        lo, hi = _bits_arg(tr, name, lo_n), _bits_arg(tr, name, hi_n)
        code = f"({paren(lo, BAND)} & 0xFFFFu) | (({paren(hi, BAND)} & 0xFFFFu) << 16)"
        return CExpr(code, "uint32", types.uint32, BOR, True, lo.pure and hi.pure)
    lo, hi = _float_arg(tr, name, lo_n), _float_arg(tr, name, hi_n)
    tr.helpers.add(f"nk_{name}")
    return CExpr(f"nk_{name}({lo.code}, {hi.code})", "uint32", types.uint32, PRIMARY, True, lo.pure and hi.pure)


def _pure_operand(tr, e: CExpr, want: str, node) -> CExpr:
    """``e`` as a name when it is used twice and is not pure (a statement before the expression)."""
    if e.pure:
        return e
    tr.require_hoist(node)
    tmp = tr.temp(want)
    tr.emit(f"const unsigned {tmp} = {e.code};")
    return CExpr(tmp, e.key, e.nbt)


def _unpack(tr, name, node):
    (p_n,) = _args(tr, name, node, 1)
    p = _pure_operand(tr, _bits_arg(tr, name, p_n), "packed", node)
    lo, hi = f"({paren(p, BAND)} & 0xFFFFu)", f"({paren(p, SHIFT)} >> 16)"
    if name == "unpack_b16x2":
        return TupleVal([CExpr(f"(uint16_t){lo}", "uint16", types.uint16, UNARY, True, p.pure),
                         CExpr(f"(uint16_t){hi}", "uint16", types.uint16, UNARY, True, p.pure)])
    if name == "unpack_bf16x2":
        return TupleVal([CExpr(f"__uint_as_float({paren(p, SHIFT)} << 16)", "float32", types.float32, PRIMARY,
                               pure=p.pure),
                         CExpr(f"__uint_as_float({paren(p, BAND)} & 0xFFFF0000u)", "float32", types.float32, PRIMARY,
                               pure=p.pure)])
    tr.helpers.add("nk_mma_headers")
    return TupleVal([CExpr(f"__half2float(__ushort_as_half((unsigned short){x}))", "float32", types.float32,
                           PRIMARY, pure=p.pure) for x in (lo, hi)])


def _to16(tr, name, node):
    (x_n,) = _args(tr, name, node, 1)
    x = _float_arg(tr, name, x_n)
    tr.helpers.add("nk_mma_headers")
    fn = "__bfloat16_as_ushort(__float2bfloat16_rn" if name == "f32_to_bf16" else "__half_as_ushort(__float2half_rn"
    return CExpr(f"{fn}({x.code}))", "uint16", types.uint16, PRIMARY, True, x.pure)


def _from16(tr, name, node):
    (b_n,) = _args(tr, name, node, 1)
    bits = _bits_arg(tr, name, b_n)
    if name == "bf16_to_f32":
        return CExpr(f"__uint_as_float(({paren(bits, BAND)} & 0xFFFFu) << 16)", "float32", types.float32, PRIMARY,
                     pure=bits.pure)
    tr.helpers.add("nk_mma_headers")
    return CExpr(f"__half2float(__ushort_as_half((unsigned short){paren(bits, UNARY)}))", "float32", types.float32,
                 PRIMARY, pure=bits.pure)


def _tf32(tr, name, node):
    (x_n,) = _args(tr, name, node, 1)
    x = _float_arg(tr, name, x_n)
    tr.helpers.add("nk_f32_to_tf32")
    if name == "f32_to_tf32":
        return CExpr(f"nk_f32_to_tf32({x.code})", "float32", types.float32, PRIMARY, pure=x.pure)
    tr.require_hoist(node)  # split_tf32: big is used twice
    big, small = tr.temp("tf32_big"), tr.temp("tf32_small")
    tr.emit(f"const float {big} = nk_f32_to_tf32({x.code});")
    tr.emit(f"const float {small} = nk_f32_to_tf32({paren(x, ADD)} - {big});")
    return TupleVal([CExpr(big, "float32", types.float32), CExpr(small, "float32", types.float32)])


_SCALARS = {
    "pack_bf16x2": _pack, "pack_f16x2": _pack, "pack_b16x2": _pack,
    "unpack_bf16x2": _unpack, "unpack_f16x2": _unpack, "unpack_b16x2": _unpack,
    "f32_to_bf16": _to16, "f32_to_f16": _to16, "bf16_to_f32": _from16, "f16_to_f32": _from16,
    "f32_to_tf32": _tf32, "split_tf32": _tf32,
}


#: this module's entries in the builtins table (``translate/codegen/builtins.py``)
BUILTINS = {obj: call for obj in _objects()}
