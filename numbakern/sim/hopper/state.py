"""One block's asynchronous machine: its mbarriers, named barriers, register budgets, the happens-before order
between its threads and asynchronous units, and the checks that read it.

**Order.** Each thread carries a vector clock (a dict): how many phases of each mbarrier it knows complete
(``("bar", address)``), how many wgmma groups of each warpgroup it knows retired (``("wg", w)``), how many TMA-store
groups of each thread it knows have read their shared memory (``("bulk", thread)``), how many proxy fences each
thread has made (``("fence", thread)``), which mbarriers it knows initialised (``("init", address)``). A release
(an mbarrier arrival, a TMA copy's completion, a barrier) publishes the releaser's clock; an acquire (a successful
``mbarrier_try_wait``, leaving a barrier) joins it. An access is ordered after an event exactly when the
accessor's clock has counted the event: that is how every check below decides, whatever order the simulator ran
the threads in.

**Timing.** A TMA load lands (its bytes written, its transaction bytes completed on its mbarrier) when a thread
waits on that mbarrier, or when nothing else can run: as late as the hardware may, so a thread that reads the buffer
without waiting sees the old contents. wgmma reads its shared-memory and register operands and writes its
accumulators when its group is retired by ``wgmma_wait``; a TMA store reads shared memory when its bulk group is
waited for. ``mbarrier_try_wait`` that cannot succeed parks the thread until the phase completes; if nothing else
can run, parked waits first time out (return False, as the hardware's may), and a second time with no progress in
between is a deadlock, reported with each barrier's phase, its missing arrivals and transaction bytes, and who
waits for it.
"""

from __future__ import annotations

import numpy as np

from ..errors import (
    BarrierDivergenceError,
    DeadlockError,
    RaceError,
    SimulationError,
    UninitializedReadError,
    describe_site,
    describe_thread,
    describe_threads,
    site_of,
)
from ..scheduler import EXTERNAL
from .window import SharedWindow

WARPGROUP = 128
#: registers a block may hold (an H100's register file per multiprocessor, which setmaxnreg redistributes)
REGISTER_FILE = 65536
#: the largest arrival count of an mbarrier (20 bits)
MAX_ARRIVALS = (1 << 20) - 1


class AsyncHazardError(RaceError):
    """Shared memory touched by an asynchronous unit (a TMA copy, a wgmma) and by a thread or another asynchronous
    operation with nothing ordering them: a read of a TMA load's buffer before its mbarrier phase was waited for,
    a write to a buffer an in-flight wgmma or TMA store still reads, a plain store an asynchronous read sees
    without ``fence_proxy_async``. Both lines are named, as for a race."""


class SwizzleMismatchError(SimulationError):
    """A wgmma matrix descriptor reads shared memory with another swizzle than the tensor map that wrote it."""


class Op:
    """An asynchronous operation (a TMA copy, a warpgroup's wgmma), for the tags and the messages."""

    __slots__ = ("barrier", "clock", "group", "id", "info", "kind", "perform", "phase", "site", "swizzle", "thread",
                 "warpgroup")

    def __init__(self, kind: str, site, thread, **fields):
        self.kind, self.site, self.thread = kind, site, thread
        self.barrier = self.phase = self.group = self.warpgroup = self.info = self.perform = None
        self.swizzle = 0
        self.clock: dict = {}
        for name, value in fields.items():
            setattr(self, name, value)

    def where(self) -> str:
        who = f"warpgroup {self.warpgroup}" if self.thread is None else describe_thread(self.thread)
        return f"{self.kind} at {describe_site(self.site)} (issued by {who})"


class MBarrier:
    def __init__(self, address: int, name: str, count: int, site, thread):
        self.address, self.name, self.count = address, name, count
        self.key = ("bar", address)
        self.init_key = ("init", address)
        self.site, self.thread = site, thread
        self.pending = count  # arrivals the phase in progress still needs
        self.tx = 0  # its transaction bytes still to come (negative: copies landed before their expect_tx)
        self.phase = 0  # phases completed
        self.expected = 0  # bytes announced for the phase in progress, and where
        self.expect_sites: list = []
        self.landed = 0  # bytes landed in the phase in progress
        self.accum: dict = {}  # the clocks released into the phase in progress
        self.completed: dict = {}  # the join of every completed phase's releases
        self.queued: list[Op] = []  # TMA loads issued and not landed yet

    def state(self) -> str:
        text = (f"mbarrier {self.name} (initialised with {self.count} arrival{'s' if self.count != 1 else ''} at "
                f"{describe_site(self.site)}): phase {self.phase} in progress (parity {self.phase % 2}), "
                f"{self.count - self.pending} of {self.count} arrivals made")
        if self.expected or self.landed or self.tx:
            text += f", {self.landed} of {self.expected} transaction bytes landed"
            if self.expect_sites:
                text += f" (expected by arrive_expect_tx at {describe_site(self.expect_sites[-1])})"
        if self.queued:
            text += f", {len(self.queued)} TMA load(s) still in flight"
        return text


def join(into: dict, other: dict) -> None:
    for key, value in other.items():
        if into.get(key, 0) < value:
            into[key] = value


class BarrierWait:
    """A thread parked in ``mbarrier_try_wait`` (the scheduler's external wait)."""

    def __init__(self, state: BlockState, barrier: MBarrier, parity: int):
        self.state, self.barrier, self.parity = state, barrier, parity
        self.phase = barrier.phase  # a parked thread sees the next completion, however many follow before it runs

    def ready(self, t) -> bool:
        self.state.land(self.barrier)
        if self.barrier.phase % 2 == self.parity and self.barrier.phase == self.phase:
            return False
        join(self.state.clock(t), self.barrier.completed)
        t.resume = True
        return True

    def describe(self) -> str:
        return f"mbarrier_try_wait for the phase of parity {self.parity} of {self.barrier.state()}"


class Rendezvous:
    """Threads that meet at one instruction (a named barrier, a warpgroup's wgmma_wait): the last to arrive does
    what the instruction does; the others park until the generation moves on."""

    def __init__(self, what: str):
        self.what = what
        self.arrived: list = []
        self.values: list = []
        self.generation = 0

    def park(self, scheduler, site):
        return scheduler.external_wait(site, _RendezvousWait(self, self.generation))

    def done(self) -> None:
        self.generation += 1
        self.arrived, self.values = [], []


class _RendezvousWait:
    def __init__(self, record: Rendezvous, generation: int):
        self.record, self.generation = record, generation

    def ready(self, t) -> bool:
        if self.record.generation > self.generation:
            t.resume = None
            return True
        return False

    def describe(self) -> str:
        return self.record.what


class BlockState:
    def __init__(self, machine, block):
        self.machine = machine
        self.block = block
        self.scheduler = machine.launch.scheduler
        self.checks = machine.launch.settings.checks
        self.window = SharedWindow(block.shared)
        self.tags = self.window.tags
        self.clocks: dict[int, dict] = {}
        self.ops: list[Op] = []
        self.stores: list[tuple] = []  # plain-store records the tags name: (thread, fence count, site)
        self._store_index: dict = {}
        self.barriers: dict[int, MBarrier] = {}
        self.named: dict[int, Rendezvous] = {}
        self.warpgroups: dict = {}  # wgmma.WarpgroupState by warpgroup index
        self.bulk: dict[int, list] = {}  # thread -> [open TMA stores, committed groups, groups retired]
        self.nreg: dict = {}  # setmaxnreg: warpgroup -> list of (site, increase, count); thread -> calls made
        self.nreg_calls: dict[int, int] = {}
        self.nreg_now: dict[int, int] = {}
        self.finishing: list = []  # more checks at the block's end (wgmma's)
        self.tracker = None
        self.seen_plain_stores = False  # the shared-memory tracker reports plain stores to us (checks on)
        block.barrier_hooks.append(self._on_block_barrier)

    # -- threads and their clocks -------------------------------------------------------------------------------

    def clock(self, t) -> dict:
        c = self.clocks.get(t.linear)
        if c is None:
            c = self.clocks[t.linear] = {}
        return c

    def _on_block_barrier(self) -> None:
        """A block-wide barrier: every live thread knows what any of them knew."""
        live = [t for t in self.block.threads if not t.finished]
        everything: dict = {}
        for t in live:
            join(everything, self.release(t))
        for t in live:
            self.clocks[t.linear] = dict(everything)

    def warpgroup_of(self, t, what: str, site) -> int:
        if self.block.size % WARPGROUP:
            raise BarrierDivergenceError(
                f"in kernel '{self.machine.name}': {what} at {describe_site(site)} is a warpgroup instruction, but "
                f"the block has {self.block.size} threads; warpgroups are 128 consecutive threads, so the block "
                "must have a multiple of 128")
        return t.linear // WARPGROUP

    # -- the shared-memory tracker's view of plain loads and stores ----------------------------------------------

    def attach_tracker(self) -> None:
        """Have the block's shared-memory tracker report plain loads and stores to us (when checks are on and the
        block has shared arrays); what it saw written before now counts as written."""
        if self.tracker is not None:
            return
        tracker = self.block.shared.tracker()
        if tracker is None:
            return
        self.tracker = tracker
        tracker.async_proxy = self
        self.seen_plain_stores = True
        for address in list(tracker._written):
            at = self.window.tracked_address(address)
            if at is not None:
                self.tags.written[at & ~15:(at & ~15) + 16] = True

    def plain_read(self, thread, tracker_address: int, itemsize: int, frame) -> bool:
        """A thread's load (from the tracker): checked against the TMA loads that wrote the bytes; True when
        they all came from TMA (the tracker then leaves them alone: they were written, and not by a thread)."""
        at = self.window.tracked_address(tracker_address)
        if at is None:
            return False
        ops = self.tags.tma[at:at + itemsize]
        if ops[0] < 0 and ops[-1] < 0:
            self.tags.reader[at] = thread.linear
            self.tags.reader_releases[at] = self.clock(thread).get(("t", thread.linear), 0)
            return False
        if "race" in self.checks:
            for op_id in set(ops.tolist()) - {-1}:
                self.require_landed(thread, self.ops[op_id], site_of(frame), "reads")
        return bool((ops >= 0).all())

    def plain_write(self, thread, tracker_address: int, itemsize: int, frame) -> None:
        at = self.window.tracked_address(tracker_address)
        if at is None:
            return
        site = site_of(frame)
        tags = self.tags
        span = slice(at, at + itemsize)
        # the asynchronous units' tags are the same across each 16-byte chunk (they copy and read whole chunks), and
        # an element's bytes share their history: its first byte says it all
        if "race" in self.checks and (tags.tma[at] >= 0 or tags.store[at] >= 0
                                      or any(reads[at] >= 0 for reads in tags.wgmma.values())):
            self.check_overwrite(thread, np.arange(at, at + 1), site, "writes")
        tags.tma[span] = -1
        tags.written[span] = True
        tags.generic[span] = self._store_record(thread, site)

    def forget_plain_accesses(self, addresses: np.ndarray) -> None:
        """Bytes the copy engine writes: the tracker drops its records of their reads this epoch, so their next
        reads come to ``plain_read`` again (a read it had found needless to report, a *quiet* one, is not now)."""
        tracker = self.tracker
        root = self.window.root_at(int(addresses.min()))
        if tracker is None or root is None or root.tracker_base is None:
            return
        epoch = tracker.epoch_accesses
        if epoch:
            for address in (addresses - root.base + root.tracker_base).tolist():
                epoch.pop(address, None)
        tracker.forget_quiet()

    def _store_record(self, thread, site) -> int:
        clock = self.clock(thread)
        key = (thread.linear, clock.get(("fence", thread.linear), 0), clock.get(("t", thread.linear), 0), site)
        index = self._store_index.get(key)
        if index is None:
            index = self._store_index[key] = len(self.stores)
            self.stores.append((thread, key[1], site, key[2]))
        return index

    def release(self, thread) -> dict:
        """``thread`` publishes what it has done so far (an arrival, a copy it issues, a barrier): its own count
        moves on, so that what it does later is not ordered by this release. Returns its clock."""
        clock = self.clock(thread)
        key = ("t", thread.linear)
        clock[key] = clock.get(key, 0) + 1
        return clock

    def ordered(self, tracker_address: int, first, first_did: str, thread) -> bool:
        """For the race checker: whether ``first`` (a plain access the tracker holds: thread, site, ...) is ordered
        before ``thread``'s access now by the releases and acquires this state follows (mbarriers, named barriers)."""
        at = self.window.tracked_address(tracker_address)
        if at is None:
            return False
        other = first[0]
        # no record of the access: it came before this state saw the block's plain accesses (before its first
        # Hopper instruction), when no thread had released anything yet
        if first_did == "wrote":
            index = int(self.tags.generic[at])
            if index >= 0 and self.stores[index][0] is not other:
                return False
            releases = self.stores[index][3] if index >= 0 else 0
        else:
            reader = int(self.tags.reader[at])
            if reader >= 0 and reader != other.linear:
                return False
            releases = int(self.tags.reader_releases[at]) if reader >= 0 else 0
        return self.clock(thread).get(("t", other.linear), 0) > releases

    # -- the checks ----------------------------------------------------------------------------------------------

    def require_landed(self, thread, op: Op, site, verb: str) -> None:
        """``thread`` may touch what TMA load ``op`` writes only once it has waited for the load's phase."""
        if self.clock(thread).get(op.barrier.key, 0) > op.phase:
            return
        raise AsyncHazardError(
            f"in kernel '{self.machine.name}': {describe_thread(thread)} {verb} shared memory that a TMA load is "
            f"writing, before waiting for it:\n"
            f"  {op.where()} completes on phase {op.phase} of mbarrier {op.barrier.name}\n"
            f"  {describe_thread(thread)} {verb} it at {describe_site(site)} without having seen that phase "
            f"complete (mbarrier_try_wait({op.barrier.name.split('[')[0]}, ..., {op.phase % 2}) returning True, in "
            f"this thread or in one ordered before it by a barrier)")

    def check_overwrite(self, thread, addresses: np.ndarray, site, verb: str, by: str | None = None) -> None:
        """A write (a thread's store, or a TMA load ``thread`` issues) to ``addresses``: no in-flight asynchronous
        operation may still read or write them, unless the writer knows it finished."""
        clock = self.clock(thread)
        who = by or describe_thread(thread)  # (only reached when some asynchronous operation touched the bytes)
        for op_id in _ids(self.tags.tma[addresses]):
            op = self.ops[op_id]
            if clock.get(op.barrier.key, 0) <= op.phase:
                raise AsyncHazardError(
                    f"in kernel '{self.machine.name}': {who} {verb} shared memory that a TMA load is still "
                    f"writing:\n  {op.where()} completes on phase {op.phase} of mbarrier {op.barrier.name}\n"
                    f"  {who} {verb} it at {describe_site(site)} without having seen that phase complete")
        for warpgroup, reads in self.tags.wgmma.items():
            for op_id in _ids(reads[addresses]):
                op = self.ops[op_id]
                if clock.get(("wg", warpgroup), 0) <= op.group:
                    raise AsyncHazardError(
                        f"in kernel '{self.machine.name}': {who} {verb} shared memory that an in-flight wgmma "
                        f"still reads:\n  {op.where()}, in its wgmma group {op.group}\n"
                        f"  {who} {verb} it at {describe_site(site)} before that group was retired "
                        f"(wgmma_wait in warpgroup {warpgroup}, and then an mbarrier arrival or a barrier that "
                        "orders this write after it)")
        for op_id in _ids(self.tags.store[addresses]):
            op = self.ops[op_id]
            if clock.get(("bulk", op.thread.linear), 0) <= op.group:
                raise AsyncHazardError(
                    f"in kernel '{self.machine.name}': {who} {verb} shared memory that a TMA store still reads:\n"
                    f"  {op.where()}\n  {who} {verb} it at {describe_site(site)} before that store's bulk group "
                    f"was waited for (bulk_wait_read by {describe_thread(op.thread)}, then a barrier)")

    def async_read_requirements(self, addresses: np.ndarray, site, what: str, swizzle: int | None = None) -> list:
        """What a thread must know before an asynchronous unit reads ``addresses`` (a wgmma operand, a TMA store's
        source): ``[(clock key, least value, reason)]``; the checks that depend on no thread are made here
        (written at all, the swizzle of the TMA copies that wrote them)."""
        tags = self.tags
        if self.seen_plain_stores and "uninit" in self.checks and not tags.written[addresses].all():
            at = int(addresses[np.argmin(tags.written[addresses])])
            raise UninitializedReadError(
                f"in kernel '{self.machine.name}': {what} at {describe_site(site)} reads shared memory that nothing "
                f"has written (byte {at:#x}: {self._where(at)})")
        needs = []
        for op_id in _ids(tags.tma[addresses]):
            op = self.ops[op_id]
            if swizzle is not None and op.swizzle != swizzle:
                raise SwizzleMismatchError(
                    f"in kernel '{self.machine.name}': {what} at {describe_site(site)} reads its operand with "
                    f"{_swizzle_words(swizzle)}, but {op.where()} wrote those bytes with {_swizzle_words(op.swizzle)} "
                    "(its tensor map's): the operand's elements would be read from the wrong places")
            needs.append((op.barrier.key, op.phase + 1, op))
        if self.seen_plain_stores:
            writers: dict = {}
            for index in _ids(tags.generic[addresses]):
                thread, fences, store_site, _ = self.stores[index]
                if writers.get(thread.linear, (-1,))[0] < fences:
                    writers[thread.linear] = (fences, thread, store_site)
            for linear, (fences, thread, store_site) in writers.items():
                needs.append((("fence", linear), fences + 1, (thread, store_site)))
        return needs

    def require(self, thread, needs: list, site, what: str) -> None:
        if "race" not in self.checks:
            return
        clock = self.clock(thread)
        for key, least, reason in needs:
            if clock.get(key, 0) >= least:
                continue
            if isinstance(reason, Op):
                self.require_landed(thread, reason, site, f"issues {what}, which reads")
            writer, store_site = reason
            raise AsyncHazardError(
                f"in kernel '{self.machine.name}': {what} at {describe_site(site)} (issued by "
                f"{describe_thread(thread)}) reads shared memory through the async proxy that a plain store wrote "
                f"with no proxy fence between them:\n"
                f"  {describe_thread(writer)} wrote it at {describe_site(store_site)}\n"
                f"  fence_proxy_async() must follow that store in the writing thread, and the issue must be "
                "ordered after the fence (a barrier between them)")

    def _where(self, address: int) -> str:
        root = self.window.root_at(address)
        return f"{root.name} byte {address - root.base}" if root is not None else "outside every allocation"

    # -- mbarriers ------------------------------------------------------------------------------------------------

    def barrier_at(self, thread, address: int, name: str, site, what: str) -> MBarrier:
        barrier = self.barriers.get(address)
        if barrier is None:
            raise SimulationError(f"in kernel '{self.machine.name}': {what} at {describe_site(site)} uses mbarrier "
                                  f"{name}, which was never initialised (mbarrier_init)")
        if "race" in self.checks and self.clock(thread).get(barrier.init_key, 0) < 1:
            raise AsyncHazardError(
                f"in kernel '{self.machine.name}': {describe_thread(thread)} uses mbarrier {name} at "
                f"{describe_site(site)} before its initialisation is visible to it:\n"
                f"  {describe_thread(barrier.thread)} initialised it at {describe_site(barrier.site)}\n"
                "  (fence_barrier_init() and a cuda.syncthreads() after the initialisation order it before "
                "every use)")
        return barrier

    def init_barrier(self, thread, address: int, name: str, count: int, site) -> None:
        if not 1 <= count <= MAX_ARRIVALS:
            raise ValueError(f"mbarrier_init: the arrival count must be in 1..{MAX_ARRIVALS}, got {count} (mbarrier "
                             f"{name} at {describe_site(site)})")
        old = self.barriers.get(address)
        if old is not None and (old.queued or old.pending != old.count or old.tx):
            raise SimulationError(f"in kernel '{self.machine.name}': mbarrier {name} is initialised again at "
                                  f"{describe_site(site)} while its phase {old.phase} is in progress "
                                  f"({old.state()})")
        self.barriers[address] = MBarrier(address, name, count, site, thread)
        self.clock(thread)[("init", address)] = 1
        self.machine.progress += 1

    def catch_up(self, barrier: MBarrier) -> None:
        """A new arrival or copy on ``barrier`` whose phase in progress has all its arrivals and exactly the bytes
        in flight that it still expects can only be for the next phase: those copies land first (on a GPU they
        would have long finished; landing them later would count the new one in the wrong phase)."""
        if barrier.queued and barrier.pending == 0 and barrier.tx == sum(op.info[0].map.box_bytes
                                                                         for op in barrier.queued):
            self.land(barrier)

    def arrive(self, thread, barrier: MBarrier, site, tx: int = 0) -> None:
        self.catch_up(barrier)
        if tx:
            barrier.tx += tx
            barrier.expected += tx
            barrier.expect_sites.append(site)
        join(barrier.accum, self.release(thread))
        if barrier.pending == 0:
            raise SimulationError(
                f"in kernel '{self.machine.name}': {describe_thread(thread)} arrives on mbarrier {barrier.name} at "
                f"{describe_site(site)}, but its phase {barrier.phase} already has all its {barrier.count} arrivals "
                f"and waits only for transaction bytes ({barrier.state()})")
        barrier.pending -= 1
        self.machine.progress += 1
        self._complete_if_done(barrier)

    def complete_tx(self, op: Op, nbytes: int) -> None:
        barrier = op.barrier
        if barrier.phase != op.phase:
            raise SimulationError(
                f"in kernel '{self.machine.name}': {op.where()} was issued in phase {op.phase} of mbarrier "
                f"{barrier.name}, but its {nbytes} bytes land after that phase completed: the phase expected fewer "
                f"transaction bytes than its copies bring ({barrier.state()})")
        barrier.tx -= nbytes
        barrier.landed += nbytes
        join(barrier.accum, op.clock)
        self.machine.progress += 1
        self._complete_if_done(barrier)

    def _complete_if_done(self, barrier: MBarrier) -> None:
        if barrier.pending or barrier.tx:
            return
        barrier.phase += 1
        join(barrier.completed, barrier.accum)
        barrier.completed[barrier.key] = barrier.phase
        barrier.pending, barrier.accum = barrier.count, {}
        barrier.expected, barrier.landed, barrier.expect_sites = 0, 0, []

    def try_wait(self, thread, barrier: MBarrier, parity: int, site) -> bool:
        """True at once if the phase of that parity has completed (the phase in progress has the other parity);
        else the copies in flight land and the thread waits until the phase in progress completes."""
        if barrier.phase % 2 != parity:
            join(self.clock(thread), barrier.completed)
            return True
        wait = BarrierWait(self, barrier, parity)
        if wait.ready(thread):
            thread.resume = None
            return True
        return self.scheduler.external_wait(site, wait)

    def land(self, barrier: MBarrier) -> None:
        """The TMA loads in flight on ``barrier`` happen now (each op's ``perform``)."""
        while barrier.queued:
            barrier.queued.pop(0).perform()

    # -- named barriers ---------------------------------------------------------------------------------------------

    def named_barrier(self, thread, barrier_id: int, count: int, site, wait: bool = True) -> None:
        """``bar.sync`` (``wait``) or ``bar.arrive``: ``thread`` counts towards the barrier's ``count`` threads; the
        generation completes when they have all arrived, and releases the threads that wait (arrivals publish what
        their thread knows, and do not wait: a warpgroup signals another's turn)."""
        what = "named_barrier" if wait else "named_barrier_arrive"
        if not 1 <= barrier_id <= 15:
            raise ValueError(f"{what}: barrier_id must be in 1..15 (0 is cuda.syncthreads()'s), got "
                             f"{barrier_id}, at {describe_site(site)}")
        if count <= 0 or count % 32 or count > self.block.size:
            raise ValueError(f"{what}: count must be a positive multiple of 32 (whole warps), at most the "
                             f"block's {self.block.size} threads, got {count}, at {describe_site(site)}")
        record = self.named.get(barrier_id)
        if record is None:
            record = self.named[barrier_id] = Rendezvous("")
        if record.arrived and record.values[0][0] != count:
            first = record.arrived[0]
            raise BarrierDivergenceError(
                f"in kernel '{self.machine.name}': named barrier {barrier_id} is reached with count "
                f"{record.values[0][0]} by {describe_thread(first)} at {describe_site(record.values[0][1])} and "
                f"with count {count} by {describe_thread(thread)} at {describe_site(site)}")
        record.arrived.append(thread)
        record.values.append((count, site, wait))
        record.what = (f"named barrier {barrier_id} ({len(record.arrived)} of {count} threads arrived, at "
                       f"{describe_site(record.values[0][1])})")
        self.machine.progress += 1
        if len(record.arrived) < count:
            return record.park(self.scheduler, site) if wait else None
        arrived, waited = record.arrived, [t for t, v in zip(record.arrived, record.values) if v[2]]
        warps = {t.warp for t in arrived}
        for warp in warps:
            missing = [t for t in warp.lanes if t not in arrived and not t.finished]
            if missing:
                raise BarrierDivergenceError(
                    f"in kernel '{self.machine.name}': named barrier {barrier_id} at {describe_site(site)} completes "
                    f"with part of warp {warp.index}: {describe_threads(missing)} did not arrive (bar.sync and "
                    "bar.arrive count whole warps: every lane of a warp must reach them)")
        live = [t for t in self.block.threads if not t.finished]
        record.done()
        if len(waited) == len(live):  # the whole block waited: a block barrier (the race checker's new epoch too)
            self.block.epoch += 1
            for hook in self.block.barrier_hooks:
                hook()
        else:
            everything: dict = {}
            for t in arrived:
                join(everything, self.release(t))
            for t in waited:
                self.clocks[t.linear] = dict(everything)
        return None

    # -- setmaxnreg -----------------------------------------------------------------------------------------------

    def setmaxnreg(self, thread, increase: bool, count: int, site) -> None:
        what = f"setmaxnreg_{'inc' if increase else 'dec'}"
        if count % 8 or not 24 <= count <= 256:
            raise ValueError(f"{what}: the register count must be a multiple of 8 in 24..256, got {count}, at "
                             f"{describe_site(site)}")
        warpgroup = self.warpgroup_of(thread, what, site)
        calls = self.nreg.setdefault(warpgroup, [])
        n = self.nreg_calls.get(thread.linear, 0)
        if n == len(calls):
            calls.append((site, increase, count, thread))
            before = self.nreg_now.get(warpgroup)
            if before is not None and (count < before if increase else count > before):
                can = "inc can only raise" if increase else "dec can only lower"
                raise ValueError(f"{what}({count}) at {describe_site(site)}: warpgroup {warpgroup} holds {before} "
                                 f"registers per thread, and {can} the count")
            self.nreg_now[warpgroup] = count
            groups = self.block.size // WARPGROUP
            if len(self.nreg_now) == groups and sum(self.nreg_now.values()) * WARPGROUP > REGISTER_FILE:
                raise SimulationError(
                    f"in kernel '{self.machine.name}': after {what}({count}) at {describe_site(site)} the block's "
                    f"warpgroups ask for {sum(self.nreg_now.values())} x 128 registers "
                    f"({dict(sorted(self.nreg_now.items()))} per thread), more than the {REGISTER_FILE} of a "
                    "multiprocessor")
        else:
            first_site, first_increase, first_count, first = calls[n]
            if (first_site, first_increase, first_count) != (site, increase, count):
                raise BarrierDivergenceError(
                    f"in kernel '{self.machine.name}': setmaxnreg must be executed by all 128 threads of a "
                    f"warpgroup alike, but in warpgroup {warpgroup} {describe_thread(first)} executed "
                    f"setmaxnreg_{'inc' if first_increase else 'dec'}({first_count}) at {describe_site(first_site)} "
                    f"and {describe_thread(thread)} {what}({count}) at {describe_site(site)}")
        self.nreg_calls[thread.linear] = n + 1

    # -- the end of the block ---------------------------------------------------------------------------------------

    def finish(self) -> None:
        """The block has exited: what is still in flight, or was done by part of a warpgroup, is an error."""
        for barrier in self.barriers.values():
            if barrier.queued:
                op = barrier.queued[0]
                raise SimulationError(
                    f"in kernel '{self.machine.name}': the block exited with {op.where()} still in flight: no thread "
                    f"waited for mbarrier {barrier.name}'s phase {op.phase} (its shared memory is gone when the block "
                    "exits)")
        for check in self.finishing:
            check(self)
        for open_ops, groups, _ in self.bulk.values():
            pending = open_ops + [op for group in groups for op in group]
            if pending:
                raise SimulationError(
                    f"in kernel '{self.machine.name}': the block exited with {pending[0].where()} not waited for: "
                    "bulk_commit() and bulk_wait_read(0) must follow a TMA store before the block's shared memory "
                    "goes away")
        for warpgroup, calls in self.nreg.items():
            counts = {self.nreg_calls.get(t.linear, 0) for t in self.block.threads[warpgroup * WARPGROUP:
                                                                                  (warpgroup + 1) * WARPGROUP]}
            if len(counts) > 1:
                short = [t for t in self.block.threads[warpgroup * WARPGROUP:(warpgroup + 1) * WARPGROUP]
                         if self.nreg_calls.get(t.linear, 0) < len(calls)]
                site, increase, count, _ = calls[min(self.nreg_calls.get(t.linear, 0) for t in short)]
                raise BarrierDivergenceError(
                    f"in kernel '{self.machine.name}': setmaxnreg_{'inc' if increase else 'dec'}({count}) at "
                    f"{describe_site(site)} was executed by part of warpgroup {warpgroup}: {describe_threads(short)} "
                    "never executed it (it must be executed by all 128 threads of the warpgroup)")

    # -- stuck ------------------------------------------------------------------------------------------------------

    def parked(self) -> list:
        return [t for t in self.block.threads
                if not t.finished and t.wait is not None and t.wait[0] is EXTERNAL]


def _ids(tags: np.ndarray) -> list[int]:
    if tags.size == 1:
        first = int(tags[0])
        return [first] if first >= 0 else []
    found = np.unique(tags)
    return [int(i) for i in found if i >= 0]


def _swizzle_words(swizzle: int) -> str:
    return f"the {swizzle}-byte swizzle" if swizzle else "no swizzle"


class Machine:
    """The asynchronous machine of one launch: a ``BlockState`` per running block."""

    def __init__(self, launch):
        self.launch = launch
        self.name = launch.name
        self.states: dict[int, BlockState] = {}
        self.progress = 0
        self._timed_out_at = None
        launch.scheduler.on_stuck = self.stuck

    def state(self, thread) -> BlockState:
        block = thread.block
        state = self.states.get(id(block))
        if state is None:
            state = self.states[id(block)] = BlockState(self, block)
        return state

    def end_blocks(self, blocks) -> None:
        for block in blocks:
            state = self.states.pop(id(block), None)
            if state is not None:
                if state.tracker is not None:
                    state.tracker.async_proxy = None
                state.finish()

    def stuck(self, blocks) -> list:
        """Nothing can run: land what is in flight and release the waits that succeed; else time the parked
        ``mbarrier_try_wait``s out once (they return False); else nothing (the scheduler reports a deadlock)."""
        released = []
        for block in blocks:
            state = self.states.get(id(block))
            if state is None:
                continue
            for barrier in state.barriers.values():
                state.land(barrier)
            released += [t for t in state.parked() if t.wait[2].ready(t)]
        if released:
            return released
        if self._timed_out_at == self.progress:
            return []
        self._timed_out_at = self.progress
        for block in blocks:
            state = self.states.get(id(block))
            if state is None:
                continue
            for t in state.parked():
                if isinstance(t.wait[2], BarrierWait):
                    t.resume = False
                    released.append(t)
        return released


__all__ = ["AsyncHazardError", "BlockState", "DeadlockError", "Machine", "SwizzleMismatchError"]
