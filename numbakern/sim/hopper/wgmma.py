"""Warpgroup MMA in the simulator: ``wgmma.mma_async`` issued by the 128 threads of a warpgroup, grouped by
``wgmma_commit``, retired by ``wgmma_wait``.

Issuing records the operation (each thread its accumulators and, for the register-A forms, its A registers) and
checks its operands: the descriptors decoded and inside one shared allocation, aligned to their swizzle pattern, of
the swizzle the TMA copies that wrote them used, and every byte ready for this thread (its TMA load's phase seen,
its plain stores fenced). From then until the group is retired the bytes are tagged as read by the warpgroup: a
write that is not ordered after the retirement is an ``AsyncHazardError``. ``wgmma_wait(n)`` is a rendezvous of the
warpgroup: when all 128 threads are there, with the same wgmma operations in the same groups, every group but the
``n`` newest is computed (operands read now) and the accumulators written.

**Numerics.** ``D = round_f32(C + sum_k A[i, k] * B[k, j])`` with every product exact and one rounding (to nearest,
ties to even) of the exact sum, the model of ``numbakern.sim.tensorcore`` for ``mma.sync`` and its one
implementation (``exact_matmul_f32``): bit-identical to a GPU wherever the exact sum is a float32, a few units in
the last place of the largest term otherwise (the hardware's internal order and truncation are not documented).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...intrinsics.hopper import WgmmaShape
from ...mma import formats
from ...tensormap import pattern_bytes
from ..checked_array import LocalTrackedArray
from ..errors import (
    BarrierDivergenceError,
    MisalignedAccessError,
    OutOfBoundsError,
    SimulationError,
    describe_site,
    describe_thread,
    describe_threads,
)
from ..tensorcore import exact_matmul_f32
from .layout import WARPGROUP, MatrixDescriptor, a_fragment, d_fragment, operand_addresses
from .state import BlockState, Op, Rendezvous
from .window import raw

M = 64


@dataclass
class Operands:
    """What the first thread to issue a warpgroup's wgmma found; the other threads must name the same."""

    shape: WgmmaShape
    desc_a: MatrixDescriptor | None
    desc_b: MatrixDescriptor
    trans_b: int
    scale_d: int
    a_addresses: np.ndarray | None  # element start addresses (swizzled), (64, k)
    b_addresses: np.ndarray  # (n, k)
    needs: list  # async_read_requirements of every byte


class Issue:
    """One thread's part of a wgmma."""

    __slots__ = ("a", "a_at", "acc", "op")

    def __init__(self, op: Op, acc, a, a_at):
        self.op, self.acc, self.a, self.a_at = op, acc, a, a_at


class WarpgroupState:
    def __init__(self, index: int):
        self.index = index
        self.ops: list[Op] = []  # the warpgroup's wgmma operations in issue order
        self.issued: dict[int, int] = {}  # thread -> wgmmas it issued
        self.open: dict[int, list[Issue]] = {}
        self.groups: dict[int, list[list[Issue]]] = {}
        self.committed: dict[int, int] = {}
        self.fenced: dict[int, bool] = {}
        self.retired = 0
        self.waiting = Rendezvous("")


def warpgroup(state: BlockState, thread, what: str, site) -> WarpgroupState:
    index = state.warpgroup_of(thread, what, site)
    found = state.warpgroups.get(index)
    if found is None:
        found = state.warpgroups[index] = WarpgroupState(index)
        if unfinished not in state.finishing:
            state.finishing.append(unfinished)
    return found


def fence(state: BlockState, thread, site) -> None:
    warpgroup(state, thread, "wgmma_fence", site).fenced[thread.linear] = True


def issue(state: BlockState, thread, shape: WgmmaShape, site, acc, a, a_at, desc_a, desc_b, scale_d: int,
          trans_b: int) -> None:
    wg = warpgroup(state, thread, shape.name, site)
    me = thread.linear
    if not wg.fenced.get(me):
        raise SimulationError(
            f"in kernel '{state.machine.name}': {describe_thread(thread)} issues {shape.name} at "
            f"{describe_site(site)} with no wgmma_fence() since its warpgroup's last wgmma_wait (or ever): the fence "
            "orders the accumulator and A registers' earlier accesses before the asynchronous MMA reads them")
    if len(raw(acc)) < shape.n // 2:
        raise TypeError(f"{shape.name}: acc must hold {shape.n // 2} float32 accumulators, got {len(raw(acc))}")
    i = wg.issued.get(me, 0)
    group = wg.committed.get(me, 0)
    if i == len(wg.ops):
        operands = _operands(state, shape, site, desc_a, desc_b, scale_d, trans_b)
        op = Op(shape.name, site, None, warpgroup=wg.index, group=group, info=operands)
        op.id = len(state.ops)
        state.ops.append(op)
        wg.ops.append(op)
        for addresses in (operands.a_addresses, operands.b_addresses):
            if addresses is not None:
                state.tags.wgmma_reads(wg.index)[_bytes(addresses, shape.element_bytes)] = op.id
    else:
        op = wg.ops[i]
        info = op.info
        mine = (shape, site, desc_a if desc_a is None else MatrixDescriptor.decode(desc_a),
                MatrixDescriptor.decode(desc_b), trans_b, scale_d, group)
        theirs = (info.shape, op.site, info.desc_a, info.desc_b, info.trans_b, info.scale_d, op.group)
        if mine != theirs:
            raise BarrierDivergenceError(
                f"in kernel '{state.machine.name}': the threads of warpgroup {wg.index} issue different wgmma "
                f"operations as their wgmma number {i}: {op.where()} with {_describe(theirs)}, and "
                f"{describe_thread(thread)} {shape.name} at {describe_site(site)} with {_describe(mine)} (wgmma is "
                ".sync.aligned: all 128 threads issue the same instruction together)")
    state.require(thread, op.info.needs, site, shape.name)
    if scale_d:
        _check_accumulators(wg, thread, acc, shape)
    wg.open.setdefault(me, []).append(Issue(op, acc, a, a_at))
    wg.issued[me] = i + 1


def _check_accumulators(wg: WarpgroupState, thread, acc, shape: WgmmaShape) -> None:
    """With ``scale_d`` the accumulators are read: they must have been written, by the thread or by one of its
    wgmmas still in flight."""
    pending = wg.open.get(thread.linear, []) + [x for g in wg.groups.get(thread.linear, []) for x in g]
    if any(x.acc is acc for x in pending):
        return
    for i in range(shape.n // 2):
        _ = acc[i]  # the uninitialised-read check (local memory), reported at the kernel's line


def commit(state: BlockState, thread, site) -> None:
    wg = warpgroup(state, thread, "wgmma_commit", site)
    me = thread.linear
    wg.groups.setdefault(me, []).append(wg.open.pop(me, []))
    wg.committed[me] = wg.committed.get(me, 0) + 1


def wait(state: BlockState, thread, n: int, site) -> None:
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"wgmma_wait: n must be a non-negative integer (groups left in flight), got {n!r}")
    wg = warpgroup(state, thread, "wgmma_wait", site)
    record = wg.waiting
    record.arrived.append(thread)
    record.values.append((n, site))
    record.what = (f"wgmma_wait at {describe_site(record.values[0][1])} ({len(record.arrived)} of the 128 threads of "
                   f"warpgroup {wg.index} arrived)")
    if len(record.arrived) < WARPGROUP:
        return record.park(state.scheduler, site)
    threads = sorted(record.arrived, key=lambda t: t.linear)
    values = dict(zip((t.linear for t in record.arrived), record.values))
    if len({values[t.linear] for t in threads}) > 1:
        a = threads[0]
        b = next(t for t in threads if values[t.linear] != values[a.linear])
        raise BarrierDivergenceError(
            f"in kernel '{state.machine.name}': the threads of warpgroup {wg.index} wait differently: "
            f"{describe_thread(a)} wgmma_wait({values[a.linear][0]}) at {describe_site(values[a.linear][1])}, "
            f"{describe_thread(b)} wgmma_wait({values[b.linear][0]}) at {describe_site(values[b.linear][1])}")
    record.done()
    _agree(state, wg, threads)
    groups = [wg.groups.get(t.linear, []) for t in threads]
    while len(groups[0]) > n:
        retiring = [g.pop(0) for g in groups]
        for position, first in enumerate(retiring[0]):
            _compute(state, first.op, [g[position] for g in retiring])
        wg.retired += 1
    state.machine.progress += 1
    for t in threads:
        state.clock(t)[("wg", wg.index)] = wg.retired
        wg.fenced[t.linear] = False
    return None


def _agree(state: BlockState, wg: WarpgroupState, threads) -> None:
    """Every thread of the warpgroup issued the same wgmmas in the same committed groups."""
    def ops_of(t):
        return [[x.op.id for x in g] for g in wg.groups.get(t.linear, [])]

    first = ops_of(threads[0])
    for t in threads[1:]:
        mine = ops_of(t)
        if mine == first:
            continue
        flat_first = {i for g in first for i in g}
        flat_mine = {i for g in mine for i in g}
        op_id = min((flat_first ^ flat_mine) or flat_first | flat_mine)
        op = state.ops[op_id]
        have = [u for u in threads if op_id in {i for g in ops_of(u) for i in g}]
        lack = [u for u in threads if u not in have]
        raise BarrierDivergenceError(
            f"in kernel '{state.machine.name}': {op.kind} at {describe_site(op.site)} was issued by part of "
            f"warpgroup {wg.index}: {describe_threads(have)} issued it (and committed it), "
            f"{describe_threads(lack)} did not; wgmma is issued by all 128 threads of a warpgroup together")


def unfinished(state: BlockState) -> None:
    for wg in state.warpgroups.values():
        for issues in [*wg.open.values(), *([x for g in gs for x in g] for gs in wg.groups.values())]:
            if issues:
                raise SimulationError(
                    f"in kernel '{state.machine.name}': the block exited with {issues[0].op.where()} not retired: "
                    "its accumulators are written only by a wgmma_commit() and a wgmma_wait() that covers its group")


# -- the operands ----------------------------------------------------------------------------------------------------

def _operands(state: BlockState, shape: WgmmaShape, site, desc_a, desc_b, scale_d, trans_b) -> Operands:
    eb = shape.element_bytes
    da = None if desc_a is None else MatrixDescriptor.decode(desc_a)
    db = MatrixDescriptor.decode(desc_b)
    a_addr = None if da is None else _descriptor_addresses(state, shape, site, "A", da, M, False)
    b_addr = _descriptor_addresses(state, shape, site, "B", db, shape.n, bool(trans_b))
    needs = []
    for addresses in (a_addr, b_addr):
        if addresses is not None:
            swizzle = (da if addresses is a_addr else db).swizzle
            needs += state.async_read_requirements(_bytes(addresses, eb), site, shape.name, swizzle)
    return Operands(shape, da, db, int(trans_b), int(scale_d), a_addr, b_addr, needs)


def _descriptor_addresses(state: BlockState, shape: WgmmaShape, site, which: str, desc: MatrixDescriptor,
                          rows: int, mn_major: bool) -> np.ndarray:
    where = (f"in kernel '{state.machine.name}': {shape.name} at {describe_site(site)}: the {which} descriptor "
             f"({desc})")
    if desc.base_offset:
        raise SimulationError(f"{where} has a base offset; the simulator models descriptors of tiles that start on "
                              "their swizzle pattern's boundary (base offset 0)")
    if desc.swizzle:
        pattern = pattern_bytes(desc.swizzle)
        inside = desc.start % desc.swizzle
        if (desc.start % pattern) // desc.swizzle or (inside + 32 > desc.swizzle if not mn_major else inside):
            raise MisalignedAccessError(
                f"{where} does not start at the beginning of a {desc.swizzle}-byte swizzle pattern ({pattern}-byte "
                f"aligned; a K-major operand may start up to {desc.swizzle - 32} bytes into its first row): the "
                "swizzle is a function of the address, so the tile must be placed on the pattern's boundary")
    addresses = operand_addresses(desc, rows, shape.element_bytes, mn_major)
    lo, hi = int(addresses.min()), int(addresses.max()) + shape.element_bytes
    if state.window.root_at(lo, hi - lo) is None:
        raise OutOfBoundsError(
            f"{where} reads shared-memory bytes {lo:#x}..{hi:#x}, which are not "
            f"inside one shared allocation (the block's: {state.window.describe()})")
    return addresses


def _bytes(addresses: np.ndarray, element_bytes: int) -> np.ndarray:
    return (addresses.reshape(-1, 1) + np.arange(element_bytes)).reshape(-1)


def _shared_values(state: BlockState, shape: WgmmaShape, addresses: np.ndarray) -> np.ndarray:
    """The float64 values of the operand elements at ``addresses``."""
    eb = shape.element_bytes
    data = state.window.read(_bytes(addresses, eb)).reshape(addresses.shape + (eb,))
    bits = np.zeros(addresses.shape, np.uint32)
    for i in range(eb):
        bits |= data[..., i].astype(np.uint32) << (8 * i)
    return _values(shape, bits)


def _values(shape: WgmmaShape, bits: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        if shape.operand == "bf16":
            return formats.bf16_bits_to_f32(bits & 0xFFFF).astype(np.float64)
        if shape.operand == "f16":
            return formats.f16_bits_to_f32(bits & 0xFFFF).astype(np.float64)
        return np.asarray(formats.tf32_operand(bits.astype(np.uint32).view(np.float32)), np.float64)


def _register_values(shape: WgmmaShape, issues: list[Issue]) -> np.ndarray:
    """A (64 × k) from the 128 threads' A registers."""
    regs = np.array([raw(x.a)[int(x.a_at):int(x.a_at) + 4] for x in issues])
    if shape.operand == "tf32":
        values = _values(shape, regs.astype(np.float32).view(np.uint32))
    else:
        bits = regs.astype(np.uint64).astype(np.uint32)
        values = _values(shape, np.stack([bits & 0xFFFF, bits >> 16], axis=-1).reshape(len(issues), 8))
    rows, cols = a_fragment(shape.operand == "tf32")
    a = np.empty((M, shape.k))
    a[rows, cols] = values
    return a


def _compute(state: BlockState, op: Op, issues: list[Issue]) -> None:
    info: Operands = op.info
    shape = info.shape
    a = _register_values(shape, issues) if info.a_addresses is None else _shared_values(state, shape,
                                                                                         info.a_addresses)
    b = _shared_values(state, shape, info.b_addresses).T  # (k, n)
    rows, cols = d_fragment(shape.n)
    c = np.zeros((M, shape.n))
    if info.scale_d:
        c[rows, cols] = np.array([raw(x.acc)[:shape.n // 2] for x in issues], dtype=np.float32)
    d = exact_matmul_f32(a, b, c)
    for t, x in enumerate(issues):
        _store_accumulators(x.acc, d[rows[t], cols[t]])


def _store_accumulators(acc, values) -> None:
    """``acc[i] = values[i]`` for every i: a thread's local array at once (its written-element mask too), any other
    array element by element, through its checks."""
    if isinstance(acc, LocalTrackedArray):
        acc.store_first(values)
    elif isinstance(acc, np.ndarray):
        acc[:len(values)] = values
    else:
        for i, value in enumerate(values):
            acc[i] = value


def _describe(fields) -> str:
    shape, site, da, db, trans_b, scale_d, group = fields
    a = f"A {da}" if da is not None else "A from registers"
    return f"{a}, B {db}, trans_b {trans_b}, scale_d {scale_d}, in group {group}"
