"""What a corpus entry is: a kernel of ``kernels/`` (copied as written from numba-cuda), the signature its test
compiles it with, and a launch with small random inputs of the same kind as the test's.

The inputs only need to be valid for the kernel (indices in range, the test's value ranges); they are fresh per seed
and the GPU verification runs the translated C and the Numba kernel on identical copies, then compares every array
argument (the Numba kernel is the reference)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels")


@dataclass(frozen=True)
class Launch:
    grid: tuple
    block: tuple
    shared_bytes: int = 0

    @staticmethod
    def of(grid, block, shared_bytes=0) -> Launch:
        def as3(d):
            return tuple(d) if isinstance(d, (tuple, list)) else (d,)
        return Launch(as3(grid), as3(block), shared_bytes)


@dataclass(frozen=True)
class Entry:
    file: str                      # a file in kernels/
    kernel: str                    # the kernel's name in it
    signature: str                 # the signature its numba-cuda test compiles it with
    launch: Launch
    args: tuple                    # one maker per argument: called with a numpy Generator
    variant: str = ""              # tells entries of one kernel apart (another signature)
    rtol: float | None = None      # float comparison tolerance (default by dtype)
    note: str = ""
    #: a difference measured on a GPU that the C does not reproduce yet: the GPU test expects the mismatch (and
    #: fails once the C matches, so that the note goes)
    known_gap: str = ""

    @property
    def id(self) -> str:
        base = os.path.basename(self.file)
        stem = base[:-3] if base.endswith(".py") else base
        return f"{stem}:{self.kernel}" + (f"[{self.variant}]" if self.variant else "")

    @property
    def target(self) -> str:
        return f"{os.path.join(KERNELS, self.file)}:{self.kernel}"

    def make_args(self, seed: int) -> list:
        rng = np.random.default_rng(seed)
        return [m(rng) for m in self.args]


# -- argument makers -------------------------------------------------------------------------------------------
def ints(shape, dtype, lo, hi) -> Callable:
    """Random integers in [lo, hi)."""
    return lambda rng: rng.integers(lo, hi, size=shape).astype(dtype)


def floats(shape, dtype, lo=0.0, hi=1.0) -> Callable:
    """Random floats in [lo, hi)."""
    return lambda rng: (lo + (hi - lo) * rng.random(size=shape)).astype(dtype)


def complexes(shape, dtype) -> Callable:
    return lambda rng: (rng.random(size=shape) + 1j * rng.random(size=shape)).astype(dtype)


def bools(shape, p=0.5) -> Callable:
    return lambda rng: rng.random(size=shape) < p


def arange(n, dtype, shuffle=False) -> Callable:
    def make(rng):
        a = np.arange(n, dtype=dtype)
        return rng.permutation(a) if shuffle else a
    return make


def fixed(value) -> Callable:
    """A given value (the test's own constant or data)."""
    return lambda rng: np.array(value, copy=True) if isinstance(value, np.ndarray) else value


def scalar(dtype, lo, hi) -> Callable:
    """A random scalar of ``dtype`` in [lo, hi)."""
    kind = np.dtype(dtype).kind

    def make(rng):
        if kind in "iu":
            return np.dtype(dtype).type(rng.integers(lo, hi))
        return np.dtype(dtype).type(lo + (hi - lo) * rng.random())
    return make


def custom(fn) -> Callable:
    return fn
