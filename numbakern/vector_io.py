"""16-byte loads and stores for float32 kernels: ``vload4`` and ``vstore4``.

numba-cuda 0.30 has no way to say "these four consecutive floats are one 16-byte access": four loads
``m[r, c]``..``m[r, c + 3]`` stay four ``ld.global.f32`` because LLVM cannot prove the array's data pointer is
16-byte aligned (``docs/performance.md``). These two helpers are that missing spelling::

    vload4(m, (r, c), regs, i)      # regs[i:i + 4] = m[r, c:c + 4]   one ld.global.v4.f32 (or ld.shared.v4)
    vstore4(out, (r, c), regs, i)   # out[r, c:c + 4] = regs[i:i + 4]  one st.global.v4.f32 (or st.shared.v4)

``regs`` is a 1-D ``cuda.local.array`` (registers); the other array is global or shared memory, any number of
dimensions, C-contiguous, float32. The caller guarantees that the element addressed by the index tuple is
16-byte aligned: the array's data pointer is, its last extent (the row stride) is a multiple of 4 elements, and
the last index is a multiple of 4. A misaligned access is a CUDA "misaligned address" error on the GPU and a
``MisalignedAccessError`` in numbakern's simulator; it is never a silent wrong result.

How each backend sees them:

- **GPU (numba):** ``@intrinsic``s that emit one ``load <4 x float>, align 16`` / ``store`` on the element's
  address (no wraparound, no bounds check, like ``cuda.ldg``), moving the four lanes in and out of ``regs``
  with scalar accesses so that the register array stays in registers.
- **Simulator:** plain Python: four element reads and writes through the simulator's array proxies, so the race,
  bounds and initialisation checkers see every element, plus an alignment check of the flat element offset.
- **GPU (numba-cuda-mlir):** the same objects, typed and lowered by numba-cuda-mlir (``numbakern.mlir_lowering``):
  one ``llvm.load``/``llvm.store`` of a ``vector<4xf32>`` with ``alignment = 16``.
- **translate:** ``const float4 v = *reinterpret_cast<const float4 *>(&m[...]);`` and the matching store
  (``translate/codegen/builtins.py``).
"""

from __future__ import annotations

from . import mlir_lowering, mode

WIDTH = 4  # float32 lanes in one 16-byte access


def _py_vload4(src, index, regs, at):
    """The simulator's ``vload4``: four element reads (each one checked by the simulator's array proxies)."""
    idx = _index_tuple(index)
    _check_alignment("vload4", src, idx)
    for q in range(WIDTH):
        regs[at + q] = src[idx[:-1] + (idx[-1] + q,)]


def _py_vstore4(dst, index, regs, at):
    """The simulator's ``vstore4``: four element writes."""
    idx = _index_tuple(index)
    _check_alignment("vstore4", dst, idx)
    for q in range(WIDTH):
        dst[idx[:-1] + (idx[-1] + q,)] = regs[at + q]


def _index_tuple(index) -> tuple:
    return tuple(int(i) for i in index) if isinstance(index, tuple) else (int(index),)


def _check_alignment(what: str, arr, idx: tuple, width: int = WIDTH) -> None:
    """``arr[idx]`` may start a 16-byte access of ``width`` elements: its flat offset is a multiple of ``width``."""
    shape = tuple(int(s) for s in arr.shape)
    if len(idx) != len(shape):
        raise IndexError(f"{what}: an index of {len(idx)} dimension(s) into an array of {len(shape)}")
    flat = 0
    for i, s in zip(idx, shape):
        flat = flat * s + i
    if flat % width:
        from .sim.errors import MisalignedAccessError

        raise MisalignedAccessError(
            f"{what}: element {idx} of an array of shape {shape} is at flat offset {flat}, not a multiple of "
            f"{width}: a 16-byte access there is misaligned on the GPU (the last extent and the last index must be "
            f"multiples of {width})")


def element_pointer(context, builder, aryty, ary, index_ty, index):
    """Inside an ``@intrinsic``'s codegen: the array struct and the address of ``ary[index]`` (an integer or a tuple
    of integers, one per dimension), with no wraparound and no bounds check."""
    from numba.cuda import cgutils, types

    arr = context.make_array(aryty)(context, builder, ary)
    if isinstance(index_ty, types.BaseTuple):
        raw, tys = cgutils.unpack_tuple(builder, index, len(index_ty)), list(index_ty)
    else:
        raw, tys = [index], [index_ty]
    inds = [context.cast(builder, v, t, types.intp) for v, t in zip(raw, tys)]
    return arr, cgutils.get_item_pointer(context, builder, aryty, arr, inds, wraparound=False)


def _make_intrinsics():
    from llvmlite import ir
    from numba.cuda import cgutils, types
    from numba.cuda.extending import intrinsic

    def _check_types(what, arr, index, regs, at):
        for name, t in (("the array", arr), ("regs", regs)):
            if not isinstance(t, types.Array) or t.dtype != types.float32 or t.layout != "C":
                raise TypeError(f"{what}: {name} must be a C-contiguous float32 array, got {t}")
        if regs.ndim != 1:
            raise TypeError(f"{what}: regs must be a 1-D cuda.local.array, got {regs}")
        n_idx = len(index) if isinstance(index, types.BaseTuple) else 1
        idx_types = list(index) if isinstance(index, types.BaseTuple) else [index]
        if n_idx != arr.ndim or not all(isinstance(t, types.Integer) for t in idx_types):
            raise TypeError(f"{what}: the index must be {arr.ndim} integer(s) (one per dimension), got {index}")
        if not isinstance(at, types.Integer):
            raise TypeError(f"{what}: the register offset must be an integer, got {at}")

    vec_t = ir.VectorType(ir.FloatType(), WIDTH)

    @intrinsic
    def vload4(typingctx, src, index, regs, at):
        _check_types("vload4", src, index, regs, at)

        def codegen(context, builder, sig, args):
            src_v, index_v, regs_v, at_v = args
            _, ptr = element_pointer(context, builder, src, src_v, index, index_v)
            vec = builder.load(builder.bitcast(ptr, vec_t.as_pointer()), align=16)
            regs_arr = context.make_array(regs)(context, builder, regs_v)
            at_i = context.cast(builder, at_v, at, types.intp)
            for q in range(WIDTH):
                slot = cgutils.get_item_pointer(context, builder, regs, regs_arr,
                                                [builder.add(at_i, ir.Constant(at_i.type, q))], wraparound=False)
                builder.store(builder.extract_element(vec, ir.Constant(ir.IntType(32), q)), slot)
            return context.get_dummy_value()

        return types.void(src, index, regs, at), codegen

    @intrinsic
    def vstore4(typingctx, dst, index, regs, at):
        _check_types("vstore4", dst, index, regs, at)

        def codegen(context, builder, sig, args):
            dst_v, index_v, regs_v, at_v = args
            _, ptr = element_pointer(context, builder, dst, dst_v, index, index_v)
            regs_arr = context.make_array(regs)(context, builder, regs_v)
            at_i = context.cast(builder, at_v, at, types.intp)
            vec = ir.Constant(vec_t, ir.Undefined)
            for q in range(WIDTH):
                slot = cgutils.get_item_pointer(context, builder, regs, regs_arr,
                                                [builder.add(at_i, ir.Constant(at_i.type, q))], wraparound=False)
                vec = builder.insert_element(vec, builder.load(slot), ir.Constant(ir.IntType(32), q))
            builder.store(vec, builder.bitcast(ptr, vec_t.as_pointer()), align=16)
            return context.get_dummy_value()

        return types.void(dst, index, regs, at), codegen

    return vload4, vstore4



def _numba_cuda_installed() -> bool:
    from .frontend.choice import numba_cuda_installed

    return numba_cuda_installed()

if mode.in_simulator() or not _numba_cuda_installed():
    # the simulator, or numba-cuda-mlir alone on a GPU (which types and lowers these same functions, below)
    vload4, vstore4 = _py_vload4, _py_vstore4
else:
    vload4, vstore4 = _make_intrinsics()

# numba-cuda-mlir compiles calls of these same objects (numbakern.mlir_lowering.vector_io)
mlir_lowering.register("vector_io", vload4=vload4, vstore4=vstore4)

__all__ = ["vload4", "vstore4", "WIDTH"]
