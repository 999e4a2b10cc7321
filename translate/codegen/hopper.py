"""``numbakern.mma.hopper`` (Hopper's asynchronous units, ``sm_90a``) in C: each intrinsic becomes the PTX Numba emits,
in a small inline helper (``asm volatile``, ordered with memory as Numba's are)::

    shared_address(smem, i)                  ->  nk_smem(&smem[i])                  (__cvta_generic_to_shared)
    mbarrier_init(bars, i, n)                ->  nk_mbarrier_init(&bars[i], n);     (arrive, arrive_expect_tx alike)
    mbarrier_try_wait(bars, i, parity)       ->  nk_mbarrier_try_wait(&bars[i], parity)
    tma_load_2d(dst, i, tmap, c0, c1, bars, j) -> nk_tma_load_2d(&dst[i], &tmap, c0, c1, &bars[j]);
    tma_store_2d(tmap, c0, c1, src, i)       ->  nk_tma_store_2d(&tmap, c0, c1, &src[i]);
    bulk_commit(); bulk_wait_read(n)         ->  nk_bulk_commit(); nk_bulk_wait_read<n>();
    named_barrier(id, n)                     ->  nk_named_barrier(id, n);
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

import ast

from numba.cuda import types

from .arrays import ArrayInfo, element
from .cexpr import PRIMARY, CExpr

#: the helper every file that uses these instructions carries (and the sign that it needs sm_90a)
MARK = "nk_hopper"
FIXED = ("shared_address", "mbarrier_init", "mbarrier_arrive", "mbarrier_arrive_expect_tx", "mbarrier_try_wait",
         "fence_barrier_init", "fence_proxy_async", "tma_load_2d", "tma_store_2d", "bulk_commit", "bulk_wait_read",
         "bulk_wait", "named_barrier", "wgmma_fence", "wgmma_commit", "wgmma_wait", "setmaxnreg_inc",
         "setmaxnreg_dec")

_SIMPLE = {  # no operands: the instruction alone
    "fence_barrier_init": "fence.mbarrier_init.release.cluster;",
    "fence_proxy_async": "fence.proxy.async.shared::cta;",
    "bulk_commit": "cp.async.bulk.commit_group;",
    "wgmma_fence": "wgmma.fence.sync.aligned;",
    "wgmma_commit": "wgmma.commit_group.sync.aligned;",
}

BASE = """\
// Hopper (sm_90a): the 128-byte tensor map (CUtensorMap) a kernel receives by value, and shared-state addresses
struct __align__(64) nk_tensor_map { unsigned long long opaque[16]; };
__device__ __forceinline__ unsigned nk_smem(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void nk_mbarrier_init(const void *bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(nk_smem(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void nk_mbarrier_arrive(const void *bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(nk_smem(bar)) : "memory");
}
__device__ __forceinline__ void nk_mbarrier_arrive_expect_tx(const void *bar, unsigned nbytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(nk_smem(bar)), "r"(nbytes)
                 : "memory");
}
// true once the phase of parity `parity` has completed (the hardware waits a while first)
__device__ __forceinline__ bool nk_mbarrier_try_wait(const void *bar, unsigned parity) {
    unsigned done;
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(nk_smem(bar)), "r"(parity) : "memory");
    return done != 0;
}
// the box at (c0 innermost, c1) of the tensor `tmap` describes, to shared memory; its bytes complete on `bar`
__device__ __forceinline__ void nk_tma_load_2d(void *dst, const void *tmap, int c0, int c1, const void *bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
                 "[%0], [%1, {%2, %3}], [%4];"
                 :: "r"(nk_smem(dst)), "l"(reinterpret_cast<unsigned long long>(tmap)), "r"(c0), "r"(c1),
                    "r"(nk_smem(bar)) : "memory");
}
// a box of shared memory to the tensor at (c0, c1), elements past its edges not written: a bulk group
__device__ __forceinline__ void nk_tma_store_2d(const void *tmap, int c0, int c1, const void *src) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                 :: "l"(reinterpret_cast<unsigned long long>(tmap)), "r"(c0), "r"(c1), "r"(nk_smem(src))
                 : "memory");
}
template <int N> __device__ __forceinline__ void nk_bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" :: "n"(N) : "memory");
}
template <int N> __device__ __forceinline__ void nk_bulk_wait() {
    asm volatile("cp.async.bulk.wait_group %0;" :: "n"(N) : "memory");
}
// bar.sync id, count: a barrier of `count` threads (whole warps), id 1-15 (0 is __syncthreads()'s)
__device__ __forceinline__ void nk_named_barrier(unsigned id, unsigned count) {
    asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(count) : "memory");
}
template <int C> __device__ __forceinline__ void nk_setmaxnreg_inc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(C));
}
template <int C> __device__ __forceinline__ void nk_setmaxnreg_dec() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(C));
}
""" + "".join(f"__device__ __forceinline__ void nk_{name}() {{ asm volatile(\"{ptx}\" ::: \"memory\"); }}\n"
              for name, ptx in _SIMPLE.items())

ENCODE = """\
#ifndef __CUDACC_RTC__
#include <cudaTypedefs.h>
// cuTensorMapEncodeTiled (reached through the runtime's driver entry point: no -lcuda): the tensor map of a
// row-major rows x cols matrix at device address `data` (rows row_bytes apart), boxes of box_rows x box_cols,
// elements past the edges read as zeros
static cudaError_t nk_encode_tensor_map(nk_tensor_map *map, const void *data, long long rows, long long cols,
                                        long long row_bytes, unsigned box_rows, unsigned box_cols,
                                        unsigned element_bytes, unsigned swizzle) {
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
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows}, strides[1] = {(cuuint64_t)row_bytes};
    const cuuint32_t box[2] = {box_cols, box_rows}, steps[2] = {1, 1};
    const CUresult r = encode(reinterpret_cast<CUtensorMap *>(map), type, 2, const_cast<void *>(data), dims, strides,
                              box, steps, CU_TENSOR_MAP_INTERLEAVE_NONE, sw, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}
#endif
"""


def _wgmma_helper(shape) -> str:
    """``nk_<name><TRANS_B>(d, a or desc_a, desc_b, scale_d)``: the accumulators in and out through the asm."""
    nregs = shape.n // 2
    a_count = 4 if shape.a_registers else 1
    d = ", ".join(f"%{q}" for q in range(nregs))
    a = ("{" + ", ".join(f"%{nregs + q}" for q in range(4)) + "}") if shape.a_registers else f"%{nregs}"
    b, p, t = nregs + a_count, nregs + a_count + 1, nregs + a_count + 2
    tail = "p, 1, 1" + ("" if not shape.transposable else f", %{t}" if shape.a_registers else f", 0, %{t}")
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
            f'    asm volatile("{{ .reg .pred p; setp.ne.b32 p, %{p}, 0; {shape.ptx} {{{d}}}, {a}, %{b}, {tail}; }}"\n'
            f"                 : {outs}\n"
            f"                 : {ins} : \"memory\");\n}}\n")


def _wait_helper(count: int) -> str:
    outs = ", ".join(f'"+f"(acc[{q}])' for q in range(count))
    return (f"// wgmma.wait_group: the {count} accumulators go through it, so no access to them moves across\n"
            f"template <int N> __device__ __forceinline__ void nk_wgmma_wait_{count}(float *acc) {{\n"
            f'    asm volatile("wgmma.wait_group.sync.aligned %{count};" : {outs} : "n"(N) : "memory");\n}}\n')


class _Helpers(dict):
    """The file's helpers: the fixed ones, and one per wgmma shape and per wait width, made when first used."""

    def __missing__(self, key: str):
        from numbakern.mma.hopper import wgmma_shape

        if key.startswith("nk_wgmma_wait_"):
            text = _wait_helper(int(key.rsplit("_", 1)[1]))
        else:
            shape = wgmma_shape(key[3:]) if key.startswith("nk_wgmma_m64") else None
            if shape is None:
                raise KeyError(key)
            text = _wgmma_helper(shape)
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


HELPERS = _Helpers({MARK: BASE, "nk_encode_tensor_map": ENCODE})
DEPENDS = {"nk_encode_tensor_map": (MARK,)}


def made_helper(name: str) -> bool:
    """Whether ``name`` is one of the helpers made per wgmma shape or wait width (``nk_wgmma_m64n64k16_bf16``)."""
    return name.startswith(("nk_wgmma_m64", "nk_wgmma_wait_")) and name in HELPERS


def depends(name: str) -> tuple[str, ...]:
    return (MARK,) if name.startswith(("nk_wgmma_m64", "nk_wgmma_wait_")) else DEPENDS.get(name, ())


# -- which objects --------------------------------------------------------------------------------------------------

def _module():
    import numbakern.mma.hopper as hopper

    return hopper


def name_of(obj) -> str | None:
    """The intrinsic's name if ``obj`` is one of ``numbakern.mma.hopper``'s (as the kernel's module sees it)."""
    hopper = _module()
    for name, value in vars(hopper).items():
        if value is obj and (name in FIXED or hopper.WGMMA_NAME.match(name)):
            return name
    return None


def is_hopper(obj) -> bool:
    return callable(obj) and name_of(obj) is not None


def call(tr, obj, node: ast.Call):
    name = name_of(obj)
    if node.keywords:
        raise tr.src.error(node, f"{name} takes its arguments by position")
    tr.helpers.add(MARK)
    if name in _SIMPLE:
        _count(tr, name, node, 0)
        return _void(f"nk_{name}()")
    handler = _HANDLERS.get(name)
    if handler is not None:
        return handler(tr, name, node)
    return _wgmma(tr, name, node)


def _void(code: str) -> CExpr:
    return CExpr(code, None, types.none, PRIMARY, pure=False)


def _count(tr, name, node, n):
    if len(node.args) != n:
        raise tr.src.error(node, f"{name} takes {n} argument{'s' if n != 1 else ''}")
    return node.args


def _address(tr, name, node, array_node, index_node, what: str, written: bool = False) -> str:
    info = tr.value(array_node)
    if not isinstance(info, ArrayInfo) or info.kind not in ("shared", "dynamic", "view"):
        raise tr.src.error(array_node, f"{name}: {what} must be a shared array (cuda.shared.array)")
    if written:
        tr.mark_written(info.name)
    return f"&{element(tr, info, index_node, node).code}"


def _tensor_map(tr, name, node) -> str:
    info = tr.value(node)
    if not isinstance(info, ArrayInfo) or info.kind != "param":
        raise tr.src.error(node, f"{name}: the tensor map must be a parameter of the kernel")
    if info.name in getattr(tr.unit, "tensor_maps", ()):
        return f"&{info.name}"  # a __grid_constant__ nk_tensor_map the launcher made
    return info.name  # a device array holding the map, made by the caller


def _int(tr, node, key="uint32") -> str:
    e = tr.expr(node)
    if not (e.key or "").startswith(("int", "uint", "bool")):
        raise tr.src.error(node, "expected an integer")
    return e.code if e.key == key else f"({'unsigned' if key == 'uint32' else 'int'})({e.code})"


def _immediate(tr, name, node, what: str) -> int:
    value = tr.const_value(node)
    if not isinstance(value, int) or isinstance(value, bool):
        raise tr.src.error(node, f"{name}: {what} must be a compile-time integer (a literal or a factory's constant)")
    return value


def _shared_address(tr, name, node):
    arr, idx = _count(tr, name, node, 2)
    return CExpr(f"nk_smem({_address(tr, name, node, arr, idx, 'the array')})", "uint32", types.uint32, PRIMARY)


def _mbarrier(tr, name, node):
    n = {"mbarrier_init": 3, "mbarrier_arrive": 2, "mbarrier_arrive_expect_tx": 3, "mbarrier_try_wait": 3}[name]
    args = _count(tr, name, node, n)
    bar = _address(tr, name, node, args[0], args[1], "the mbarrier array", written=True)
    extra = [_int(tr, a) for a in args[2:]]
    code = f"nk_{name}({', '.join([bar, *extra])})"
    if name == "mbarrier_try_wait":
        return CExpr(code, "bool", types.boolean, PRIMARY, pure=False)
    return _void(code)


def _tma_load(tr, name, node):
    dst, di, tmap, c0, c1, bars, bi = _count(tr, name, node, 7)
    d = _address(tr, name, node, dst, di, "the destination", written=True)
    b = _address(tr, name, node, bars, bi, "the mbarrier array", written=True)
    return _void(f"nk_tma_load_2d({d}, {_tensor_map(tr, name, tmap)}, {_int(tr, c0, 'int32')}, "
                 f"{_int(tr, c1, 'int32')}, {b})")


def _tma_store(tr, name, node):
    tmap, c0, c1, src, si = _count(tr, name, node, 5)
    s = _address(tr, name, node, src, si, "the source")
    return _void(f"nk_tma_store_2d({_tensor_map(tr, name, tmap)}, {_int(tr, c0, 'int32')}, {_int(tr, c1, 'int32')}, "
                 f"{s})")


def _wait_n(tr, name, node):
    (n,) = _count(tr, name, node, 1)
    return _void(f"nk_{name}<{_immediate(tr, name, n, 'n')}>()")


def _named_barrier(tr, name, node):
    i, n = _count(tr, name, node, 2)
    return _void(f"nk_named_barrier({_int(tr, i)}, {_int(tr, n)})")


def _setmaxnreg(tr, name, node):
    (c,) = _count(tr, name, node, 1)
    return _void(f"nk_{name}<{_immediate(tr, name, c, 'count')}>()")


def _accumulators(tr, name, node) -> ArrayInfo:
    info = tr.value(node)
    if not isinstance(info, ArrayInfo) or info.kind != "local" or info.ndim != 1 or info.key != "float32":
        raise tr.src.error(node, f"{name}: acc must be a 1-D float32 cuda.local.array")
    tr.mark_written(info.name)
    return info


def _wgmma_wait(tr, name, node):
    n, acc, count = _count(tr, name, node, 3)
    info = _accumulators(tr, name, acc)
    width = _immediate(tr, name, count, "count")
    tr.helpers.add(f"nk_wgmma_wait_{width}")
    return _void(f"nk_wgmma_wait_{width}<{_immediate(tr, name, n, 'n')}>({info.name})")


def _wgmma(tr, name, node):
    from numbakern.mma.hopper import wgmma_shape

    shape = wgmma_shape(name)
    args = node.args
    want = (3 if shape.a_registers else 2) + 2 + (1 if shape.transposable else 0)
    if len(args) != want:
        raise tr.src.error(node, f"{name} takes {want} arguments")
    acc = _accumulators(tr, name, args[0])
    if shape.a_registers:
        a = tr.value(args[1])
        if not isinstance(a, ArrayInfo) or a.kind != "local" or a.ndim != 1:
            raise tr.src.error(args[1], f"{name}: a must be a 1-D cuda.local.array (the A fragment's registers)")
        first = f"&{a.name}[{tr.expr(args[2]).code}]"
        rest = args[3:]
    else:
        first = tr.expr(args[1]).code
        rest = args[2:]
    desc_b, scale = tr.expr(rest[0]).code, _int(tr, rest[1], "int32")
    targs = f"<{_immediate(tr, name, rest[2], 'trans_b')}>" if shape.transposable else ""
    tr.helpers.add(f"nk_{name}")
    return _void(f"nk_{name}{targs}({acc.name}, {first}, {desc_b}, {scale})")


_HANDLERS = {
    "shared_address": _shared_address, "mbarrier_init": _mbarrier, "mbarrier_arrive": _mbarrier,
    "mbarrier_arrive_expect_tx": _mbarrier, "mbarrier_try_wait": _mbarrier, "tma_load_2d": _tma_load,
    "tma_store_2d": _tma_store, "bulk_wait_read": _wait_n, "bulk_wait": _wait_n, "named_barrier": _named_barrier,
    "setmaxnreg_inc": _setmaxnreg, "setmaxnreg_dec": _setmaxnreg, "wgmma_wait": _wgmma_wait,
}

#: this module's entry in the builtins table (``translate/codegen/builtins.py``): the wgmma intrinsics are made per
#: shape on demand, so the whole family is recognised by name
FAMILIES = (("numbakern.mma.hopper's intrinsics", is_hopper, call),)

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
        row_bytes = (f"{source.stride_names()[0]} * {element}" if source.strided
                     else f"{extents[1]} * {element}")
        lines += [f"    nk_tensor_map {p.c}_map;  // ({p.c}'s contents are not read: its map is made here)",
                  f"    {{ cudaError_t err = nk_encode_tensor_map(&{p.c}_map, {source.c}, {extents[0]}, {extents[1]}, "
                  f"{row_bytes}, {rows}, {cols}, {element}, {swizzle});",
                  "      if (err != cudaSuccess) return err; }"]
    return lines


def build_manifest(build: dict, arch: str) -> dict:
    """The manifest's build record: a file compiled for an arch-specific target builds with ``-arch`` of it."""
    if not arch.endswith("a"):
        return build
    number = arch.split("_", 1)[1]
    # (-gencode, not -arch=sm_90a: nvcc 13 adds compute_90 PTX for that, which cannot hold these instructions)
    return {**build, "nvcc_flags": [*build.get("nvcc_flags", []), f"-gencode=arch=compute_{number},code=sm_{number}"]}
