"""Collecting a launch's counts from the simulator: every lane's accesses, grouped into warp-level instructions.

The simulator runs each CUDA thread as a greenlet, from barrier to barrier, so the 32 lanes of a warp do not run
in lockstep: lane 0 may be three loop iterations ahead of lane 1 when it makes an access. What the hardware counts
is per *warp-level instruction*, so the lanes' accesses must be put back together. The rule: **a lane's access at a
site in a pass of the loops around it is the same warp instruction as every other lane's of its warp at that site in
that pass.** A site is one bytecode instruction of the kernel (its code object and instruction offset: ``m[r, i]``
and ``n[i, c]`` on one line are two sites), and for a device function also the chain of call sites up to the
kernel, because each call of a device function is inlined on the GPU: its copies are different instructions. The
pass is which pass of each enclosing loop the lane is in, the device function's loops inside its caller's: under
structured control flow a warp runs a loop's passes together, so lanes that skip an ``if`` take no part in its
instructions in that pass (fewer active lanes), and a lane that leaves a loop early (its condition, a ``break``) has
no later pass. It holds whatever order the scheduler runs the threads in, so profiling needs no scheduling of its
own.

The pass comes from the rewritten kernel (``numbakern.sim.typed``): each of its loops calls ``typed.LOOP_HOOK`` at
the start of each pass and when it ends, which the profiler binds to ``Recorder.loop_hook``; a thread's pass is an id
of (the pass it was in when the loop began, the loop, the pass's number), the same for every lane in the same passes.
A device function with loops leaves its caller in the pass it was called in, even when it returns from inside one.
Several accesses of a lane at a site in one pass (an instruction's model that makes several) pair k-th with k-th.
So do the accesses in loops with no hook: those of a kernel run untyped, and of a function whose control flow
Python's statements cannot express, which runs as a loop over its blocks; there the k-th rule alone pairs the lanes,
with its blind spot (an access some lanes skip in some passes and not in others).

What a lane accesses is seen by the array proxies the simulator hands kernels (``ProfiledArray``: every element
read, write and atomic, with its address). Some instructions are carried out by the simulator's models of declared
instructions (``numbakern.intrinsics``: ``vload4``/``vstore4``, ``ldmatrix``, ``cp.async``) element by element: the
elements one call of the instruction touches contiguously (at most 16 bytes) are one access of that width, at the
kernel's line that called it, named by the instruction's ``Op.instruction``. ``cp.async`` moves its data when a
later wait lets it land, so it is counted when issued, as the model reports it
(``numbakern.sim.intrinsics.observe``), and the landing itself is not counted again.

Lines are counted by tracing the kernel's own frames (``sys.settrace``, line events): per lane, the loop pass of
each run of each of its instructions. A warp runs an instruction once in each pass some lane ran it in (as many times
as its busiest lane there, if more); the lanes over those runs give the active lanes per executed instruction. An
``if``/``while`` test's run in a pass is divergent when the warp's lanes go on to different lines.

Large grids are sampled (``plan``): counts are kept per block and scaled by the block's weight.
"""

from __future__ import annotations

import ast
import bisect
import dis
import linecache
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np
from greenlet import greenlet

from ..intrinsics.op import op_of_frame
from ..sim import config, engine, intrinsics, kerneltypes
from ..sim.checked_array import CheckedArray
from ..sim.fakecuda import LocalMemory
from ..sim.stockapi import Dim3
from ..sim.typed import LOOP_HOOK
from . import rules
from .model import KINDS, Branch, Line, Memory

_KERNEL, _SIM, _STAND_IN = 0, 1, 2
_MAX_ACCESS = 16  # bytes: the widest access one lane makes
_LD, _ST, _ATOM, _LDGSTS = range(4)  # offsets of a space's kinds in KINDS
_getframe = sys._getframe
#: a global array's addresses are its argument's own range (``engine.GLOBAL_RANGE_BITS``): ``address >> 48`` names it
ARRAY_BITS = engine.GLOBAL_RANGE_BITS


class ProfiledArray(CheckedArray):
    """A global or shared array that reports every element access (bounds-checked, like ``CheckedArray``).

    The commonest access, by the kernel's own code, is queued right here (one tuple); anything else goes through
    ``Recorder.access``, which finds the kernel's line."""

    __slots__ = ("_item", "_kind", "_rec")
    _INHERITED = CheckedArray._INHERITED + ("_item", "_kind", "_rec")

    def __init__(self, array, label, checks, recorder, on_write=None, on_atomic=None):
        super().__init__(array, label, checks)
        if label.kind == "global":
            recorder.arrays[label.base >> ARRAY_BITS] = label  # its accesses name it by their address range
        self._rec = recorder
        self._kind = 0 if label.kind == "global" else 4  # its space's first entry in KINDS
        self._item = array.itemsize
        self._on_write = on_write  # a device allocation's written-element mask goes on being kept
        self._on_atomic = on_atomic

    def _note(self, op: int, addr: int, frame) -> None:
        rec = self._rec
        if frame.f_code is rec.kernel_code:
            thread = rec.scheduler.current
            rec.events.append((thread, frame.f_lasti, self._kind + op, addr, self._item, rec.passes.get(thread, 0)))
        else:
            rec.access(frame, self._kind + op, addr, self._item)

    def __getitem__(self, idx):
        if type(idx) is int and 0 <= idx < self._len1d:
            addr = self._ptr + idx * self._stride0
        else:
            addr = None
            if type(idx) is tuple and len(idx) == 2:
                i, j = idx
                if type(i) is int and type(j) is int and 0 <= i < self._rows and 0 <= j < self._cols:
                    addr = self._ptr + i * self._stride0 + j * self._stride1
            if addr is None:
                addr = self._address(idx)
                if addr is None:
                    return self._view(idx)
        rec = self._rec
        frame = _getframe(1)
        if frame.f_code is rec.kernel_code:  # (``_note``, inlined: the commonest call of a profiled launch)
            thread = rec.scheduler.current
            rec.events.append((thread, frame.f_lasti, self._kind, addr, self._item, rec.passes.get(thread, 0)))
        else:
            rec.access(frame, self._kind, addr, self._item)
        return self._a[idx]

    def __setitem__(self, idx, value):
        if type(idx) is int and 0 <= idx < self._len1d:
            addr = self._ptr + idx * self._stride0
        else:
            addr = self._address(idx)
            if addr is None:
                super().__setitem__(idx, value)  # a slice: element by element, through this method
                return
        self._note(_ST, addr, _getframe(1))
        if self._on_write is not None:
            self._on_write(self, addr, idx)
        self._a[idx] = value

    def _atomic_target(self, idx):
        addr = self._address(idx)
        if addr is not None:
            self._note(_ATOM, addr, _getframe(1))
            if self._on_atomic is not None:
                self._on_atomic(self, addr, idx)
        return self._a


@dataclass
class Site:
    """One access site: where it is and what it does, and its counts so far."""

    file: str
    line: int
    kind: str  # model.KINDS
    instruction: str = ""
    memory: Memory = field(default_factory=Memory)
    strides: Counter = field(default_factory=Counter)


class Recorder:
    """Everything one profiled launch counts.

    While a block runs, element accesses are queued (``events``, ``slow_events``: thread, site, kind, address,
    bytes, the loop pass the thread is in; a global array is named by its address range) and each lane's line runs
    counted by the line tracer; when the block is done (``end_blocks``) the queues become warp instructions, counted
    by ``rules``, and the lanes' lines become warp runs."""

    def __init__(self, scheduler, kernel_codes: list, kernel_code):
        self.scheduler = scheduler
        self.kernel_code = kernel_code
        self._codes = {id(c): c for c in kernel_codes}  # (kept alive: their ids key what follows)
        self._roles: dict[int, int] = {}
        self._kept: list = []
        self.events: list = []  # the kernel's own accesses: (thread, offset, kind, address, bytes, pass)
        self.slow_events: list = []  # the others': (thread, site, kind, address, bytes, stand-in frame or None,
        #                               a cp.async's source address or -1, pass)
        # the loop pass each thread is in (``loop``): an id of ``_pass_keys``, whose entries are (the enclosing
        # loop's pass, the loop's number, the pass's number); 0 (the entry below): in no loop
        self.passes: dict = {}
        self._pass_keys: list[tuple[int, int, int]] = [(0, 0, -1)]
        self._pass_ids: dict[tuple[int, int, int], int] = {}
        self._steps: list[dict[int, int]] = [{}]  # per id: {the hook's argument: the id after it}
        self.arrays: dict[int, object] = {}  # global arrays' labels by address range (``ARRAY_BITS``)
        self.quiet = 0  # > 0 while a stand-in lands accesses already counted (cp.async)
        self.tracing = False  # whether the running block's lines are counted
        self._site_ids: dict[tuple, int] = {}
        self.sites: list[Site] = []
        # SimThread -> [{(code id, offset): the loop pass of each run}, last line key, its loop pass]
        self._threads: dict = {}
        self._outcomes: dict = {}  # SimThread -> {branch key: [(the loop pass of a run, the line key after it)]}
        self.lines: dict[tuple[int, int], list[float]] = defaultdict(lambda: [0.0, 0.0])  # [warp, lane runs]
        self.branches: dict[tuple[int, int], Branch] = {}
        self._branch_keys: set[tuple[int, int]] = set()
        for code in kernel_codes:
            self._note_branches(code)
        # per global array (its address range): [label, bitmaps of the sectors read and written, and the grid's
        # estimated number of each] (``_touch``)
        self.touched: dict[int, list] = {}

    # -- the hooks -------------------------------------------------------------------------------------------------

    def access(self, frame, kind: int, addr: int, nbytes: int, source: int = -1) -> None:
        """An access from ``frame``, which is not the kernel's own: a device function's, a stand-in's (one
        instruction of several element accesses), the simulator's (``cuda.atomic``): queued at the kernel's site.
        ``source``: the global address a ``cp.async``'s shared side copies from (-1: none)."""
        if self.quiet:
            return
        roles = self._roles
        role = roles.get(id(frame.f_code))
        if role is None:
            role = self._role(frame.f_code)
        stand_in = None
        while role:
            if role == _STAND_IN:
                stand_in = frame
            frame = frame.f_back
            if frame is None:
                return
            role = roles.get(id(frame.f_code))
            if role is None:
                role = self._role(frame.f_code)
        where = frame.f_lasti if frame.f_code is self.kernel_code else self._chain(frame)
        thread = self.scheduler.current
        events = self.slow_events
        if stand_in is not None and events:
            # the stand-in's previous access, contiguous with this one: one wider access of one instruction
            last = events[-1]
            if last[5] is stand_in and last[0] is thread and last[1] == where and last[2] == kind and \
                    last[3] + last[4] == addr and last[4] + nbytes <= _MAX_ACCESS:
                events[-1] = last[:4] + (last[4] + nbytes,) + last[5:]
                return
        events.append((thread, where, kind, addr, nbytes, stand_in, source, self.passes.get(thread, 0)))

    def issue(self, instruction: str, accesses, frame) -> None:
        """A stand-in issues ``instruction`` (``intrinsics.observe``): its ``(array, index, bytes, op)`` accesses,
        for the running lane (an index of None with 0 bytes: the lane takes part and moves nothing)."""
        source = -1
        for array, index, nbytes, op in accesses:
            if isinstance(array, ProfiledArray):
                addr = array._address(index) if index is not None else array._ptr
                # the shared side is written one global line of the sources at a time (rules.shared_wavefronts)
                self.access(frame, array._kind + _LDGSTS, addr, nbytes, source if op == "st" else -1)
                if op == "ld" and index is not None:
                    source = addr

    def land(self, landing: bool) -> None:
        """A stand-in starts (``True``) or ends carrying out accesses it reported when it issued them."""
        self.quiet += 1 if landing else -1

    # -- loop passes -----------------------------------------------------------------------------------------------

    def loop_hook(self):
        """The rewritten code's ``typed.LOOP_HOOK``: ``(n)`` at the start of each pass of loop ``n``, ``(-n)`` when
        it ends. A thread's pass is named by the pass of the loop around it and the number of this one, so that
        lanes in the same pass of every loop around them share the id; each id's successors are kept
        (``_steps``), so that a lane follows the others' steps with two lookups."""
        passes, steps, scheduler, step = self.passes, self._steps, self.scheduler, self._step

        def loop(number: int) -> None:
            thread = scheduler.current
            now = passes.get(thread, 0)
            found = steps[now].get(number)
            passes[thread] = found if found is not None else step(now, number)

        return loop

    def _step(self, now: int, number: int) -> int:
        """The pass a lane in pass ``now`` is in after ``loop(number)``."""
        outer, inside, count = self._pass_keys[now]
        if number < 0:
            found = outer if inside == -number else now  # (a loop that ran no pass leaves the lane where it is)
        else:
            key = (outer, number, count + 1) if inside == number else (now, number, 0)
            found = self._pass_ids.get(key)
            if found is None:
                found = self._pass_ids[key] = len(self._pass_keys)
                self._pass_keys.append(key)
                self._steps.append({})
        self._steps[now][number] = found
        return found

    # -- tracing lines ---------------------------------------------------------------------------------------------

    def trace_calls(self, frame, event, arg):
        """The global trace function while a traced thread starts or calls a device function: that frame gets the
        line tracer, and every later call goes to ``getattr`` instead (``getattr(frame, "call", None)`` is None: a
        C function, where this one would cost a Python call for each of the kernel's accesses)."""
        if id(frame.f_code) in self._codes:
            sys.settrace(getattr)
            return self._trace_lines
        return None

    def traced_call(self, fn):
        """``fn`` (a device function) called with its frame traced, in the blocks whose lines are counted; a
        function with loops leaves its caller in the pass it was called in (a ``return`` inside a loop ends none)."""
        tracer = self.trace_calls
        if LOOP_HOOK not in getattr(getattr(fn, "__code__", None), "co_names", ()):

            def call(*args, **kwargs):
                if self.tracing:
                    sys.settrace(tracer)
                return fn(*args, **kwargs)

            return call
        passes, scheduler = self.passes, self.scheduler

        def call_with_loops(*args, **kwargs):
            if self.tracing:
                sys.settrace(tracer)
            thread = scheduler.current
            now = passes.get(thread, 0)
            try:
                return fn(*args, **kwargs)
            finally:
                passes[thread] = now

        return call_with_loops

    def _trace_lines(self, frame, event, arg):
        if event == "line":
            thread = self.scheduler.current
            state = self._threads.get(thread)
            if state is None:
                state = self._threads[thread] = [{}, None, 0]
            key = (id(frame.f_code), frame.f_lasti)
            in_pass = self.passes.get(thread, 0)
            runs = state[0].get(key)
            if runs is None:
                state[0][key] = [in_pass]
            else:
                runs.append(in_pass)
            prev = state[1]
            if prev in self._branch_keys:
                self._outcomes.setdefault(thread, {}).setdefault(prev, []).append((state[2], key))
            state[1], state[2] = key, in_pass
        return self._trace_lines

    def _note_branches(self, code) -> None:
        """The instructions of ``code`` on the line of an ``if``/``while`` test (in its source file)."""
        try:
            tree = ast.parse("".join(linecache.getlines(code.co_filename)))
        except (SyntaxError, ValueError):
            return
        tests = {n.test.lineno for n in ast.walk(tree) if isinstance(n, (ast.If, ast.While))}
        for offset, line in _offset_lines(code).items():
            if line in tests:
                self._branch_keys.add((id(code), offset))

    # -- a block is done ---------------------------------------------------------------------------------------------

    def end_blocks(self, blocks, weight: float, line_weight: float) -> None:
        """Count the finished blocks' warp instructions scaled by ``weight`` and their lines (if traced) by
        ``line_weight``, and forget their lanes."""
        fast, slow = self.events, self.slow_events
        self.events, self.slow_events = [], []
        if fast or slow:
            self._count_events(fast, slow, weight)
        for block in blocks:
            for warp in block.warps:
                lanes = [t for t in warp.lanes if t in self._threads]
                if lanes:
                    self._count_lines(lanes, line_weight)
                for t in warp.lanes:
                    self._threads.pop(t, None)
                    self._outcomes.pop(t, None)
                    self.passes.pop(t, None)

    def _count_events(self, fast: list, slow: list, weight: float) -> None:
        """The queued accesses as warp instructions: a lane's access at a site in a loop pass joins those of every
        lane of its warp at that site in that pass; several there (an instruction's model may make several), the
        k-th the k-th (each queue is in each thread's order, and a site's accesses are all in one queue)."""
        threads, sids, addrs, nbytes, sources, passes = [], [], [], [], [], []
        if fast:
            f_threads, offsets, kinds, f_addrs, f_bytes, f_passes = zip(*fast)
            keys = np.array(offsets, np.int64) * len(KINDS) + np.array(kinds, np.int64)
            found, inverse = np.unique(keys, return_inverse=True)
            site_of = np.array([self._site((self._start(self.kernel_code, int(k) // len(KINDS)),
                                            int(k) % len(KINDS)), None) for k in found], np.int64)
            threads.append(f_threads)
            sids.append(site_of[inverse.reshape(-1)])
            addrs.append(np.array(f_addrs, np.int64))
            nbytes.append(np.array(f_bytes, np.int64))
            sources.append(np.full(len(f_addrs), -1, np.int64))
            passes.append(np.array(f_passes, np.int64))
        if slow:
            s_threads, wheres, kinds, s_addrs, s_bytes, stand_ins, s_sources, s_passes = zip(*slow)
            threads.append(s_threads)
            sids.append(np.array([self._site((self._where(w), k), s) for w, k, s in zip(wheres, kinds, stand_ins)],
                                 np.int64))
            addrs.append(np.array(s_addrs, np.int64))
            nbytes.append(np.array(s_bytes, np.int64))
            sources.append(np.array(s_sources, np.int64))
            passes.append(np.array(s_passes, np.int64))
        all_threads = [t for part in threads for t in part]
        ids, thread = np.unique(np.fromiter(map(id, all_threads), np.int64, len(all_threads)), return_inverse=True)
        thread = thread.reshape(-1)
        objects = {id(t): t for t in dict.fromkeys(all_threads)}
        lane_of = np.array([objects[i].lane for i in ids.tolist()], np.int64)
        warp_ids = {}
        warp_of = np.array([warp_ids.setdefault(id(objects[i].warp), len(warp_ids)) for i in ids.tolist()], np.int64)
        sid = np.concatenate(sids)
        # a site in a loop pass
        _, at = np.unique(sid * len(self._pass_keys) + np.concatenate(passes), return_inverse=True)
        at = at.reshape(-1)
        # k: how many earlier accesses of the same thread at the same site in the same pass
        order = np.lexsort((np.arange(len(at)), at, thread))
        t_sorted, a_sorted = thread[order], at[order]
        new = np.ones(len(order), bool)
        new[1:] = (t_sorted[1:] != t_sorted[:-1]) | (a_sorted[1:] != a_sorted[:-1])
        starts = np.maximum.accumulate(np.where(new, np.arange(len(order)), 0))
        k = np.empty(len(order), np.int64)
        k[order] = np.arange(len(order)) - starts
        # the instruction: (warp, site and pass, k)
        places, runs = int(at.max()) + 1, int(k.max()) + 1
        _, group = np.unique((warp_of[thread] * places + at) * runs + k, return_inverse=True)
        group = group.reshape(-1)
        site = np.zeros(int(group.max()) + 1, np.int64)
        site[group] = sid
        source = np.concatenate(sources)
        a = rules.Accesses(group, lane_of[thread], np.concatenate(addrs), np.concatenate(nbytes), len(site),
                           source if np.any(source >= 0) else None)
        self._count_groups(site, a, weight)

    def _start(self, code, offset: int) -> int:
        """The start of the instruction at ``offset``: a traced frame's ``f_lasti`` is the last of an instruction's
        inline caches, an untraced one's the instruction itself."""
        starts = _tables(code)[2]
        return starts[bisect.bisect_right(starts, offset) - 1]

    def _where(self, where):
        if isinstance(where, int):
            return self._start(self.kernel_code, where)
        return tuple((c, self._start(self._codes[c], offset)) for c, offset in where)

    def _site(self, key: tuple, stand_in) -> int:
        sid = self._site_ids.get(key)
        if sid is None:
            sid = self._new_site(key[0], key[1], stand_in)
        return sid

    def _count_groups(self, site: np.ndarray, a: rules.Accesses, weight: float) -> None:
        """Add the instructions' counts (``a``; ``site``: each instruction's site) to their sites'."""
        n = len(self.sites)
        kinds = np.array([KINDS.index(s.kind) for s in self.sites], np.int64)[site]
        is_global = kinds < 4
        shared, ideal_shared = rules.shared_wavefronts(a)
        per_group = {
            "requests": np.ones(a.count),
            "accesses": np.bincount(a.group, minlength=a.count),
            "bytes": np.bincount(a.group, weights=a.nbytes, minlength=a.count),
            "sectors": np.where(is_global, rules.sectors(a), 0),
            "ideal_sectors": np.where(is_global, rules.ideal_sectors(a), 0),
            "wavefronts": np.where(is_global, 0, shared),
            "ideal_wavefronts": np.where(is_global, 0, ideal_shared),
        }
        atomic = kinds % 4 == _ATOM
        contention = np.where(atomic, rules.contention(a), 0)
        per_group["serialized"] = contention
        totals = {name: np.bincount(site, weights=v, minlength=n) for name, v in per_group.items()}
        widest = np.zeros(n, np.int64)
        np.maximum.at(widest, site, rules.width(a))
        worst = np.zeros(n, np.int64)
        np.maximum.at(worst, site, contention)
        for sid in np.unique(site).tolist():
            m = self.sites[sid].memory
            for name, values in totals.items():
                setattr(m, name, getattr(m, name) + weight * float(values[sid]))
            m.width = max(m.width, int(widest[sid]))
            m.max_contention = max(m.max_contention, int(worst[sid]))
        pair_group, stride = rules.lane_strides(a)
        if len(stride):
            found, counts = np.unique(np.stack([site[pair_group], stride]), axis=1, return_counts=True)
            for (sid, step), count in zip(found.T.tolist(), counts.tolist()):
                self.sites[sid].strides[step] += weight * count
        self._touch(a, is_global[a.group], kinds[a.group] % 4, weight)

    def _touch(self, a: rules.Accesses, is_global: np.ndarray, ops: np.ndarray, weight: float) -> None:
        """Mark the sectors of global arrays the rows read and wrote, and add those no block before touched, scaled
        by the block's weight: over blocks that touch their own data (a copy, a stencil) that estimates the whole
        grid's; over blocks that share data (a matmul's rows of A) it over-estimates, and the total is capped at each
        array's size."""
        row, sector = rules.sector_rows(a)
        keep = is_global[row]
        row, sector = row[keep], sector[keep]
        array_of = a.addr[row] >> ARRAY_BITS
        for number in np.unique(array_of).tolist():
            label = self.arrays[number]
            picked = array_of == number
            found = self.touched.get(number)
            if found is None:
                size = label.span // rules.SECTOR + 2
                found = self.touched[number] = [label, np.zeros(size, bool), np.zeros(size, bool), 0.0, 0.0]
            relative = sector[picked] - label.base // rules.SECTOR
            op = ops[row[picked]]
            for side, ops_of_side in ((1, (_LD, _LDGSTS, _ATOM)), (2, (_ST, _ATOM))):
                marked = np.unique(relative[np.isin(op, ops_of_side)])
                bitmap = found[side]
                found[side + 2] += weight * int(np.count_nonzero(~bitmap[marked]))
                bitmap[marked] = True

    def _count_lines(self, lanes: list, weight: float) -> None:
        """A warp's line runs: per instruction and loop pass, as many as its busiest lane's (mostly one: a line runs
        once a pass), and over the lanes the sum of theirs; an ``if``/``while`` test's runs are divergent when the
        lanes that run it in a pass (the k-th time in it, if more) go on to different lines."""
        passes_of: dict = {}
        for t in lanes:
            for key, passes in self._threads[t][0].items():
                passes_of.setdefault(key, []).append(passes)
        for key, per_lane in passes_of.items():
            first = per_lane[0]
            if per_lane.count(first) == len(per_lane):  # every lane ran it in the same passes (most lines)
                warp_runs = len(first)
            else:
                runs = set().union(*per_lane)
                if any(len(p) > len(runs) or len(set(p)) < len(p) for p in per_lane):
                    # a lane that ran it more than once in a pass (a device function's line, called twice there)
                    busiest: Counter = Counter()
                    for p in per_lane:
                        busiest |= Counter(p)
                    warp_runs = sum(busiest.values())
                else:
                    warp_runs = len(runs)
            row = self.lines[key]
            row[0] += weight * warp_runs
            row[1] += weight * sum(map(len, per_lane))
        taken: dict = {}  # (test, loop pass, k) -> where the lanes went
        lines: dict = {}  # line key -> (file, line)
        for t in lanes:
            _, last, last_pass = self._threads[t]
            outcomes = self._outcomes.get(t, {})
            for key, went in outcomes.items():
                k: dict = {}
                for in_pass, after in went:
                    kth = k.get(in_pass, 0)
                    k[in_pass] = kth + 1
                    where = lines.get(after)
                    if where is None:
                        where = lines[after] = self._line_of(after)
                    taken.setdefault((key, in_pass, kth), set()).add(where)
            if last in self._branch_keys:  # the lane ran the test and then ended the thread: its own way
                k_last = sum(1 for in_pass, _ in outcomes.get(last, ()) if in_pass == last_pass)
                taken.setdefault((last, last_pass, k_last), set()).add("end")
        for (key, _, _), where in taken.items():
            branch = self.branches.get(key)
            if branch is None:
                branch = self.branches[key] = Branch()
            branch.executions += weight
            if len(where) > 1:
                branch.divergent += weight

    # -- bookkeeping -----------------------------------------------------------------------------------------------

    def _role(self, code) -> int:
        if id(code) in self._codes:
            role = _KERNEL
        elif code.co_filename in intrinsics.HELPER_FILES:  # an instruction's function, the models, the seam
            role = _STAND_IN
        else:
            role = _SIM  # the simulator's own frames, numpy's: up to the kernel's line
        self._kept.append(code)
        self._roles[id(code)] = role
        return role

    def _chain(self, frame) -> tuple:
        """A device function's site: its instruction and the call sites up to the kernel."""
        parts = []
        while frame is not None:
            code = frame.f_code
            if id(code) in self._codes:
                parts.append((id(code), frame.f_lasti))
                if code is self.kernel_code:
                    break
            frame = frame.f_back
        return tuple(parts)

    def _line_of(self, key: tuple[int, int]) -> tuple[str, int]:
        code = self._codes[key[0]]
        return code.co_filename, _offset_lines(code).get(key[1], code.co_firstlineno)

    def _new_site(self, where, kind: int, stand_in) -> int:
        sid = len(self.sites)
        self._site_ids[(where, kind)] = sid
        key = (id(self.kernel_code), where) if isinstance(where, int) else where[0]
        instruction = ""
        if stand_in is not None:
            op = op_of_frame(stand_in)  # the outermost stand-in frame: the instruction's function
            instruction = op.instruction if op is not None else stand_in.f_code.co_name
        if kind % 4 == _LDGSTS:
            instruction = "cp.async"
        self.sites.append(Site(*self._line_of(key), KINDS[kind], instruction))
        return sid

    # -- the result ------------------------------------------------------------------------------------------------

    def line_runs(self) -> dict[tuple[str, int], tuple[float, float, float]]:
        """``(file, line) -> (warp runs, lane runs, lane runs of its first instruction)``. A line's instructions may
        run different numbers of times (a loop header's, a line whose expression the rebuilt code splits): its runs
        are its most frequent one's; the first instruction's are the runs of what a ``for`` header evaluates once
        per entry into the loop."""
        out: dict[tuple[str, int], list] = {}
        for key, (warp_runs, lane_runs) in sorted(self.lines.items()):
            code = self._codes[key[0]]
            where = self._line_of(key)
            if where[1] == code.co_firstlineno or key[1] in _moves(code):
                continue  # the rebuilt code's own bookkeeping (placed at the function's line), a variable's move
            best = out.get(where)
            if best is None:
                out[where] = [warp_runs, lane_runs, lane_runs]
            else:
                best[0], best[1] = max(best[0], warp_runs), max(best[1], lane_runs)
        return {k: tuple(v) for k, v in out.items()}

    def line_rows(self, static_flops: dict) -> dict[tuple[str, int], Line]:
        """A row per line that ran or accessed memory; ``static_flops``: ``flops.line_flops``."""
        rows: dict[tuple[str, int], Line] = {}

        def row(key) -> Line:
            found = rows.get(key)
            if found is None:
                found = rows[key] = Line(key[0], key[1], linecache.getline(key[0], key[1]).strip())
            return found

        runs = self.line_runs()
        for key, (warp_runs, lane_runs, _) in runs.items():
            r = row(key)
            r.executions, r.thread_executions = warp_runs, lane_runs
        for site in self.sites:
            memory = row((site.file, site.line)).memory.setdefault(site.kind, Memory())
            site.memory.instruction = site.instruction
            if site.strides:
                site.memory.stride = int(site.strides.most_common(1)[0][0])
            memory.add(site.memory)
        for key, branch in self.branches.items():
            # a test's line has several instructions that a line event may start at: its runs are the most
            # frequent one's, its divergent runs those of the one the lanes leave the line from
            r = row(self._line_of(key))
            if r.branch is None:
                r.branch = Branch(branch.executions, branch.divergent)
            else:
                r.branch.executions = max(r.branch.executions, branch.executions)
                r.branch.divergent = max(r.branch.divergent, branch.divergent)
        for key, per_run in static_flops.items():
            if key in rows:
                flops = {t: n * _times(runs, key, per_entry) for t, (n, per_entry) in per_run.items()}
                rows[key].flops = {t: v for t, v in flops.items() if v}
        return rows


def _times(runs: dict, key, per_entry: bool) -> float:
    """How many times the operations of a line ran, summed over lanes: once per run of the line, or (``per_entry``:
    a ``for`` header's iterable) once per entry into the loop."""
    found = runs.get(key, (0.0, 0.0, 0.0))
    return found[2] if per_entry else found[1]


_LINE_TABLES: dict[int, tuple] = {}
#: instructions that only move a variable: the rebuilt code places a variable's loads (and some stores) at the line
#: that defined it, not at the line that uses it, so a line event at a run of nothing but these says nothing about
#: that line's own runs
_VARIABLE_MOVES = {"LOAD_FAST", "STORE_FAST", "LOAD_DEREF", "STORE_DEREF", "LOAD_CLOSURE", "LOAD_FAST_CHECK",
                   "LOAD_FAST_AND_CLEAR", "NOP"}


def _offset_lines(code) -> dict[int, int]:
    """``{instruction offset: source line}`` of ``code``."""
    return _tables(code)[0]



def _moves(code) -> set[int]:
    """The offsets of ``code``'s instructions in runs (consecutive instructions of one line) that only move
    variables."""
    return _tables(code)[1]


def _tables(code):
    found = _LINE_TABLES.get(id(code))
    if found is None or found[0] is not code:
        table = {}
        for start, end, line in code.co_lines():
            if line is not None:
                for offset in range(start, end, 2):
                    table[offset] = line
        moves: set[int] = set()
        run: list = []
        for ins in [*dis.get_instructions(code), None]:
            if run and (ins is None or table.get(ins.offset) != table.get(run[0].offset)):
                if all(i.opname in _VARIABLE_MOVES for i in run):
                    moves.update(i.offset for i in run)
                run = []
            if ins is not None:
                run.append(ins)
        starts = [ins.offset for ins in dis.get_instructions(code)]
        found = _LINE_TABLES[id(code)] = (code, table, moves, starts)
    return found[1], found[2], found[3]


# ---------------------------------------------------------------------------------------------------------------
# the launch


class ProfiledLaunch(engine.Launch):
    """A launch on the simulator's engine whose arrays report to a ``Recorder``, whose lines are traced, and whose
    blocks may be a sample of the grid (``plan``: linear block index -> weight)."""

    rolled = False  # an expanded kernel's loops as the GPU runs them: their passes are what is counted and sampled

    def __init__(self, kernel, plan_budget: int | None):
        settings = config.current()
        # bounds checked (an address outside an array is no address); no race or initialisation bookkeeping
        settings = config.Settings(frozenset({"bounds"}), None, settings.allow_negative_indices, settings.typing,
                                   settings.deadlock_seconds)
        super().__init__(kernel, settings)
        self.module._local = LocalMemory(None)  # register arrays: plain numpy (nothing of theirs is counted)
        self.budget = plan_budget
        self.recorder: Recorder | None = None
        self.plan: dict[int, float] = {}
        self.how = "all"
        self.typed = None
        self.argtypes = None

    def run(self, args) -> None:
        code = self.fn.__code__
        names = code.co_varnames[: code.co_argcount]
        names = [names[i] if i < len(names) else f"arg{i}" for i in range(len(args))]
        typing = self.settings.typing and self.adapter.can_type(self.kernel)
        typed, self.argtypes = (kerneltypes.type_launch(self.kernel, args, names, self.rolled) if typing
                                else (None, None))
        self.typed = typed
        functions = [f.function for f in typed.functions] if typed is not None else [self.fn]
        codes: list = []
        for fn in functions:
            _codes_of(fn.__code__, codes)
        self.recorder = Recorder(self.scheduler, codes, functions[0].__code__)
        cooperative = typed.cooperative if typed is not None else engine._uses_grid_sync(self.fn)
        self.plan, self.how = plan(self.grid_dim, None if cooperative else self.budget)
        recorder = self.recorder
        outer = super()

        def run_here():
            before = sys.gettrace()
            previous = intrinsics.install_observer(recorder)
            hooked = _hook_functions(typed, recorder) if typed is not None else []
            try:
                outer.run(args)
            finally:
                for namespace, name, value in hooked:
                    namespace[name] = value
                intrinsics.install_observer(previous)
                sys.settrace(before)

        # In a greenlet of its own, whose worker greenlets (one per running thread) end with it: each thread turns
        # the line tracer on where it starts (``_run``), which leaves its greenlet in tracing mode; the scheduler,
        # which runs in this greenlet, stays untraced.
        greenlet(run_here).switch()

    def _kernel_arg(self, name, arg, retr, numba_type):
        value = super()._kernel_arg(name, arg, retr, numba_type)
        if isinstance(value, CheckedArray):
            return ProfiledArray(value._a, value._label, self.memory_checks, self.recorder, value._on_write,
                                 value._on_atomic)
        return value

    def _shared_wrapper(self, block):
        def wrap(raw, label):
            return ProfiledArray(raw, label, self.memory_checks, self.recorder)

        return wrap

    def _block_order(self):
        gx, gy, _ = self.grid_dim
        for linear in sorted(self.plan):
            yield linear, Dim3(linear % gx, linear // gx % gy, linear // (gx * gy))

    def _run(self, blocks, body) -> None:
        weight, line_weight = self.plan[blocks[0].linear] if len(blocks) == 1 else (1.0, 1.0)
        tracer = self.recorder.trace_calls if line_weight else None
        self.recorder.tracing = bool(line_weight)

        def body_here():
            sys.settrace(tracer)  # each thread's greenlet: traced in the blocks whose lines are counted
            return body()

        super()._run(blocks, body_here)
        self.recorder.end_blocks(blocks, weight, line_weight)


def _hook_functions(typed, recorder: Recorder) -> list:
    """Have the rewritten functions tell ``recorder`` their loops' passes (``Recorder.loop_hook``) and call their
    device functions through ``Recorder.traced_call`` (their namespaces are the typed kernel's, kept across
    launches: the ``(namespace, name, value)`` to put back come back)."""
    saved = []
    loop = recorder.loop_hook()
    for f in typed.functions:
        for name, value in list(f.globals.items()):
            if name.startswith(DEVICE_PREFIX) and callable(value):
                saved.append((f.globals, name, value))
                f.globals[name] = recorder.traced_call(value)
        saved.append((f.globals, LOOP_HOOK, f.globals[LOOP_HOOK]))
        f.globals[LOOP_HOOK] = loop
    return saved


#: the names under which a rewritten function finds the device functions it calls (``numbakern.sim.typed``)
DEVICE_PREFIX = "__nk_device_"


def _codes_of(code, found: list) -> None:
    found.append(code)
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            _codes_of(const, found)


def plan(grid_dim, budget: int | None) -> tuple[dict[int, tuple[float, float]], str]:
    """The blocks to run, ``{linear index: (weight, line weight)}``, and how they were chosen.

    With ``budget`` None or a grid of at most ``budget`` blocks: all of them, weight 1. Otherwise a stratified
    sample: the grid falls into up to eight strata by whether a block is the last in x, in y, in z (the blocks
    whose tiles hang over the edges of the data, which do less), and each stratum gets a share of the budget
    proportional to its size (at least one block), spread evenly over it (evenly spaced in linear order; in a
    stratum of several rows each pick shifted one more column along x); a block's weight is its stratum's size
    over the blocks drawn from it, so weighted sums estimate the whole grid's.

    Lines are traced in one block per stratum (the middle one of those it runs; tracing costs more than all the
    rest of a block's profile), their counts weighted by the stratum's size (0: not traced).
    """
    gx, gy, gz = grid_dim
    total = gx * gy * gz
    strata = []
    for ex in (False, True):
        for ey in (False, True):
            for ez in (False, True):
                ranges = [_range(g, e) for g, e in ((gx, ex), (gy, ey), (gz, ez))]
                size = len(ranges[0]) * len(ranges[1]) * len(ranges[2])
                if size:
                    strata.append((ranges, size))
    sampled = budget is not None and total > budget
    chosen: dict[int, tuple[float, float]] = {}
    for ranges, size in strata:
        take = min(size, max(1, round(budget * size / total))) if sampled else size
        rx, ry, rz = ranges
        picked: set[tuple[int, int]] = set()
        for j in range(take):
            i = (2 * j + 1) * size // (2 * take) if sampled else j
            row, col = divmod(i, len(rx))
            # evenly spaced in linear order, and (in a stratum of several rows) each pick one column further along
            # x: a spacing that is a multiple of the grid's width would pick one column only (and tiles whose
            # alignment varies along x would be misjudged); a column already picked in that row moves on
            shift = j if sampled and len(rx) < size else 0
            for extra in range(len(rx)):
                col_here = (col + shift + extra) % len(rx)
                if (row, col_here) not in picked:
                    break
            picked.add((row, col_here))
            x, y, z = rx[col_here], ry[row % len(ry)], rz[row // len(ry)]
            chosen[x + gx * (y + gy * z)] = (size / take, float(size) if j == take // 2 else 0.0)
    how = "all" if not sampled else (
        f"{len(chosen)} of {total} blocks, stratified by the grid's last row/column/layer, evenly spaced within "
        "each stratum, counts scaled by stratum size")
    return chosen, how


def _range(g: int, edge: bool) -> range:
    return range(g - 1, g) if edge else range(0, g - 1)
