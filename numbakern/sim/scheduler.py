"""The cooperative scheduler: every CUDA thread is a greenlet, all in one OS thread.

A thread runs until it reaches a barrier (``syncthreads*``, a grid-wide ``sync()``), a warp intrinsic, or the
``spin`` tick a typed kernel calls on every pass of a ``while`` loop, then switches back to the scheduler; at a
plain ``syncthreads()`` it switches straight to the next thread of the round instead, when that one only waits to
be resumed from a plain barrier (one greenlet switch per thread and barrier rather than two). When no thread can
run, the scheduler completes warp intrinsics whose participating lanes have all arrived (warp
lockstep), releases a block barrier once every live thread of the block waits at one, and a grid barrier once
every live thread of the launch does. There is no polling and no OS-thread hand-off.

Blocks normally run one after the other (``run_blocks([block])``); a cooperative launch (a kernel that uses
``cuda.cg.this_grid().sync()``) runs all its blocks together, as the driver requires them all to be resident.

A thread in a ``while`` loop yields every ``SPIN_QUANTUM`` passes so that the thread it waits for can run. If
every thread still able to run only spins, and for ``deadlock_seconds`` no thread finishes, arrives at a barrier
or has a barrier or warp intrinsic completed, the launch can never finish: ``DeadlockError``.
"""

from __future__ import annotations

import random
import sys
import time
import weakref

from greenlet import greenlet

from .errors import (
    BarrierDivergenceError,
    DeadlockError,
    SimulationError,
    describe_site,
    describe_threads,
    frame_site,
)
from .stockapi import Dim3
from .warp import COLLECTIVES, WARP_SIZE, WHOLE_WARP_PREFIXES, source_lane, whole_warp_collective

BARRIER = "barrier"
GRID = "grid"
WARP = "warp"
SPIN = "spin"
#: while-loop passes between a spinning thread's yields to the scheduler
SPIN_QUANTUM = 1024
_FINISHED = object()  # what a worker greenlet switches to the scheduler with when its thread has returned
_AT_BARRIER = object()  # ... and when its thread waits at a plain syncthreads() (the commonest switch)
#: worker greenlets parked between launches, per scheduling greenlet: creating a greenlet and ending one each cost
#: several switches, so workers run one CUDA thread after another, launch after launch
_parked: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: workers kept parked at most, per scheduling greenlet (a block's threads: more are ended after the launch)
PARKED_MAX = 1024
_running: Scheduler | None = None  # the scheduler whose threads the workers run now


def _worker(_start=None) -> None:
    while True:
        scheduler = _running
        noting = scheduler.exit_code is not None and sys.getprofile() is None  # never in a profiler's way
        if noting:
            sys.setprofile(scheduler._note_kernel_frame)
        scheduler._body()
        if noting and sys.getprofile() is not None:
            sys.setprofile(None)
        scheduler._hub.switch(_FINISHED)


class Warp:
    __slots__ = ("index", "lanes", "syncs")

    def __init__(self, index: int):
        self.index = index
        self.lanes: list[SimThread] = []
        self.syncs = 0  # completed syncwarps: they order this warp's shared-memory accesses (race checker)


class SimThread:
    __slots__ = ("block", "blockIdx", "finished", "frame", "glet", "lane", "linear", "resume", "spins", "threadIdx",
                 "wait", "warp")

    def __init__(self, threadIdx: Dim3, block: Block, linear: int):
        self.threadIdx = threadIdx
        self.blockIdx = block.blockIdx
        self.block = block
        self.linear = linear  # x fastest, then y, then z
        self.lane = linear % WARP_SIZE
        self.warp = block.warps[linear // WARP_SIZE]
        self.warp.lanes.append(self)
        self.glet = None
        self.wait = None  # (BARRIER|GRID, site, op, value), (WARP, site, kind, mask, operand) or (SPIN, site)
        self.resume = None  # what the blocking call returns when the thread resumes
        self.finished = False
        self.spins = 0
        self.frame = None  # the kernel's frame, kept where exit lines are wanted (Scheduler.exit_code)

    @property
    def global_id(self) -> int:
        """The thread's index in the whole launch (block-major): how trackers remember it without holding it."""
        return self.block.linear * self.block.size + self.linear


class Block:
    __slots__ = ("blockIdx", "epoch", "barrier_hooks", "linear", "shared", "size", "threads", "warps")

    def __init__(self, blockIdx: Dim3, block_dim: tuple[int, int, int], linear: int = 0, thread_indices=None):
        self.blockIdx = blockIdx
        self.linear = linear
        if thread_indices is None:
            thread_indices = block_thread_indices(block_dim)
        count = self.size = len(thread_indices)
        self.warps = [Warp(w) for w in range((count + WARP_SIZE - 1) // WARP_SIZE)]
        self.threads = [SimThread(idx, self, linear) for linear, idx in enumerate(thread_indices)]
        self.epoch = 0  # completed block barriers
        self.barrier_hooks: list = []  # called at every barrier release (the race checker starts a new epoch)
        self.shared = None  # the block's shared memory (set by the engine)


def block_thread_indices(block_dim: tuple[int, int, int]) -> list[Dim3]:
    """Every thread's ``threadIdx`` in linear order (x fastest): the same for every block of a launch."""
    bx, by, bz = block_dim
    return [Dim3(x, y, z) for z in range(bz) for y in range(by) for x in range(bx)]


class Scheduler:
    def __init__(self, module, kernel_name: str, check_barriers: bool, shuffle_seed: int | None,
                 deadlock_seconds: float = 5.0):
        # the fake cuda module, whose threadIdx/laneid it sets at every switch (None until the engine has built it)
        self.current: SimThread | None = None
        self.module = module
        self._kernel_name = kernel_name
        self._check_barriers = check_barriers
        self.rng = random.Random(shuffle_seed) if shuffle_seed is not None else None
        self.deadlock_seconds = deadlock_seconds
        self.grid_epoch = 0  # completed grid barriers
        self.grid_hooks: list = []
        self._hub = None
        self._body = None
        self._idle_workers: list[greenlet] = []
        self._blocks: list[Block] = []
        # the round in progress (see run_blocks): the threads it runs in order, the index of the next one, and the
        # threads that reached a plain syncthreads() in it; ``_queue`` is None where threads may not chain
        self._queue: list[SimThread] | None = None
        self._next = 0
        self._arrived: list[SimThread] = []
        # the kernel's code, where the line each thread exits at may be needed (a kernel that shuffles: a lane that
        # reads an exited lane is told where that lane exited); None: no thread's frame is kept
        self.exit_code = None

    # -- called by the running thread (through the fake cuda module) ---------------------------------------------

    def syncthreads(self):
        """``cuda.syncthreads()`` (the fake module hands this method out as its own): the commonest call of a tiled
        kernel. The thread records its arrival and switches straight to the next thread of the round if that one
        only waits to be resumed from a plain barrier (one switch, not a switch to the scheduler and another from
        it); otherwise to the scheduler, which it tells by the switch's value that the wait is a plain barrier. Its
        site is read only when needed (``_plain_barrier_wait``), while the thread still waits here."""
        queue = self._queue
        if queue is not None:
            i = self._next
            if i < len(queue):
                t = queue[i]
                glet = t.glet
                if glet is not None and t.resume is None and t.wait is None:
                    self._next = i + 1
                    self._arrived.append(self.current)
                    module = self.module
                    module.threadIdx = t.threadIdx
                    module.laneid = t.lane
                    self.current = t
                    glet.switch()
                    return
        self._hub.switch(_AT_BARRIER)

    def barrier(self, site, op=None, value=None):
        self.current.wait = (BARRIER, site, op, value)
        return self._hub.switch()

    def grid_barrier(self, site):
        self.current.wait = (GRID, site, None, None)
        return self._hub.switch()

    def warp_collective(self, site, kind: str, mask: int, operand):
        self.current.wait = (WARP, site, kind, int(mask) & 0xFFFFFFFF, operand)
        return self._hub.switch()

    def spin(self, depth: int = 1):
        """A pass of a ``while`` loop (or an atomic: spin-waits use them): every ``SPIN_QUANTUM`` passes, let the
        other threads run. ``depth`` is how many frames up the kernel's line is."""
        t = self.current
        t.spins += 1
        if t.spins % SPIN_QUANTUM == 0:
            frame = sys._getframe(depth)
            t.wait = (SPIN, frame_site(frame))
            self._hub.switch()

    def _note_kernel_frame(self, frame, event, arg) -> None:
        """A profile function, on from a thread's start to its kernel's first frame: it keeps that frame, whose line
        once the thread has finished is the one it exited at."""
        if event == "call" and frame.f_code is self.exit_code:
            self.current.frame = frame
            sys.setprofile(None)

    # -- the scheduling loop --------------------------------------------------------------------------------------

    def run_blocks(self, blocks: list[Block], body) -> None:
        """Run ``body()`` once per thread of ``blocks``, switching threads at barriers, warp intrinsics and spins."""
        global _running
        self._hub = hub = greenlet.getcurrent()
        self._body = body
        _running = self
        self._idle_workers = _parked.setdefault(hub, [])
        self._blocks = blocks
        module = self.module
        several = len(blocks) > 1
        if not several:
            module.blockIdx = blocks[0].blockIdx
            module._shared = blocks[0].shared
        runnable = [t for b in blocks for t in b.threads] if several else list(blocks[0].threads)
        alive = len(runnable)
        idle = self._idle_workers
        stalled_since = None
        while runnable:
            if self.rng is not None:
                self.rng.shuffle(runnable)
            spinning = []
            # threads now in Scheduler.syncthreads (their wait not recorded yet); threads that switched straight to
            # the next one (syncthreads) added themselves
            arrived = self._arrived = []
            progressed = False
            if not several:
                self._queue = runnable
            count = len(runnable)
            i = 0
            while i < count:
                t = runnable[i]
                i += 1
                module.threadIdx = t.threadIdx
                module.laneid = t.lane
                if several:
                    module.blockIdx = t.blockIdx
                    module._shared = t.block.shared
                self.current = t
                value, t.resume, t.wait = t.resume, None, None
                if t.glet is None:
                    t.glet = idle.pop() if idle else greenlet(_worker, hub)
                self._next = i
                try:
                    signal = t.glet.switch(value)
                except SimulationError:
                    raise
                except Exception as e:  # noqa: BLE001 - any kernel error, re-raised naming its thread
                    raise _naming_thread(e, self.current) from None
                # threads may have switched from one to the next (syncthreads): the one that switched back is
                # the current one
                t = self.current
                i = self._next
                if signal is _AT_BARRIER:
                    arrived.append(t)
                elif signal is _FINISHED:
                    t.finished = True
                    idle.append(t.glet)
                    t.glet = None
                    progressed = True
                    alive -= 1
                elif t.wait[0] is SPIN:
                    spinning.append(t)
                else:
                    progressed = True
                    if t.wait[0] is BARRIER and t.wait[2] is None:
                        arrived.append(t)
            self._queue = None
            plain = sum(1 for t in arrived if t.wait is None)  # arrived is short, or its threads are all plain
            if plain:
                progressed = True
            if not alive:
                return
            if not several and plain == alive:
                # the commonest step of a tiled kernel: every thread of the block in Scheduler.syncthreads()
                stalled_since = None
                block = blocks[0]
                if self._check_barriers:
                    self._check_plain_barrier(block, arrived)
                block.epoch += 1
                for hook in block.barrier_hooks:
                    hook()
                runnable = arrived
                continue
            if plain:
                for t in arrived:
                    if t.wait is None:
                        t.wait = _plain_barrier_wait(t)
            if not several and len(arrived) == alive:
                stalled_since = None
                runnable = self._release_barrier(blocks[0], arrived)
                continue
            released = self._settle(blocks, spinning)
            if released:
                progressed = True
            if spinning and not progressed:
                now = time.perf_counter()
                if stalled_since is None:
                    stalled_since = now
                elif now - stalled_since > self.deadlock_seconds:
                    raise self._deadlock(blocks, spinning, now - stalled_since)
            else:
                stalled_since = None
            runnable = spinning + released

    def close(self, blocks) -> None:
        """End the greenlets of threads left waiting (after an error: they hold the kernel's frames), and idle
        workers beyond ``PARKED_MAX``; the others stay parked for the next launch."""
        global _running
        self._queue, self._arrived = None, []  # keep no thread (nor its block's shared memory) past the launch
        stranded = [t.glet for b in blocks or () for t in b.threads if t.glet is not None]
        excess = self._idle_workers[PARKED_MAX:]
        del self._idle_workers[PARKED_MAX:]
        for worker in stranded + excess:
            if not worker.dead:
                worker.throw()  # GreenletExit: unwinds the kernel frames it holds
        _running = None

    def _settle(self, blocks: list[Block], spinning: list[SimThread]) -> list[SimThread]:
        """Nothing can run but spinning threads: complete what the waiting threads wait for; return the threads
        that may go on (besides the spinning ones)."""
        released: list[SimThread] = []
        at_grid: list[SimThread] = []
        blocked = False
        for block in blocks:
            alive = [t for t in block.threads if not t.finished]
            if not alive:
                continue
            waiting = [t for t in alive if t.wait is not None and t.wait[0] is not SPIN]
            if not waiting:
                continue
            at_warp_intrinsic = [t for t in waiting if t.wait[0] is WARP]
            if at_warp_intrinsic:
                done = self._complete_warp_collectives(at_warp_intrinsic)
                if done:
                    released += done
                    continue
            if len(waiting) < len(alive):
                blocked = True  # some threads of the block still spin: they may yet arrive
                continue
            kinds = {t.wait[0] for t in waiting}
            if kinds == {BARRIER}:
                released += self._release_barrier(block, waiting)
            elif kinds == {GRID}:
                at_grid += waiting
            elif WARP in kinds and BARRIER in kinds:
                # lanes named in a warp intrinsic's mask wait at a block barrier instead: on a GPU, a hang
                at_warp = [t for t in waiting if t.wait[0] is WARP]
                at_barrier = [t for t in waiting if t.wait[0] is BARRIER]
                raise BarrierDivergenceError(
                    f"in kernel '{self._kernel_name}', block {tuple(block.blockIdx)}: {describe_threads(at_warp)} "
                    f"wait at a warp intrinsic at {describe_site(at_warp[0].wait[1])} for lanes named in its mask, "
                    f"but {describe_threads(at_barrier)} wait at syncthreads() at "
                    f"{describe_site(at_barrier[0].wait[1])}"
                )
            elif GRID in kinds:
                at_g = [t for t in waiting if t.wait[0] is GRID]
                other = [t for t in waiting if t.wait[0] is not GRID]
                raise BarrierDivergenceError(
                    f"in kernel '{self._kernel_name}', block {tuple(block.blockIdx)}: {describe_threads(at_g)} wait "
                    f"at the grid barrier at {describe_site(at_g[0].wait[1])} while {describe_threads(other)} wait at "
                    f"{describe_site(other[0].wait[1])}; every thread of the grid must reach the same grid.sync()"
                )
            else:
                blocked = True
        if at_grid and not blocked and not spinning and not released:
            released += self._release_grid_barrier(blocks, at_grid)
        if not released and not spinning:
            stuck = [t for b in blocks for t in b.threads if not t.finished]
            if stuck:
                raise self._deadlock(blocks, [], None)
        return released

    def _release_barrier(self, block: Block, waiting: list[SimThread]) -> list[SimThread]:
        if self._check_barriers:
            self._check_barrier_agreement(block, waiting)
        values = [t.wait[3] for t in waiting if t.wait[2] is not None]
        for t in waiting:
            op = t.wait[2]
            if op == "count":
                t.resume = sum(1 for v in values if v)
            elif op == "and":
                t.resume = int(all(values))
            elif op == "or":
                t.resume = int(any(values))
        block.epoch += 1
        for hook in block.barrier_hooks:
            hook()
        return waiting

    def _release_grid_barrier(self, blocks: list[Block], waiting: list[SimThread]) -> list[SimThread]:
        exited = [t for b in blocks for t in b.threads if t.finished]
        if exited and self._check_barriers:
            raise BarrierDivergenceError(
                f"in kernel '{self._kernel_name}': {describe_threads(waiting, blocks=True)} wait at the grid barrier "
                f"at {describe_site(waiting[0].wait[1])} but {describe_threads(exited, blocks=True)} already exited "
                "the kernel; grid.sync() must be reached by every thread of the grid (on the GPU this hangs)"
            )
        sites = {t.wait[1] for t in waiting}
        if len(sites) > 1 and self._check_barriers:
            a = waiting[0]
            b = next(t for t in waiting if t.wait[1] != a.wait[1])
            raise BarrierDivergenceError(
                f"in kernel '{self._kernel_name}': threads wait at different grid barriers: thread "
                f"{tuple(a.threadIdx)} of block {tuple(a.blockIdx)} at {describe_site(a.wait[1])} and thread "
                f"{tuple(b.threadIdx)} of block {tuple(b.blockIdx)} at {describe_site(b.wait[1])}"
            )
        self.grid_epoch += 1
        for block in blocks:
            block.epoch += 1
            for hook in block.barrier_hooks:
                hook()
        for hook in self.grid_hooks:
            hook()
        return waiting

    def _check_plain_barrier(self, block: Block, waiting: list[SimThread]) -> None:
        """``_check_barrier_agreement`` of threads that all wait at a plain syncthreads(), their sites not taken
        yet: the threads' positions (code and instruction) are compared first, the sites taken only if they
        differ or a thread has exited."""
        first = waiting[0].glet.gr_frame.f_back
        code, lasti = first.f_code, first.f_lasti
        for t in waiting:
            frame = t.glet.gr_frame.f_back
            if frame.f_code is not code or frame.f_lasti != lasti:
                break
        else:
            if not any(t.finished for t in block.threads):
                return
        for t in waiting:
            t.wait = _plain_barrier_wait(t)
        self._check_barrier_agreement(block, waiting)

    def _check_barrier_agreement(self, block: Block, waiting: list[SimThread]) -> None:
        where = f"in kernel '{self._kernel_name}', block {tuple(block.blockIdx)}"
        by_site: dict = {}
        for t in waiting:
            by_site.setdefault(t.wait[1], []).append(t)
        if len(by_site) > 1:
            (site_a, a), (site_b, b) = list(by_site.items())[:2]
            raise BarrierDivergenceError(
                f"{where}: {describe_threads(a)} wait at the barrier at {describe_site(site_a)} while "
                f"{describe_threads(b)} wait at a different barrier at {describe_site(site_b)}; every thread of a "
                "block must reach the same syncthreads() call"
            )
        exited = [t for t in block.threads if t.finished]
        if exited:
            raise BarrierDivergenceError(
                f"{where}: {describe_threads(waiting)} wait at the barrier at {describe_site(waiting[0].wait[1])} "
                f"but {describe_threads(exited)} already exited the kernel; a barrier must be reached by every "
                "thread of the block (on the GPU this hangs or silently misbehaves)"
            )

    def _complete_warp_collectives(self, at_warp_intrinsic: list[SimThread]) -> list[SimThread]:
        """Complete every warp intrinsic whose participating lanes (its mask, less exited lanes) have all arrived."""
        by_warp: dict[Warp, list[SimThread]] = {}
        for t in at_warp_intrinsic:
            by_warp.setdefault(t.warp, []).append(t)
        released: list[SimThread] = []
        for warp, waiting in by_warp.items():
            arrived = set(waiting)
            while waiting:
                first = waiting[0]
                _, site, kind, mask, _ = first.wait
                if kind == "activemask":
                    # the lanes that reach this activemask() together: there is no mask to wait for
                    group = [t for t in waiting if t.wait[2] == "activemask" and t.wait[1] == site]
                elif kind.startswith(WHOLE_WARP_PREFIXES):
                    group = warp.lanes
                    self._check_whole_warp_alive(warp, first)
                    if not arrived.issuperset(group):
                        waiting = [t for t in waiting if not t.wait[2].startswith(WHOLE_WARP_PREFIXES)]
                        continue
                    self._check_same_intrinsic(warp, group)
                    self._check_same_site(warp, group)
                else:
                    mask |= 1 << first.lane
                    group = [t for t in warp.lanes if mask >> t.lane & 1 and not t.finished]
                    if not arrived.issuperset(group):
                        waiting = [t for t in waiting if t.wait[3] != first.wait[3]]
                        continue
                    self._check_same_intrinsic(warp, group)
                    if kind.startswith("shfl_") and self._check_barriers:
                        self._check_shuffle_sources(warp, group, mask)
                complete = COLLECTIVES.get(kind) or whole_warp_collective(kind)
                results = complete(group, [t.wait[4] for t in group])
                if kind == "syncwarp":
                    warp.syncs += 1
                for t, result in zip(group, results):
                    t.resume = result
                released += group
                done = set(group)
                waiting = [t for t in waiting if t not in done]
        return released

    def _check_same_intrinsic(self, warp: Warp, group: list[SimThread]) -> None:
        kinds = {t.wait[2] for t in group}
        if len(kinds) > 1:
            a = group[0]
            b = next(t for t in group if t.wait[2] != a.wait[2])
            raise BarrierDivergenceError(
                f"in kernel '{self._kernel_name}', block {tuple(a.blockIdx)}, warp {warp.index}: lanes meet at "
                f"different warp intrinsics: lane {a.lane} at {a.wait[2]} ({describe_site(a.wait[1])}) and lane "
                f"{b.lane} at {b.wait[2]} ({describe_site(b.wait[1])})"
            )

    def _check_shuffle_sources(self, warp: Warp, group: list[SimThread], mask: int) -> None:
        """No lane of a shuffle reads a lane that its mask names but that has exited the kernel (on a GPU the
        value read is undefined)."""
        for t in group:
            kind, (_, arg) = t.wait[2], t.wait[4]
            src = source_lane(kind[len("shfl_"):], t.lane, int(arg))
            if not (0 <= src < len(warp.lanes) and mask >> src & 1 and warp.lanes[src].finished):
                continue
            gone = warp.lanes[src]
            exited = f"at {describe_site(frame_site(gone.frame))}" if gone.frame is not None else "(line unknown)"
            raise BarrierDivergenceError(
                f"in kernel '{self._kernel_name}', block {tuple(t.blockIdx)}, warp {warp.index}: lane {t.lane} "
                f"(thread {tuple(t.threadIdx)}) reads lane {src}'s value in {kind}_sync at {describe_site(t.wait[1])}, "
                f"but lane {src} (thread {tuple(gone.threadIdx)}) already exited the kernel {exited}: on a GPU the "
                "value is undefined. Keep every lane the mask names running to the shuffle (guard the work, not the "
                "shuffle: give the lanes past the end a neutral value), or shuffle only among the lanes that remain "
                "(their mask: cuda.activemask())")

    def _check_whole_warp_alive(self, warp: Warp, first: SimThread) -> None:
        """An ``.aligned`` warp instruction (mma, ldmatrix) is executed by all 32 lanes together: a lane that has
        exited, or a warp of fewer than 32 threads, can never join it (on a GPU, undefined behaviour)."""
        kind, site = first.wait[2], first.wait[1]
        where = f"in kernel '{self._kernel_name}', block {tuple(first.blockIdx)}, warp {warp.index}"
        if len(warp.lanes) < WARP_SIZE:
            raise BarrierDivergenceError(
                f"{where}: {kind} at {describe_site(site)} is a warp-wide instruction, but this warp has only "
                f"{len(warp.lanes)} threads; every lane of a full warp of 32 must execute it (make the block's "
                "thread count a multiple of 32)")
        exited = [t for t in warp.lanes if t.finished]
        if exited:
            at = [t for t in warp.lanes if not t.finished and t.wait is not None and t.wait[2] == kind]
            raise BarrierDivergenceError(
                f"{where}: {describe_threads(at)} execute {kind} at {describe_site(site)}, but "
                f"{describe_threads(exited)} of the same warp already exited; the whole warp must execute it "
                "together (it is .sync.aligned: no lane may skip it)")

    def _check_same_site(self, warp: Warp, group: list[SimThread]) -> None:
        by_site: dict = {}
        for t in group:
            by_site.setdefault(t.wait[1], []).append(t)
        if len(by_site) > 1:
            (site_a, a), (site_b, b) = list(by_site.items())[:2]
            raise BarrierDivergenceError(
                f"in kernel '{self._kernel_name}', block {tuple(a[0].blockIdx)}, warp {warp.index}: the lanes of "
                f"one warp execute {a[0].wait[2]} at different lines: lanes {_lane_list(a)} at "
                f"{describe_site(site_a)} and lanes {_lane_list(b)} at {describe_site(site_b)}; the whole warp must "
                "execute the same instruction together (it is .sync.aligned)")

    def _deadlock(self, blocks: list[Block], spinning: list[SimThread], seconds: float | None) -> DeadlockError:
        several = len(blocks) > 1
        alive = [t for b in blocks for t in b.threads if not t.finished]
        parts = []
        if spinning:
            by_site: dict = {}
            for t in spinning:
                by_site.setdefault(t.wait[1], []).append(t)
            for site, ts in by_site.items():
                parts.append(f"{describe_threads(ts, blocks=several)} spin in the loop at {describe_site(site)}")
        waiting: dict = {}
        for t in alive:
            if t.wait is not None and t.wait[0] is not SPIN:
                what = {BARRIER: "syncthreads()", GRID: "the grid barrier", WARP: f"{t.wait[2]}"}.get(t.wait[0])
                waiting.setdefault((what, t.wait[1]), []).append(t)
        for (what, site), ts in waiting.items():
            parts.append(f"{describe_threads(ts, blocks=several)} wait at {what} at {describe_site(site)}")
        where = f"block {tuple(blocks[0].blockIdx)}" if not several else f"a cooperative launch of {len(blocks)} blocks"
        if seconds is not None:
            why = (f"for {seconds:.1f} s no thread finished, reached a barrier or was released from one: what the "
                   "spinning threads wait for can never happen (on a GPU this kernel hangs)")
            hint = (" If the loop is a long computation rather than a wait, raise the budget: "
                    "numbakern.sim.configure(deadlock_seconds=...) or NUMBAKERN_SIM_DEADLOCK_SECONDS.")
        else:
            why = "every live thread waits and nothing they wait for can complete (on a GPU this kernel hangs)"
            hint = ""
        return DeadlockError(f"in kernel '{self._kernel_name}', {where}: {why}:\n  " + "\n  ".join(parts) + hint)


def _plain_barrier_wait(t: SimThread) -> tuple:
    """What a thread that waits in ``Scheduler.syncthreads`` waits for: its site is its caller's position now."""
    return (BARRIER, frame_site(t.glet.gr_frame.f_back), None, None)


def _lane_list(threads) -> str:
    lanes = sorted(t.lane for t in threads)
    shown = ", ".join(map(str, lanes[:6]))
    return shown + (f" and {len(lanes) - 6} more" if len(lanes) > 6 else "")


def _naming_thread(e: Exception, t: SimThread) -> Exception:
    """The stock simulator's form: the same exception type, its message prefixed with tid=[..] ctaid=[..]."""
    prefix = f"tid={list(t.threadIdx)} ctaid={list(t.blockIdx)}"
    message = f"{prefix}: {e}" if str(e) else prefix
    try:
        named = type(e)(message)
    except Exception:  # noqa: BLE001 - an exception type whose constructor wants other arguments
        e.add_note(message)
        named = e
    return named.with_traceback(e.__traceback__)
