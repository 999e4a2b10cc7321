"""``numbakern.mma.hopper`` (Hopper's asynchronous units, ``sm_90a``) in C: each instruction's C emitter, registered on
its Op (``numbakern.intrinsics.hopper``), writes a call of a small inline helper whose ``asm volatile`` is the Op's
PTX template (``op.ptx_text(..., "c")``: the PTX Numba emits, ordered with memory as Numba's is)::

    shared_address(smem, i)                  ->  nk_smem(&smem[i])                  (__cvta_generic_to_shared)
    mbarrier_init(bars, i, n)                ->  nk_mbarrier_init(&bars[i], n);     (arrive, arrive_expect_tx alike)
    mbarrier_try_wait(bars, i, parity)       ->  nk_mbarrier_try_wait(&bars[i], parity)
    tma_load_2d(dst, i, tmap, c0, c1, bars, j) -> nk_tma_load_2d(&dst[i], &tmap, c0, c1, &bars[j]);  (tma_load_3d)
    tma_store_2d(tmap, c0, c1, src, i)       ->  nk_tma_store_2d(&tmap, c0, c1, &src[i]);
    bulk_commit(); bulk_wait_read(n)         ->  nk_bulk_commit(); nk_bulk_wait_read<n>();
    named_barrier(id, n)                     ->  nk_named_barrier(id, n);           (named_barrier_arrive alike)
    wgmma_fence(); wgmma_commit()            ->  nk_wgmma_fence(); nk_wgmma_commit();
    wgmma_wait(n, acc, count)                ->  nk_wgmma_wait_<count><n>(acc);    (the accumulators tied through)
    setmaxnreg_inc(c)                        ->  nk_setmaxnreg_inc<c>();
    wgmma_m64n256k16_bf16(acc, da, db, s, t) ->  nk_wgmma_m64n256k16_bf16<t>(acc, da, db, s);
    wgmma_m64n64k16_bf16_rs(acc, a, j, db, s, t) -> nk_wgmma_m64n64k16_bf16_rs<t>(acc, &a[j], db, s);

A parameter the kernel declares a tensor map (``numbakern.tensormap.tensor_map_params``) is a ``const
__grid_constant__ nk_tensor_map`` in C: the ``extern "C"`` launcher makes it from the array it describes with
``cuTensorMapEncodeTiled`` (``nk_encode_tensor_map``) and passes it by value; the copies name its address. A kernel
that uses these instructions compiles for ``sm_90a`` (``HOPPER_ARCH``).
"""

from __future__ import annotations

from numba.cuda import types

from numbakern.intrinsics import hopper as hp
from numbakern.intrinsics import op_of
from numbakern.intrinsics.op import Op, on_declare

from .arrays import ArrayInfo
from .cexpr import PRIMARY, CExpr
from .sites import call_op

#: the helper every file that uses these instructions carries (and the sign that it needs sm_90a)
MARK = "nk_hopper"
#: the instructions with no operands: the instruction alone (``nk_<name>()``)
_SIMPLE = (hp.FENCE_BARRIER_INIT, hp.FENCE_PROXY_ASYNC, hp.BULK_COMMIT, hp.WGMMA_FENCE, hp.WGMMA_COMMIT)


def _asm(op: Op, bound: dict | None = None) -> str:
    """The Op's PTX as a C string literal for ``asm volatile`` (split before its first operand where it is long)."""
    text = op.ptx_text(bound or {}, "c")
    if len(text) > 100 and " [" in text:
        first, rest = text.split(" [", 1)
        return f'"{first} "\n                 "[{rest}"'
    return f'"{text}"'


def _tma_load_helper(op: Op, dims: int) -> str:
    params = ", ".join(f"int c{i}" for i in range(dims))
    ins = ", ".join(f'"r"(c{i})' for i in range(dims))
    axes = ", ".join(f"c{i}" for i in range(dims)).replace("c0", "c0 innermost", 1)
    return (f"// the box at ({axes}) of the tensor `tmap` describes, to shared memory; its bytes complete on `bar`\n"
            f"__device__ __forceinline__ void nk_{op.name}(void *dst, const void *tmap, {params}, const void *bar) {{\n"
            f"    asm volatile({_asm(op)}\n"
            f'                 :: "r"(nk_smem(dst)), "l"(reinterpret_cast<unsigned long long>(tmap)), {ins},\n'
            f'                    "r"(nk_smem(bar)) : "memory");\n}}\n')


BASE = f"""\
// Hopper (sm_90a): the 128-byte tensor map (CUtensorMap) a kernel receives by value, and shared-state addresses
struct __align__(64) nk_tensor_map {{ unsigned long long opaque[16]; }};
__device__ __forceinline__ unsigned nk_smem(const void *p) {{ return (unsigned)__cvta_generic_to_shared(p); }}
__device__ __forceinline__ void nk_mbarrier_init(const void *bar, unsigned count) {{
    asm volatile({_asm(hp.MBARRIER_INIT)} :: "r"(nk_smem(bar)), "r"(count) : "memory");
}}
__device__ __forceinline__ void nk_mbarrier_arrive(const void *bar) {{
    asm volatile({_asm(hp.MBARRIER_ARRIVE)} :: "r"(nk_smem(bar)) : "memory");
}}
__device__ __forceinline__ void nk_mbarrier_arrive_expect_tx(const void *bar, unsigned nbytes) {{
    asm volatile({_asm(hp.MBARRIER_ARRIVE_EXPECT_TX)} :: "r"(nk_smem(bar)), "r"(nbytes)
                 : "memory");
}}
// true once the phase of parity `parity` has completed (the hardware waits a while first)
__device__ __forceinline__ bool nk_mbarrier_try_wait(const void *bar, unsigned parity) {{
    unsigned done;
    asm volatile({_asm(hp.MBARRIER_TRY_WAIT)}
                 : "=r"(done) : "r"(nk_smem(bar)), "r"(parity) : "memory");
    return done != 0;
}}
{_tma_load_helper(hp.TMA_LOAD_2D, 2)}\
// a box of shared memory to the tensor at (c0, c1), elements past its edges not written: a bulk group
__device__ __forceinline__ void nk_tma_store_2d(const void *tmap, int c0, int c1, const void *src) {{
    asm volatile({_asm(hp.TMA_STORE_2D)}
                 :: "l"(reinterpret_cast<unsigned long long>(tmap)), "r"(c0), "r"(c1), "r"(nk_smem(src))
                 : "memory");
}}
template <int N> __device__ __forceinline__ void nk_bulk_wait_read() {{
    asm volatile({_asm(hp.BULK_WAIT_READ)} :: "n"(N) : "memory");
}}
template <int N> __device__ __forceinline__ void nk_bulk_wait() {{
    asm volatile({_asm(hp.BULK_WAIT)} :: "n"(N) : "memory");
}}
// bar.sync id, count: a barrier of `count` threads (whole warps), id 1-15 (0 is __syncthreads()'s)
__device__ __forceinline__ void nk_named_barrier(unsigned id, unsigned count) {{
    asm volatile({_asm(hp.NAMED_BARRIER)} :: "r"(id), "r"(count) : "memory");
}}
template <int C> __device__ __forceinline__ void nk_setmaxnreg_inc() {{
    asm volatile({_asm(hp.SETMAXNREG_INC)} :: "n"(C));
}}
template <int C> __device__ __forceinline__ void nk_setmaxnreg_dec() {{
    asm volatile({_asm(hp.SETMAXNREG_DEC)} :: "n"(C));
}}
""" + "".join(f"__device__ __forceinline__ void nk_{op.name}() {{ asm volatile({_asm(op)} ::: \"memory\"); }}\n"
              for op in _SIMPLE)

#: helpers only some kernels use, beside BASE: by name
EXTRA = {
    "nk_tma_load_3d": _tma_load_helper(hp.TMA_LOAD_3D, 3),
    "nk_named_barrier_arrive": f"""\
// bar.arrive id, count: this thread's warp counted at named barrier `id` of `count` threads, without waiting
__device__ __forceinline__ void nk_named_barrier_arrive(unsigned id, unsigned count) {{
    asm volatile({_asm(hp.NAMED_BARRIER_ARRIVE)} :: "r"(id), "r"(count) : "memory");
}}
""",
}

ENCODE = """\
#ifndef __CUDACC_RTC__
#include <cudaTypedefs.h>
// cuTensorMapEncodeTiled (reached through the runtime's driver entry point: no -lcuda): the tensor map of
// `batches` row-major rows x cols matrices at device address `data` (rows row_bytes apart, matrices batch_bytes
// apart; batches 0: one matrix, a 2-D map), boxes of box_rows x box_cols of one matrix, elements past the edges
// read as zeros. The map's rank is the instruction's (tma_load_2d or _3d): a 3-D array has a 3-D map, even of one
static cudaError_t nk_encode_tensor_map(nk_tensor_map *map, const void *data, long long batches, long long rows,
                                        long long cols, long long batch_bytes, long long row_bytes, unsigned box_rows,
                                        unsigned box_cols, unsigned element_bytes, unsigned swizzle) {
    static PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
    if (encode == nullptr) {
        cudaDriverEntryPointQueryResult found;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void **)&encode, 12000, cudaEnableDefault,
                                             &found) != cudaSuccess || found != cudaDriverEntryPointSuccess)
            return cudaErrorNotSupported;
    }
    const CUtensorMapDataType type = element_bytes == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8
        : element_bytes == 2 ? CU_TENSOR_MAP_DATA_TYPE_UINT16 : element_bytes == 4 ? CU_TENSOR_MAP_DATA_TYPE_UINT32
        : CU_TENSOR_MAP_DATA_TYPE_UINT64;
    const CUtensorMapSwizzle sw = swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
        : swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B : swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
        : CU_TENSOR_MAP_SWIZZLE_NONE;
    const cuuint64_t dims[3] = {(cuuint64_t)cols, (cuuint64_t)rows, (cuuint64_t)(batches > 0 ? batches : 1)},
                     strides[2] = {(cuuint64_t)row_bytes, (cuuint64_t)batch_bytes};
    const cuuint32_t box[3] = {box_cols, box_rows, 1}, steps[3] = {1, 1, 1};
    const cuuint32_t rank = batches > 0 ? 3 : 2;
    const CUresult r = encode(reinterpret_cast<CUtensorMap *>(map), type, rank, const_cast<void *>(data), dims,
                              strides, box, steps, CU_TENSOR_MAP_INTERLEAVE_NONE, sw,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}
#endif
"""


def _wgmma_helper(op: Op) -> str:
    """``nk_<name><TRANS_B>(d, a or desc_a, desc_b, scale_d)``: the accumulators in and out through the asm."""
    shape = op.shape
    nregs = shape.n // 2
    outs = ", ".join(f'"+f"(d[{q}])' for q in range(nregs))
    if shape.a_registers:
        reg = "__float_as_uint(a[{}])" if shape.operand == "tf32" else "a[{}]"
        ins = ", ".join(f'"r"({reg.format(q)})' for q in range(4))
        a_param = f"const {'float' if shape.operand == 'tf32' else 'unsigned'} *a"
    else:
        ins, a_param = '"l"(desc_a)', "unsigned long long desc_a"
    ins += ', "l"(desc_b), "r"(scale_d)' + (', "n"(TRANS_B)' if shape.transposable else "")
    head = "template <int TRANS_B> " if shape.transposable else ""
    return (f"// {shape.ptx}: d (64 x {shape.n}, {nregs} float32 a thread) += A @ B, asynchronously (wgmma_wait)\n"
            f"{head}__device__ __forceinline__ void nk_{shape.name}(float *d, {a_param}, "
            f"unsigned long long desc_b, int scale_d) {{\n"
            f"    asm volatile({_asm(op)}\n"
            f"                 : {outs}\n"
            f"                 : {ins} : \"memory\");\n}}\n")


def _wait_helper(count: int) -> str:
    outs = ", ".join(f'"+f"(acc[{q}])' for q in range(count))
    return (f"// wgmma.wait_group: the {count} accumulators go through it, so no access to them moves across\n"
            f"template <int N> __device__ __forceinline__ void nk_wgmma_wait_{count}(float *acc) {{\n"
            f'    asm volatile({_asm(hp.WGMMA_WAIT, {"count": count})} : {outs} : "n"(N) : "memory");\n}}\n')


class _Helpers(dict):
    """The file's helpers: the fixed ones, and one per wgmma shape and per wait width, made when first used."""

    def __missing__(self, key: str):
        if key.startswith("nk_wgmma_wait_"):
            text = _wait_helper(int(key.rsplit("_", 1)[1]))
        else:
            shape = hp.wgmma_shape(key[3:]) if key.startswith("nk_wgmma_m64") else None
            if shape is None:
                raise KeyError(key)
            text = _wgmma_helper(hp.wgmma(shape))
        self[key] = text
        return text

    def __contains__(self, key) -> bool:
        if dict.__contains__(self, key):
            return True
        try:
            self[key]
        except (KeyError, ValueError):
            return False
        return True


HELPERS = _Helpers({MARK: BASE, **EXTRA, "nk_encode_tensor_map": ENCODE})
DEPENDS = {"nk_encode_tensor_map": (MARK,), **{name: (MARK,) for name in EXTRA}}


def made_helper(name: str) -> bool:
    """Whether ``name`` is one of the helpers made per wgmma shape or wait width (``nk_wgmma_m64n64k16_bf16``)."""
    return name.startswith(("nk_wgmma_m64", "nk_wgmma_wait_")) and name in HELPERS


def depends(name: str) -> tuple[str, ...]:
    return (MARK,) if name.startswith(("nk_wgmma_m64", "nk_wgmma_wait_")) else DEPENDS.get(name, ())


# -- the emitters ----------------------------------------------------------------------------------------------------


def _void(code: str) -> CExpr:
    return CExpr(code, None, types.none, PRIMARY, pure=False)


def _address(site, array: int, index: int, what: str, written: bool = False) -> str:
    # a device function's array parameter is whatever its caller passes: the caller's shared array, as a pointer
    if site.array(array, "shared", "dynamic", "view") is None:
        raise site.error(array, f"{site.op.name}: {what} must be a shared array (cuda.shared.array)")
    if written:
        site.writes(array)
    return f"&{site.element(array, index).code}"


def _tensor_map(site, i: int) -> str:
    info = site.value(i)
    if not isinstance(info, ArrayInfo) or info.kind != "param":
        raise site.error(i, f"{site.op.name}: the tensor map must be a parameter of the kernel")
    if info.name in site.unit.tensor_maps:
        return f"&{info.name}"  # a __grid_constant__ nk_tensor_map the launcher made
    return info.name  # a device array holding the map, made by the caller


def _int(site, i: int, key: str = "uint32") -> str:
    e = site.expr(i)
    if not (e.key or "").startswith(("int", "uint", "bool")):
        raise site.error(i, "expected an integer")
    return e.code if e.key == key else f"({'unsigned' if key == 'uint32' else 'int'})({e.code})"


def _immediate(site, i: int, what: str) -> int:
    value = site.constant(i)
    if not isinstance(value, int) or isinstance(value, bool):
        raise site.error(i, f"{site.op.name}: {what} must be a compile-time integer (a literal or a factory's "
                         "constant)")
    return value


def _start(site) -> None:
    """The call's arguments as the Op takes them (by position), and the file's Hopper helpers."""
    site.args(len(site.op.params), f"{len(site.op.params)} argument(s) ({', '.join(site.op.params)})")
    site.helper(MARK)


def _simple(site):
    _start(site)
    return _void(f"nk_{site.op.name}()")


def _shared_address(site):
    _start(site)
    return CExpr(f"nk_smem({_address(site, 0, 1, 'the array')})", "uint32", types.uint32, PRIMARY)


def _mbarrier(site):
    _start(site)
    bar = _address(site, 0, 1, "the mbarrier array", written=True)
    extra = [_int(site, i) for i in range(2, site.nargs)]
    code = f"nk_{site.op.name}({', '.join([bar, *extra])})"
    if site.op is hp.MBARRIER_TRY_WAIT:
        return CExpr(code, "bool", types.boolean, PRIMARY, pure=False)
    return _void(code)


def _tma_load(site):
    _start(site)
    dims = site.nargs - 5  # dst, dst_index, tensor_map, c0.., bars, bar_index
    if site.op is hp.TMA_LOAD_3D:
        site.helper("nk_tma_load_3d")
    d = _address(site, 0, 1, "the destination", written=True)
    tmap = _tensor_map(site, 2)
    coords = [_int(site, 3 + i, "int32") for i in range(dims)]
    b = _address(site, 3 + dims, 4 + dims, "the mbarrier array", written=True)
    return _void(f"nk_{site.op.name}({d}, {tmap}, {', '.join(coords)}, {b})")


def _tma_store(site):
    _start(site)
    tmap = _tensor_map(site, 0)
    c0, c1 = _int(site, 1, "int32"), _int(site, 2, "int32")
    return _void(f"nk_tma_store_2d({tmap}, {c0}, {c1}, {_address(site, 3, 4, 'the source')})")


def _wait_n(site):
    _start(site)
    return _void(f"nk_{site.op.name}<{_immediate(site, 0, 'n')}>()")


def _named_barrier(site):
    _start(site)
    if site.op is hp.NAMED_BARRIER_ARRIVE:
        site.helper("nk_named_barrier_arrive")
    return _void(f"nk_{site.op.name}({_int(site, 0)}, {_int(site, 1)})")


def _setmaxnreg(site):
    _start(site)
    return _void(f"nk_{site.op.name}<{_immediate(site, 0, 'count')}>()")


def _accumulators(site, i: int) -> ArrayInfo:
    info = site.value(i)
    if not isinstance(info, ArrayInfo) or info.kind != "local" or info.ndim != 1 or info.key != "float32":
        raise site.error(i, f"{site.op.name}: acc must be a 1-D float32 cuda.local.array")
    site.writes(i)
    return info


def _wgmma_wait(site):
    _start(site)
    info = _accumulators(site, 1)
    width = _immediate(site, 2, "count")
    site.helper(f"nk_wgmma_wait_{width}")
    return _void(f"nk_wgmma_wait_{width}<{_immediate(site, 0, 'n')}>({info.name})")


def _wgmma(site):
    _start(site)
    shape = site.op.shape
    acc = _accumulators(site, 0)
    if shape.a_registers:
        a = site.value(1)
        if not isinstance(a, ArrayInfo) or a.kind != "local" or a.ndim != 1:
            raise site.error(1, f"{site.op.name}: a must be a 1-D cuda.local.array (the A fragment's registers)")
        first, rest = f"&{a.name}[{site.expr(2).code}]", 3
    else:
        first, rest = site.expr(1).code, 2
    desc_b, scale = site.expr(rest).code, _int(site, rest + 1, "int32")
    targs = f"<{_immediate(site, rest + 2, 'trans_b')}>" if shape.transposable else ""
    site.helper(f"nk_{site.op.name}")
    return _void(f"nk_{site.op.name}{targs}({acc.name}, {first}, {desc_b}, {scale})")


EMITTERS = {
    hp.SHARED_ADDRESS: _shared_address, hp.MBARRIER_INIT: _mbarrier, hp.MBARRIER_ARRIVE: _mbarrier,
    hp.MBARRIER_ARRIVE_EXPECT_TX: _mbarrier, hp.MBARRIER_TRY_WAIT: _mbarrier, hp.TMA_LOAD_2D: _tma_load,
    hp.TMA_LOAD_3D: _tma_load, hp.TMA_STORE_2D: _tma_store, hp.BULK_WAIT_READ: _wait_n, hp.BULK_WAIT: _wait_n,
    hp.NAMED_BARRIER: _named_barrier, hp.NAMED_BARRIER_ARRIVE: _named_barrier, hp.SETMAXNREG_INC: _setmaxnreg,
    hp.SETMAXNREG_DEC: _setmaxnreg, hp.WGMMA_WAIT: _wgmma_wait, **{op: _simple for op in _SIMPLE},
}


def _register(op: Op) -> None:
    """Each Hopper instruction's emitter on its Op; each wgmma shape's as it is declared."""
    if op.module != hp.MODULE:
        return
    op.register("c", EMITTERS.get(op) or _wgmma)


on_declare(_register)


def is_hopper(obj) -> bool:
    found = op_of(obj)
    return found is not None and found.module == hp.MODULE


#: this module's entry in the builtins table (``translate/codegen/builtins.py``): the wgmma instructions are declared
#: per shape on demand, so the family is recognised by its Ops' module
FAMILIES = (("numbakern.mma.hopper's instructions", is_hopper, call_op),)

# -- the launcher ----------------------------------------------------------------------------------------------------

#: the architecture a file using these instructions compiles for, from the one asked for
HOPPER_ARCH = {"sm_90": "sm_90a", "compute_90": "compute_90a", "sm_90a": "sm_90a", "compute_90a": "compute_90a"}


def file_arch(arch: str, helpers) -> str:
    """The architecture to compile a file for: ``sm_90a`` where it uses Hopper's instructions."""
    if MARK not in helpers:
        return arch
    if arch not in HOPPER_ARCH:
        raise ValueError(f"the kernel uses Hopper's wgmma/TMA instructions, which need sm_90a; --arch {arch} cannot "
                         "run them")
    return HOPPER_ARCH[arch]


def launcher_helpers(request) -> set[str]:
    """The helpers the launcher needs, whatever backend wrote the device code: the map encoder where the kernel
    takes tensor maps."""
    return {"nk_encode_tensor_map"} if any(p.tensor_map for p in request.params) else set()


def launcher_lines(request, device, kernel: str) -> list[str]:
    """What an ``extern "C"`` launcher does before the launch, for a kernel that uses these instructions: its dynamic
    shared-memory limit raised to the launch's, and each tensor-map parameter made from its array."""
    if MARK not in device.helpers:
        return []
    lines = ["    if (shared_bytes > 48 * 1024) {  // past the 48 KiB a launch gets without asking",
             f"        cudaError_t err = cudaFuncSetAttribute({kernel}, cudaFuncAttributeMaxDynamicSharedMemorySize, "
             "(int)shared_bytes);",
             "        if (err != cudaSuccess) return err;",
             "    }"]
    by_name = {p.name: p for p in request.params}
    for p in request.params:
        if not p.tensor_map:
            continue
        source_name, rows, cols, swizzle = p.tensor_map
        source = by_name[source_name]
        from ..cnames import c_name

        element = f"sizeof({source.ctype or c_name(source.dtype)})"
        extents = source.extent_names()
        # the byte strides of the matrices and their rows (a 2-D source is a batch of one)
        if source.strided:
            strides = [f"{s} * {element}" for s in source.stride_names()[:-1]]
        else:
            strides = [f"{' * '.join(extents[i + 1:])} * {element}" for i in range(len(extents) - 1)]
        batches, batch_bytes = (extents[0], strides[0]) if len(extents) == 3 else ("0", "0")
        lines += [f"    nk_tensor_map {p.c}_map;  // ({p.c}'s contents are not read: its map is made here)",
                  f"    {{ cudaError_t err = nk_encode_tensor_map(&{p.c}_map, {source.c}, {batches}, "
                  f"{', '.join(extents[-2:])}, {batch_bytes}, {strides[-1]}, {rows}, {cols}, {element}, {swizzle});",
                  "      if (err != cudaSuccess) return err; }"]
    return lines


def build_manifest(build: dict, arch: str) -> dict:
    """The manifest's build record: a file compiled for an arch-specific target builds with ``-arch`` of it."""
    if not arch.endswith("a"):
        return build
    number = arch.split("_", 1)[1]
    # (-gencode, not -arch=sm_90a: nvcc 13 adds compute_90 PTX for that, which cannot hold these instructions)
    return {**build, "nvcc_flags": [*build.get("nvcc_flags", []), f"-gencode=arch=compute_{number},code=sm_{number}"]}
