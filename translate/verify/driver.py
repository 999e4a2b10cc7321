"""A minimal ctypes binding of the CUDA driver API (``libcuda.so.1``): device memory, copies, events, device facts.

Verification runs the candidate C through this, never through Numba: the candidate's buffers are allocated here,
separately from the Numba reference's, and a deployed ``.so`` can be driven the same way with nothing but ctypes.
Everything runs in the device's primary context, which the CUDA runtime linked into each ``.so`` (and Numba, and
PyTorch) also use, so pointers are shared between them.

This module imports nothing but the standard library and numpy.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np

CUdeviceptr = ctypes.c_uint64

_lock = threading.Lock()
_lib: Any = None  # ctypes.CDLL of libcuda once loaded
_ctx: ctypes.c_void_p | None = None
_device: int | None = None


class CudaError(RuntimeError):
    def __init__(self, call: str, code: int):
        self.call, self.code = call, code
        super().__init__(f"{call} failed: {_error_name(code)} ({code})")


def _error_name(code: int) -> str:
    if _lib is None:
        return f"CUDA error {code}"
    name = ctypes.c_char_p()
    if _lib.cuGetErrorName(code, ctypes.byref(name)) == 0 and name.value:
        return name.value.decode()
    return f"CUDA error {code}"


def _check(call: str, code: int) -> None:
    if code != 0:
        raise CudaError(call, code)


def load_driver() -> ctypes.CDLL:
    """``libcuda.so.1``; an ``OSError`` when no NVIDIA driver is installed."""
    global _lib
    if _lib is None:
        _lib = ctypes.CDLL("libcuda.so.1")
    return _lib


def available() -> bool:
    """True when a driver is installed and reports at least one device."""
    return device_count() > 0


def device_count() -> int:
    """How many devices the driver reports (0 without a driver); makes no context."""
    try:
        lib = load_driver()
    except OSError:
        return 0
    if lib.cuInit(0) != 0:
        return 0
    n = ctypes.c_int()
    return n.value if lib.cuDeviceGetCount(ctypes.byref(n)) == 0 else 0


def init(device: int = 0) -> None:
    """Make ``device``'s primary context current on this thread (idempotent)."""
    global _ctx, _device
    with _lock:
        lib = load_driver()
        if _ctx is None:
            _check("cuInit", lib.cuInit(0))
            dev = ctypes.c_int()
            _check("cuDeviceGet", lib.cuDeviceGet(ctypes.byref(dev), device))
            ctx = ctypes.c_void_p()
            _check("cuDevicePrimaryCtxRetain", lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev))
            _ctx, _device = ctx, dev.value
        _check("cuCtxSetCurrent", lib.cuCtxSetCurrent(_ctx))


def synchronize() -> None:
    init()
    _check("cuCtxSynchronize", _lib.cuCtxSynchronize())


def device_info() -> dict[str, Any]:
    """Name, compute capability, driver version of device 0 (``{"device": "NVIDIA H200", ...}``)."""
    init()
    lib = _lib
    name = ctypes.create_string_buffer(256)
    _check("cuDeviceGetName", lib.cuDeviceGetName(name, 256, _device))
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check("cuDeviceGetAttribute", lib.cuDeviceGetAttribute(ctypes.byref(major), 75, _device))  # CC_MAJOR
    _check("cuDeviceGetAttribute", lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, _device))  # CC_MINOR
    sms = ctypes.c_int()
    _check("cuDeviceGetAttribute", lib.cuDeviceGetAttribute(ctypes.byref(sms), 16, _device))  # MULTIPROCESSOR_COUNT
    version = ctypes.c_int()
    _check("cuDriverGetVersion", lib.cuDriverGetVersion(ctypes.byref(version)))
    return {
        "device": name.value.decode(),
        "compute_capability": f"{major.value}.{minor.value}",
        "arch": f"sm_{major.value}{minor.value}",
        "multiprocessors": sms.value,
        "driver": f"{version.value // 1000}.{(version.value % 1000) // 10}",
    }


class DeviceBuffer:
    """``nbytes`` of device memory, freed when collected (or by ``free()``)."""

    def __init__(self, nbytes: int):
        init()
        self.nbytes = int(nbytes)
        self.ptr = CUdeviceptr(0)
        # never allocate 0 bytes: a size-0 array still gets a valid, distinct pointer
        _check("cuMemAlloc", _lib.cuMemAlloc_v2(ctypes.byref(self.ptr), max(self.nbytes, 16)))

    @property
    def address(self) -> int:
        return int(self.ptr.value)

    def upload(self, host: np.ndarray) -> None:
        host = np.ascontiguousarray(host)
        if host.nbytes != self.nbytes:
            raise ValueError(f"upload: {host.nbytes} bytes into a {self.nbytes}-byte buffer")
        if self.nbytes:
            _check("cuMemcpyHtoD", _lib.cuMemcpyHtoD_v2(self.ptr, host.ctypes.data_as(ctypes.c_void_p), self.nbytes))

    def download(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
        out = np.empty(shape, dtype=dtype)
        if out.nbytes != self.nbytes:
            raise ValueError(f"download: {out.nbytes} bytes from a {self.nbytes}-byte buffer")
        if self.nbytes:
            _check("cuMemcpyDtoH", _lib.cuMemcpyDtoH_v2(out.ctypes.data_as(ctypes.c_void_p), self.ptr, self.nbytes))
        return out

    def free(self) -> None:
        if self.ptr.value and _lib is not None:
            _lib.cuMemFree_v2(self.ptr)
            self.ptr = CUdeviceptr(0)

    def __del__(self):
        try:
            self.free()
        except Exception:
            pass


class DeviceArray:
    """A numpy array's twin on the device: ``DeviceArray.from_host(a)``, ``.to_host()``, ``.address``."""

    def __init__(self, shape: tuple[int, ...], dtype: Any):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype)
        self.buffer = DeviceBuffer(int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize)

    @classmethod
    def from_host(cls, host: np.ndarray) -> DeviceArray:
        d = cls(host.shape, host.dtype)
        d.buffer.upload(host)
        return d

    @classmethod
    def filled(cls, shape: tuple[int, ...], dtype: Any, value: Any) -> DeviceArray:
        return cls.from_host(np.full(shape, value, dtype=dtype))

    @property
    def address(self) -> int:
        return self.buffer.address

    def to_host(self) -> np.ndarray:
        return self.buffer.download(self.shape, self.dtype)

    def free(self) -> None:
        self.buffer.free()
