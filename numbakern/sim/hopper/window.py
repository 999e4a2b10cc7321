"""A block's shared memory as the asynchronous units see it: one window of byte addresses.

The simulator gives each block's shared arrays numpy buffers of their own; wgmma's matrix descriptors, TMA copies
and mbarriers name shared memory by 32-bit *addresses* instead (``shared_address``). The window gives every
allocation an address range, as a GPU's shared window does: the dynamic buffer at ``DYNAMIC_BASE`` (16-byte
aligned, 128-byte aligned, *not* 1024-byte aligned: a kernel must align its swizzled tiles itself, as on a GPU
where static arrays come first), the static arrays after it in the order they are first used.

Per byte it keeps what the checkers need (``Tags``): which TMA load last wrote it, which thread last wrote it with a
plain store (and how many proxy fences that thread had made then), which in-flight wgmma groups and TMA stores read
it, and whether anything ever wrote it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..checked_array import CheckedArray
from ..errors import OutOfBoundsError

#: the address of the dynamic shared buffer
DYNAMIC_BASE = 1024 + 128
#: the window's size: shared-memory addresses are 18 bits (a matrix descriptor's start field holds 14 bits of
#: address >> 4); a GPU has at most 228 KiB per block
WINDOW_BYTES = 1 << 18


@dataclass
class Root:
    name: str
    base: int  # window address of its first byte
    raw: np.ndarray  # the allocation's own numpy array
    ptr: int  # its data pointer
    nbytes: int
    u8: np.ndarray  # its bytes
    tracker_base: int | None  # the base address the shared-memory tracker gives it (checks on)

    def contains(self, address: int, size: int = 1) -> bool:
        return self.base <= address and address + size <= self.base + self.nbytes


def raw(array) -> np.ndarray:
    """The numpy array behind a simulator array (checked or plain)."""
    return array._a if isinstance(array, CheckedArray) else array


class SharedWindow:
    def __init__(self, shared):
        self._shared = shared  # the block's BlockSharedMemory
        self.roots: list[Root] = []
        self._by_ptr: dict[int, Root] = {}
        self._by_tracker: dict[int, Root] = {}
        self._next = None
        self.tags = Tags(WINDOW_BYTES)

    def _scan(self) -> None:
        for name, array, tracker_base in self._shared.roots():
            ptr = array.__array_interface__["data"][0]
            if ptr in self._by_ptr:
                continue
            nbytes = array.nbytes
            if name == "dynamic shared memory":
                base = DYNAMIC_BASE
            else:
                if self._next is None:
                    self._next = _align(DYNAMIC_BASE + self._shared._dynamic_bytes, 128)
                base, self._next = self._next, _align(self._next + nbytes, 128)
            if base + nbytes > WINDOW_BYTES:
                raise OutOfBoundsError(f"the block's shared memory ends at byte {base + nbytes}, past the "
                                       f"{WINDOW_BYTES} bytes of a shared-memory window")
            root = Root(name, base, array, ptr, nbytes, array.reshape(-1).view(np.uint8), tracker_base)
            self.roots.append(root)
            self._by_ptr[ptr] = root
            if tracker_base is not None:
                self._by_tracker[tracker_base] = root

    def root_of_pointer(self, ptr: int) -> Root | None:
        for _ in range(2):
            for root in self.roots:
                if root.ptr <= ptr < root.ptr + root.nbytes:
                    return root
            self._scan()
        return None

    def address_of(self, array, index, what: str) -> int:
        """The window address of ``array[index]`` (a shared array of this block); bounds checked."""
        a = raw(array)
        idx = tuple(int(i) for i in index) if isinstance(index, tuple) else (int(index),)
        if len(idx) != a.ndim:
            raise TypeError(f"{what}: the index must have one integer per dimension of the {a.ndim}-D shared "
                            f"array, got {idx}")
        if isinstance(array, CheckedArray):
            array._address(idx if len(idx) > 1 else idx[0])  # the bounds check, reported at the kernel's line
        elif not all(0 <= i < n for i, n in zip(idx, a.shape)):
            raise OutOfBoundsError(f"{what}: index {idx} is outside a shared array of shape {a.shape}")
        ptr = a.__array_interface__["data"][0] + sum(i * s for i, s in zip(idx, a.strides))
        root = self.root_of_pointer(ptr)
        if root is None:
            raise TypeError(f"{what}: expected a shared-memory array (cuda.shared.array) of this block, got an "
                            f"array of shape {a.shape}")
        return root.base + (ptr - root.ptr)

    def root_at(self, address: int, size: int = 1) -> Root | None:
        for _ in range(2):
            for root in self.roots:
                if root.contains(address, size):
                    return root
            self._scan()
        return None

    def tracked_address(self, tracker_address: int) -> int | None:
        """The window address of the byte the shared-memory tracker calls ``tracker_address``."""
        base = tracker_address >> 22 << 22  # fakecuda.SHARED_RANGE_BITS: each root's tracker range
        root = self._by_tracker.get(base)
        if root is None:
            self._scan()
            root = self._by_tracker.get(base)
        return None if root is None else root.base + (tracker_address - base)

    def read(self, addresses: np.ndarray) -> np.ndarray:
        """The bytes at ``addresses`` (one allocation's)."""
        root = self._covering(addresses)
        return root.u8[addresses - root.base]

    def write(self, addresses: np.ndarray, data: np.ndarray) -> None:
        root = self._covering(addresses)
        root.u8[addresses - root.base] = data

    def _covering(self, addresses: np.ndarray) -> Root:
        lo, hi = int(addresses.min()), int(addresses.max())
        root = self.root_at(lo, hi - lo + 1)
        if root is None:
            raise OutOfBoundsError(f"shared-memory bytes {lo:#x}..{hi:#x} are not inside one shared allocation")
        return root

    def describe(self) -> str:
        self._scan()
        return ", ".join(f"{r.name} at {r.base:#x}..{r.base + r.nbytes:#x}" for r in self.roots)


class Tags:
    """Per byte of the window: the asynchronous state the checkers read (see the module)."""

    def __init__(self, size: int):
        self.tma = np.full(size, -1, np.int32)  # the TMA load (op id) that last wrote the byte; -1: none since
        self.generic = np.full(size, -1, np.int32)  # the last plain store's record (machine.stores); -1: none
        self.store = np.full(size, -1, np.int32)  # the last TMA store (op id) that reads the byte
        self.written = np.zeros(size, np.bool_)
        self.reader = np.full(size, -1, np.int32)  # the last thread that read the byte with a plain load
        self.reader_releases = np.zeros(size, np.int32)  # how many releases that thread had made then
        self.wgmma: dict[int, np.ndarray] = {}  # warpgroup -> op id of its last wgmma reading the byte (-1: none)

    def wgmma_reads(self, warpgroup: int) -> np.ndarray:
        found = self.wgmma.get(warpgroup)
        if found is None:
            found = self.wgmma[warpgroup] = np.full(len(self.tma), -1, np.int32)
        return found


def _align(n: int, to: int) -> int:
    return -(-n // to) * to
