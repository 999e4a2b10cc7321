"""Running the candidate side of a verification case on the device, with honest buffers: ``candidate_run`` calls
the compiled C through its ``extern "C"`` launcher (ctypes), in buffers of its own (``driver.DeviceArray``), outputs
poisoned first, every input's SHA-256 taken after the run.

The reference side, the Numba kernel in buffers of its own, is ``translate.verify.harness.numba_run``: this module
runs in the sandboxed child that loads candidates, which never imports numba. Imports numpy, ctypes and this
package's ``driver``/``abi``/``build`` only.
"""

from __future__ import annotations

import ctypes
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import abi, driver
from .build import build_shared_library

#: float poison per run: NaN for the first candidate run and the reference, a huge finite sentinel for the second
FLOAT_POISON = {"a": np.nan, "b": -3.0e38}
#: shared-memory fill patterns before each candidate run: a quiet NaN, then garbage (about 1.3e7 as a float)
SHARED_POISON = {"a": 0x7FC00000, "b": 0x4B4B4B4B}


def poison_value(dtype: np.dtype, run: str = "a") -> Any:
    """The value an output is filled with before a run: distinct for the two candidate runs."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        if run == "a":
            return np.nan
        return FLOAT_POISON["b"] if dtype.itemsize >= 4 else -6.0e4
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if dtype.kind == "i":
            return info.min + 0x5A if run == "a" else info.max - 0x5A
        return info.max - 0x5A if run == "a" else info.max - 0x2B
    if dtype.kind == "b":
        return run == "b"
    raise TypeError(f"cannot poison dtype {dtype}")


def poisoned(a: np.ndarray, run: str = "a") -> np.ndarray:
    return np.full(a.shape, poison_value(a.dtype, run), dtype=a.dtype)


def sha256(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def poisonable(spec, i: int) -> bool:
    return i in spec.outputs and i not in getattr(spec, "accumulates", ())


@dataclass
class RunResult:
    outputs: dict[int, np.ndarray] = field(default_factory=dict)
    input_sha_after: dict[int, str] = field(default_factory=dict)
    error: str = ""  # a launch or execution error, "" when the run completed


class SharedPoisoner:
    """The ``nk_poison_shared`` helper of ``gpu_helpers.cu``, built once (None-safe: a failed build disables it)."""

    _instance: SharedPoisoner | None = None

    def __init__(self, arch: str):
        self.lib = ctypes.CDLL(str(build_shared_library(Path(__file__).with_name("gpu_helpers.cu"), arch=arch)))
        self.lib.nk_poison_shared.argtypes = [ctypes.c_uint32]
        self.lib.nk_poison_shared.restype = ctypes.c_int

    @classmethod
    def get(cls, arch: str) -> SharedPoisoner | None:
        if cls._instance is None:
            try:
                cls._instance = cls(arch)
            except Exception:  # noqa: BLE001 - the harness still runs, it reports the helper as unavailable
                return None
        return cls._instance

    def poison(self, bits: int) -> None:
        err = self.lib.nk_poison_shared(bits)
        if err:
            raise driver.CudaError("nk_poison_shared", err)


def candidate_run(fn, launcher: Mapping[str, Any], spec, case, run: str = "a",
                  shared: SharedPoisoner | None = None) -> RunResult:
    """Launch the C kernel on fresh device copies of ``case``'s arguments, outputs poisoned for ``run``."""
    result = RunResult()
    buffers: dict[int, driver.DeviceArray] = {}
    call: list[Any] = []
    try:
        for i, a in enumerate(case.args):
            if isinstance(a, np.ndarray):
                d = driver.DeviceArray.from_host(poisoned(a, run) if poisonable(spec, i) else a)
                buffers[i] = d
                call.append(d)
            else:
                call.append(a)
        if shared is not None:
            shared.poison(SHARED_POISON[run])
        cfg = case.launch
        err = abi.launch(fn, launcher, call, cfg.grid, cfg.block, cfg.shared_bytes)
        if err:
            result.error = f"launcher returned cudaError {err}"
            return result
        driver.synchronize()
        result.outputs = {i: buffers[i].to_host() for i in spec.outputs}
        result.input_sha_after = {i: sha256(d.to_host()) for i, d in buffers.items() if i not in spec.outputs}
    except (driver.CudaError, abi.AbiError) as exc:
        result.error = str(exc)
    finally:
        for d in buffers.values():
            d.free()
    return result
