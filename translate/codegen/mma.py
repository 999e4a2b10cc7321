"""``numbakern.mma`` (tensor cores) in C: each instruction's C emitter, registered on its Op
(``numbakern.intrinsics.tensorcore``). The mma and ldmatrix calls become the Op's PTX template in a small inline
helper (``asm volatile``); the conversions the CUDA headers' functions that compute the same bits.

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
kernel; f16 arrays are ``__half``. A shared array an ldmatrix reads is declared as the kernel declares it
(``__align__(N)`` where it passes ``alignment=N``, as numba-cuda aligns it): the simulator checks that the
declaration guarantees the 16 bytes every row needs.
"""

from __future__ import annotations

from numba.cuda import types

from numbakern.intrinsics import tensorcore as tc

from .arrays import ArrayInfo
from .cexpr import ADD, BAND, BOR, PRIMARY, SHIFT, UNARY, CExpr, TupleVal, cast, paren
from .sites import call_op


def _mma_helper(op) -> str:
    shape = op.shape
    operand = "unsigned" if shape.packed else "float"
    reg = (lambda x: x) if shape.packed else (lambda x: f"__float_as_uint({x})")
    ops = [f'"r"({reg(f"a[{i}]")})' for i in range(shape.a_regs)] + \
        [f'"r"({reg(f"b[{i}]")})' for i in range(shape.b_regs)] + [f'"f"(c[{i}])' for i in range(4)]
    return (f"__device__ __forceinline__ void nk_{op.name}(float *d, const {operand} *a, const {operand} *b, "
            f"const float *c) {{\n"
            f'    asm volatile("{op.ptx_text({}, "c")}"\n'
            f'                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])\n'
            f"                 : {', '.join(ops)});\n}}\n")


def _ldmatrix_helper(op) -> str:
    n, _ = op.shape
    cons = ", ".join(f'"=r"(r[{i}])' for i in range(n))
    return (f"__device__ __forceinline__ void nk_{op.name}(unsigned *r, const void *row) {{\n"
            f"    unsigned addr = (unsigned)__cvta_generic_to_shared(row);\n"
            f'    asm volatile("{op.ptx_text({}, "c")}" : {cons} : "r"(addr) : "memory");\n}}\n')


#: C helpers by name, in the order they are emitted (``translate/codegen/helpers.py`` includes them)
HELPERS: dict[str, str] = {
    "nk_mma_headers": "#include <cuda_bf16.h>\n#include <cuda_fp16.h>\n",
    **{f"nk_{op.name}": ("// warp-level tensor-core product d = a @ b + c, fragments laid out as the PTX ISA's "
                         f"{op.name[4:]} tables\n" + _mma_helper(op)) for op in tc.MMA.values()},
    **{f"nk_{op.name}": ("// ldmatrix: eight rows of 16 bytes per matrix, lanes 8j..8j+7 naming matrix j's rows\n"
                         + _ldmatrix_helper(op)) for op in tc.LDMATRIX.values()},
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
    "nk_f32_to_tf32": f"""\
// float -> tf32, rounded to nearest with ties away from zero (cvt.rna.tf32.f32): a float with its low 13 bits zero
__device__ __forceinline__ float nk_f32_to_tf32(float x) {{
    unsigned r;
    asm("{tc.F32_TO_TF32.ptx_text({}, "c")}" : "=r"(r) : "f"(x));
    return __uint_as_float(r);
}}
""",
}
#: helpers that need others
DEPENDS = {**{f"nk_{op.name}": ("nk_mma_headers",) for op in (*tc.MMA.values(), *tc.LDMATRIX.values())},
           "nk_pack_bf16x2": ("nk_mma_headers",), "nk_pack_f16x2": ("nk_mma_headers",)}


def _regs(site, i, what, dtypes) -> ArrayInfo:
    info = site.array(i, "local")
    if info is None or info.ndim != 1 or info.key not in dtypes:
        raise site.error(i, f"{site.op.name}: {what} must be a 1-D {' or '.join(dtypes)} cuda.local.array")
    return info


def _slot(info: ArrayInfo, at: CExpr) -> str:
    return f"&{info.name}[{at.code}]"


def _void(code: str) -> CExpr:
    return CExpr(code, None, types.none, PRIMARY, pure=False)


def _mma(site):
    site.args(8, "eight arguments: d, d_at, a, a_at, b, b_at, c, c_at")
    operand = ("uint32",) if site.op.shape.packed else ("float32",)
    d = _regs(site, 0, "d", ("float32",))
    a = _regs(site, 2, "a", operand)
    b = _regs(site, 4, "b", operand)
    c = _regs(site, 6, "c", ("float32",))
    ats = [site.expr(i) for i in (1, 3, 5, 7)]
    site.writes(0)
    site.helper(f"nk_{site.op.name}")
    slots = [_slot(x, at) for x, at in zip((d, a, b, c), ats)]
    return _void(f"nk_{site.op.name}({', '.join(slots)})")


def _ldmatrix(site):
    name = site.op.name
    site.args(4, "four arguments: regs, at, smem, index")
    regs = _regs(site, 0, "regs", ("uint32", "float32"))
    at = site.expr(1)
    if site.array(2, "shared", "dynamic", "view") is None:
        raise site.error(2, f"{name}: smem must be a shared array")
    row = site.element(2, 3)
    site.writes(0)
    site.helper(f"nk_{name}")
    slot = _slot(regs, at) if regs.key == "uint32" else f"reinterpret_cast<unsigned *>({_slot(regs, at)})"
    return _void(f"nk_{name}({slot}, &{row.code})")


# -- scalars -----------------------------------------------------------------------------------------------------

def _float_arg(site, i) -> CExpr:
    e = site.expr(i)
    if e.key not in ("float32", "float64", "float16") and not (e.key or "").startswith(("int", "uint")):
        raise site.error(i, f"{site.op.name}: expected a number")
    return cast(e, "float32")


def _bits_arg(site, i, key="uint32") -> CExpr:
    e = site.expr(i)
    if not (e.key or "").startswith(("int", "uint")):
        raise site.error(i, f"{site.op.name}: expected an integer (a bit pattern)")
    return cast(e, key)


def _pack(site):
    name = site.op.name
    site.args(2, "2 arguments")
    if name == "pack_b16x2":
        lo, hi = _bits_arg(site, 0), _bits_arg(site, 1)
        code = f"({paren(lo, BAND)} & 0xFFFFu) | (({paren(hi, BAND)} & 0xFFFFu) << 16)"
        return CExpr(code, "uint32", types.uint32, BOR, True, lo.pure and hi.pure)
    lo, hi = _float_arg(site, 0), _float_arg(site, 1)
    site.helper(f"nk_{name}")
    return CExpr(f"nk_{name}({lo.code}, {hi.code})", "uint32", types.uint32, PRIMARY, True, lo.pure and hi.pure)


def _pure_operand(site, e: CExpr, want: str) -> CExpr:
    """``e`` as a name when it is used twice and is not pure (a statement before the expression)."""
    if e.pure:
        return e
    tmp = site.temp(want)
    site.statement(f"const unsigned {tmp} = {e.code};")
    return CExpr(tmp, e.key, e.nbt)


def _unpack(site):
    name = site.op.name
    site.args(1, "1 argument")
    p = _pure_operand(site, _bits_arg(site, 0), "packed")
    lo, hi = f"({paren(p, BAND)} & 0xFFFFu)", f"({paren(p, SHIFT)} >> 16)"
    if name == "unpack_b16x2":
        return TupleVal([CExpr(f"(uint16_t){lo}", "uint16", types.uint16, UNARY, True, p.pure),
                         CExpr(f"(uint16_t){hi}", "uint16", types.uint16, UNARY, True, p.pure)])
    if name == "unpack_bf16x2":
        return TupleVal([CExpr(f"__uint_as_float({paren(p, SHIFT)} << 16)", "float32", types.float32, PRIMARY,
                               pure=p.pure),
                         CExpr(f"__uint_as_float({paren(p, BAND)} & 0xFFFF0000u)", "float32", types.float32, PRIMARY,
                               pure=p.pure)])
    site.helper("nk_mma_headers")
    return TupleVal([CExpr(f"__half2float(__ushort_as_half((unsigned short){x}))", "float32", types.float32,
                           PRIMARY, pure=p.pure) for x in (lo, hi)])


def _to16(site):
    site.args(1, "1 argument")
    x = _float_arg(site, 0)
    site.helper("nk_mma_headers")
    fn = "__bfloat16_as_ushort(__float2bfloat16_rn" if site.op.name == "f32_to_bf16" else \
        "__half_as_ushort(__float2half_rn"
    return CExpr(f"{fn}({x.code}))", "uint16", types.uint16, PRIMARY, True, x.pure)


def _from16(site):
    site.args(1, "1 argument")
    bits = _bits_arg(site, 0)
    if site.op.name == "bf16_to_f32":
        return CExpr(f"__uint_as_float(({paren(bits, BAND)} & 0xFFFFu) << 16)", "float32", types.float32, PRIMARY,
                     pure=bits.pure)
    site.helper("nk_mma_headers")
    return CExpr(f"__half2float(__ushort_as_half((unsigned short){paren(bits, UNARY)}))", "float32", types.float32,
                 PRIMARY, pure=bits.pure)


def _tf32(site):
    site.args(1, "1 argument")
    x = _float_arg(site, 0)
    site.helper("nk_f32_to_tf32")
    if site.op.name == "f32_to_tf32":
        return CExpr(f"nk_f32_to_tf32({x.code})", "float32", types.float32, PRIMARY, pure=x.pure)
    big, small = site.temp("tf32_big"), site.temp("tf32_small")  # split_tf32: big is used twice
    site.statement(f"const float {big} = nk_f32_to_tf32({x.code});")
    site.statement(f"const float {small} = nk_f32_to_tf32({paren(x, ADD)} - {big});")
    return TupleVal([CExpr(big, "float32", types.float32), CExpr(small, "float32", types.float32)])


EMITTERS = {
    **{op.name: _mma for op in tc.MMA.values()}, **{op.name: _ldmatrix for op in tc.LDMATRIX.values()},
    "pack_bf16x2": _pack, "pack_f16x2": _pack, "pack_b16x2": _pack,
    "unpack_bf16x2": _unpack, "unpack_f16x2": _unpack, "unpack_b16x2": _unpack,
    "f32_to_bf16": _to16, "f32_to_f16": _to16, "bf16_to_f32": _from16, "f16_to_f32": _from16,
    "f32_to_tf32": _tf32, "split_tf32": _tf32,
}
for _op in tc.OPS:
    _op.register("c", EMITTERS[_op.name])

#: this module's entries in the builtins table (``translate/codegen/builtins.py``)
BUILTINS = {op.function: call_op for op in tc.OPS}
