"""Race and uninitialised-read detection: who touched which element, and when.

Elements are identified by address (see ``checked_array``). Call depth is fixed: kernel code -> CheckedArray
method -> tracker method, so ``sys._getframe(2)`` is the kernel's (or device function's) frame; atomics come one
level deeper (kernel -> cuda.atomic.op -> CheckedArray._atomic_target -> tracker).

A read of an element nobody has written is not reported at once: if another thread writes that element in the
same barrier interval, the defect is a race (the read may see either value on a GPU) and is reported as one; only
when the interval ends with no such write is it an ``UninitializedReadError``.
"""

from __future__ import annotations

import sys
from array import array

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
    and two distinct readers are enough to find one. Shared memory is small and lives for one block, so these
    Python structures stay small too.
    """

    def __init__(self, checks, race: bool, uninit: bool):
        self._checks = checks
        self._scheduler = checks.scheduler
        self._race = race
        self._uninit = uninit
        self._written: set[int] = set()
        self.epoch_accesses: dict[int, list] = {}  # TrackedArray reads it directly
        self._pending: dict[int, tuple] = {}  # reads of unwritten elements, this epoch: addr -> what to report
        self._quiet_marks: list[tuple[bytearray, bytes]] = []  # TrackedArray._quiet of the kept arrays
        # numbakern.sim.hopper's block state once the block uses TMA or wgmma: it sees every plain load and store
        # (bytes the copy engine wrote are its to check, not this tracker's)
        self.async_proxy = None

    def keep_quiet_marks(self, marks: bytearray) -> None:
        """A TrackedArray's marks of quiet elements (see there), to be unmarked when they stop being quiet."""
        self._quiet_marks.append((marks, bytes(len(marks))))

    def forget_quiet(self) -> None:
        for marks, zeros in self._quiet_marks:
            marks[:] = zeros

    def new_epoch(self) -> None:
        self.report_pending()
        self.epoch_accesses.clear()
        self.forget_quiet()

    def report_pending(self) -> None:
        """The interval is over: a read of an element no thread of it wrote was an uninitialised read."""
        if self._pending:
            array_, addr, idx, access = next(iter(self._pending.values()))
            self._pending.clear()
            self._raise_uninit(array_, addr, idx, access[0], access[1])

    def read(self, array_, addr: int, idx) -> None:
        thread = self._scheduler.current
        if self.async_proxy is not None and self.async_proxy.plain_read(thread, addr, array_._a.itemsize,
                                                                        sys._getframe(2)):
            return
        seen = self.epoch_accesses.get(addr)
        if seen is None:
            # seen this epoch implies written or already pending: it was either written, or read after this check
            access = (thread, site_of(sys._getframe(2)), thread.warp.syncs)
            if self._uninit and addr not in self._written and addr not in self._pending:
                self._pending[addr] = (array_, addr, idx, access)
            self.epoch_accesses[addr] = [None, access, None]
            return
        writer, reader, other = seen
        if writer is not None and writer[0] is not thread and _unordered(writer, thread) and self._race:
            self._raise_race(array_, addr, idx, writer, "wrote", thread, "read", site_of(sys._getframe(2)))
        if reader is None:
            seen[1] = (thread, site_of(sys._getframe(2)), thread.warp.syncs)
        elif other is None and reader[0] is not thread:
            seen[2] = (thread, site_of(sys._getframe(2)), thread.warp.syncs)

    def write(self, array_, addr: int, idx) -> None:
        self._written.add(addr)
        thread = self._scheduler.current
        pending = self._pending.get(addr)
        if pending is not None and pending[3][0] is not thread and _unordered(pending[3], thread):
            # another thread of this interval writes what was read unwritten: not an uninitialised read but a race
            # with this write (reported just below when the race check is on)
            del self._pending[addr]
        seen = self.epoch_accesses.get(addr)
        if seen is None:
            self.epoch_accesses[addr] = [(thread, site_of(sys._getframe(2)), thread.warp.syncs), None, None]
        else:
            writer, reader, other = seen
            if writer is None and other is not None:
                self.forget_quiet()  # the element was quiet: its reads matter again (TrackedArray)
            if self._race:
                if writer is not None and writer[0] is not thread and _unordered(writer, thread):
                    self._raise_race(array_, addr, idx, writer, "wrote", thread, "wrote", site_of(sys._getframe(2)))
                if reader is not None and reader[0] is thread:
                    reader = other
                if reader is not None and _unordered(reader, thread):
                    self._raise_race(array_, addr, idx, reader, "read", thread, "wrote", site_of(sys._getframe(2)))
            seen[0] = (thread, site_of(sys._getframe(2)), thread.warp.syncs)
        if self.async_proxy is not None:  # (after the race check: it reads the previous store's record)
            self.async_proxy.plain_write(thread, addr, array_._a.itemsize, sys._getframe(2))

    def atomic(self, array_, addr: int, idx) -> None:
        # atomics are exempt from the race check, but an atomic update of a never-written element is still a bug
        if self._uninit and addr not in self._written:
            self._raise_uninit(array_, addr, idx, self._scheduler.current, site_of(sys._getframe(3)))
        self._written.add(addr)

    def _raise_uninit(self, array_, addr, idx, thread, site):
        raise UninitializedReadError(
            f"in kernel '{self._checks.kernel_name}': {describe_thread(thread)} read {array_._label} element "
            f"{array_._label.element(addr, array_._a.itemsize)}{_as_accessed(array_, idx)}, which no thread of the "
            f"block has written, at {describe_site(site)}"
        )

    def _raise_race(self, array_, addr, idx, first, first_did, thread, did, site):
        if self.async_proxy is not None and self.async_proxy.ordered(addr, first, first_did, thread):
            return  # an mbarrier (or a named barrier) orders the two accesses
        raise RaceError(
            f"in kernel '{self._checks.kernel_name}': {array_._label} element "
            f"{array_._label.element(addr, array_._a.itemsize)}{_as_accessed(array_, idx)} is touched by two "
            f"threads with no syncthreads() between them:\n"
            f"  {describe_thread(first[0])} {first_did} it at {describe_site(first[1])}\n"
            f"  {describe_thread(thread)} {did} it at {describe_site(site)}"
        )


class GlobalMemoryTracker:
    """One launch's global memory: plain stores that race (two threads storing to one element, unless they are in
    one block with a barrier between them, or a grid barrier separates them), and reads of device allocations
    that were never written (``cuda.device_array``).

    Per written array it keeps a few bytes per element (``array`` of machine integers: the last writer's launch-wide
    thread id and block epoch, the site index, the grid epoch), never the thread or block objects, so a launch of
    millions of blocks holds no more than that.
    """

    _EPOCH_BITS = 20

    def __init__(self, checks, race: bool, uninit: bool):
        self._checks = checks
        self._scheduler = checks.scheduler
        self._race = race
        self._uninit = uninit
        self._sites: list = []
        self._site_index: dict = {}
        self._records: dict[int, _Record] = {}
        self._pending: dict[tuple, tuple] = {}  # (label id, element) -> unwritten read to report

    # -- the CheckedArray hooks ------------------------------------------------------------------------------------

    def write(self, array_, addr: int, idx) -> None:
        label = array_._label
        element = (addr - label.base) // array_._a.itemsize
        thread = self._scheduler.current
        site = site_of(sys._getframe(2))
        if label.mask is not None:
            label.mask[label.mask_first + element] = True
            if self._pending:
                pending = self._pending.get((id(label), element))
                if pending is not None and self._unordered_with(pending, thread):
                    self._race_after_unwritten_read(array_, addr, pending, thread, site)
        if not self._race:
            return
        record = self._records.get(id(label))
        if record is None:
            record = self._records[id(label)] = _Record(label, array_._a.itemsize)
        gid = thread.global_id
        block = thread.block
        word = record.writers[element]
        grid_epoch = self._scheduler.grid_epoch
        if word:
            other = (word >> self._EPOCH_BITS) - 1
            if other != gid:
                size = block.size
                same_block = other // size == block.linear
                ordered = (same_block and (word & 0xFFFFF) != (block.epoch & 0xFFFFF)) or \
                    record.grid_epoch[element] != grid_epoch
                if not ordered:
                    self._raise_write_race(array_, addr, other, record.sites[element], thread, site)
        record.writers[element] = ((gid + 1) << self._EPOCH_BITS) | (block.epoch & 0xFFFFF)
        record.sites[element] = self._site(site)
        record.grid_epoch[element] = grid_epoch

    def read(self, array_, addr: int, idx) -> None:
        """Only device allocations made without data are read-tracked: an element never written is pending."""
        label = array_._label
        element = (addr - label.base) // array_._a.itemsize
        if label.mask[label.mask_first + element]:
            return
        key = (id(label), element)
        if key not in self._pending:
            self._pending[key] = self._reading(self._scheduler.current, array_, addr, idx, site_of(sys._getframe(2)))

    def atomic(self, array_, addr: int, idx) -> None:
        label = array_._label
        if label.mask is None:
            return
        element = (addr - label.base) // array_._a.itemsize
        if not label.mask[label.mask_first + element] and self._uninit:
            self._raise_uninit(self._reading(self._scheduler.current, array_, addr, idx, site_of(sys._getframe(3))))
        label.mask[label.mask_first + element] = True

    def _reading(self, thread, array_, addr, idx, site) -> tuple:
        block = thread.block
        return (thread.global_id, tuple(thread.threadIdx), tuple(thread.blockIdx), array_, addr, idx, site,
                block.linear, block.epoch, self._scheduler.grid_epoch)

    def _unordered_with(self, pending, thread) -> bool:
        """A write by ``thread`` now, and the pending read: nothing orders them (another block, or this block with
        no barrier since, and no grid barrier either)."""
        gid, *_, block_linear, block_epoch, grid_epoch = pending
        if gid == thread.global_id or grid_epoch != self._scheduler.grid_epoch:
            return False
        return block_linear != thread.block.linear or block_epoch == thread.block.epoch

    def report_pending(self) -> None:
        """The launch is over: reads of elements no thread wrote were reads of uninitialised memory."""
        if self._pending and self._uninit:
            first = next(iter(self._pending.values()))
            self._pending.clear()
            self._raise_uninit(first)

    # -- messages --------------------------------------------------------------------------------------------------

    def _site(self, site) -> int:
        i = self._site_index.get(site)
        if i is None:
            i = self._site_index[site] = len(self._sites)
            self._sites.append(site)
        return i

    def _describe_gid(self, gid: int) -> str:
        block_size = self._checks.block_size
        return describe_thread(_Coordinates(*divmod(gid, block_size), self._checks.block_dim, self._checks.grid_dim))

    def _raise_write_race(self, array_, addr, other_gid, other_site, thread, site):
        raise RaceError(
            f"in kernel '{self._checks.kernel_name}': {array_._label} element "
            f"{array_._label.element(addr, array_._a.itemsize)} is written by two threads with plain stores "
            f"(use cuda.atomic.* or let one thread write it):\n"
            f"  {self._describe_gid(other_gid)} at {describe_site(self._sites[other_site])}\n"
            f"  {describe_thread(thread)} at {describe_site(site)}"
        )

    def _race_after_unwritten_read(self, array_, addr, pending, thread, site):
        _, tid, bid, _, _, _, read_site, *_ = pending
        if not self._race:
            self._pending.pop((id(array_._label), (addr - array_._label.base) // array_._a.itemsize), None)
            return
        raise RaceError(
            f"in kernel '{self._checks.kernel_name}': {array_._label} element "
            f"{array_._label.element(addr, array_._a.itemsize)} is read and written by two threads with nothing "
            f"ordering them (the read may see the old or the new value):\n"
            f"  thread {tid} of block {bid} read it at {describe_site(read_site)}\n"
            f"  {describe_thread(thread)} wrote it at {describe_site(site)}"
        )

    def _raise_uninit(self, pending):
        _, tid, bid, array_, addr, idx, site, *_ = pending
        raise UninitializedReadError(
            f"in kernel '{self._checks.kernel_name}': thread {tid} of block {bid} read {array_._label} element "
            f"{array_._label.element(addr, array_._a.itemsize)}, which was allocated without data "
            f"(cuda.device_array) and never written, at {describe_site(site)}"
        )


class _Record:
    __slots__ = ("grid_epoch", "sites", "writers")

    def __init__(self, label, itemsize: int):
        n = label.span // itemsize + 1
        self.writers = array("q", bytes(8 * n))
        self.sites = array("i", bytes(4 * n))
        self.grid_epoch = array("i", bytes(4 * n))


class _Coordinates:
    """A thread named by its launch-wide id, for messages (the thread object itself is long gone)."""

    def __init__(self, block_linear: int, linear: int, block_dim, grid_dim):
        bx, by, _ = block_dim
        gx, gy, _ = grid_dim
        self.threadIdx = (linear % bx, linear // bx % by, linear // (bx * by))
        self.blockIdx = (block_linear % gx, block_linear // gx % gy, block_linear // (gx * gy))


def _unordered(access: tuple, thread) -> bool:
    """False when a syncwarp of their shared warp came between ``access`` and ``thread``'s access now."""
    other = access[0]
    return other.warp is not thread.warp or access[2] == thread.warp.syncs


def _as_accessed(array_, idx) -> str:
    # for views (the slices of the dynamic buffer) also say which index the kernel used
    if array_._label.base == array_._ptr and array_._a.shape == array_._label.root_shape:
        return ""
    shown = ", ".join(map(str, idx)) if type(idx) is tuple else str(idx)
    return f" (index [{shown}] of a view of it)"
