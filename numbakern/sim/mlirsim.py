"""numba-cuda-mlir kernels on numbakern's engine: the adapter that ``cudasim`` is for numba-cuda.

numba-cuda-mlir has no simulator, so numbakern supplies everything its ``cuda`` module would hand a host program
on a GPU: ``install()`` replaces ``numba_cuda_mlir.cuda.jit`` with one that makes ``SimKernel`` objects, and its
device-array API (``to_device``, ``device_array``, ``pinned_array``, ``synchronize``...) with ``DeviceArray`` (a
numpy buffer). A launch goes to the same engine, checkers and scheduler as a numba-cuda kernel's (the engine asks
this module, instead of ``cudasim``, about the kernel object and its arguments). Nothing here imports numba.

Typing: with numba-cuda installed too, launches are typed by numba-cuda's front end on the same source (the
``cuda`` module a kernel reads is handed to it as ``numba.cuda``). Without numba-cuda, by numba-cuda-mlir's own front
end, run without a driver up to its type inference (``numbakern.frontend.mlir_typing``): the same facts, the same
typed kernel, a rejection is its ``TypingError``.
"""

from __future__ import annotations

import copy
import functools
import importlib.abc
import importlib.util
import sys
import warnings

import numpy as np

from ..frontend import mlir_shared_memory, mlir_typing, typer
from ..launch import launch_bounds_threads
from .errors import UntypedLaunchWarning
from .written import mask_view, track, written_mask

__all__ = ["DeviceArray", "SimKernel", "install", "written_mask"]

MLIR_CUDA = "numba_cuda_mlir.cuda"

#: engine hook: ``call(kernel, *args)`` runs a launch or a device-function call (set by ``install``)
_launch = None


# -- the kernel object -------------------------------------------------------------------------------------------


class SimKernel:
    """What ``numba_cuda_mlir.cuda.jit`` returns in the simulator: the Python function and its launch settings."""

    def __init__(self, fn, device: bool = False, debug: bool = False, options: dict | None = None):
        self.fn = self.py_func = fn
        self._device = bool(device)
        self._debug = bool(debug)
        self.options = dict(options or {})
        self.extensions = ()
        self.grid_dim = self.block_dim = None
        self.dynshared_size = 0
        functools.update_wrapper(self, fn)

    def __repr__(self):
        return f"<numbakern simulated {'device function' if self._device else 'kernel'} {self.fn.__qualname__}>"

    def __getitem__(self, launch):
        if self._device:
            raise TypeError(f"device function '{self.fn.__name__}' cannot be launched: call it from a kernel")
        if not isinstance(launch, tuple) or not 2 <= len(launch) <= 4:
            raise ValueError(f"kernel '{self.fn.__name__}': a launch is kernel[grid, block] or "
                             f"kernel[grid, block, stream, dynamic shared bytes], got kernel[{launch!r}]")
        configured = copy.copy(self)
        configured.grid_dim, configured.block_dim = launch[0], launch[1]
        configured.dynshared_size = int(launch[3]) if len(launch) == 4 else 0
        if configured.dynshared_size < 0:
            raise ValueError(f"kernel '{self.fn.__name__}': dynamic shared memory must be >= 0 bytes, "
                             f"got {configured.dynshared_size}")
        return configured

    def configure(self, griddim, blockdim, stream=0, sharedmem=0):
        return self[griddim, blockdim, stream, sharedmem]

    def forall(self, ntasks, tpb=0, stream=0, sharedmem=0):
        tpb = int(tpb) or 128
        return self[(int(ntasks) + tpb - 1) // tpb, tpb, stream, sharedmem]

    def __call__(self, *args):
        if not self._device and self.grid_dim is None:
            raise ValueError(f"kernel '{self.fn.__name__}' needs a launch configuration: "
                             f"{self.fn.__name__}[blocks, threads](...)")
        if not self._device:  # what this kernel would do on a GPU that the simulator does not reproduce
            mlir_shared_memory.warn_if_affected(self.fn, stacklevel=3)
        return _launch(self, *args)


def is_kernel_object(obj) -> bool:
    return isinstance(obj, SimKernel)


def python_function(kernel):
    return kernel.fn


def is_device(kernel) -> bool:
    return kernel._device


def is_debug(kernel) -> bool:
    return kernel._debug


def dynamic_shared_bytes(kernel) -> int:
    return kernel.dynshared_size


def launch_dims(kernel):
    """``(grid, block)`` as three positive ints each, checked as a GPU launch checks them."""
    return _dims(kernel, "grid", kernel.grid_dim), _dims(kernel, "block", kernel.block_dim)


def _dims(kernel, what: str, value) -> tuple[int, int, int]:
    dims = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, (int, np.integer)) for d in dims):
        raise ValueError(f"kernel '{kernel.fn.__name__}': the {what} dimensions must be 1 to 3 ints, got {value!r}")
    dims = tuple(int(d) for d in dims) + (1,) * (3 - len(dims))
    if min(dims) < 1:
        raise ValueError(f"kernel '{kernel.fn.__name__}': the {what} dimensions must be positive, got {value!r}")
    return dims


def max_threads(kernel) -> int | None:
    """The most threads per block a launch may have by the kernel's ``launch_bounds`` (None: no bound)."""
    return launch_bounds_threads(kernel.options.get("launch_bounds"))


def stock_call(kernel, *args):
    """A device function called from host code: plain Python, as in numba-cuda's simulator."""
    return kernel.fn(*args)


def declared_signatures(kernel):
    return [], False


def device_function(obj):
    if isinstance(obj, SimKernel) and obj._device:
        return obj.fn, {}
    return None


def recognize(obj):
    """For the front end typing an mlir kernel (``numbakern.frontend.request``): its ``cuda`` module is the typer's
    (numba-cuda's where it is installed, else numba-cuda-mlir's own, unpatched in the helper process), its device
    functions are rebuilt there, its device arrays travel as their numpy data."""
    if obj is sys.modules.get(MLIR_CUDA):
        return ("import", *typer.CUDA[typer.name()])
    if isinstance(obj, SimKernel) and obj._device:
        return ("device", obj.fn, {})
    if isinstance(obj, DeviceArray):
        return ("value", obj._ary)
    return None


def can_type(kernel) -> bool:
    """Whether a front end is here to type the launch: numba-cuda's, else numba-cuda-mlir's own (``typer``,
    ``mlir_typing``); said once per kernel when neither can (a numba-cuda-mlir without the stages it is typed by)."""
    missing = mlir_typing.missing_stages() if typer.is_mlir() else None
    if typer.name() is not None and missing is None:
        return True
    if not getattr(kernel.fn, "_numbakern_untyped_noted", False):
        kernel.fn._numbakern_untyped_noted = True
        warnings.warn(UntypedLaunchWarning(
            f"numbakern: kernel '{kernel.fn.__name__}' runs with Python's arithmetic (numpy's for numpy scalars), "
            f"not its front end's types: {missing or 'no front end is installed to type it'}"), stacklevel=4)
    return False


# -- arguments ---------------------------------------------------------------------------------------------------


def _hint(arg):
    """``(value, copy back?)`` for numba-cuda-mlir's ``cuda.In/Out/InOut`` argument hints, else None."""
    for cls in type(arg).__mro__:
        if cls.__module__.startswith("numba_cuda_mlir.") and cls.__name__ == "ArgHint":
            return arg.value, type(arg).__name__ != "In"
    return None


def typing_value(arg):
    hinted = _hint(arg)
    if hinted is not None:
        return hinted[0]
    if isinstance(arg, DeviceArray):
        return arg._ary
    return arg


def convert_argument(kernel, arg, retr: list):
    """``(value, numpy buffer or None)`` as a GPU launch sees the argument: a host array is copied to the device
    and copied back after the launch (not for ``cuda.In`` nor a read-only array, which the kernel cannot write)."""
    hinted = _hint(arg)
    copy_back = True
    if hinted is not None:
        arg, copy_back = hinted
    if isinstance(arg, DeviceArray):
        return arg._ary, arg._ary
    if isinstance(arg, np.ndarray) and arg.ndim > 0:
        device = arg.copy()
        if not arg.flags.writeable or not copy_back:
            device.flags.writeable = arg.flags.writeable
        else:
            retr.append(functools.partial(np.copyto, arg, device))
        return device, device
    if isinstance(arg, np.ndarray):  # a 0-d array: passed as its value
        return arg[()], None
    return arg, None


# -- device memory -----------------------------------------------------------------------------------------------


class DeviceArray:
    """A device array in the simulator: a numpy buffer with numba-cuda-mlir's ``DeviceNDArray`` host API."""

    __array_priority__ = 1

    def __init__(self, ary: np.ndarray):
        self._ary = ary

    shape = property(lambda self: self._ary.shape)
    dtype = property(lambda self: self._ary.dtype)
    size = property(lambda self: self._ary.size)
    ndim = property(lambda self: self._ary.ndim)
    strides = property(lambda self: self._ary.strides)
    nbytes = property(lambda self: self._ary.nbytes)
    T = property(lambda self: DeviceArray(self._ary.T))

    def __repr__(self):
        return f"<numbakern simulated device array shape={self.shape} dtype={self.dtype}>"

    def __len__(self):
        return len(self._ary)

    def __array__(self, dtype=None, copy=None):
        return self._ary if dtype is None else self._ary.astype(dtype)

    def __getitem__(self, idx):
        value = self._ary[idx]
        return DeviceArray(value) if isinstance(value, np.ndarray) and value.ndim else value

    def __setitem__(self, idx, value):
        self._ary[idx] = np.asarray(value._ary if isinstance(value, DeviceArray) else value)
        view = mask_view(self._ary)
        if view is not None:
            view[idx] = True

    def copy_to_host(self, ary=None, stream=0):
        if ary is None:
            return self._ary.copy()
        if ary.shape != self.shape or ary.dtype != self.dtype:
            raise ValueError(f"copy_to_host(ary): ary must have shape {self.shape} and dtype {self.dtype}, "
                             f"got {ary.shape} and {ary.dtype}")
        np.copyto(ary, self._ary)
        return ary

    def copy_to_device(self, ary, stream=0):
        source = ary._ary if isinstance(ary, DeviceArray) else np.asarray(ary)
        if source.shape != self.shape:
            raise ValueError(f"copy_to_device(ary): ary must have shape {self.shape}, got {source.shape}")
        np.copyto(self._ary, source, casting="same_kind")
        view = mask_view(self._ary)
        if view is not None:
            view[...] = True

    def is_c_contiguous(self) -> bool:
        return bool(self._ary.flags.c_contiguous)

    def is_f_contiguous(self) -> bool:
        return bool(self._ary.flags.f_contiguous)

    def reshape(self, *shape, order="C"):
        return DeviceArray(self._ary.reshape(*shape, order=order))

    def ravel(self, order="C"):
        return DeviceArray(self._ary.ravel(order=order))

    def view(self, dtype):
        return DeviceArray(self._ary.view(dtype))

    def get(self):
        return self.copy_to_host()


def to_device(obj, stream=0, copy=True, to=None):
    if to is not None:
        to.copy_to_device(obj)
        return to
    if isinstance(obj, DeviceArray):
        return obj
    return DeviceArray(np.array(obj, copy=True, subok=False))


def device_array(shape, dtype=np.float64, strides=None, order="C", stream=0):
    from .dtypes import as_dtype

    return track(DeviceArray(np.empty(shape, as_dtype(dtype), order=order)))


def device_array_like(ary, stream=0):
    return device_array(ary.shape, ary.dtype, order="F" if ary.flags.f_contiguous and ary.ndim > 1 else "C")


def host_array(shape, dtype=np.float64, strides=None, order="C", **_):
    from .dtypes import as_dtype

    return np.empty(shape, as_dtype(dtype), order=order)


def host_array_like(ary, **_):
    return np.empty_like(ary)


def synchronize():
    pass  # launches finish before they return


# -- installing ----------------------------------------------------------------------------------------------------


def jit(func_or_sig=None, device=False, debug=False, **options):
    """``cuda.jit`` of numba-cuda-mlir in the simulator: the function, run by numbakern's engine. A signature is
    accepted and not enforced (the launch's arguments are typed as given)."""
    if callable(func_or_sig) and not isinstance(func_or_sig, (str, list, tuple)):
        return SimKernel(func_or_sig, device=device, debug=debug, options=options)

    def decorate(fn):
        return SimKernel(fn, device=device, debug=debug, options=options)

    return decorate


_API = {
    "jit": jit, "to_device": to_device, "device_array": device_array, "device_array_like": device_array_like,
    "pinned_array": host_array, "pinned_array_like": host_array_like, "mapped_array": host_array,
    "mapped_array_like": host_array_like, "managed_array": host_array, "synchronize": synchronize,
}


def _patch(module) -> None:
    if getattr(module, "_numbakern_simulated", False):
        return
    for name, value in _API.items():
        setattr(module, name, value)
    module._numbakern_simulated = True
    _redirect_real_dispatchers()


def _redirect_real_dispatchers() -> None:
    """Kernels decorated by numba-cuda-mlir's own ``jit`` before numbakern was imported launch here too (each gets
    a ``SimKernel`` of the same function, made once)."""
    descriptor = sys.modules.get("numba_cuda_mlir.descriptor")
    cls = getattr(descriptor, "MLIRDispatcher", None)
    if cls is None or getattr(cls, "_numbakern_redirected", False):
        return

    def simulated(self):
        kernel = self.__dict__.get("_numbakern_simulated")
        if kernel is None:
            options = getattr(self, "targetoptions", {}) or {}
            kernel = self.__dict__["_numbakern_simulated"] = SimKernel(
                self.py_func, device=bool(options.get("device")), debug=bool(options.get("debug")))
        return kernel

    cls.__getitem__ = lambda self, launch: simulated(self)[launch]
    cls.configure = lambda self, g, b, stream=0, sharedmem=0: simulated(self)[g, b, stream, sharedmem]
    cls.forall = lambda self, n, tpb=0, stream=0, sharedmem=0: simulated(self).forall(n, tpb, stream, sharedmem)
    cls.__call__ = lambda self, *args, **kwargs: simulated(self)(*args, **kwargs)
    cls._numbakern_redirected = True


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Patches ``numba_cuda_mlir.cuda`` when it is first imported (a script may import numbakern first)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != MLIR_CUDA:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            _patch(module)

        spec.loader.exec_module = exec_and_patch
        return spec


_finder = _PatchOnImport()


def install(launch) -> None:
    """numba-cuda-mlir's ``cuda`` API runs here from now on (``launch(kernel, *args)`` runs a launch): patched at
    once if numba-cuda-mlir is imported, else when it is (idempotent)."""
    global _launch
    _launch = launch
    module = sys.modules.get(MLIR_CUDA)
    if module is not None:
        _patch(module)
    elif _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
