"""The ``cuda`` module kernels see while they run on numbakern's engine.

It extends numba-cuda's ``FakeCUDAModule`` (math helpers, vector types, fp16, ``grid``/``gridsize``) with:
per-thread indices that the scheduler sets at every switch (the stock module asks ``threading.current_thread()``),
barriers, grid barriers and every warp intrinsic numba-cuda has, routed to the scheduler, per-block shared memory,
and atomics that compute as numba-cuda's do and see through checked arrays.
"""

from __future__ import annotations

import linecache
import re
import sys

import numpy as np

from . import numerics
from .checked_array import ArrayLabel, CheckedArray
from .dtypes import as_dtype
from .errors import frame_site, site_of
from .stockapi import Dim3, FakeCUDAAtomic, FakeCUDAConst, FakeCUDAFp16, FakeCUDAModule, vector_type_names
from .warp import FULL_MASK

#: address range of one shared array (4 MiB, far more than any GPU's shared memory per block)
SHARED_RANGE_BITS = 22
_ASSIGNED_NAME = re.compile(r"^\s*([A-Za-z_]\w*)\s*=")


class SimCUDAModule(FakeCUDAModule):
    # Plain attributes shadowing the stock module's properties: the scheduler assigns them at every thread switch,
    # which is much cheaper than looking the running thread up at every access.
    threadIdx = None
    blockIdx = None
    laneid = None

    _const = FakeCUDAConst()
    _fp16 = FakeCUDAFp16()
    _local = None  # the engine's LocalMemory
    _shared = None  # the running block's BlockSharedMemory (the scheduler sets it)

    def __init__(self, grid_dim, block_dim, scheduler):
        # FakeCUDAModule.__init__ is not called: it copies a hundred vector types onto every instance (they are
        # class attributes here, set once) and makes shared memory for a whole launch (numbakern's is per block)
        self.gridDim = Dim3(*grid_dim)
        self.blockDim = Dim3(*block_dim)
        self._scheduler = scheduler
        if scheduler is not None:
            self.syncthreads = scheduler.syncthreads  # one call from the kernel to the switch, not two
        self._cg = _CooperativeGroups(scheduler)
        self._atomic = CheckedAtomics(scheduler)

    # -- barriers ------------------------------------------------------------------------------------------------

    def syncthreads(self):
        # (a module made with a scheduler has the scheduler's own syncthreads as an instance attribute instead)
        self._scheduler.barrier(site_of(sys._getframe(1)))

    def syncthreads_count(self, predicate):
        return self._scheduler.barrier(site_of(sys._getframe(1)), "count", predicate)

    def syncthreads_and(self, predicate):
        return self._scheduler.barrier(site_of(sys._getframe(1)), "and", predicate)

    def syncthreads_or(self, predicate):
        return self._scheduler.barrier(site_of(sys._getframe(1)), "or", predicate)

    # -- warp intrinsics (results in the GPU's types: masks are uint32, votes bool) -------------------------------

    def syncwarp(self, mask=FULL_MASK):
        self._scheduler.warp_collective(site_of(sys._getframe(1)), "syncwarp", mask, None)

    def activemask(self):
        return self._scheduler.warp_collective(site_of(sys._getframe(1)), "activemask", 0, None)

    def lanemask_lt(self):
        return (1 << self.laneid) - 1

    def shfl_sync(self, mask, value, src_lane):
        return self._scheduler.warp_collective(site_of(sys._getframe(1)), "shfl_idx", mask, (value, src_lane))

    def shfl_up_sync(self, mask, value, delta):
        return self._scheduler.warp_collective(site_of(sys._getframe(1)), "shfl_up", mask, (value, delta))

    def shfl_down_sync(self, mask, value, delta):
        return self._scheduler.warp_collective(site_of(sys._getframe(1)), "shfl_down", mask, (value, delta))

    def shfl_xor_sync(self, mask, value, lane_mask):
        return self._scheduler.warp_collective(site_of(sys._getframe(1)), "shfl_xor", mask, (value, lane_mask))

    def ballot_sync(self, mask, predicate):
        return self._scheduler.warp_collective(site_of(sys._getframe(1)), "ballot", mask, bool(predicate))

    def all_sync(self, mask, predicate):
        return self._scheduler.warp_collective(site_of(sys._getframe(1)), "all", mask, bool(predicate))

    def any_sync(self, mask, predicate):
        return self._scheduler.warp_collective(site_of(sys._getframe(1)), "any", mask, bool(predicate))

    def eq_sync(self, mask, predicate):
        return self._scheduler.warp_collective(site_of(sys._getframe(1)), "eq", mask, bool(predicate))

    def match_any_sync(self, mask, value):
        return self._scheduler.warp_collective(site_of(sys._getframe(1)), "match_any", mask, value)

    def match_all_sync(self, mask, value):
        return self._scheduler.warp_collective(site_of(sys._getframe(1)), "match_all", mask, value)

    # -- the rest of numba-cuda's device API the stock module lacks or gets wrong --------------------------------

    def fma(self, a, b, c):
        return numerics.fma(a, b, c)

    def cbrt(self, a):
        return np.cbrt(a)

    def nanosleep(self, ns):
        pass

    # cache-hinted loads and stores: plain loads and stores, as far as results go
    def ldca(self, array, i):
        return array[i]

    ldcg = ldcs = ldlu = ldcv = ldca

    def stcg(self, array, i, value):
        array[i] = value

    stcs = stwb = stwt = stcg

    @property
    def cuda(self):
        # the module stands in for the front end's package too (`nb.cuda.grid(1)`, `numba.cuda.shared.array`)
        return self

    @property
    def libdevice(self):
        import numba.cuda.libdevice as libdevice  # its stubs compute in the simulator (numbakern.sim.libdevice)

        return libdevice

    def __getattr__(self, name):
        # The front end's own scalar types (`cuda.float32` as a dtype, `numba.float32` where the module stands in
        # for the package), which the stock module lacks: taken from the real `cuda` modules this process imported
        # and their packages. Only types: anything else is missing, as on the GPU.
        from .adapters import cuda_modules

        for module in cuda_modules():
            value = module.__dict__.get(name)
            if value is not None and ".types" in type(value).__module__:
                return value
        raise AttributeError(f"the simulator's cuda module has no attribute {name!r}")


for _name, _vector_type in vector_type_names().items():
    setattr(SimCUDAModule, _name, _vector_type)


class BlockSharedMemory:
    """``cuda.shared`` for one block: static arrays per call site, one dynamic buffer for every size-0 call.

    With checks on, arrays come wrapped in ``CheckedArray`` (reporting to the block's tracker); off, plain numpy.
    """

    __slots__ = ("_dynamic", "_dynamic_bytes", "_dynamic_views", "_roots", "_static", "_wrap")

    def __init__(self, dynamic_bytes: int, wrap):
        self._wrap = wrap  # (array, label) -> what the kernel gets; None for plain numpy
        self._roots = 0  # shared arrays made so far: each gets its own address range in the tracker
        self._static: dict = {}
        self._dynamic_bytes = dynamic_bytes
        self._dynamic = None  # made at the first cuda.shared.array(0, ...): most blocks of most kernels have none
        self._dynamic_views: dict = {}

    def array(self, shape, dtype, alignment=None):
        code, line = frame_site(sys._getframe(1))
        key = (code.co_filename, line)
        if shape == 0:
            key = (key, dtype)  # the same call site could view the buffer as another dtype
            res = self._dynamic_views.get(key)
            if res is None:
                if self._dynamic is None:
                    self._dynamic = np.zeros(self._dynamic_bytes, dtype=np.byte)
                dtype = as_dtype(dtype)
                # the whole buffer in whole elements of this dtype (numpy refuses a partial trailing element)
                raw = np.frombuffer(self._dynamic.data, dtype=dtype, count=len(self._dynamic) // dtype.itemsize)
                res = raw if self._wrap is None else self._wrap(raw, self._label(key[0], "dynamic shared", raw))
                self._dynamic_views[key] = res
            return res
        res = self._static.get(key)
        if res is None:
            raw = np.empty(shape, as_dtype(dtype))
            res = raw if self._wrap is None else self._wrap(raw, self._label(key, "shared", raw))
            self._static[key] = res
        return res

    def _label(self, key, kind: str, raw: np.ndarray) -> ArrayLabel:
        # the dynamic buffer is one root whatever dtype it is viewed as, so its views share one range
        base = 0 if kind == "dynamic shared" else (1 + self._roots) << SHARED_RANGE_BITS
        self._roots += kind != "dynamic shared"
        return ArrayLabel(_name_at(key), kind, raw, base)


class LocalMemory:
    """``cuda.local``: a fresh array per call; wrapped for the bounds check when that is on."""

    def __init__(self, wrap):
        self._wrap = wrap

    def array(self, shape, dtype, alignment=None):
        raw = np.empty(shape, as_dtype(dtype))
        if self._wrap is None:
            return raw
        code, line = frame_site(sys._getframe(1))
        return self._wrap(raw, ArrayLabel(_name_at((code.co_filename, line)), "local", raw))


class CheckedAtomics(FakeCUDAAtomic):
    """``cuda.atomic.*`` as numba-cuda computes them: the value converted to the array's type first, integers
    wrapping around, the old value returned in its canonical form; on checked arrays they are reported as atomics
    (never races) rather than plain stores. Threads of one launch share one OS thread: no locks are needed. Each
    one counts as a pass of a spin loop (spin-waits poll with atomics), so a wait no one ends is found even in a
    kernel run without the front end."""

    def __init__(self, scheduler):
        self._scheduler = scheduler


def _atomic(name, update):
    def atomic(self, array, index, val):
        self._scheduler.spin(2)
        if isinstance(array, CheckedArray):
            array = array._atomic_target(index)
        return _apply(array, index, val, update)

    atomic.__name__ = name
    return atomic


def _apply(array, index, val, update):
    dtype = array.dtype
    old = array[index]
    if dtype.kind in "iu":
        old = int(old)
        array[index] = numerics.WRAP[dtype.name](update(old, int(val)))
        return old
    val = dtype.type(val)
    array[index] = update(old, val)
    return old


def _inc(old, val):
    return 0 if old >= val else old + 1


def _dec(old, val):
    return val if old == 0 or old > val else old - 1


def _nanmax(old, val):
    return val if old != old else old if val != val else max(old, val)


def _nanmin(old, val):
    return val if old != old else old if val != val else min(old, val)


for _name, _update in (
    ("add", lambda o, v: o + v), ("sub", lambda o, v: o - v), ("and_", lambda o, v: o & v),
    ("or_", lambda o, v: o | v), ("xor", lambda o, v: o ^ v), ("inc", _inc), ("dec", _dec),
    ("exch", lambda o, v: v), ("max", max), ("min", min), ("nanmax", _nanmax), ("nanmin", _nanmin),
):
    setattr(CheckedAtomics, _name, _atomic(_name, _update))


def _cas(self, array, index, old, val):
    self._scheduler.spin(2)
    if isinstance(array, CheckedArray):
        array = array._atomic_target(index)
    loaded = array[index]
    if array.dtype.kind in "iu":
        loaded = int(loaded)
    if loaded == old:
        array[index] = val
    return loaded


def _compare_and_swap(self, array, old, val):
    return _cas(self, array, (0,) * array.ndim, old, val)


CheckedAtomics.cas = _cas
CheckedAtomics.compare_and_swap = _compare_and_swap


class _GridGroup:
    def __init__(self, scheduler):
        self._scheduler = scheduler

    def sync(self):
        # every block of a cooperative launch is resident (the engine runs them together): a grid-wide barrier
        self._scheduler.grid_barrier(site_of(sys._getframe(1)))


class _CooperativeGroups:
    def __init__(self, scheduler):
        self._grid = _GridGroup(scheduler)

    def this_grid(self):
        return self._grid


def _name_at(key) -> str:
    """The variable a ``cuda.shared.array(...)`` call is assigned to, read from its source line."""
    filename, line = key
    match = _ASSIGNED_NAME.match(linecache.getline(filename, line))
    return match.group(1) if match else f"<array at {filename.rsplit('/', 1)[-1]}:{line}>"
