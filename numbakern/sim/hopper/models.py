"""The simulator's model of each Hopper instruction (``numbakern.intrinsics.hopper``): one function per instruction,
``model(launch, frame, *the kernel's arguments)``, registered on its Op (``register``: ``op.register("sim", model)``;
each wgmma shape's as it is declared).

Each finds the running thread, its block's ``BlockState`` and the kernel's line, and hands over to the state
(mbarriers, named barriers, setmaxnreg), to ``tma`` or to ``wgmma``.
"""

from __future__ import annotations

from ...intrinsics import hopper as declared
from ...intrinsics.hopper import WgmmaShape
from ...intrinsics.op import Op, on_declare
from ..checked_array import CheckedArray
from ..errors import site_of
from . import tma, wgmma
from .state import Machine


def _here(launch, frame, *arrays):
    if launch is None:
        raise RuntimeError("numbakern.mma.hopper's instructions run only inside a kernel launched on numbakern's "
                           "simulator engine (not from host code, and not on the stock simulator: "
                           "NUMBAKERN_SIM_ENGINE=stock)")
    thread = launch.scheduler.current
    machine = launch.extension("hopper", Machine)
    state = machine.state(thread)
    state.attach_tracker()
    return state, thread, site_of(frame)


def _barrier(state, thread, bars, index, site, what):
    address = state.window.address_of(bars, index, what)
    return state.barrier_at(thread, address, _barrier_name(bars, index, address), site, what)


def _barrier_name(bars, index, address: int) -> str:
    if isinstance(bars, CheckedArray):
        shown = ", ".join(map(str, index)) if isinstance(index, tuple) else str(index)
        return f"{bars._label.name}[{shown}]"
    return f"at shared address {address:#x}"


def shared_address(launch, frame, array, index):
    state, _, _ = _here(launch, frame, array)
    return state.window.address_of(array, index, "shared_address")


def mbarrier_init(launch, frame, bars, index, count):
    state, thread, site = _here(launch, frame, bars)
    address = state.window.address_of(bars, index, "mbarrier_init")
    state.init_barrier(thread, address, _barrier_name(bars, index, address), int(count), site)


def mbarrier_arrive(launch, frame, bars, index):
    state, thread, site = _here(launch, frame, bars)
    state.arrive(thread, _barrier(state, thread, bars, index, site, "mbarrier_arrive"), site)


def mbarrier_arrive_expect_tx(launch, frame, bars, index, nbytes):
    state, thread, site = _here(launch, frame, bars)
    barrier = _barrier(state, thread, bars, index, site, "mbarrier_arrive_expect_tx")
    state.arrive(thread, barrier, site, tx=int(nbytes))


def mbarrier_try_wait(launch, frame, bars, index, parity):
    state, thread, site = _here(launch, frame, bars)
    barrier = _barrier(state, thread, bars, index, site, "mbarrier_try_wait")
    return state.try_wait(thread, barrier, int(parity) & 1, site)


def fence_barrier_init(launch, frame):
    _here(launch, frame)


def fence_proxy_async(launch, frame):
    state, thread, _ = _here(launch, frame)
    clock = state.clock(thread)
    key = ("fence", thread.linear)
    clock[key] = clock.get(key, 0) + 1


def tma_load_2d(launch, frame, dst, dst_index, tensor_map, c0, c1, bars, bar_index):
    state, thread, site = _here(launch, frame, dst, bars)
    barrier = _barrier(state, thread, bars, bar_index, site, "tma_load_2d")
    tma.load(state, thread, site, "tma_load_2d", dst, dst_index, tensor_map, (int(c0), int(c1)), barrier)


def tma_load_3d(launch, frame, dst, dst_index, tensor_map, c0, c1, c2, bars, bar_index):
    state, thread, site = _here(launch, frame, dst, bars)
    barrier = _barrier(state, thread, bars, bar_index, site, "tma_load_3d")
    tma.load(state, thread, site, "tma_load_3d", dst, dst_index, tensor_map, (int(c0), int(c1), int(c2)), barrier)


def tma_store_2d(launch, frame, tensor_map, c0, c1, src, src_index):
    state, thread, site = _here(launch, frame, src)
    tma.store(state, thread, site, "tma_store_2d", tensor_map, (int(c0), int(c1)), src, src_index)


def bulk_commit(launch, frame):
    state, thread, _ = _here(launch, frame)
    tma.commit(state, thread)


def bulk_wait_read(launch, frame, n):
    state, thread, _ = _here(launch, frame)
    tma.wait(state, thread, n)


def bulk_wait(launch, frame, n):
    state, thread, _ = _here(launch, frame)
    tma.wait(state, thread, n)


def named_barrier(launch, frame, barrier_id, count):
    state, thread, site = _here(launch, frame)
    return state.named_barrier(thread, int(barrier_id), int(count), site)


def named_barrier_arrive(launch, frame, barrier_id, count):
    state, thread, site = _here(launch, frame)
    state.named_barrier(thread, int(barrier_id), int(count), site, wait=False)


def wgmma_fence(launch, frame):
    state, thread, site = _here(launch, frame)
    wgmma.fence(state, thread, site)


def wgmma_commit(launch, frame):
    state, thread, site = _here(launch, frame)
    wgmma.commit(state, thread, site)


def wgmma_wait(launch, frame, n, acc, count):
    state, thread, site = _here(launch, frame)
    return wgmma.wait(state, thread, n, site)


def setmaxnreg_inc(launch, frame, count):
    state, thread, site = _here(launch, frame)
    state.setmaxnreg(thread, True, count, site)


def setmaxnreg_dec(launch, frame, count):
    state, thread, site = _here(launch, frame)
    state.setmaxnreg(thread, False, count, site)


def wgmma_model(shape: WgmmaShape):
    """The model of one wgmma variant: ``(acc, desc_a, desc_b, scale_d[, trans_b])``, or with A from registers
    ``(acc, a, a_at, desc_b, scale_d[, trans_b])`` (tf32 has no ``trans_b``: both operands are K-major)."""
    tf32 = shape.operand == "tf32"

    def model(launch, frame, acc, *args):
        state, thread, site = _here(launch, frame)
        if shape.a_registers:
            a, a_at, desc_b, scale_d, *rest = args
            desc_a = None
        else:
            desc_a, desc_b, scale_d, *rest = args
            a = a_at = None
        trans_b = 0 if tf32 else int(rest[0])
        if trans_b not in (0, 1):
            raise ValueError(f"{shape.name}: trans_b must be 0 (B k-major) or 1 (B n-major), got {trans_b}")
        wgmma.issue(state, thread, shape, site, acc, a, a_at, desc_a, int(desc_b), int(bool(scale_d)), trans_b)

    model.__name__ = shape.name
    return model


FIXED = (shared_address, mbarrier_init, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_try_wait,
         fence_barrier_init, fence_proxy_async, tma_load_2d, tma_load_3d, tma_store_2d, bulk_commit, bulk_wait_read,
         bulk_wait, named_barrier, named_barrier_arrive, wgmma_fence, wgmma_commit, wgmma_wait, setmaxnreg_inc,
         setmaxnreg_dec)


def _wgmma_declared(op: Op) -> None:
    if op.module == declared.MODULE and isinstance(op.shape, WgmmaShape):
        op.register("sim", wgmma_model(op.shape))


def register() -> None:
    """Each fixed instruction's model on its Op, and each wgmma shape's as it is declared (now and later)."""
    models = {model.__name__: model for model in FIXED}
    for op in declared.FIXED:
        op.register("sim", models[op.name])
    on_declare(_wgmma_declared)
