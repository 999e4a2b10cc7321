"""Tensor maps: the host-side description of a tensor (2-D to 5-D) that the bulk tensor copy engine (TMA, Hopper's
``cp.async.bulk.tensor``) copies boxes of, between global and shared memory; and what a launch of a kernel that
takes them needs (``tensor_map_params``, ``launch_arguments``).

A kernel receives a tensor map as a device array of 16 ``uint64`` (the 128-byte ``CUtensorMap``) and names it in
``numbakern.mma.hopper.tma_load_2d`` / ``tma_load_3d`` / ``tma_store_2d``. What it says, dimensions innermost
first as ``cuTensorMapEncodeTiled`` takes them::

    global tensor:  dims[0] x dims[1] x ... elements of element_bytes each; dimension i > 0 strides[i - 1] bytes
                    apart (the innermost is dense)
    box:            box[0] x box[1] x ... elements, copied as one unit; in shared memory the box is dense
                    (box[0] * element_bytes bytes per row), and with a swizzle of 32, 64 or 128 bytes the 16-byte
                    chunks of each row are permuted as ``swizzle_address`` says
    out of bounds:  a load fills the elements of the box outside the tensor with zeros (and still counts their bytes
                    on the mbarrier); a store does not write them

``tensor_map`` makes one (``tensor_map_2d``: of a row-major matrix, ``tensor_map_of``: of a 2-D array): on a GPU
with ``cuTensorMapEncodeTiled`` (cuda-python), in the simulator as a plain host-side record of the same fields
(``SimulatedTensorMap``), which the simulator reads back when a kernel copies.

**The swizzle** (``swizzle_address``) is a function of the shared-memory *address*, not of the offset in the box:
bits 4..6 of the byte address (the 16-byte chunk within a 128-byte row) are XORed with bits 7..9 (the row within
a 1024-byte pattern) for the 128-byte swizzle; bits 4..5 with 7..8 for 64 bytes (a 512-byte pattern); bit 4 with
bit 7 for 32 bytes (256 bytes). A box is written by the copy engine and read by ``wgmma``'s matrix descriptors
with the same function, so both agree wherever the tile starts on its pattern's boundary (1024 bytes for the
128-byte swizzle), which the simulator checks.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

#: the swizzles a tensor map (and a wgmma matrix descriptor) can apply: bytes of one swizzled row; 0 is none
SWIZZLES = (0, 32, 64, 128)
#: the first word of a simulated tensor map ("NKTMAPND"): a real CUtensorMap never starts with it by chance in a test
SIM_MAGIC = 0x4E4B544D41504E44
#: the largest box extent cuTensorMapEncodeTiled accepts per dimension
MAX_BOX = 256
#: the ranks a tiled tensor map may have (cuTensorMapEncodeTiled: 1 to 5; the copies numbakern declares: 2 and 3)
RANKS = (2, 3, 4, 5)


def swizzle_address(address, swizzle: int):
    """The shared-memory byte address where the byte at logical ``address`` lies under a ``swizzle``-byte swizzle
    (ints or numpy integer arrays); the identity for ``swizzle == 0``."""
    if swizzle == 0:
        return address
    bits = {32: 1, 64: 2, 128: 3}[swizzle]
    return address ^ (((address >> 7) & ((1 << bits) - 1)) << 4)


def pattern_bytes(swizzle: int) -> int:
    """Bytes after which a swizzle's pattern repeats (8 rows of ``swizzle`` bytes); 16 without a swizzle."""
    return 8 * swizzle if swizzle else 16


@dataclass(frozen=True)
class SimulatedTensorMap:
    """A tensor map as the simulator keeps it (the fields ``cuTensorMapEncodeTiled`` takes), dimensions innermost
    first; ``strides[i]`` is dimension ``i + 1``'s, in bytes."""

    address: int
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    box: tuple[int, ...]
    element_bytes: int
    swizzle: int

    def encode(self) -> np.ndarray:
        words = [SIM_MAGIC, self.address, self.rank, self.element_bytes, self.swizzle, *self.dims, *self.strides,
                 *self.box]
        return np.array(words + [0] * (16 - len(words)), dtype=np.uint64)

    @classmethod
    def decode(cls, words) -> SimulatedTensorMap | None:
        """The map a 16-word array holds, or None if it is not one the simulator made."""
        words = [int(w) for w in words]
        if len(words) != 16 or words[0] != SIM_MAGIC:
            return None
        address, rank, element_bytes, swizzle = words[1:5]
        rest = words[5:]
        dims, strides, box = rest[:rank], rest[rank:2 * rank - 1], rest[2 * rank - 1:3 * rank - 1]
        return cls(address, tuple(dims), tuple(strides), tuple(box), element_bytes, swizzle)

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def box_row_bytes(self) -> int:
        return self.box[0] * self.element_bytes

    @property
    def box_rows(self) -> int:
        """Rows of the box as shared memory holds it: every dimension but the innermost, flattened."""
        return int(np.prod(self.box[1:]))

    @property
    def box_bytes(self) -> int:
        """The bytes one copy moves (and completes on its mbarrier), out-of-bounds fill included."""
        return self.box_rows * self.box_row_bytes

    @property
    def extent_bytes(self) -> int:
        """Bytes from the tensor's first element to just past its last."""
        return sum((d - 1) * s for d, s in zip(self.dims[1:], self.strides)) + self.dims[0] * self.element_bytes

    def rows(self, coords):
        """The box's rows at tensor coordinates ``coords`` (innermost first), in shared-memory order:
        ``(row, byte offset of its first element inside the tensor, first, last)`` for each row with elements inside
        the tensor, ``first:last`` the box's elements along the innermost dimension that are."""
        c0 = coords[0]
        k0, k1 = max(0, -c0), min(self.box[0], self.dims[0] - c0)
        if k1 <= k0:
            return
        outer = [range(b) for b in reversed(self.box[1:])]  # outermost first: shared memory's row order
        for row, index in enumerate(itertools.product(*outer)):
            at = (c0 + k0) * self.element_bytes
            inside = True
            for j, c, dim, stride in zip(reversed(index), coords[1:], self.dims[1:], self.strides):
                if not 0 <= c + j < dim:
                    inside = False
                    break
                at += (c + j) * stride
            if inside:
                yield row, at, k0, k1


def check_tensor_map(dims, strides, box, element_bytes: int, swizzle: int, address: int,
                     what: str = "tensor_map") -> None:
    """The requirements ``cuTensorMapEncodeTiled`` puts on a map, as ``ValueError``s naming the argument."""
    if len(dims) not in RANKS:
        raise ValueError(f"{what}: dims must have 2 to 5 sizes (innermost first), got {tuple(dims)}")
    if len(strides) != len(dims) - 1 or len(box) != len(dims):
        raise ValueError(f"{what}: a {len(dims)}-D map takes {len(dims) - 1} strides (bytes, of every dimension but "
                         f"the innermost) and {len(dims)} box sizes, got strides {tuple(strides)} and box "
                         f"{tuple(box)}")
    if element_bytes not in (1, 2, 4, 8):
        raise ValueError(f"{what}: element_bytes must be 1, 2, 4 or 8, got {element_bytes}")
    if swizzle not in SWIZZLES:
        raise ValueError(f"{what}: swizzle must be one of {SWIZZLES} (bytes), got {swizzle}")
    if address % 16:
        raise ValueError(f"{what}: the tensor's address must be 16-byte aligned, got {address:#x}")
    if any(d < 1 for d in dims):
        raise ValueError(f"{what}: every dimension must have at least one element, got dims {tuple(dims)}")
    if any(s % 16 for s in strides) or strides[0] < dims[0] * element_bytes:
        raise ValueError(f"{what}: strides must be multiples of 16 bytes and the first must hold a row of {dims[0]} "
                         f"elements ({dims[0] * element_bytes} bytes), got {tuple(strides)}")
    for i, extent in enumerate(box):
        if not 1 <= extent <= MAX_BOX:
            raise ValueError(f"{what}: box[{i}] must be in 1..{MAX_BOX}, got {extent}")
    if (box[0] * element_bytes) % 16:
        raise ValueError(f"{what}: a box row ({box[0]} elements of {element_bytes} bytes) must be a multiple of 16 "
                         "bytes")
    if swizzle and box[0] * element_bytes != swizzle:
        raise ValueError(f"{what}: with the {swizzle}-byte swizzle a box row must be {swizzle} bytes "
                         f"({swizzle // element_bytes} elements), got {box[0] * element_bytes} (narrower rows "
                         "are allowed by the driver, but numbakern's simulator does not model them)")


def tensor_map(address: int, dims, strides, box, element_bytes: int = 2, swizzle: int = 128) -> np.ndarray:
    """The 128-byte tensor map of a tensor at device ``address``: ``dims`` its sizes innermost first, ``strides``
    the byte strides of every dimension but the innermost, ``box`` the copied box innermost first, a
    ``swizzle``-byte swizzle (0, 32, 64, 128), elements past the edges read as zeros; as 16 ``uint64`` in host
    memory (copy it to the device for the kernel).

    In the simulator ``address`` is the data pointer of an array the kernel is launched with (``device_address``
    gives it for numpy arrays and the simulator's device arrays alike)."""
    from . import mode

    dims, strides, box = (tuple(int(x) for x in v) for v in (dims, strides, box))
    check_tensor_map(dims, strides, box, element_bytes, swizzle, address)
    if mode.in_simulator():
        return SimulatedTensorMap(address, dims, strides, box, element_bytes, swizzle).encode()
    return _encode_tiled(address, dims, strides, box, element_bytes, swizzle)


def tensor_map_2d(address: int, rows: int, cols: int, row_bytes: int, box_rows: int, box_cols: int,
                  element_bytes: int = 2, swizzle: int = 128) -> np.ndarray:
    """``tensor_map`` of a row-major ``rows``×``cols`` matrix at device ``address`` (rows ``row_bytes`` apart),
    copied in boxes of ``box_rows``×``box_cols``."""
    return tensor_map(address, (cols, rows), (row_bytes,), (box_cols, box_rows), element_bytes, swizzle)


def tensor_map_of(array, box_rows: int, box_cols: int, swizzle: int = 128) -> np.ndarray:
    """The tensor map of a 2-D array (a device array, a torch or CuPy CUDA tensor; in the simulator also a numpy
    array the kernel is launched with) in boxes of ``box_rows``×``box_cols``: its shape, strides and element size.
    A 3-D array is a batch of such matrices: its map is 3-D with boxes one matrix deep, so that a box's rows past
    one matrix's end read as zeros instead of the next matrix's first rows (``tma_load_3d``'s third coordinate
    picks the matrix)."""
    shape = tuple(int(s) for s in array.shape)
    if len(shape) not in (2, 3):
        raise ValueError(f"tensor_map_of: the array must be 2-D (or 3-D, a batch of matrices), got shape {shape}")
    itemsize, strides = _itemsize_and_strides(array)
    if strides[-1] != itemsize:
        raise ValueError(f"tensor_map_of: the array's rows must be contiguous, got strides {strides} (bytes) for "
                         f"{itemsize}-byte elements")
    return tensor_map(device_address(array), shape[::-1], strides[-2::-1], (box_cols, box_rows, 1)[:len(shape)],
                      itemsize, swizzle)


def device_address(array) -> int:
    """The data pointer of a device array (``__cuda_array_interface__``), or in the simulator of a numpy array or
    the simulator's device array (which keeps its numpy buffer as ``_ary``)."""
    cai = getattr(array, "__cuda_array_interface__", None)
    if cai is not None:
        return int(cai["data"][0])
    host = getattr(array, "_ary", array)  # numba-cuda's simulated device array keeps its buffer there
    if isinstance(host, np.ndarray):
        return int(host.__array_interface__["data"][0])
    raise TypeError(f"device_address: expected a device array or (in the simulator) a numpy array, got "
                    f"{type(array).__module__}.{type(array).__qualname__}")


def _itemsize_and_strides(array) -> tuple[int, tuple[int, ...]]:
    """An array's element size and byte strides, outermost first."""
    cai = getattr(array, "__cuda_array_interface__", None)
    if cai is not None:
        itemsize = np.dtype(cai["typestr"]).itemsize
        shape = tuple(int(x) for x in cai["shape"])
        strides = cai.get("strides")
        if strides is None:  # C-contiguous
            strides = tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) * itemsize for i in range(len(shape)))
        return itemsize, tuple(int(x) for x in strides)
    host = getattr(array, "_ary", array)
    return int(host.itemsize), tuple(int(x) for x in host.strides)


def _encode_tiled(address, dims, strides, box, element_bytes, swizzle) -> np.ndarray:
    from cuda.bindings import driver as cu

    kinds = {1: cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_UINT8,
             2: cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_UINT16,
             4: cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_UINT32,
             8: cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_UINT64}
    swizzles = {0: cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE,
                32: cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_32B,
                64: cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_64B,
                128: cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B}
    u64, u32 = cu.cuuint64_t, cu.cuuint32_t
    err, tmap = cu.cuTensorMapEncodeTiled(
        kinds[element_bytes], len(dims), address, [u64(x) for x in dims], [u64(x) for x in strides],
        [u32(x) for x in box], [u32(1)] * len(dims),
        cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, swizzles[swizzle],
        cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"tensor_map: cuTensorMapEncodeTiled failed ({err}) for a tensor of sizes {dims} "
                           f"(innermost first), strides {strides} bytes, boxes {box}, {swizzle}-byte swizzle")
    return np.array([int(x) for x in tmap.opaque], dtype=np.uint64)


# -- kernels that take tensor maps --------------------------------------------------------------------------------

#: the attribute ``tensor_map_params`` sets on a kernel
PARAMS_ATTR = "__numbakern_tensor_maps__"
#: dynamic shared memory a launch gets without raising the kernel's limit
DEFAULT_SHARED_LIMIT = 48 * 1024


@dataclass(frozen=True)
class TensorMapParam:
    """A kernel parameter that is the tensor map of another parameter, ``source`` (a 2-D array, or a 3-D batch of
    matrices: ``tensor_map_of``), in boxes of ``box_rows``×``box_cols`` with a ``swizzle``-byte swizzle: what a
    launcher makes from that array's device pointer (``launch_arguments`` for Numba, the ``extern "C"`` launcher
    of its translation)."""

    source: str
    box_rows: int
    box_cols: int
    swizzle: int = 128

    def __post_init__(self):
        if self.swizzle not in SWIZZLES:
            raise ValueError(f"TensorMapParam: swizzle must be one of {SWIZZLES}, got {self.swizzle}")

    def make(self, array) -> np.ndarray:
        return tensor_map_of(array, self.box_rows, self.box_cols, self.swizzle)


def tensor_map_params(kernel, **params: TensorMapParam):
    """Declare which of ``kernel``'s parameters are tensor maps of which others (``tmap_a=TensorMapParam("a", 128,
    64)``); returns the kernel. The registry's launches, verification, the benchmark and ``translate`` read it."""
    for name, param in params.items():
        if not isinstance(param, TensorMapParam):
            raise TypeError(f"tensor_map_params: {name} must be a TensorMapParam, got {param!r}")
    setattr(kernel, PARAMS_ATTR, {**getattr(kernel, PARAMS_ATTR, {}), **params})
    return kernel


def declared_tensor_maps(kernel) -> dict[str, TensorMapParam]:
    return dict(getattr(kernel, PARAMS_ATTR, {}))


def launch_arguments(kernel, names, args, shared_bytes: int = 0, upload=None) -> list:
    """``args`` (in the order of the parameter ``names``) ready for ``kernel[grid, block, 0, shared_bytes]``: each
    declared tensor-map parameter made from its array (passed through ``upload``, e.g. numba's ``cuda.to_device``,
    when the arrays are on a GPU); on a GPU the kernel's dynamic shared-memory limit raised to ``shared_bytes`` when
    that is more than 48 KiB."""
    from . import mode

    params = declared_tensor_maps(kernel)
    out = list(args)
    if params:
        index = {n: i for i, n in enumerate(names)}
        for name, param in params.items():
            if name not in index or param.source not in index:
                raise ValueError(f"launch_arguments: the kernel declares tensor map {name!r} of {param.source!r}, "
                                 f"but its parameters are {tuple(names)}")
            made = param.make(out[index[param.source]])
            out[index[name]] = upload(made) if upload is not None else made
    if shared_bytes > DEFAULT_SHARED_LIMIT and not mode.in_simulator():
        from numba import typeof

        kernel.compile(tuple(typeof(a) for a in out))
        allow_dynamic_shared(kernel, shared_bytes)
    return out


def allow_dynamic_shared(kernel, nbytes: int) -> None:
    """Let every compiled version of numba-cuda ``kernel`` launch with ``nbytes`` of dynamic shared memory (past the
    48 KiB a launch gets without asking: ``cudaFuncAttributeMaxDynamicSharedMemorySize``)."""
    from numba.cuda.cudadrv.driver import binding, driver

    attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    for compiled in kernel.overloads.values():
        cufunc = compiled._codelibrary.get_cufunc()
        driver.cuKernelSetAttribute(attr, int(nbytes), cufunc.handle, cufunc.device.id)


__all__ = ["DEFAULT_SHARED_LIMIT", "SWIZZLES", "SimulatedTensorMap", "TensorMapParam", "allow_dynamic_shared",
           "check_tensor_map", "declared_tensor_maps", "device_address", "launch_arguments", "pattern_bytes",
           "swizzle_address", "tensor_map", "tensor_map_2d", "tensor_map_of", "tensor_map_params"]
