"""The simulator's models of the 16-byte memory instructions (``numbakern.intrinsics.memory``): ``vload4`` /
``vstore4`` and the asynchronous copies, and the alignment every 16-byte access (``ldmatrix`` too) is checked
against.

**Alignment as compiled.** numba-cuda aligns a shared array to its ``alignment=`` argument, or else only to its
element type (2 bytes for uint16), and ``translate`` declares it the same way (``__align__(N)`` only where the
kernel asks): where the array lands beyond that is the compiler's choice. The simulator places each static shared
array exactly as aligned as declared and no more (``placed``), and checks a 16-byte access at the element's real
address: a tile that is only aligned by luck on a GPU fails here, naming the declaration to fix. (Global arrays are
checked at the data pointers the simulator holds: their offsets from their first element.)

**Asynchronous copies.** Each thread's copies are queued in groups (closed by ``async_commit``) and carried out
when a wait releases their group, element by element through the simulator's array proxies, so reading a
destination before waiting sees the old contents (and the checkers see every element). Copies a thread never waits
for never land. The queue lives on the thread's greenlet (numbakern's engine runs each thread in its own greenlet,
the stock engine in its own OS thread, whose greenlet is its own too), so these models also run on the stock
engine.
"""

from __future__ import annotations

import greenlet
import numpy as np

from ..intrinsics.memory import BYTES, WIDTH
from .checked_array import CheckedArray
from .errors import MisalignedAccessError, OutOfBoundsError
from .intrinsics import landing, observe

#: the largest alignment ``placed`` avoids giving more of (a shared allocation's granularity)
_MAX_ALIGN = 256


def placed(shape, dtype, alignment: int | None = None) -> np.ndarray:
    """A new uninitialised array aligned to ``alignment`` bytes (None: numba-cuda's default for a shared array, its
    element type's alignment rounded up to a power of two) and to no more than that (below 256 bytes)."""
    dtype = np.dtype(dtype)
    align = alignment or 1 << (dtype.alignment - 1).bit_length()
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    buffer = np.empty(nbytes + 2 * max(align, _MAX_ALIGN), np.uint8)
    start = buffer.__array_interface__["data"][0]
    step = max(align, _MAX_ALIGN) if align >= _MAX_ALIGN else 2 * align
    # the first address that is a multiple of align but (below 256) an odd multiple of it
    offset = (align - start) % step if align < _MAX_ALIGN else (-start) % align
    return buffer[offset:offset + nbytes].view(dtype).reshape(shape)


def _data(arr) -> np.ndarray:
    # a checked array's numpy array, or the array (the stock simulator's arrays answer any attribute asked of them
    # with an IndexError, so the class is asked)
    return arr._a if isinstance(arr, CheckedArray) else np.asarray(arr)


def misalignment(arr, idx, nbytes: int) -> str:
    """Why ``&arr[idx]`` (``idx``: one integer per dimension, or a flat C-order element offset) is not
    ``nbytes``-aligned as the compiled kernel guarantees, or ``""`` if it is."""
    data = _data(arr)
    if isinstance(idx, tuple):
        offset = sum(int(i) * s for i, s in zip(idx, data.strides))
    else:
        offset = int(idx) * data.itemsize
    start = data.__array_interface__["data"][0]
    if (start + offset) % nbytes == 0:
        return ""
    if offset % nbytes:
        return f"is at byte offset {offset}, not a multiple of {nbytes}"
    base = start & -start  # the largest power of two dividing the array's start
    return (f"is at byte offset {offset} of an array whose start is only {min(base, _MAX_ALIGN)}-byte aligned (a "
            f"shared array is aligned to its element size unless declared with cuda.shared.array(..., "
            f"alignment={nbytes}))")


def _index_tuple(index) -> tuple:
    return tuple(int(i) for i in index) if isinstance(index, tuple) else (int(index),)


def _check_alignment(what: str, arr, idx: tuple, width: int = WIDTH) -> None:
    """``arr[idx]`` may start a 16-byte access of ``width`` elements."""
    shape = tuple(int(s) for s in arr.shape)
    if len(idx) != len(shape):
        raise IndexError(f"{what}: an index of {len(idx)} dimension(s) into an array of {len(shape)}")
    flat = 0
    for i, s in zip(idx, shape):
        flat = flat * s + i
    if flat % width:
        why = f"is at flat offset {flat}, not a multiple of {width}"
    else:
        why = misalignment(arr, idx, BYTES)
    if why:
        raise MisalignedAccessError(
            f"{what}: element {idx} of an array of shape {shape} {why}: a 16-byte access there is misaligned on the "
            f"GPU (the last extent and the last index must be multiples of {width})")


# -- vload4 / vstore4 ----------------------------------------------------------------------------------------------


def vload4(launch, frame, src, index, regs, at):
    """Four element reads (each one checked by the simulator's array proxies)."""
    idx = _index_tuple(index)
    _check_alignment("vload4", src, idx)
    for q in range(WIDTH):
        regs[at + q] = src[idx[:-1] + (idx[-1] + q,)]


def vstore4(launch, frame, dst, index, regs, at):
    """Four element writes."""
    idx = _index_tuple(index)
    _check_alignment("vstore4", dst, idx)
    for q in range(WIDTH):
        dst[idx[:-1] + (idx[-1] + q,)] = regs[at + q]


# -- cp.async ------------------------------------------------------------------------------------------------------


class _Pending:
    """This simulated thread's copies not yet landed: the open group and the committed ones, oldest first."""

    def __init__(self):
        self.open: list = []
        self.groups: list[list] = []


def _pending() -> _Pending:
    g = greenlet.getcurrent()
    p = getattr(g, "_numbakern_async_copies", None)
    if p is None:
        p = g._numbakern_async_copies = _Pending()
    return p


def _source_index(src, src_index) -> tuple:
    """The element index of a copy's source: an index tuple, or a flat offset into a multi-dimensional array."""
    if isinstance(src_index, tuple) or len(src.shape) == 1:
        return _index_tuple(src_index)
    flat = int(src_index)
    if not 0 <= flat < int(np.prod(src.shape)):
        raise OutOfBoundsError(f"copy_async: flat source offset {flat} outside an array of shape {tuple(src.shape)}")
    return tuple(int(i) for i in np.unravel_index(flat, tuple(src.shape)))


def _copy_width(what: str, dst, src) -> int:
    """Elements in one 16-byte copy between ``dst`` and ``src`` (the same element size on both sides)."""
    size = int(np.dtype(dst.dtype).itemsize)
    if int(np.dtype(src.dtype).itemsize) != size or BYTES % size:
        raise TypeError(f"{what}: the destination ({dst.dtype}) and the source ({src.dtype}) must have the same "
                        "element size, one that divides 16 bytes")
    return BYTES // size


def _queue(frame, dst, didx, src, sidx, valid: bool, width: int, nbytes: int) -> None:
    _pending().open.append((dst, didx, src, sidx, valid, width))
    # counted here, where it is issued, not where it lands
    observe("cp.async", ((src, sidx if valid else None, nbytes if valid else 0, "ld"), (dst, didx, nbytes, "st")),
            frame)


def _copy16(what: str):
    def copy(launch, frame, dst, dst_index, src, src_index, valid):
        width = _copy_width(what, dst, src)
        didx = _index_tuple(dst_index)
        _check_alignment(what, dst, didx, width)
        sidx = _source_index(src, src_index) if valid else ()
        if valid:
            _check_alignment(what, src, sidx, width)
        _queue(frame, dst, didx, src, sidx, bool(valid), width, BYTES)

    return copy


def copy_async(launch, frame, dst, dst_index, src, src_index, valid):
    sidx = _source_index(src, src_index) if valid else ()
    _queue(frame, dst, _index_tuple(dst_index), src, sidx, bool(valid), 1, int(np.dtype(dst.dtype).itemsize))


def async_commit(launch, frame):
    p = _pending()
    p.groups.append(p.open)
    p.open = []


def async_wait(launch, frame, n):
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise ValueError(f"async_wait: n must be a non-negative int (groups left in flight), got {n!r}")
    p = _pending()
    with landing():  # a profiler counted these copies when they were issued
        while len(p.groups) > int(n):
            for dst, didx, src, sidx, valid, width in p.groups.pop(0):
                for q in range(width):
                    d = didx[:-1] + (didx[-1] + q,)
                    dst[d] = src[sidx[:-1] + (sidx[-1] + q,)] if valid else 0


def async_wait_all(launch, frame):
    async_wait(launch, frame, 0)


#: the models by instruction name
MODELS = {"vload4": vload4, "vstore4": vstore4, "copy_async16": _copy16("copy_async16"),
          "copy_async4": _copy16("copy_async4"), "copy_async": copy_async, "async_commit": async_commit,
          "async_wait": async_wait, "async_wait_all": async_wait_all}
