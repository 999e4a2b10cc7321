"""numba-cuda-mlir's dynamic shared memory overlaps its static shared arrays: which kernels that hits, and one warning.

numba-cuda-mlir 0.6 lowers ``cuda.shared.array(0, dtype)`` to ``gpu.dynamic_shared_memory``, which becomes a
zero-length shared global and, in the PTX, a one-byte *static* variable (``.shared .align 16 .b8
__dynamic_shmem__0;``) rather than the ``.extern .shared .align 16 .b8 __dynamic_shmem__0[];`` declaration that
places dynamic shared memory after every static array. ptxas lays it out among the static arrays (first, in the
kernels looked at), so the dynamic array runs over the static ones: a kernel that declares both reads the dynamic
array's data from its static arrays (docs/frontends.md, ``scripts/mlir_shared_memory_repro.py``). A kernel with
only one kind is unaffected.

``mixes_static_and_dynamic(fn)`` reads the kernel's source and its device functions' (no Numba, no GPU): calls of
``<...>.shared.array(shape, ...)`` whose shape is ``0`` (dynamic) or anything else (static), with names resolved
through the function's closure and globals. ``warn_if_affected(fn)`` says so once per kernel where the installed
numba-cuda-mlir is an affected version; the simulator calls it at a numba-cuda-mlir kernel's launch and
``translate --check`` for a numba-cuda-mlir kernel.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
import warnings
from importlib import metadata

from . import closures

#: the first numba-cuda-mlir release not known to place dynamic shared memory over static arrays (none is known yet:
#: every release up to 0.6.x, the newest this project supports, is affected)
FIXED_IN: tuple[int, ...] | None = None
DISTRIBUTION = "numba-cuda-mlir"


class MixedSharedMemoryWarning(UserWarning):
    """A numba-cuda-mlir kernel declares static and dynamic shared memory on a version that overlaps them."""


def installed_version() -> str | None:
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None


def affected(version: str | None) -> bool:
    """Whether this numba-cuda-mlir version places its dynamic shared array over the static ones."""
    if version is None:
        return False
    if FIXED_IN is None:
        return True
    numbers = []
    for part in version.split("."):
        digits = re.match(r"\d+", part)
        if digits is None:
            break
        numbers.append(int(digits.group()))
    return tuple(numbers) < FIXED_IN


def shared_arrays(fn, _seen: set | None = None) -> tuple[list[str], list[str]]:
    """``(static, dynamic)``: where ``fn`` and the device functions it calls declare shared arrays (``file:line``)."""
    seen = set() if _seen is None else _seen
    if id(fn) in seen:
        return [], []
    seen.add(id(fn))
    try:
        text = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(text)
    except (OSError, TypeError, SyntaxError):  # no source (exec, stdin): nothing to report
        return [], []
    filename, first_line = fn.__code__.co_filename, fn.__code__.co_firstlineno
    static, dynamic = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _is_shared_array(node.func):
            shape = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "shape"), None)
            where = f"{filename}:{first_line + node.lineno - 1}"
            (dynamic if _is_zero(fn, shape) else static).append(where)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            device = _device_function(closures.lookup(fn, node.id))
            if device is not None:
                s, d = shared_arrays(device, seen)
                static += s
                dynamic += d
    return static, dynamic


def mixes_static_and_dynamic(fn) -> bool:
    static, dynamic = shared_arrays(fn)
    return bool(static) and bool(dynamic)


def warn_if_affected(fn, stacklevel: int = 3) -> bool:
    """Warn (once per function) when ``fn``, a numba-cuda-mlir kernel, declares both kinds of shared memory and the
    installed numba-cuda-mlir is affected; returns whether it warned now."""
    if getattr(fn, "_numbakern_mixed_shared_noted", False):
        return False
    try:
        fn._numbakern_mixed_shared_noted = True
    except AttributeError:
        return False
    version = installed_version()
    if not affected(version):
        return False
    static, dynamic = shared_arrays(fn)
    if not (static and dynamic):
        return False
    warnings.warn(
        f"numbakern: kernel '{fn.__name__}' declares static shared memory ({', '.join(static)}) and dynamic shared "
        f"memory ({', '.join(dynamic)}): numba-cuda-mlir {version} places the dynamic array over the static ones, "
        "so on a GPU the kernel reads the dynamic array's data from its static arrays (numbakern's simulator keeps "
        "them apart). Declare one kind only, e.g. carve the static arrays out of the dynamic one "
        "(docs/frontends.md)", MixedSharedMemoryWarning, stacklevel=stacklevel)
    return True


def _is_shared_array(func: ast.expr) -> bool:
    """``cuda.shared.array`` (or ``<anything>.shared.array``)."""
    return (isinstance(func, ast.Attribute) and func.attr == "array" and isinstance(func.value, ast.Attribute)
            and func.value.attr == "shared")


def _is_zero(fn, shape: ast.expr | None) -> bool:
    """Whether a shape expression is the literal 0 (or a name bound to 0); anything else declares a static array."""
    if isinstance(shape, ast.Constant):
        return shape.value == 0 and not isinstance(shape.value, bool)
    if isinstance(shape, ast.Name):
        value = closures.lookup(fn, shape.id)
        return isinstance(value, int) and not isinstance(value, bool) and value == 0
    return False


def _device_function(value):
    """The Python function of a device function of either front end (or of the simulator's), else None."""
    cls = type(value)
    module = cls.__module__
    if module == "numbakern.sim.mlirsim" and getattr(value, "_device", False):
        return value.fn
    if module.startswith(("numba_cuda_mlir.", "numba.cuda.")) and (getattr(value, "targetoptions", None)
                                                                     or {}).get("device"):
        return getattr(value, "py_func", None)
    if module.startswith("numba.cuda.simulator") and getattr(value, "_device", False):
        return getattr(value, "fn", None)
    return None
