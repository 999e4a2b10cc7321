"""Launching ``@cuda.jit`` kernels on numbakern's engine instead of the stock simulator's.

``enable()`` routes ``kernel[grid, block](...)`` (and device-function calls) here. A launch:

1. types the kernel with numba-cuda's own front end for the arguments' types (``kerneltypes``): a kernel numba
   rejects is a ``TypingError`` before any thread runs, and an accepted one runs rewritten to compute with
   Numba's types (``typed``);
2. converts the arguments as the stock simulator does, wrapping arrays in checked arrays when checks are on;
3. runs the blocks on the cooperative scheduler: one after the other, or all together for a cooperative launch
   (a kernel that synchronises the grid);
4. reports what the checkers still hold (reads of memory never written), and copies host arrays back.
"""

from __future__ import annotations

import functools
import threading
from array import array

import numpy as np

from ..frontend import closures
from ..launch import launch_problem, simulator_argument
from . import config, intrinsics, kerneltypes, numerics
from .adapters import adapter_of, cuda_modules, device_function
from .checked_array import (
    ArrayLabel,
    CheckedArray,
    GlobalTrackedArray,
    LocalTrackedArray,
    MemoryChecks,
    TrackedArray,
)
from .errors import (
    LaunchError,
    RaceError,
    SimulationError,
    UninitializedReadError,
    engine_frames_hidden,
    hide_engine_frames,
)
from .fakecuda import BlockSharedMemory, LocalMemory, SimCUDAModule
from .scheduler import Block, Scheduler, block_thread_indices
from .stockapi import Dim3
from .trackers import GlobalMemoryTracker, SharedMemoryTracker

#: address range of one global array argument (2**48 bytes: any array)
GLOBAL_RANGE_BITS = 48
#: the attribute ``allow_negative_indices(kernel)`` sets on a kernel
NEGATIVE_OK_ATTR = "__numbakern_negative_indices_ok__"
#: a cooperative launch may have as many blocks as fit on the GPU at once: the simulator models an H100's
#: 132 multiprocessors of 2048 threads (32 blocks) each
COOPERATIVE_SMS, THREADS_PER_SM, BLOCKS_PER_SM = 132, 2048, 32

_enabled = False
_active: Launch | None = None  # the launch running now: device-function calls join it
#: the OS thread that runs it (every simulated thread is a greenlet of that one)
_active_thread: int | None = None
#: called as ``hook(kernel, args)`` before every launch runs (``pytest --profile`` profiles the kernels it watches)
launch_hooks: list = []


def _running_launch() -> Launch | None:
    """The launch running now, as the stand-ins of GPU intrinsics see it: none from another OS thread (numba-cuda's
    stock simulator runs each GPU thread as one, and those of a failed stock launch may still be running)."""
    return _active if threading.get_ident() == _active_thread else None


intrinsics.install_launch_source(_running_launch)  # the stand-ins of GPU intrinsics reach it through this seam


def max_cooperative_blocks(block_dim) -> int:
    """The most blocks a cooperative launch of ``block_dim`` threads per block may have."""
    dims = tuple(block_dim) if isinstance(block_dim, (tuple, list)) else (block_dim,)
    threads = 1
    for d in dims:
        threads *= int(d)
    return COOPERATIVE_SMS * max(0, min(BLOCKS_PER_SM, THREADS_PER_SM // max(threads, 1)))


def enable() -> None:
    global _enabled
    from ..frontend.choice import mlir_installed, numba_cuda_installed

    if numba_cuda_installed():
        from . import cudasim

        cudasim.install_launch_hook(_call, max_cooperative_blocks)
        cudasim.patch_allocations()
        cudasim.patch_jit()
    if mlir_installed():
        from . import mlirsim

        mlirsim.install(_call)  # numba-cuda-mlir has no engine of its own: its kernels always run here
    _enabled = True


def disable() -> None:
    global _enabled
    from ..frontend.choice import numba_cuda_installed

    if numba_cuda_installed():
        from . import cudasim

        cudasim.install_launch_hook(None)
    _enabled = False


def enabled() -> bool:
    return _enabled


def _call(kernel, *args):
    if _active is not None:
        return _active.call_device(kernel, args)
    adapter = adapter_of(kernel)
    if adapter.is_device(kernel):
        return adapter.stock_call(kernel, *args)  # a device function called from host code, as the stock one allows
    for hook in launch_hooks:
        hook(kernel, args)
    try:
        return Launch(kernel, config.current()).run(args)
    except Exception as e:
        # the caller's frames and the kernel's, not the engine's (a bare raise adds no frame of this one either)
        if engine_frames_hidden():
            hide_engine_frames(e)
        raise


class Launch:
    #: an expanded kernel typed and run with its ``unroll`` loops as written (``kerneltypes``' doc)
    rolled = True

    def __init__(self, kernel, settings: config.Settings):
        self.kernel = kernel
        self.adapter = adapter = adapter_of(kernel)
        self.fn = adapter.python_function(kernel)
        self.name = self.fn.__name__
        self.grid_dim, self.block_dim = adapter.launch_dims(kernel)
        _check_launch(self.name, self.grid_dim, self.block_dim, adapter.max_threads(kernel))
        self.settings = settings
        on = settings.checks
        self.scheduler = Scheduler(None, self.name, "barrier" in on, settings.shuffle_seed, settings.deadlock_seconds)
        self.module = SimCUDAModule(self.grid_dim, self.block_dim, self.scheduler)
        self.scheduler.module = self.module
        negative_ok = settings.allow_negative_indices or getattr(kernel, NEGATIVE_OK_ATTR, False)
        self.memory_checks = MemoryChecks(self.name, "bounds" in on, negative_ok, self.scheduler, self.grid_dim,
                                          self.block_dim)
        self.check_shared = bool(on & {"race", "uninit", "bounds"})
        self.track_shared = bool(on & {"race", "uninit"})
        self.check_global = bool(on & {"race", "bounds", "uninit"})
        self.global_memory = GlobalMemoryTracker(self.memory_checks, "race" in on, "uninit" in on)
        # local arrays: plain numpy with no checks (the fast path); bounds-checked; tracked per element with uninit
        local_wrap = self._track_local if "uninit" in on else self._wrap_local if "bounds" in on else None
        self.module._local = LocalMemory(local_wrap)
        self._swapped: dict[int, tuple[dict, dict]] = {}
        self._swapped_cells: dict[int, tuple] = {}
        self._checked_args = 0
        self._shared_trackers: list[SharedMemoryTracker] = []
        self._unchecked_masks: list = []
        self._thread_indices = block_thread_indices(self.block_dim)
        self.arguments: list[tuple] = []  # (what the caller passed, what the kernel got) per argument
        self._extensions: dict = {}  # per-launch state of intrinsic models (numbakern.sim.hopper's machine)

    def extension(self, name: str, factory):
        """The launch's ``name`` extension, made by ``factory(launch)`` the first time it is asked for; its
        ``end_blocks(blocks)`` runs after each group of blocks has finished."""
        found = self._extensions.get(name)
        if found is None:
            found = self._extensions[name] = factory(self)
        return found

    def run(self, args) -> None:
        global _active, _active_thread
        code = self.fn.__code__
        names = code.co_varnames[: code.co_argcount]
        names = [names[i] if i < len(names) else f"arg{i}" for i in range(len(args))]
        args = [simulator_argument(n, a) for n, a in zip(names, args)]
        typing = self.settings.typing and self.adapter.can_type(self.kernel)
        typed, argtypes = kerneltypes.type_launch(self.kernel, args, names, self.rolled) if typing else (None, None)
        retr: list = []
        kernel_args = [self._kernel_arg(n, a, retr, argtypes[i] if typed is not None else None)
                       for i, (n, a) in enumerate(zip(names, args))]
        self.arguments = list(zip(args, kernel_args))
        if typed is not None:
            typed.bind(self.module, self.scheduler.spin)
            body = functools.partial(typed.kernel.function, *kernel_args)
            cooperative = typed.cooperative
            code = typed.kernel.function.__code__
            names = _code_names(tuple(f.function.__code__ for f in typed.functions))
        else:
            body = functools.partial(self.fn, *kernel_args)
            names = _names_called(self.fn)
            code, cooperative = self.fn.__code__, "this_grid" in names
        if "barrier" in self.settings.checks and any(n.startswith("shfl_") for n in names):
            self.scheduler.exit_code = code  # a lane that reads an exited lane is told where that one exited
        if self.adapter.is_debug(self.kernel):
            body = _raising_on_division_by_zero(body)
        _active, _active_thread = self, threading.get_ident()
        blocks = None
        try:
            if typed is None:
                self._swap_cuda_module(self.fn)
            order = self._block_order()
            count = self.grid_dim[0] * self.grid_dim[1] * self.grid_dim[2]
            if cooperative and count > max_cooperative_blocks(self.block_dim):
                raise ValueError(
                    f"kernel '{self.name}' synchronises its grid, so its launch is cooperative: all "
                    f"{count} blocks must be resident at once, and at most "
                    f"{max_cooperative_blocks(self.block_dim)} blocks of {self.block_dim} threads fit (the "
                    "GPU's CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE); see "
                    "kernel.overloads[sig].max_cooperative_grid_blocks(blockdim)")
            if cooperative:
                blocks = [self._block(linear, idx) for linear, idx in order]
                self._run(blocks, body)
            else:
                for linear, idx in order:
                    blocks = [self._block(linear, idx)]
                    self._run(blocks, body)
            self.global_memory.report_pending()
        finally:
            self.scheduler.close(blocks)
            _active = _active_thread = None
            for globs, original in self._swapped.values():
                globs.update(original)
            for cell, original in self._swapped_cells.values():
                closures.set_cell_value(cell, original)
        for mask in self._unchecked_masks:
            mask[...] = True  # written by a kernel that ran unchecked: which elements, nobody knows
        for write_back in retr:
            write_back()

    def _run(self, blocks: list[Block], body) -> None:
        try:
            self.scheduler.run_blocks(blocks, body)
            for extension in self._extensions.values():
                extension.end_blocks(blocks)
            for tracker in self._shared_trackers:
                tracker.report_pending()
        except RaceError:
            raise
        except Exception as e:
            # an uninitialised read earlier in this interval is the likelier cause (its value was garbage)
            for report in [t.report_pending for t in self._shared_trackers] + [self.global_memory.report_pending]:
                try:
                    report()
                except UninitializedReadError as uninit:
                    if isinstance(e, SimulationError):
                        uninit.add_note(f"(and then: {type(e).__name__}: {str(e).splitlines()[0]})")
                    raise uninit from e
            raise
        finally:
            self._shared_trackers.clear()

    def call_device(self, kernel, args):
        """A device function (or a nested launch, which like the stock simulator we run as a call) inside a launch,
        reached from code that was not rewritten (typing off, or a device function passed around as a value)."""
        fn = adapter_of(kernel).python_function(kernel)
        self._swap_cuda_module(fn)
        return fn(*args)

    def _swap_cuda_module(self, fn) -> None:
        # Once per module per launch, not per call as the stock swapped_cuda_module does: device functions are
        # called in inner loops.
        globs = fn.__globals__
        modules = cuda_modules()
        for cell in closures.cells(fn):  # a kernel defined in a function that imported cuda itself
            value = closures.cell_value(cell)
            if id(cell) not in self._swapped_cells and any(value is m for m in modules):
                self._swapped_cells[id(cell)] = (cell, value)
                closures.set_cell_value(cell, self.module)
        if id(globs) in self._swapped:
            return
        original = {name: value for name, value in globs.items() if any(value is m for m in modules)}
        self._swapped[id(globs)] = (globs, original)
        for name in original:
            globs[name] = self.module

    def _block_order(self):
        """``(linear index, blockIdx)`` of every block in the order they run, made as they are needed (a list of a
        million ``Dim3`` would cost more than the checkers do)."""
        gx, gy, gz = self.grid_dim
        count = gx * gy * gz
        if self.scheduler.rng is None:
            linears = range(count)
        else:
            linears = array("q", range(count))
            self.scheduler.rng.shuffle(linears)
        for linear in linears:
            yield linear, Dim3(linear % gx, linear // gx % gy, linear // (gx * gy))

    def _block(self, linear: int, blockIdx: Dim3) -> Block:
        """A block about to run, with fresh shared memory (its tracker made when it first allocates some)."""
        block = Block(blockIdx, self.block_dim, linear, self._thread_indices)
        wrap = self._shared_wrapper(block) if self.check_shared else None
        block.shared = BlockSharedMemory(self.adapter.dynamic_shared_bytes(self.kernel), wrap)
        return block

    def _shared_wrapper(self, block: Block):
        """What a block's shared arrays are handed out as: checked arrays reporting to the block's tracker."""
        checks = self.memory_checks
        trackers: list = []

        def wrap(raw, label):
            if not self.track_shared:
                return CheckedArray(raw, label, checks)
            if not trackers:
                on = self.settings.checks
                tracker = SharedMemoryTracker(checks, "race" in on, "uninit" in on)
                trackers.append(tracker)
                self._shared_trackers.append(tracker)
                block.barrier_hooks.append(tracker.new_epoch)
            return TrackedArray(raw, label, checks, trackers[0])

        return wrap

    def _wrap_local(self, raw, label):
        return CheckedArray(raw, label, self.memory_checks)

    def _track_local(self, raw, label):
        return LocalTrackedArray(raw, label, self.memory_checks)

    def _kernel_arg(self, name: str, arg, retr: list, numba_type):
        """As the stock simulator converts an argument, then: raw numpy with checks off, a checked array with them
        on; in a typed kernel, scalars converted to their Numba type's canonical form (``numerics``: numpy
        integers become Python ints, a declared ``float32`` parameter gets an ``np.float32``)."""
        value, raw = self.adapter.convert_argument(self.kernel, arg, retr)
        if raw is None:
            convert = numerics.TO.get(str(numba_type)) if numba_type is not None else None
            if convert is not None and isinstance(value, (int, float, bool, np.number, np.bool_)):
                return convert(value)
            return value
        declared = getattr(numba_type, "dtype", None)
        if declared is not None and str(declared) != str(raw.dtype) and str(declared) in numerics.NUMS:
            raw = raw.view(str(declared))  # a signature's element type: the same bits, read as that type
        found = self.adapter.written_mask(raw)
        if not self.check_global:
            if found is not None:
                self._unchecked_masks.append(found[0])
            return raw
        # one address range per argument: each argument is its own copy, as on a GPU
        self._checked_args += 1
        mask, first = found if found is not None else (None, 0)
        label = ArrayLabel(name, "global", raw, self._checked_args << GLOBAL_RANGE_BITS, mask, first)
        tracker = self.global_memory if ("race" in self.settings.checks or mask is not None) else None
        if mask is not None and "uninit" in self.settings.checks:
            return GlobalTrackedArray(raw, label, self.memory_checks, self.global_memory)
        return CheckedArray(raw, label, self.memory_checks, tracker)


def _check_launch(name: str, grid, block, max_threads: int | None) -> None:
    """A launch the CUDA driver would refuse is refused here too (the simulator would run it, or, for a zero or
    negative dimension, silently run nothing)."""
    problem = launch_problem(grid, block)
    threads = block[0] * block[1] * block[2]
    if problem is None and max_threads is not None and threads > max_threads:
        problem = (f"a block of {threads} threads is more than the {max_threads} of the kernel's "
                   "launch_bounds")
    if problem is not None:
        raise LaunchError(f"kernel '{name}' launched with grid {tuple(grid)} and block {tuple(block)}: {problem}; "
                          "a GPU refuses this launch (CUDA_ERROR_INVALID_VALUE)")


def _raising_on_division_by_zero(body):
    """A ``debug=True`` kernel's thread body: a float division by zero raises (numba-cuda's simulator raises
    ``FloatingPointError``; the GPU's debug build, ``ZeroDivisionError``) instead of giving inf. numpy's error state
    is per context, and each simulated thread runs in a context of its own, so it is set inside the thread."""

    def run():
        with np.errstate(divide="raise"):
            return body()

    return run


@functools.lru_cache(maxsize=1024)
def _code_names(codes: tuple) -> frozenset[str]:
    """The names ``codes`` (and the functions they define) refer to (asked at every launch: kept per code)."""
    names: set[str] = set()
    codes = list(codes)
    while codes:
        code = codes.pop()
        names.update(code.co_names)
        codes += [c for c in code.co_consts if hasattr(c, "co_names")]
    return frozenset(names)


def _names_called(fn, depth: int = 0) -> set[str]:
    """The names a kernel run without the front end refers to, with those of the device functions it calls: whether
    it synchronises the grid (``this_grid``: then its launch is cooperative), whether it shuffles. (Typed launches
    know the device functions from numba.)"""
    names = set(_code_names((fn.__code__,)))
    if depth < 8:
        for name in list(names):
            device = device_function(fn.__globals__.get(name))
            if device is not None:
                names |= _names_called(device[0], depth + 1)
    return names
