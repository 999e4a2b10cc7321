"""Numba types -> C type names, and the C rules (integer promotion, usual arithmetic conversions) the code
generator uses to decide where a cast keeps Numba's meaning."""

from __future__ import annotations

import unicodedata

from numba.cuda import types

#: numba scalar type name -> C type
C_NAMES = {
    "bool": "bool", "boolean": "bool",
    "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
    "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
    "float32": "float", "float64": "double",
    "float16": "__half", "bfloat16": "__nv_bfloat16", "complex64": "cuFloatComplex", "complex128": "cuDoubleComplex",
}

_INT_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}


def scalar_key(t) -> str | None:
    """The scalar kind of a numba type ('int64', 'float32', 'bool', ...), literals as their value type."""
    if isinstance(t, types.Literal):
        t = t.literal_type
    if isinstance(t, types.Boolean):
        return "bool"
    if isinstance(t, (types.Integer, types.Float, types.Complex)):
        return str(t)
    if t == types.bfloat16:  # (numba-cuda spells it __nv_bfloat16)
        return "bfloat16"
    return None


def c_name(key: str | None) -> str:
    if key is None:
        raise ValueError("a value with no C type has no C type name")
    if key.startswith("record:"):
        return key[len("record:"):]
    return C_NAMES[key]


# -- records ---------------------------------------------------------------------------------------------------
def record_key(t) -> str | None:
    """``record:<struct name>`` for a numba Record of scalar fields whose layout C reproduces (each field at its
    natural alignment), else None."""
    if not isinstance(t, types.Record):
        return None
    fields = sorted(t.fields.items(), key=lambda kv: kv[1].offset)
    end = 0
    for name, f in fields:
        key = scalar_key(f.type)
        if key is None or not name.isidentifier():
            return None
        size = _size(f.type)
        if f.offset % size or f.offset < end:
            return None  # a packed (unaligned) field: C cannot lay it out without a compiler extension
        end = f.offset + size
    return "record:nk_record_" + "_".join(name for name, _ in fields)


def _size(t) -> int:
    return getattr(t, "bitwidth", 8) // 8


def record_members(t) -> list[tuple]:
    """The C struct's members in order: (field name, numba type) or (None, padding bytes)."""
    out, end = [], 0
    for field, f in sorted(t.fields.items(), key=lambda kv: kv[1].offset):
        if f.offset > end:
            out.append((None, f.offset - end))
        out.append((field, f.type))
        end = f.offset + _size(f.type)
    if t.size > end:
        out.append((None, t.size - end))
    return out


def record_struct(t) -> str:
    """The C struct of a numba Record (see ``record_key``), padded to numba's offsets and size."""
    name = str(record_key(t))[len("record:"):]
    lines, pad = [f"struct {name} {{"], 0
    for field, ty in record_members(t):
        if field is None:
            lines.append(f"    unsigned char pad{pad}[{ty}];")
            pad += 1
        else:
            lines.append(f"    {c_name(scalar_key(ty))} {field};")
    lines.append("};")
    lines.append(f'static_assert(sizeof({name}) == {t.size}, "the layout of numba\'s record");')
    return "\n".join(lines)


def is_int(key: str | None) -> bool:
    return key in _INT_BITS


def is_float(key: str | None) -> bool:
    return key in ("float32", "float64")


#: the complex types' keys (cuFloatComplex, cuDoubleComplex)
COMPLEX = ("complex64", "complex128")


def is_complex(key: str | None) -> bool:
    return key in COMPLEX


def is_signed(key: str | None) -> bool:
    return key is not None and key.startswith("int")


def _promote_int(key: str) -> str:
    if key == "bool" or (key in _INT_BITS and _INT_BITS[key] < 32):
        return "int32"
    return key


#: types whose C arithmetic is operator overloads (cuda_fp16.h, cuComplex.h), not C's conversions: mixed with
#: another type, every operand is converted explicitly
OVERLOADED = ("float16", "bfloat16", "complex64", "complex128")


def c_arith(a: str | None, b: str | None) -> str:
    """C's usual arithmetic conversions for operand types ``a`` and ``b`` (as scalar keys); ``"mixed"`` where one
    is a type with overloaded operators and the other is not the same type (the caller converts both)."""
    if a is None or b is None:
        raise ValueError("C arithmetic on a value with no C type")
    if a in OVERLOADED or b in OVERLOADED:
        return a if a == b else "mixed"
    if "float64" in (a, b):
        return "float64"
    if "float32" in (a, b):
        return "float32"
    a, b = _promote_int(a), _promote_int(b)
    if a == b:
        return a
    sa, sb = is_signed(a), is_signed(b)
    if sa == sb:
        return a if _INT_BITS[a] >= _INT_BITS[b] else b
    s, u = (a, b) if sa else (b, a)
    if _INT_BITS[u] >= _INT_BITS[s]:
        return u
    return s  # the signed type is wider: it represents every value of the unsigned one


def numba_type(key: str):
    return {"bool": types.boolean}.get(key) or getattr(types, key)


# -- C identifiers ---------------------------------------------------------------------------------------------
#: C and C++ keywords (C++20 and C23), the alternative operator tokens and the names NVRTC/nvcc predefine
KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t class compl
concept const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype default delete
do double dynamic_cast else enum explicit export extern false final float for friend goto if import inline int long
module mutable namespace new noexcept not not_eq nullptr operator or or_eq override private protected public
register reinterpret_cast requires restrict return short signed sizeof static static_assert static_cast struct
switch template this thread_local throw true try typedef typeid typename union unsigned using virtual void volatile
wchar_t while xor xor_eq typeof typeof_unqual thread_local _Bool _Complex _Imaginary
""".split())

#: names the generated file or CUDA headers give a meaning: built-in variables, types, functions the generated code
#: calls (math functions and their float versions, atomics, printf), macros and the host launcher's parameters
BUILTINS = frozenset("""
threadIdx blockIdx blockDim gridDim warpSize dim3 uint3 main std NULL printf malloc free memcpy memset assert clock
clock64 size_t ptrdiff_t intptr_t uintptr_t int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t half
cudaError_t cudaStream_t cudaSuccess cudaErrorInvalidValue cudaGetLastError cudaLaunchCooperativeKernel
INT64_MIN INT64_MAX INT32_MIN INT32_MAX UINT64_MAX UINT32_MAX INFINITY NAN HUGE_VAL HUGE_VALF
float2 float4 double2 int2 int4 make_float2 make_float4 make_double2 cooperative_groups cg
min max abs labs llabs fabs fabsf signbit isnan isinf isfinite copysign copysignf
sqrt sqrtf rsqrt rsqrtf cbrt cbrtf exp expf exp2 exp2f exp10 exp10f expm1 expm1f log logf log2 log2f log10 log10f
log1p log1pf sin sinf cos cosf tan tanf asin asinf acos acosf atan atanf atan2 atan2f sinh sinhf cosh coshf tanh
tanhf asinh asinhf acosh acoshf atanh atanhf floor floorf ceil ceilf trunc truncf round roundf rint rintf lrint
llrint lround llround nearbyint nearbyintf pow powf hypot hypotf erf erff erfc erfcf lgamma lgammaf tgamma tgammaf
fmod fmodf remainder remainderf remquo nextafter nextafterf modf modff frexp frexpf ldexp ldexpf fma fmaf fmin fminf
fmax fmaxf fdim fdimf sincos sincosf sincospi sincospif rcbrt
atomicAdd atomicSub atomicExch atomicMin atomicMax atomicInc atomicDec atomicCAS atomicAnd atomicOr atomicXor
grid_x grid_y grid_z block_x block_y block_z shared_bytes stream
""".split())

RESERVED = KEYWORDS | BUILTINS
#: the prefix of the generated file's own helpers (nk_floordiv, nk_wrap, ...): never given to a user name
HELPER_PREFIX = "nk_"


def is_free(name: str) -> bool:
    """May a user name be a C identifier as it is (in any function of a generated file)?"""
    if name in RESERVED or name.startswith(HELPER_PREFIX):
        return False
    # C reserves identifiers with a double underscore or a leading underscore and capital letter
    return "__" not in name and not (name.startswith("_") and name[1:2].isupper())


class Namespace:
    """One C scope's identifiers: every name a generated function declares is ``claim``-ed here, so no user name
    can shadow or collide with a generated one or with C, C++ and CUDA. A name keeps its Python spelling when
    that is free; else it gets a suffix (``float`` -> ``float_``, a second ``x_shape0`` -> ``x_shape0_2``)."""

    def __init__(self, taken=()):
        self.taken: set[str] = set(taken)

    def claim(self, want: str) -> str:
        base = _legal(want)
        if is_free(base) and base not in self.taken:
            self.taken.add(base)
            return base
        n = 1
        while True:
            sep = "" if base.endswith("_") else "_"
            name = base + sep if n == 1 else f"{base}{sep}{n}"
            if name not in self.taken and name not in RESERVED:
                self.taken.add(name)
                return name
            n += 1

    def reserve(self, *names: str) -> None:
        self.taken.update(names)

    def child(self) -> Namespace:
        return Namespace(self.taken)


def _legal(name: str) -> str:
    name = ascii_identifier(name)
    name = name.replace("__", "_u_") if "__" in name else name
    if name.startswith("_") and name[1:2].isupper():
        name = "v" + name
    return name


def ascii_identifier(name: str) -> str:
    """A Python identifier as a C one: letters beyond ASCII by their names (``μ_Q`` -> ``mu_Q``, ``Σ_T`` ->
    ``Sigma_T``: NVRTC and nvcc read no other identifiers), anything else as its code point (``u00e9``)."""
    if name.isascii():
        return name
    out = []
    for ch in unicodedata.normalize("NFKC", name):
        if ch.isascii():
            out.append(ch)
            continue
        words = unicodedata.name(ch, "").split()
        if len(words) >= 4 and words[0] == "GREEK" and words[2] == "LETTER":  # GREEK SMALL LETTER MU
            letter = words[3].lower()
            out.append(letter.capitalize() if words[1] == "CAPITAL" else letter)
        else:
            out.append(f"u{ord(ch):04x}")
    return "".join(out)


#: the host launcher's own parameters (the contract's ABI): a kernel parameter must not take these names
LAUNCHER_PARAMS = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared_bytes", "stream")


def kernel_cname(name: str) -> str:
    """The C name of a ``__global__`` kernel (the Python name unless C, C++ or CUDA forbid it)."""
    return Namespace().claim(name)


def is_array_tuple(t) -> bool:
    """A tuple of arrays (numba's UniTuple or Tuple of them): each array is a parameter of its own in C."""
    return isinstance(t, types.BaseTuple) and len(t) > 0 and all(isinstance(x, types.Array) for x in t)


def typed_param_cnames(kernel_c: str, names, argtypes, reserved=()) -> tuple[Namespace, list]:
    """``param_cnames`` of parameters by their numba types: ``(cname, extents, strides)`` per parameter, and for a
    tuple of arrays a list of those, one per array (``pair_0``, ``pair_0_shape0``, ``pair_1``, ...)."""
    items = [[(f"{n}_{k}", x) for k, x in enumerate(t)] if is_array_tuple(t) else [(n, t)]
             for n, t in zip(names, argtypes)]
    ns, flat = param_cnames(kernel_c, [(n, t.ndim if isinstance(t, types.Array) else 0,
                                        isinstance(t, types.Array) and t.layout != "C")
                                       for group in items for n, t in group], reserved)
    grouped = []
    for t, group in zip(argtypes, items):
        these, flat = flat[:len(group)], flat[len(group):]
        grouped.append(these if is_array_tuple(t) else these[0])
    return ns, grouped


def param_cnames(kernel_c: str, params: list[tuple[str, int, bool]], reserved=()) -> tuple[Namespace, list]:
    """C names for a function's parameters ``(python name, ndim (0 = scalar), strided)``: each parameter's own
    name first (in order), then the extents and strides each array passes (``x_shape0``, ``x_stride0``).
    Returns the namespace (locals are claimed in it next) and ``(cname, extents, strides)`` per parameter."""
    ns = Namespace({kernel_c, *reserved})
    cnames = [ns.claim(p) for p, _, _ in params]
    out = []
    for c, (_, ndim, strided) in zip(cnames, params):
        stem = c.rstrip("_") or c
        extents = tuple(ns.claim(f"{stem}_shape{d}") for d in range(ndim))
        strides = tuple(ns.claim(f"{stem}_stride{d}") for d in range(ndim)) if strided else ()
        out.append((c, extents, strides))
    return ns, out
