"""The one place numbakern's simulator touches numba-cuda's simulator (``numba.cuda.simulator``) internals.

numbakern runs kernels on its own engine, but the ``@cuda.jit`` objects, device arrays and argument hints that
user code creates in simulator mode are numba-cuda's. Everything the engine needs from them goes through here:

- the kernel object (``FakeCUDAKernel``): its Python function, launch configuration, options; the hook that
  routes ``kernel[grid, block](...)`` to numbakern's engine;
- device arrays (``FakeCUDAArray``): their numpy buffers; allocations without data (``cuda.device_array``)
  marked as uninitialised for the checker;
- argument hints (``cuda.In/Out/InOut``) and extensions, converted as the stock simulator converts them;
- the stock ``cuda`` module API (math helpers, vector types, fp16) that numbakern's module extends, and the
  stock engine's shared/local arrays, patched to accept numpy scalar dtypes.

A front end without numba-cuda's simulator (numba-cuda-mlir) would provide these few functions for its own
kernel objects and arrays; nothing else in the engine names ``numba.cuda.simulator``.
"""

from __future__ import annotations

import functools
import sys
from types import FunctionType

import numpy as np
from numba.core.dispatcher import Dispatcher as _CPUDispatcher
from numba.cuda.simulator import kernel as _kernel
from numba.cuda.simulator import kernelapi as _kernelapi
from numba.cuda.simulator.args import ArgHint, In, InOut
from numba.cuda.simulator.cudadrv import devicearray as _devicearray
from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray, FakeWithinKernelCUDAArray
from numba.cuda.simulator.kernelapi import Dim3, FakeCUDAAtomic, FakeCUDAConst, FakeCUDAFp16, FakeCUDAModule
from numba.cuda.simulator.vector_types import SimulatedVectorType, vector_types

from ..launch import launch_bounds_threads
from .intrinsics import INTRINSIC_ATTR
from .written import mask_view as _mask_view
from .written import track as _track
from .written import written_mask

__all__ = [
    "Dim3", "FakeCUDAAtomic", "FakeCUDAConst", "FakeCUDAFp16", "FakeCUDAModule", "vector_type_names", "KernelObject",
    "convert_argument", "device_function", "max_threads", "written_mask",
    "install_launch_hook", "is_kernel_object", "patch_allocations", "patch_stock_arrays", "stock_call",
]

KernelObject = _kernel.FakeCUDAKernel
stock_call = _kernel.FakeCUDAKernel.__call__


def vector_type_names() -> dict:
    """``cuda.float32x4`` and the other vector types (and their aliases) of the stock ``cuda`` module."""
    names = {}
    for name, vector_type in vector_types.items():
        names[name] = vector_type
        for alias in vector_type.aliases:
            names[alias] = vector_type
    return names


def install_launch_hook(call, max_cooperative_blocks=None) -> None:
    """``kernel[grid, block](*args)`` (and a device function's call) runs ``call(kernel, *args)``;
    ``kernel.overloads[sig].max_cooperative_grid_blocks(blockdim)`` answers ``max_cooperative_blocks(blockdim)``
    (the stock engine runs one block at a time, so it says 1)."""
    _kernel.FakeCUDAKernel.__call__ = call if call is not None else stock_call
    if max_cooperative_blocks is None:
        _kernel.FakeOverload.max_cooperative_grid_blocks = _stock_max_blocks
    else:
        _kernel.FakeOverload.max_cooperative_grid_blocks = (
            lambda self, blockdim, dynsmemsize=0: max_cooperative_blocks(blockdim))


_stock_max_blocks = _kernel.FakeOverload.max_cooperative_grid_blocks


def is_kernel_object(obj) -> bool:
    return isinstance(obj, _kernel.FakeCUDAKernel)


def device_function(obj):
    """``(python function, cuda.jit options)`` for a device function object (or a kernel's dispatcher, which a
    kernel may call as a device function), else None."""
    if isinstance(obj, _kernel.FakeCUDAKernel):
        return obj.fn, {}
    return None


def recognize(obj):
    """The front end's recogniser (``numbakern.frontend.request``): device functions are rebuilt as
    ``cuda.jit(device=True)`` functions in the helper process; a simulated device array (a module constant, say)
    travels as its numpy data, which numba types as an array of the same dtype and shape."""
    if isinstance(obj, _kernel.FakeCUDAKernel):
        # a device function, or a kernel's dispatcher (cuda.jit(f)) called from a kernel: numba-cuda compiles it as
        # a device function there
        return ("device", obj.fn, {})
    if isinstance(obj, FakeCUDAArray):
        return ("value", obj._ary)
    if isinstance(obj, _CPUDispatcher):
        # a CPU @numba.jit function called from a kernel: numba-cuda compiles it as a device function
        return ("device", obj.py_func, {})
    if _is_real_device_function(obj):
        # a @cuda.jit(device=True) function decorated before numbakern switched numba to the simulator
        return ("device", obj.py_func, {})
    if isinstance(obj, type) and issubclass(obj, SimulatedVectorType):
        return ("import", "numba.cuda", obj.name)
    if isinstance(obj, FunctionType):
        # the simulator's stand-in for a GPU intrinsic (numbakern.mma): the helper takes the intrinsic itself
        intrinsic = getattr(obj, INTRINSIC_ATTR, None)
        if intrinsic is not None:
            return ("import", *intrinsic)
        overloads = overloads_of(obj)
        if overloads:
            return ("overloaded", overloads)
    return None


def overloads_of(func) -> list:
    """``(overload function, overload() options)`` of each ``@overload(func)`` registered in this process (numba-cuda
    registers them in simulator mode too, for the helper to repeat)."""
    from numba.cuda.typing.templates import _OverloadFunctionTemplate, builtin_registry

    found = []
    for key, typ in _registered_globals(builtin_registry):
        if key is not func:
            continue
        for template in getattr(typ, "templates", ()):
            if isinstance(template, type) and issubclass(template, _OverloadFunctionTemplate):
                options = {"jit_options": {k: v for k, v in template._jit_options.items() if k != "inline"},
                           "strict": template._strict, "inline": template._inline._inline,
                           "prefer_literal": template.prefer_literal, **template.metadata}
                found.append((template._overload_func, options))
    return found


def _registered_globals(registry) -> list:
    # the registry's list only grows: index it again when it has
    cached = _globals_index.get(id(registry))
    if cached is None or cached[0] != len(registry.globals):
        cached = _globals_index[id(registry)] = (len(registry.globals), [
            (k, t) for k, t in registry.globals if isinstance(k, FunctionType)])
    return cached[1]


_globals_index: dict = {}


def _is_real_device_function(obj) -> bool:
    """A device function of numba's real CUDA target (a ``numba.cuda.dispatcher.CUDADispatcher``), recognised by its
    class's name: once numba is switched to the simulator, that module name belongs to the simulator's dispatcher."""
    cls = type(obj)
    return (cls.__name__ == "CUDADispatcher" and cls.__module__ == "numba.cuda.dispatcher"
            and bool(getattr(obj, "targetoptions", {}).get("device")))


def launch_dims(kernel):
    """``(grid, block)`` as three ints each, checked as numba-cuda checks a launch's dimensions."""
    from numba.cuda.errors import normalize_kernel_dimensions

    return normalize_kernel_dimensions(kernel.grid_dim, kernel.block_dim)


def convert_argument(kernel, arg, retr: list):
    """An argument as the stock simulator converts it: extensions first, host arrays copied to a device array
    that is written back after the launch (``retr``), hints applied. Returns ``(value, numpy buffer or None)``:
    the buffer is the device memory a kernel sees for an array argument."""
    _, arg = functools.reduce(
        lambda ty_val, extension: extension.prepare_args(*ty_val, stream=0, retr=retr), kernel.extensions,
        (None, arg))
    if isinstance(arg, np.ndarray) and arg.ndim > 0:
        if not arg.flags.writeable:
            # numba types it as a readonly array: the kernel cannot write it, so nothing is copied back (and the
            # device copy stays read-only for kernels run without the front end)
            device = In(arg).to_device(retr)
            device._ary.flags.writeable = False
            return device._ary, device._ary
        arg = InOut(arg).to_device(retr)  # a copy written back after the launch, as on a GPU
    elif isinstance(arg, ArgHint):
        arg = arg.to_device(retr)
    elif isinstance(arg, np.void):
        return FakeWithinKernelCUDAArray(FakeCUDAArray(arg)), None
    if not isinstance(arg, FakeCUDAArray):
        return arg, None
    raw = arg._ary
    if raw.dtype.fields is not None or raw.ndim == 0:
        return FakeWithinKernelCUDAArray(arg), None  # records keep the stock attribute-style field access
    return raw, raw


def typing_value(arg):
    """What numba's ``typeof`` should see for an argument, as the real dispatcher types it."""
    if isinstance(arg, ArgHint):
        return arg.value
    return arg


# -- device allocations without data (their written-element masks: ``written``) -------------------------------------

def patch_allocations() -> None:
    """``cuda.device_array``/``device_array_like``/``mapped_array`` allocations start unwritten (the
    uninitialised-read check reads their masks); host writes into them (``d[i] = v``, ``copy_to_device``) mark
    what they write."""
    if getattr(_devicearray, "_numbakern_patched", False):
        return
    stock_device_array = _devicearray.device_array

    @functools.wraps(stock_device_array)
    def device_array(*args, **kwargs):
        return _track(stock_device_array(*args, **kwargs))

    stock_setitem = FakeCUDAArray.__setitem__
    stock_copy_to_device = FakeCUDAArray.copy_to_device

    def __setitem__(self, idx, val):
        result = stock_setitem(self, idx, val)
        if type(self._ary) is np.ndarray:
            view = _mask_view(self._ary)
            if view is not None:
                view[idx] = True
        return result

    def copy_to_device(self, ary, stream=0):
        result = stock_copy_to_device(self, ary, stream)
        view = _mask_view(self._ary) if type(self._ary) is np.ndarray else None
        if view is not None:
            view[...] = True
        return result

    FakeCUDAArray.__setitem__ = __setitem__
    FakeCUDAArray.copy_to_device = copy_to_device
    _devicearray.device_array = device_array
    for module_name in ("numba.cuda.simulator", "numba.cuda.simulator.api", "numba.cuda"):
        module = sys.modules.get(module_name)
        if module is not None and getattr(module, "device_array", None) is stock_device_array:
            module.device_array = device_array
    _devicearray._numbakern_patched = True


# -- signatures given to cuda.jit -----------------------------------------------------------------------------------

SIGNATURES_ATTR = "_numbakern_signatures"
#: the ``launch_bounds`` a kernel was declared with (the most threads per block it may be launched with)
MAX_THREADS_ATTR = "_numbakern_max_threads"
#: ``cuda.jit`` options that steer only how a GPU build is generated: the stock simulator's ``jit`` refuses them
#: (a TypeError where ``@cuda.jit(max_registers=40)`` is decorated); numbakern's accepts them as the GPU's does
CODEGEN_OPTIONS = ("max_registers", "launch_bounds", "lineinfo", "forceinline", "lto")


def declared_signatures(kernel) -> tuple[list, bool]:
    """The argument types of each signature a kernel was declared with (``@cuda.jit("void(float32[:])")``), and
    whether it was one signature rather than a list: numba-cuda then launches that one without checking the
    arguments' types. The stock simulator drops them; numbakern types launches with them as numba-cuda does."""
    return getattr(kernel, SIGNATURES_ATTR, ([], False))


def max_threads(kernel) -> int | None:
    """The most threads per block a launch of ``kernel`` may have by its ``launch_bounds`` (None: no bound)."""
    return getattr(kernel, MAX_THREADS_ATTR, None)


def patch_jit() -> None:
    """``cuda.jit`` takes the GPU's options (``max_registers``, ``launch_bounds``, ``lineinfo``, ``extensions``...)
    and keeps a kernel's signatures and launch bounds on the kernel object it makes."""
    from numba.cuda.simulator import api

    if getattr(api.jit, "_numbakern_patched", False):
        return
    stock_jit = api.jit

    @functools.wraps(stock_jit)
    def jit(func_or_sig=None, *args, **kwargs):
        from numba.cuda.core import sigutils

        codegen = {k: kwargs.pop(k) for k in CODEGEN_OPTIONS if k in kwargs}
        extensions = kwargs.pop("extensions", None)
        is_function = func_or_sig is not None and callable(func_or_sig) and \
            not isinstance(func_or_sig, (str, list)) and not sigutils.is_signature(func_or_sig)
        sigs = [] if func_or_sig is None or is_function else \
            func_or_sig if isinstance(func_or_sig, list) else [func_or_sig]
        wrap = stock_jit(None if is_function else func_or_sig, *args, **kwargs)

        def decorate(fn):
            kernel = wrap(fn)
            if extensions:
                kernel.extensions = list(extensions)
            bound = launch_bounds_threads(codegen.get("launch_bounds"))
            if bound is not None:
                setattr(kernel, MAX_THREADS_ATTR, bound)
            try:
                declared = [tuple(sigutils.normalize_signature(s)[0]) for s in sigs]
            except Exception:  # noqa: BLE001 - a signature numba cannot parse: typed from the arguments instead
                return kernel
            if declared:
                setattr(kernel, SIGNATURES_ATTR, (declared, not isinstance(func_or_sig, list)))
            return kernel

        return decorate(func_or_sig) if is_function else decorate

    jit._numbakern_patched = True
    for module_name in ("numba.cuda.simulator.api", "numba.cuda.simulator", "numba.cuda"):
        module = sys.modules.get(module_name)
        if module is not None and getattr(module, "jit", None) is stock_jit:
            module.jit = jit


# -- the stock engine ----------------------------------------------------------------------------------------------


def patch_stock_arrays(shared_array, local_array) -> None:
    """The stock engine's ``cuda.shared.array`` / ``cuda.local.array`` (numpy scalar dtypes accepted)."""
    _kernelapi.FakeCUDAShared.array = shared_array
    _kernelapi.FakeCUDALocal.array = local_array


# -- the kernel object -----------------------------------------------------------------------------------------


def python_function(kernel):
    return kernel.fn


def is_device(kernel) -> bool:
    return bool(kernel._device)


def dynamic_shared_bytes(kernel) -> int:
    return kernel.dynshared_size


def is_debug(kernel) -> bool:
    return bool(kernel._debug)


def can_type(kernel) -> bool:
    """numba-cuda's front end is always here to type its own kernels."""
    return True
