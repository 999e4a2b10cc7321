"""The bulk tensor copy engine (TMA) in the simulator: ``tma_load_2d``, ``tma_load_3d`` and ``tma_store_2d`` through
tensor maps (``numbakern.tensormap``), with their bulk groups.

A tensor map names its tensor by device address: the simulator finds the launch argument (or the host array that
argument was copied from) whose memory holds the whole tensor. A load's box is written to shared memory as the
tensor map's swizzle lays it out (``swizzle_address`` of each byte's address), elements past the tensor's edges as
zeros; all of the box's bytes complete on its mbarrier. A store writes the box's elements that lie inside the
tensor. Destinations and sources in shared memory must be 128-byte aligned, and aligned to their swizzle's pattern
(1024 bytes for the 128-byte swizzle): the swizzle is a function of the address. A box's innermost start coordinate
must lie a multiple of 16 bytes from the tensor's start (``START_ALIGN``).
"""

from __future__ import annotations

import numpy as np

from ...tensormap import SimulatedTensorMap, pattern_bytes, swizzle_address
from ..checked_array import CheckedArray
from ..errors import MisalignedAccessError, OutOfBoundsError, UninitializedReadError, describe_site, describe_thread
from .state import BlockState, Op
from .window import raw

ALIGN = 128  # cp.async.bulk.tensor's shared-memory address alignment
#: the box's innermost start (coordinate × element size, negative ones too) must be a multiple of this many bytes.
#: The PTX ISA does not say so; an H200 stops a load that breaks it with CUDA_ERROR_ILLEGAL_INSTRUCTION, for every
#: swizzle (tests/hopper/test_tma.py says where this was measured)
START_ALIGN = 16


class Target:
    """The global memory a tensor map names: the argument's bytes and where the tensor starts in them."""

    def __init__(self, tmap: SimulatedTensorMap, u8: np.ndarray, offset: int, array):
        self.map, self.u8, self.offset, self.array = tmap, u8, offset, array


def resolve(state: BlockState, tensor_map, what: str, site, rank: int) -> Target:
    words = raw(tensor_map)
    tmap = SimulatedTensorMap.decode(words) if getattr(words, "size", 0) == 16 else None
    where = f"in kernel '{state.machine.name}': {what} at {describe_site(site)}"
    if tmap is None:
        raise TypeError(f"{where}: the tensor map must be the 16 uint64 that numbakern.tensormap.tensor_map "
                        "made in simulator mode (copied to the device), got an array of shape "
                        f"{getattr(words, 'shape', None)}")
    if tmap.rank != rank:
        raise TypeError(f"{where}: the tensor map is {tmap.rank}-D (sizes {tmap.dims}, innermost first), but "
                        f"{what} copies boxes of a {rank}-D one")
    last = tmap.address + tmap.extent_bytes
    for original, value in state.machine.launch.arguments:
        buffer = raw(value)
        if not isinstance(buffer, np.ndarray):
            continue
        for seen in (buffer, original):
            if not isinstance(seen, np.ndarray) or seen.shape != buffer.shape or seen.strides != buffer.strides:
                continue
            ptr = seen.__array_interface__["data"][0]
            if ptr <= tmap.address and last <= ptr + buffer.nbytes:
                u8 = buffer.reshape(-1).view(np.uint8)
                return Target(tmap, u8, tmap.address - ptr, value)
    raise OutOfBoundsError(
        f"{where}: the tensor map's tensor ({'x'.join(map(str, tmap.dims))} elements of {tmap.element_bytes} bytes, "
        f"innermost first, at {tmap.address:#x}, strides {tmap.strides} bytes) is not inside any array the kernel "
        "was launched with: build tensor maps on the arrays you pass to the kernel")


def _shared_box(state: BlockState, array, index, tmap: SimulatedTensorMap, what: str, site) -> np.ndarray:
    """The shared-memory address of every byte of the box at ``array[index]``, swizzle applied."""
    start = state.window.address_of(array, index, what)
    need = max(ALIGN, pattern_bytes(tmap.swizzle) if tmap.swizzle else 0)
    if start % need:
        raise MisalignedAccessError(
            f"in kernel '{state.machine.name}': {what} at {describe_site(site)}: the shared-memory box starts at "
            f"address {start:#x}, which is not {need}-byte aligned (TMA needs 128 bytes"
            f"{f', and the {tmap.swizzle}-byte swizzle its {need}-byte pattern' if need > ALIGN else ''})")
    if state.window.root_at(start, tmap.box_bytes) is None:
        raise OutOfBoundsError(
            f"in kernel '{state.machine.name}': {what} at {describe_site(site)}: the {tmap.box_bytes}-byte box at "
            f"shared address {start:#x} does not fit in one shared allocation ({state.window.describe()})")
    return swizzle_address(start + np.arange(tmap.box_bytes), tmap.swizzle)


def _check_start(state: BlockState, tmap: SimulatedTensorMap, coords: tuple, what: str, site) -> None:
    offset = coords[0] * tmap.element_bytes
    if offset % START_ALIGN:
        raise MisalignedAccessError(
            f"in kernel '{state.machine.name}': {what} at {describe_site(site)}: the box starts at innermost "
            f"coordinate {coords[0]}, {offset} bytes from the tensor's start, which is not a multiple of "
            f"{START_ALIGN} bytes; on the GPU this load stops the kernel (CUDA_ERROR_ILLEGAL_INSTRUCTION). Start "
            f"boxes at multiples of {START_ALIGN // tmap.element_bytes} elements")


def load(state: BlockState, thread, site, what: str, dst, dst_index, tensor_map, coords: tuple, barrier) -> None:
    target = resolve(state, tensor_map, what, site, len(coords))
    tmap = target.map
    _check_start(state, tmap, coords, what, site)
    addresses = _shared_box(state, dst, dst_index, tmap, what, site)
    _check_written(state, target, coords, site, what)
    if "race" in state.checks:
        state.check_overwrite(thread, addresses, site, "writes", by=f"the {what} issued by {describe_thread(thread)}")
    state.catch_up(barrier)
    op = Op(what, site, thread, barrier=barrier, phase=barrier.phase, swizzle=tmap.swizzle,
            info=(target, coords, addresses), clock=dict(state.release(thread)))
    op.id = len(state.ops)
    state.ops.append(op)
    state.tags.tma[addresses] = op.id
    state.tags.generic[addresses] = -1
    state.tags.written[addresses] = True
    state.forget_plain_accesses(addresses)
    op.perform = lambda: land(state, op)
    barrier.queued.append(op)
    state.machine.progress += 1


def land(state: BlockState, op: Op) -> None:
    """The copy happens: the box's bytes into shared memory, its transaction bytes onto its mbarrier."""
    target, coords, addresses = op.info
    tmap = target.map
    eb = tmap.element_bytes
    box = np.zeros((tmap.box_rows, tmap.box_row_bytes), np.uint8)
    for r, at, k0, k1 in tmap.rows(coords):
        at += target.offset
        box[r, k0 * eb:k1 * eb] = target.u8[at:at + (k1 - k0) * eb]
    state.window.write(addresses, box.reshape(-1))
    state.complete_tx(op, tmap.box_bytes)


def store(state: BlockState, thread, site, what: str, tensor_map, coords: tuple, src, src_index) -> None:
    target = resolve(state, tensor_map, what, site, len(coords))
    tmap = target.map
    addresses = _shared_box(state, src, src_index, tmap, what, site)
    needs = state.async_read_requirements(addresses, site, what, tmap.swizzle)
    state.require(thread, needs, site, what)
    open_ops, groups, retired = bulk(state, thread)
    op = Op(what, site, thread, group=retired + len(groups), swizzle=tmap.swizzle, info=(target, coords, addresses))
    op.id = len(state.ops)
    state.ops.append(op)
    state.tags.store[addresses] = op.id
    open_ops.append(op)


def bulk(state: BlockState, thread) -> list:
    """``[open stores, committed groups, groups retired]`` of a thread."""
    entry = state.bulk.get(thread.linear)
    if entry is None:
        entry = state.bulk[thread.linear] = [[], [], 0]
    return entry


def commit(state: BlockState, thread) -> None:
    entry = bulk(state, thread)
    entry[1].append(entry[0])
    entry[0] = []


def wait(state: BlockState, thread, n: int) -> None:
    """All but the ``n`` newest committed groups of this thread's TMA stores are carried out."""
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"bulk_wait_read: n must be a non-negative integer (groups left in flight), got {n!r}")
    entry = bulk(state, thread)
    while len(entry[1]) > n:
        for op in entry[1].pop(0):
            _carry_out(state, op)
        entry[2] += 1
    state.clock(thread)[("bulk", thread.linear)] = entry[2]
    state.machine.progress += 1


def _carry_out(state: BlockState, op: Op) -> None:
    target, coords, addresses = op.info
    tmap = target.map
    eb = tmap.element_bytes
    box = state.window.read(addresses).reshape(tmap.box_rows, tmap.box_row_bytes)
    for r, at, k0, k1 in tmap.rows(coords):
        at += target.offset
        target.u8[at:at + (k1 - k0) * eb] = box[r, k0 * eb:k1 * eb]
        _mark_written(target, at, (k1 - k0) * eb)


def _mask(target: Target):
    label = target.array._label if isinstance(target.array, CheckedArray) else None
    return (label, target.array._a.itemsize) if label is not None and label.mask is not None else (None, 0)


def _mark_written(target: Target, at: int, nbytes: int) -> None:
    label, itemsize = _mask(target)
    if label is not None:
        label.mask[label.mask_first + at // itemsize:label.mask_first + (at + nbytes) // itemsize] = True


def _check_written(state: BlockState, target: Target, coords: tuple, site, what: str) -> None:
    """A load of elements of a device allocation that were never written (``cuda.device_array``)."""
    label, itemsize = _mask(target)
    if label is None or "uninit" not in state.checks:
        return
    tmap = target.map
    eb = tmap.element_bytes
    for r, at, k0, k1 in tmap.rows(coords):
        at += target.offset
        seen = label.mask[label.mask_first + at // itemsize:label.mask_first + (at + (k1 - k0) * eb) // itemsize]
        if not seen.all():
            raise UninitializedReadError(
                f"in kernel '{state.machine.name}': {what} at {describe_site(site)} reads elements of "
                f"{label} that were allocated without data (cuda.device_array) and never written (box row "
                f"{r} at tensor coordinates {coords})")
