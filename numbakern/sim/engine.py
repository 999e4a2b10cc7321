"""Launching ``@cuda.jit`` kernels on numbakern's engine instead of the stock simulator's.

``enable()`` replaces ``FakeCUDAKernel.__call__`` (what ``kernel[grid, block](...)`` and device-function calls run
in simulator mode). A launch converts the arguments as the stock simulator does, wraps them in checked arrays when
checks are on, swaps the fake ``cuda`` module into the globals of the kernel and of every device function it calls,
and runs the blocks one after the other on the cooperative scheduler.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np
from numba.cuda.errors import normalize_kernel_dimensions
from numba.cuda.simulator import kernel as stock_kernel
from numba.cuda.simulator.args import ArgHint, InOut
from numba.cuda.simulator.cudadrv.devicearray import (
    FakeCUDAArray,
    FakeWithinKernelCUDAArray,
)
from numba.cuda.simulator.kernelapi import Dim3

from . import config
from .checked_array import ArrayLabel, CheckedArray, MemoryChecks, TrackedArray
from .fakecuda import BlockSharedMemory, LocalMemory, SimCUDAModule
from .scheduler import Block, Scheduler
from .trackers import GlobalWriteTracker, SharedMemoryTracker

#: address range of one global array argument (2**48 bytes: any array)
GLOBAL_RANGE_BITS = 48
#: the attribute ``allow_negative_indices(kernel)`` sets on a kernel
NEGATIVE_OK_ATTR = "__numbakern_negative_indices_ok__"

_stock_call = stock_kernel.FakeCUDAKernel.__call__
_enabled = False
_active: Launch | None = None  # the launch running now: device-function calls join it


def enable() -> None:
    global _enabled
    stock_kernel.FakeCUDAKernel.__call__ = _call
    _enabled = True


def disable() -> None:
    global _enabled
    stock_kernel.FakeCUDAKernel.__call__ = _stock_call
    _enabled = False


def enabled() -> bool:
    return _enabled


def _call(kernel, *args):
    if _active is not None:
        return _active.call_device(kernel, args)
    if kernel._device:
        return _stock_call(kernel, *args)  # a device function called from host code, as the stock one allows
    return Launch(kernel, config.current()).run(args)


class Launch:
    def __init__(self, kernel, settings: config.Settings):
        self.kernel = kernel
        self.name = kernel.fn.__name__
        self.grid_dim, self.block_dim = normalize_kernel_dimensions(kernel.grid_dim, kernel.block_dim)
        self.settings = settings
        on = settings.checks
        self.scheduler = Scheduler(None, self.name, "barrier" in on, settings.shuffle_seed)
        self.module = SimCUDAModule(self.grid_dim, self.block_dim, self.scheduler)
        self.scheduler.module = self.module
        negative_ok = settings.allow_negative_indices or getattr(kernel, NEGATIVE_OK_ATTR, False)
        self.memory_checks = MemoryChecks(self.name, "bounds" in on, negative_ok, self.scheduler)
        self.check_shared = bool(on & {"race", "uninit", "bounds"})
        self.global_writes = GlobalWriteTracker(self.memory_checks) if "race" in on else None
        self.check_global = bool(on & {"race", "bounds"})
        self._swapped: dict[int, tuple[dict, dict]] = {}
        self._checked_args = 0

    def run(self, args) -> None:
        global _active
        retr: list = []
        names = self.kernel.fn.__code__.co_varnames[: self.kernel.fn.__code__.co_argcount]
        kernel_args = [self._kernel_arg(names[i] if i < len(names) else f"arg{i}", a, retr) for i, a in enumerate(args)]
        body = functools.partial(self.kernel.fn, *kernel_args)
        _active = self
        block = None
        try:
            self._swap_cuda_module(self.kernel.fn)
            with np.errstate(divide="raise") if self.kernel._debug else contextlib.nullcontext():
                for blockIdx in self._block_order():
                    block = Block(blockIdx, self.block_dim)
                    self._prepare(block)
                    self.scheduler.run_block(block, body)
        finally:
            self.scheduler.close(block)
            _active = None
            for globs, original in self._swapped.values():
                globs.update(original)
        for write_back in retr:
            write_back()

    def call_device(self, kernel, args):
        """A device function (or a nested launch, which like the stock simulator we run as a call) inside a launch."""
        self._swap_cuda_module(kernel.fn)
        return kernel.fn(*args)

    def _swap_cuda_module(self, fn) -> None:
        # Once per module per launch, not per call as the stock swapped_cuda_module does: device functions are
        # called in inner loops.
        from numba import cuda

        globs = fn.__globals__
        if id(globs) in self._swapped:
            return
        original = {name: value for name, value in globs.items() if value is cuda}
        self._swapped[id(globs)] = (globs, original)
        for name in original:
            globs[name] = self.module

    def _block_order(self) -> list[Dim3]:
        gx, gy, gz = self.grid_dim
        order = [Dim3(x, y, z) for z in range(gz) for y in range(gy) for x in range(gx)]
        if self.scheduler.rng is not None:
            self.scheduler.rng.shuffle(order)
        return order

    def _prepare(self, block: Block) -> None:
        """Fresh shared memory (and its tracker) for the block about to run."""
        wrap_shared = wrap_local = None
        if self.check_shared:
            on = self.settings.checks
            tracker = None
            if on & {"race", "uninit"}:
                tracker = SharedMemoryTracker(self.memory_checks, "race" in on, "uninit" in on)
                block.barrier_hooks.append(tracker.new_epoch)
            checks = self.memory_checks

            def wrap_shared(raw, label):
                if tracker is None:
                    return CheckedArray(raw, label, checks)
                return TrackedArray(raw, label, checks, tracker)

        if "bounds" in self.settings.checks:
            def wrap_local(raw, label):
                return CheckedArray(raw, label, self.memory_checks)

        self.module._shared = BlockSharedMemory(self.kernel.dynshared_size, wrap_shared)
        self.module._local = LocalMemory(wrap_local)

    def _kernel_arg(self, name: str, arg, retr: list):
        """As the stock simulator converts an argument, then: raw numpy with checks off, a CheckedArray with them on."""
        _, arg = functools.reduce(
            lambda ty_val, extension: extension.prepare_args(*ty_val, stream=0, retr=retr),
            self.kernel.extensions,
            (None, arg),
        )
        if isinstance(arg, np.ndarray) and arg.ndim > 0:
            arg = InOut(arg).to_device(retr)  # a copy written back after the launch, as on a GPU
        elif isinstance(arg, ArgHint):
            arg = arg.to_device(retr)
        elif isinstance(arg, np.void):
            return FakeWithinKernelCUDAArray(FakeCUDAArray(arg))
        if not isinstance(arg, FakeCUDAArray):
            return arg
        raw = arg._ary
        if raw.dtype.fields is not None or raw.ndim == 0:
            return FakeWithinKernelCUDAArray(arg)  # records keep the stock attribute-style field access
        if not self.check_global:
            return raw
        # one address range per argument: each argument is its own copy, as on a GPU
        self._checked_args += 1
        label = ArrayLabel(name, "global", raw, self._checked_args << GLOBAL_RANGE_BITS)
        return CheckedArray(raw, label, self.memory_checks, self.global_writes)

