"""Compile-time specialization: write a kernel once, bake integers such as a tile width in as constants.

This is the Numba form of the lecture's "update from the future", C++'s ``template<int tw>``. A *factory* takes the
constants and returns a ``@cuda.jit`` kernel that closes over them; numba freezes closure variables into the
compiled code, so ``tw`` is a literal to the compiler (it can size static shared arrays and unroll ``range(tw)``).
``specialize`` caches one kernel per distinct set of values, so each variant is built and compiled once::

    @specialize
    def matmul_tiled(tw):
        @cuda.jit
        def matmul_tiled(m, n, out):
            ms = cuda.shared.array((tw, tw), dtype=np.float32)
            ...
        return matmul_tiled

    matmul_tiled(16)[grid, block](a, b, c)   # compiles once for tw=16
    matmul_tiled(tw=32)                      # another variant, cached separately

It works the same under the simulator, where the factory returns the simulator's kernel object. Loops written
``for i in unroll(range(C))`` in the kernel are expanded into straight-line code for each variant
(``numbakern.unroll``).
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

#: the attributes under which a specialized kernel carries its constants and the factory that made it (read by the
#: translator, which makes the kernel of other constants from the same factory)
CONSTANTS_ATTR = "__numbakern_constants__"
FACTORY_ATTR = "__numbakern_factory__"


class Specialized:
    """A kernel factory with one cached kernel per set of compile-time constants."""

    def __init__(self, factory: Callable[..., Any]):
        self.factory = factory
        self.signature = inspect.signature(factory)
        for p in self.signature.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TypeError(f"specialize: {factory.__qualname__} must name its constants, not take *{p.name}")
        self._variants: dict[tuple[tuple[str, Any], ...], Any] = {}
        self._lock = threading.Lock()
        functools.update_wrapper(self, factory)

    @property
    def constant_names(self) -> tuple[str, ...]:
        return tuple(self.signature.parameters)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.factory.__qualname__}: {e}") from None
        bound.apply_defaults()
        key = tuple((name, _constant(self.factory.__qualname__, name, v)) for name, v in bound.arguments.items())
        with self._lock:
            kernel = self._variants.get(key)
            if kernel is None:
                from .unroll import expand_kernel  # (imports numba.cuda: not at numbakern's import)

                # loops marked `for i in unroll(range(C))` become straight-line code now that C is known
                made = self.factory(**dict(key))
                kernel = expand_kernel(made)
                for name, value in vars(made).items():  # what the factory declared (tensor maps) goes along
                    if name.startswith("__numbakern_") and kernel is not made:
                        setattr(kernel, name, value)
                setattr(kernel, CONSTANTS_ATTR, dict(key))
                setattr(kernel, FACTORY_ATTR, self)
                self._variants[key] = kernel
        return kernel

    @property
    def variants(self) -> dict[tuple[tuple[str, Any], ...], Any]:
        """The kernels built so far, keyed by their ``((name, value), ...)`` constants."""
        return dict(self._variants)

    def __repr__(self) -> str:
        return f"<specialized kernel factory {self.factory.__qualname__}{self.signature}, {len(self._variants)} built>"


def specialize(factory: Callable[..., Any]) -> Specialized:
    """Decorator: turn a kernel factory into a cached, per-constant kernel builder (see the module docstring)."""
    return Specialized(factory)


def constants_of(kernel: Any) -> dict[str, Any]:
    """The compile-time constants a kernel was specialized with (empty for a plain kernel)."""
    return dict(getattr(kernel, CONSTANTS_ATTR, {}))


def factory_of(kernel: Any) -> Specialized | None:
    """The ``@specialize`` factory that made ``kernel`` (None for a plain kernel)."""
    return getattr(kernel, FACTORY_ATTR, None)


def _constant(owner: str, name: str, value: Any) -> int | float | bool:
    # Constants key the cache and become C++ template arguments, so they must be plain hashable scalars.
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    raise TypeError(
        f"{owner}: constant '{name}' must be an int, float or bool (it is baked into the compiled kernel), "
        f"got {type(value).__name__} {value!r}"
    )
