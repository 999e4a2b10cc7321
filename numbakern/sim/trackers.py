"""Race and uninitialized-read detection: who touched which element since the last barrier.

Elements are identified by address (see ``checked_array``). Call depth is fixed: kernel code -> CheckedArray
method -> tracker method, so ``sys._getframe(2)`` is the kernel's (or device function's) frame; atomics come one
level deeper (kernel -> cuda.atomic.op -> CheckedArray._atomic_target -> tracker).
"""

from __future__ import annotations

import sys

from .errors import (
    RaceError,
    UninitializedReadError,
    describe_site,
    describe_thread,
    site_of,
)


class SharedMemoryTracker:
    """One block's shared memory: elements written so far (uninit), and accesses in the current barrier epoch (race).

    An epoch ends at every block barrier. Lanes of one warp are also ordered by a ``syncwarp`` between them, which
    is why each access remembers its warp's syncwarp count. Per element and epoch it keeps ``[writer, reader,
    other reader]`` (each ``(thread, site, warp syncs)`` or None): a write conflicts with any reader but itself,
    and two distinct readers are enough to find one.
    """

    def __init__(self, checks, race: bool, uninit: bool):
        self._checks = checks
        self._scheduler = checks.scheduler
        self._race = race
        self._uninit = uninit
        self._written: set[int] = set()
        self.epoch_accesses: dict[int, list] = {}  # TrackedArray reads it directly

    def new_epoch(self) -> None:
        self.epoch_accesses.clear()

    def read(self, array, addr: int, idx) -> None:
        thread = self._scheduler.current
        seen = self.epoch_accesses.get(addr)
        if seen is None:
            # seen this epoch implies written: it was either written, or read after passing this check
            if self._uninit and addr not in self._written:
                self._raise_uninit(array, addr, idx, thread, site_of(sys._getframe(2)))
            if self._race:
                self.epoch_accesses[addr] = [None, (thread, site_of(sys._getframe(2)), thread.warp.syncs), None]
            return
        writer, reader, other = seen
        if writer is not None and writer[0] is not thread and _unordered(writer, thread):
            self._raise_race(array, addr, idx, writer, "wrote", thread, "read", site_of(sys._getframe(2)))
        if reader is None:
            seen[1] = (thread, site_of(sys._getframe(2)), thread.warp.syncs)
        elif other is None and reader[0] is not thread:
            seen[2] = (thread, site_of(sys._getframe(2)), thread.warp.syncs)

    def write(self, array, addr: int, idx) -> None:
        self._written.add(addr)
        if not self._race:
            return
        thread = self._scheduler.current
        seen = self.epoch_accesses.get(addr)
        if seen is None:
            self.epoch_accesses[addr] = [(thread, site_of(sys._getframe(2)), thread.warp.syncs), None, None]
            return
        writer, reader, other = seen
        if writer is not None and writer[0] is not thread and _unordered(writer, thread):
            self._raise_race(array, addr, idx, writer, "wrote", thread, "wrote", site_of(sys._getframe(2)))
        if reader is not None and reader[0] is thread:
            reader = other
        if reader is not None and _unordered(reader, thread):
            self._raise_race(array, addr, idx, reader, "read", thread, "wrote", site_of(sys._getframe(2)))
        seen[0] = (thread, site_of(sys._getframe(2)), thread.warp.syncs)

    def atomic(self, array, addr: int, idx) -> None:
        # atomics are exempt from the race check, but an atomic update of a never-written element is still a bug
        if self._uninit and addr not in self._written:
            self._raise_uninit(array, addr, idx, self._scheduler.current, site_of(sys._getframe(3)))
        self._written.add(addr)

    def _raise_uninit(self, array, addr, idx, thread, site):
        raise UninitializedReadError(
            f"in kernel '{self._checks.kernel_name}': {describe_thread(thread)} read {array._label} element "
            f"{array._label.element(addr, array._a.itemsize)}{_as_accessed(array, idx)}, which no thread of the "
            f"block has written, at {describe_site(site)}"
        )

    def _raise_race(self, array, addr, idx, first, first_did, thread, did, site):
        raise RaceError(
            f"in kernel '{self._checks.kernel_name}': {array._label} element "
            f"{array._label.element(addr, array._a.itemsize)}{_as_accessed(array, idx)} is touched by two threads "
            f"with no syncthreads() between them:\n"
            f"  {describe_thread(first[0])} {first_did} it at {describe_site(first[1])}\n"
            f"  {describe_thread(thread)} {did} it at {describe_site(site)}"
        )


class GlobalWriteTracker:
    """One launch's plain stores to global memory: two threads storing to one element is a race unless the
    stores are in one block and a barrier separates them."""

    def __init__(self, checks):
        self._checks = checks
        self._writer: dict[int, tuple] = {}

    def write(self, array, addr: int, idx) -> None:
        thread = self._checks.scheduler.current
        block = thread.block
        writer = self._writer.get(addr)
        if writer is not None and writer[0] is not thread and (writer[1] is not block or writer[2] == block.epoch):
            raise RaceError(
                f"in kernel '{self._checks.kernel_name}': {array._label} element "
                f"{array._label.element(addr, array._a.itemsize)} is written by two threads with plain stores "
                f"(use cuda.atomic.* or let one thread write it):\n"
                f"  {describe_thread(writer[0])} at {describe_site(writer[3])}\n"
                f"  {describe_thread(thread)} at {describe_site(site_of(sys._getframe(2)))}"
            )
        self._writer[addr] = (thread, block, block.epoch, site_of(sys._getframe(2)))

    def atomic(self, array, addr: int, idx) -> None:
        """Atomics on global memory cannot race."""


def _unordered(access: tuple, thread) -> bool:
    """False when a syncwarp of their shared warp came between ``access`` and ``thread``'s access now."""
    other = access[0]
    return other.warp is not thread.warp or access[2] == thread.warp.syncs


def _as_accessed(array, idx) -> str:
    # for views (the slices of the dynamic buffer) also say which index the kernel used
    if array._label.base == array._ptr and array._a.shape == array._label.root_shape:
        return ""
    shown = ", ".join(map(str, idx)) if type(idx) is tuple else str(idx)
    return f" (index [{shown}] of a view of it)"
