"""The cooperative block scheduler: every CUDA thread of a block is a greenlet, all in one OS thread.

A thread runs until it reaches a barrier (``syncthreads*``) or a warp intrinsic, then switches back to the
scheduler. When no thread can run, the scheduler first completes warp intrinsics whose participating lanes have
all arrived (warp lockstep), then releases a block barrier once every live thread waits at one. There is no
polling and no OS-thread hand-off, which is where the stock simulator spends its time.
"""

from __future__ import annotations

import functools
import random

from greenlet import greenlet
from numba.cuda.simulator.kernelapi import Dim3

from .errors import (
    BarrierDivergenceError,
    SimulationError,
    describe_site,
    describe_threads,
)
from .warp import COLLECTIVES, WARP_SIZE

BARRIER = "barrier"
WARP = "warp"
_FINISHED = object()  # what a worker greenlet switches to the scheduler with when its thread has returned


class Warp:
    __slots__ = ("index", "lanes", "syncs")

    def __init__(self, index: int):
        self.index = index
        self.lanes: list[SimThread] = []
        self.syncs = 0  # completed syncwarps: they order this warp's shared-memory accesses (race checker)


class SimThread:
    __slots__ = ("block", "blockIdx", "finished", "glet", "lane", "resume", "threadIdx", "wait", "warp")

    def __init__(self, threadIdx: Dim3, block: Block, linear: int):
        self.threadIdx = threadIdx
        self.blockIdx = block.blockIdx
        self.block = block
        self.lane = linear % WARP_SIZE
        self.warp = block.warps[linear // WARP_SIZE]
        self.warp.lanes.append(self)
        self.glet = None
        self.wait = None  # (BARRIER, site, op, value) or (WARP, site, kind, mask, operand) while blocked
        self.resume = None  # what the blocking call returns when the thread resumes
        self.finished = False


class Block:
    def __init__(self, blockIdx: Dim3, block_dim: tuple[int, int, int]):
        self.blockIdx = blockIdx
        bx, by, bz = block_dim
        count = bx * by * bz
        self.warps = [Warp(w) for w in range((count + WARP_SIZE - 1) // WARP_SIZE)]
        self.threads = [
            SimThread(Dim3(x, y, z), self, x + bx * (y + by * z))
            for z in range(bz) for y in range(by) for x in range(bx)
        ]
        self.epoch = 0  # completed block barriers
        self.barrier_hooks: list = []  # called at every barrier release (the race checker starts a new epoch)


class Scheduler:
    def __init__(self, module, kernel_name: str, check_barriers: bool, shuffle_seed: int | None):
        # the fake cuda module, whose threadIdx/laneid it sets at every switch (None until the engine has built it)
        self.current: SimThread | None = None
        self.module = module
        self._kernel_name = kernel_name
        self._check_barriers = check_barriers
        self.rng = random.Random(shuffle_seed) if shuffle_seed is not None else None
        self._hub = None
        self._idle_workers: list[greenlet] = []

    # -- called by the running thread (through the fake cuda module) ---------------------------------------------

    def barrier(self, site, op=None, value=None):
        self.current.wait = (BARRIER, site, op, value)
        return self._hub.switch()

    def warp_collective(self, site, kind: str, mask: int, operand):
        self.current.wait = (WARP, site, kind, int(mask) & 0xFFFFFFFF, operand)
        return self._hub.switch()

    # -- the scheduling loop --------------------------------------------------------------------------------------

    def run_block(self, block: Block, body) -> None:
        """Run ``body()`` once per thread of ``block``, switching threads at barriers and warp intrinsics."""
        self._hub = greenlet.getcurrent()
        self.module.blockIdx = block.blockIdx
        runnable = list(block.threads)
        module = self.module
        idle = self._idle_workers
        while runnable:
            if self.rng is not None:
                self.rng.shuffle(runnable)
            for t in runnable:
                module.threadIdx = t.threadIdx
                module.laneid = t.lane
                self.current = t
                value, t.resume, t.wait = t.resume, None, None
                if t.glet is None:
                    t.glet = idle.pop() if idle else greenlet(functools.partial(self._worker, body), self._hub)
                try:
                    signal = t.glet.switch(value)
                except SimulationError:
                    raise
                except Exception as e:  # noqa: BLE001 - any kernel error, re-raised naming its thread
                    raise _naming_thread(e, t) from None
                if signal is _FINISHED:
                    t.finished = True
                    idle.append(t.glet)
                    t.glet = None
            runnable = self._settle(block)

    def close(self, block: Block | None) -> None:
        """End the launch's greenlets: the idle workers, and (after an error) those of threads left waiting."""
        stranded = [t.glet for t in block.threads if t.glet is not None] if block is not None else []
        for worker in self._idle_workers + stranded:
            if not worker.dead:
                worker.throw()  # GreenletExit: unwinds the kernel frames it holds
        self._idle_workers.clear()

    def _worker(self, body, _start=None) -> None:
        # A greenlet runs one CUDA thread after another: starting a fresh greenlet costs several times a switch,
        # so a launch creates only as many as there are threads alive at once (one block's worth at most).
        while True:
            body()
            self._hub.switch(_FINISHED)

    def _settle(self, block: Block) -> list[SimThread]:
        """Nothing can run: complete what the waiting threads wait for; return the threads that may go on."""
        alive = [t for t in block.threads if not t.finished]
        if not alive:
            return []
        at_warp_intrinsic = [t for t in alive if t.wait[0] is WARP]
        if not at_warp_intrinsic:
            return self._release_barrier(block, alive)
        released = self._complete_warp_collectives(at_warp_intrinsic)
        if released:
            return released
        # lanes named in a warp intrinsic's mask wait at a block barrier instead: on a GPU, a hang
        at_barrier = [t for t in alive if t.wait[0] is BARRIER]
        raise BarrierDivergenceError(
            f"in kernel '{self._kernel_name}', block {tuple(block.blockIdx)}: {describe_threads(at_warp_intrinsic)} "
            f"wait at a warp intrinsic at {describe_site(at_warp_intrinsic[0].wait[1])} for lanes named in its mask, "
            f"but {describe_threads(at_barrier)} wait at syncthreads() at {describe_site(at_barrier[0].wait[1])}"
        )

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
                else:
                    mask |= 1 << first.lane
                    group = [t for t in warp.lanes if mask >> t.lane & 1 and not t.finished]
                    if not arrived.issuperset(group):
                        waiting = [t for t in waiting if t.wait[3] != first.wait[3]]
                        continue
                    self._check_same_intrinsic(warp, group)
                results = COLLECTIVES[kind](group, [t.wait[4] for t in group])
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
