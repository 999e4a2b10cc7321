"""Launch arithmetic and argument handling: what the lecture's utils.py did by hand.

- ``cdiv`` and ``grid_for`` turn a problem shape and a block shape into a launch grid;
- ``dynamic_shared_bytes`` sizes dynamic shared memory from a dtype and element counts;
- ``kernel_array`` accepts torch tensors, CuPy arrays (``__cuda_array_interface__``) and numpy arrays, checks
  them, and returns what a ``@cuda.jit`` kernel should be given in the current mode (simulator or GPU);
- bf16 and fp16 data: float16 is numpy's own; bf16 has no numpy dtype, so a kernel takes bf16 data as ``uint16``
  bit patterns (``BFLOAT16``: a torch ``bfloat16`` tensor, an ``ml_dtypes.bfloat16`` array, or a ``uint16``
  array of bit patterns from ``numbakern.mma.formats.f32_to_bf16_bits``, all passed to the kernel as ``uint16``
  views of the same memory);
- ``check_same_device`` and ``check_matmul_shapes`` catch the mistakes that otherwise surface as a crash deep
  inside numba, or as a wrong answer.

Every error names the argument and says what was expected.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import mode


def cdiv(a: int, b: int) -> int:
    """Ceiling division of non-negative integers: the number of size-``b`` blocks that cover ``a`` items."""
    a, b = _as_int("a", a), _as_int("b", b)
    if b <= 0:
        raise ValueError(f"cdiv: b must be positive, got {b}")
    if a < 0:
        raise ValueError(f"cdiv: a must be non-negative, got {a}")
    return (a + b - 1) // b


def grid_for(shape: int | Sequence[int], block: int | Sequence[int]) -> tuple[int, ...]:
    """Blocks per grid so that ``block``-shaped blocks cover ``shape`` (1-D, 2-D or 3-D, x first).

    ``shape`` and ``block`` are in CUDA's x, y, z order: for a row-major ``(rows, cols)`` matrix whose threads map
    x to columns, pass ``shape=(cols, rows)``.
    """
    shape_t = _dims("shape", shape)
    block_t = _dims("block", block)
    if len(shape_t) != len(block_t):
        raise ValueError(f"grid_for: shape has {len(shape_t)} dimensions but block has {len(block_t)}")
    if any(b <= 0 for b in block_t):
        raise ValueError(f"grid_for: block dimensions must be positive, got {block_t}")
    grid = tuple(max(1, cdiv(s, b)) for s, b in zip(shape_t, block_t))
    return grid


#: what every CUDA GPU accepts in one launch (compute capability 3.0 and later, Hopper included): the CUDA driver
#: refuses anything else with CUDA_ERROR_INVALID_VALUE
MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIM = (1024, 1024, 64)
MAX_GRID_DIM = (2**31 - 1, 65535, 65535)


def launch_problem(grid: Sequence[int], block: Sequence[int]) -> str | None:
    """What a GPU refuses in a launch of ``grid`` blocks of ``block`` threads (up to three ints each, x first), named
    by its dimension and limit; None for a launch it runs."""
    for what, dims in (("gridDim", grid), ("blockDim", block)):
        for axis, n in zip("xyz", dims):
            if n < 1:
                return f"{what}.{axis} = {n}: every launch dimension must be at least 1"
    threads = math.prod(block)
    if threads > MAX_THREADS_PER_BLOCK:
        shape = f"{' x '.join(map(str, block))} = " if sum(d > 1 for d in block) > 1 else ""
        return f"a block of {shape}{threads} threads: a GPU allows at most {MAX_THREADS_PER_BLOCK} per block"
    for what, dims, limits in (("blockDim", block, MAX_BLOCK_DIM), ("gridDim", grid, MAX_GRID_DIM)):
        for axis, n, limit in zip("xyz", dims, limits):
            if n > limit:
                return f"{what}.{axis} = {n}: a GPU allows at most {limit} in {axis}"
    return None


def launch_bounds_threads(launch_bounds: Any) -> int | None:
    """The most threads per block a kernel compiled with ``cuda.jit(launch_bounds=...)`` may be launched with: the
    int, or the first element of the tuple (None: no bound)."""
    if launch_bounds is None:
        return None
    first = launch_bounds[0] if isinstance(launch_bounds, (tuple, list)) else launch_bounds
    return _as_int("launch_bounds", first)


@dataclass(frozen=True)
class LaunchConfig:
    """Everything ``kernel[...]`` needs: ``kernel[cfg.grid, cfg.block, 0, cfg.shared_bytes](*args)``.

    ``grid`` and ``block`` are 1 to 3 positive integers (x first), or one integer for a 1-D launch, as
    ``kernel[grid, block]`` takes them: ``LaunchConfig(cdiv(n, 256), 256)``. A launch a GPU would refuse (a block of
    more than 1024 threads, a zero dimension, ``gridDim.y`` above 65535, ...) is a ``ValueError`` here.
    """

    grid: tuple[int, ...]
    block: tuple[int, ...]
    shared_bytes: int = 0

    def __post_init__(self):
        grid, block = _dims("grid", self.grid, "LaunchConfig"), _dims("block", self.block, "LaunchConfig")
        shared = _as_int("LaunchConfig: shared_bytes", self.shared_bytes)
        problem = launch_problem(grid, block)
        if problem is not None:
            raise ValueError(f"LaunchConfig(grid={grid}, block={block}): {problem}")
        if shared < 0:
            raise ValueError(f"LaunchConfig: shared_bytes must be non-negative, got {shared}")
        object.__setattr__(self, "grid", grid)
        object.__setattr__(self, "block", block)
        object.__setattr__(self, "shared_bytes", shared)

    def __iter__(self):
        # lets a config be unpacked straight into a launch: kernel[(*cfg,)]
        return iter((self.grid, self.block, 0, self.shared_bytes))

    @property
    def threads_per_block(self) -> int:
        return math.prod(self.block)


def launch_config(shape: int | Sequence[int], block: int | Sequence[int], shared_bytes: int = 0) -> LaunchConfig:
    """Grid and block for covering ``shape`` (x, y, z order), plus the dynamic shared memory in bytes."""
    block_t = _dims("block", block)
    return LaunchConfig(grid_for(shape, block_t), block_t, _as_int("shared_bytes", shared_bytes))


def dynamic_shared_bytes(dtype: Any, *counts: int) -> int:
    """Bytes of dynamic shared memory for arrays of ``dtype`` with the given element counts.

    ``dynamic_shared_bytes(np.float32, tw * tw, tw * tw)`` sizes the lecture's two tiles. Accepts numpy dtypes and
    scalar types, numba types (``numba.float32``) and torch dtypes.
    """
    if not counts:
        raise ValueError("dynamic_shared_bytes: give at least one element count")
    itemsize = as_numpy_dtype(dtype).itemsize
    total = 0
    for i, n in enumerate(counts):
        n = _as_int(f"counts[{i}]", n)
        if n < 0:
            raise ValueError(f"dynamic_shared_bytes: counts[{i}] must be non-negative, got {n}")
        total += n * itemsize
    return total


#: bf16 as the array interfaces describe it (torch's ``__cuda_array_interface__`` and ``ml_dtypes`` both say "<V2":
#: two bytes, no numpy type); ``ArrayInfo.dtype`` of every bf16 array, and the dtype to ask ``check_array`` for
BFLOAT16 = np.dtype("V2")
#: what a kernel is given for bf16 data: its bit patterns
BFLOAT16_BITS = np.dtype(np.uint16)
_BF16_NAMES = ("bfloat16", "bf16", "__nv_bfloat16")


def as_numpy_dtype(dtype: Any) -> np.dtype:
    """The numpy dtype for a numpy, numba or torch dtype (or its name); bf16 in any spelling is ``BFLOAT16``."""
    name = str(dtype).removeprefix("torch.")
    if name in _BF16_NAMES or getattr(dtype, "str", None) == "<V2":
        return BFLOAT16
    try:
        return np.dtype(dtype)
    except TypeError:
        pass
    try:
        return np.dtype(name)
    except TypeError:
        raise TypeError(f"unsupported dtype {dtype!r}: expected a numpy, numba or torch dtype") from None


def dtype_name(dtype: np.dtype) -> str:
    """A dtype as messages name it (``bfloat16`` for ``BFLOAT16``)."""
    return "bfloat16" if dtype == BFLOAT16 else str(dtype)


# ---------------------------------------------------------------------------------------------------------------
# arrays


@dataclass(frozen=True)
class ArrayInfo:
    """What the checks need to know about an array, whichever library it came from."""

    library: str  # "numpy" | "torch" | "cupy" | "cuda" (any other __cuda_array_interface__ object)
    shape: tuple[int, ...]
    dtype: np.dtype
    c_contiguous: bool
    on_gpu: bool
    device: str  # "cpu" or "cuda:<n>"
    address: int = 0  # the data pointer (alignment checks of 16-byte access paths)


def array_info(name: str, x: Any) -> ArrayInfo:
    """Describe ``x``; a ``TypeError`` naming ``name`` if it is not an array this toolkit accepts."""
    torch = _torch_if_tensor(x)
    if torch is not None:
        on_gpu = x.device.type == "cuda"
        device = f"cuda:{x.device.index or 0}" if on_gpu else x.device.type
        return ArrayInfo("torch", tuple(x.shape), as_numpy_dtype(x.dtype), x.is_contiguous(), on_gpu, device,
                         x.data_ptr())
    if isinstance(x, np.ndarray):
        dtype = BFLOAT16 if x.dtype.str == "<V2" else x.dtype  # ml_dtypes.bfloat16
        return ArrayInfo("numpy", x.shape, dtype, x.flags.c_contiguous, False, "cpu", x.ctypes.data)
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        shape = tuple(cai["shape"])
        dtype = as_numpy_dtype(np.dtype(cai["typestr"]))
        strides = cai.get("strides")
        contiguous = strides is None or tuple(strides) == _c_strides(shape, dtype.itemsize)
        library = "cupy" if type(x).__module__.startswith("cupy") else "cuda"
        return ArrayInfo(library, shape, dtype, contiguous, True, f"cuda:{_cupy_device(x)}", cai["data"][0])
    raise TypeError(
        f"argument '{name}' must be a torch tensor, a CuPy array (or any object with __cuda_array_interface__) "
        f"or a numpy array, got {type(x).__module__}.{type(x).__qualname__}"
    )


def check_array(
    name: str,
    x: Any,
    *,
    dtype: Any | Iterable[Any] | None = None,
    ndim: int | None = None,
    contiguous: bool = True,
) -> ArrayInfo:
    """Check one kernel argument; raise ``TypeError``/``ValueError`` naming ``name`` on any mismatch."""
    info = array_info(name, x)
    if dtype is not None:
        allowed = [as_numpy_dtype(d) for d in (dtype if _is_dtype_list(dtype) else [dtype])]
        bf16_bits = BFLOAT16 in allowed and info.dtype == BFLOAT16_BITS  # a uint16 array of bf16 bit patterns
        if info.dtype not in allowed and not bf16_bits:
            want = " or ".join(dtype_name(d) for d in allowed)
            hint = (" (bf16 data: a torch.bfloat16 tensor, an ml_dtypes.bfloat16 array or a uint16 array of bf16 bit "
                    "patterns)" if BFLOAT16 in allowed else "")
            raise TypeError(f"argument '{name}' must have dtype {want}, got {dtype_name(info.dtype)}{hint}")
    if ndim is not None and len(info.shape) != ndim:
        raise ValueError(f"argument '{name}' must be {ndim}-D, got {len(info.shape)}-D with shape {info.shape}")
    if contiguous and not info.c_contiguous:
        fix = ".contiguous()" if info.library == "torch" else "np.ascontiguousarray(...)"
        raise ValueError(f"argument '{name}' must be C-contiguous (row-major); got a strided view; call {fix} first")
    if mode.in_simulator():
        if info.on_gpu:
            raise TypeError(
                f"argument '{name}' lives on the GPU ({info.device}) but kernels run in the CUDA simulator; "
                "pass a numpy array or a CPU tensor"
            )
    elif not info.on_gpu and info.library == "torch":
        raise TypeError(
            f"argument '{name}' is a CPU tensor but this launch runs on the GPU; move it with {name}.cuda()"
        )
    return info


def check_same_device(**arrays: ArrayInfo) -> str:
    """All arrays on one device (or all on the host); returns that device."""
    devices = {name: info.device for name, info in arrays.items()}
    if len(set(devices.values())) > 1:
        listing = ", ".join(f"'{n}' on {d}" for n, d in devices.items())
        raise ValueError(f"arguments must all be on one device, got {listing}")
    return next(iter(devices.values()))


def check_matmul_shapes(a_name: str, a: ArrayInfo, b_name: str, b: ArrayInfo) -> tuple[int, int, int]:
    """``(h, k, w)`` for ``a (h, k) @ b (k, w)``, or a ``ValueError`` naming both arguments."""
    (h, k), (k2, w) = a.shape, b.shape
    if k != k2:
        raise ValueError(
            f"inner dimensions differ: '{a_name}' is {h}x{k} and '{b_name}' is {k2}x{w}; "
            f"'{a_name}'.shape[1] must equal '{b_name}'.shape[0]"
        )
    return h, k, w


def to_kernel_arg(x: Any) -> Any:
    """What to pass to a ``@cuda.jit`` kernel for an array that ``check_array`` accepted.

    In the simulator kernels need host memory: numpy arrays as they are, CPU tensors as zero-copy numpy views. On
    the GPU numba takes ``__cuda_array_interface__`` objects (torch CUDA tensors, CuPy arrays) without a copy and
    numpy arrays with a copy to and from the device. bf16 data (torch ``bfloat16``, ``ml_dtypes.bfloat16``) is given
    as a ``uint16`` view of its bit patterns, in both modes.
    """
    torch = _torch_if_tensor(x)
    if torch is not None:
        if x.dtype == torch.bfloat16:  # numba reads "<V2" as raw bytes: the kernel takes the bit patterns
            x = x.detach().view(torch.int16)
            return x.numpy().view(np.uint16) if x.device.type == "cpu" else x.view(torch.uint16)
        return x.detach().numpy() if x.device.type == "cpu" else x
    if isinstance(x, np.ndarray) and x.dtype.str == "<V2":  # ml_dtypes.bfloat16
        return x.view(np.uint16)
    return x


def simulator_argument(name: str, x: Any) -> Any:
    """What the simulator gives a kernel for a launch argument: a CPU torch tensor as a numpy view of its memory (the
    kernel's writes reach the tensor, and the checkers see it as any array), anything else as it is. A tensor numpy
    has no dtype for (bf16, the float8s, ...) or one on the GPU is a ``TypeError`` naming the argument and what to
    pass instead, before the kernel is typed."""
    torch = _torch_if_tensor(x)
    if torch is None:
        return x
    if x.device.type != "cpu":
        raise TypeError(f"argument '{name}' lives on the GPU ({x.device}) but kernels run in the CUDA simulator; "
                        f"pass {name}.cpu()")
    try:
        return x.detach().resolve_conj().resolve_neg().numpy()
    except TypeError:
        pass  # numpy has no such dtype
    dtype = str(x.dtype).removeprefix("torch.")
    bits = x.element_size() * 8
    if x.dtype == torch.bfloat16:
        fix = (f"numbakern.launch.to_kernel_arg({name}) for its bit patterns as uint16, which numbakern.mma's "
               f"instructions and conversions read (docs/tensor-cores.md), or {name}.float() to compute in float32")
    else:
        fix = (f"{name}.view(torch.{'u' if bits == 8 else ''}int{bits}) for its bit patterns, or {name}.float() to "
               "compute in float32")
    raise TypeError(f"argument '{name}' is a torch.{dtype} tensor, which numpy, and so the simulator, has no type "
                    f"for; pass {fix}")


def empty_like_on(x: Any, shape: tuple[int, ...], dtype: np.dtype) -> Any:
    """An uninitialised output array of the same library and device as ``x``."""
    torch = _torch_if_tensor(x)
    if torch is not None:
        name = "bfloat16" if dtype == BFLOAT16 else dtype.name
        return torch.empty(shape, dtype=getattr(torch, name), device=x.device)
    if dtype == BFLOAT16:
        dtype = BFLOAT16_BITS  # numpy and numba hold bf16 as its bit patterns
    if isinstance(x, np.ndarray):
        return np.empty(shape, dtype=dtype)
    if type(x).__module__.startswith("cupy"):
        import cupy

        with cupy.cuda.Device(_cupy_device(x)):
            return cupy.empty(shape, dtype=dtype)
    from numba import cuda

    return cuda.device_array(shape, dtype=dtype)


# ---------------------------------------------------------------------------------------------------------------
# helpers


def _torch_if_tensor(x: Any):
    """The torch module if ``x`` is a torch tensor; never imports torch for a non-tensor."""
    if type(x).__module__.split(".")[0] != "torch":
        return None
    import torch

    return torch if isinstance(x, torch.Tensor) else None


def _cupy_device(x: Any) -> int:
    device = getattr(x, "device", None)
    return int(getattr(device, "id", 0) or 0)


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


def _is_dtype_list(dtype: Any) -> bool:
    return isinstance(dtype, (list, tuple, set, frozenset))


def _as_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    return int(value)


def _dims(name: str, value: int | Sequence[int], where: str = "") -> tuple[int, ...]:
    """1 to 3 integers: an integer alone is a 1-D shape, as ``kernel[grid, block]`` takes it."""
    prefix = f"{where}: " if where else ""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        dims: tuple = (value,)
    elif isinstance(value, (str, bytes)):
        dims = (value,)  # refused below, as itself rather than as its characters
    else:
        try:
            dims = tuple(value)
        except TypeError:
            raise TypeError(f"{prefix}{name} must be an integer or a sequence of 1 to 3 integers, got "
                            f"{type(value).__name__} {value!r}") from None
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"{prefix}{name} must have 1 to 3 dimensions, got {len(dims)}: {value!r}")
    return tuple(_as_int(f"{prefix}{name}[{i}]", d) for i, d in enumerate(dims))
