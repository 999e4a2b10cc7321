"""``numbakern.declare``: tell numbakern what testing, verification and benchmarks need to know about your kernel.

In your own module, next to the kernel::

    def softmax_args(rand, rows=512, cols=1000):       # the sizes are the parameters, their defaults the example
        x = rand((rows, cols), np.float32)               # random values from the case's distribution
        return x, np.empty_like(x)                       # outputs: poisoned for you before every run

    def softmax_reference(x, out):                       # independent, in float64
        x64 = x.astype(np.float64)
        e = np.exp(x64 - x64.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)          # one output: the array; several: {"name": array}

    numbakern.declare(row_softmax, args=softmax_args, reference=softmax_reference,
                      launch=lambda x, out: ((x.shape[0],), (32,)), rtol=1e-5)

From that, numbakern derives what it would otherwise ask for:

- **outputs**: the arrays the kernel writes (``outputs=`` overrides);
- **accumulators**: outputs the kernel adds to or reads (``cuda.atomic.*``, ``out[i] += ...``, ``x[i] = 2 * x[i]``):
  never poisoned, the case's own values are the starting point (``accumulates=`` overrides);
- **sizes**: 1 in every dimension, primes just above the block size (not multiples of the block), primes near the
  example and the example itself (``test_sizes=`` / ``verify_sizes=`` / ``bench_sizes=`` override);
- **input distributions**: ``rand`` draws from each of ``registry.DISTRIBUTIONS`` in turn (and, with
  ``special_values=True``, from ``registry.SPECIAL``: inf, -inf, NaN, -0.0 and subnormals among normal values);
- **signatures** for ``translate``: ``numba.typeof`` of the arguments ``args()`` makes.

The result is an ordinary ``KernelSpec`` in the registry's project namespace (a kernel may be named like one of the
library's), so ``run_case``, ``spec.check``, verification and the benchmark treat it like the library's kernels.
"""

from __future__ import annotations

import inspect
import math
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .analysis import argument_use
from .launch import LaunchConfig
from .registry import DISTRIBUTIONS, Case, KernelSpec, Work, check_tolerances, random_array, register

Size = Mapping[str, int]

#: the largest simulator test size, in elements of the largest size product (keeps the suite fast)
TEST_ELEMENTS = 1 << 15
#: the largest derived GPU verification size (the example itself may be larger)
VERIFY_ELEMENTS = 1 << 22


class RandomInputs:
    """The ``rand`` an input maker receives: random arrays from one seeded generator and one distribution."""

    def __init__(self, rng: np.random.Generator, dist: str):
        self.rng = rng
        self.dist = dist

    def __call__(self, shape: int | Sequence[int], dtype: Any = np.float32) -> np.ndarray:
        """A C-contiguous array of ``dtype`` drawn from this case's distribution (never all zeros)."""
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        return random_array(self.rng, shape, dtype, self.dist)

    def __repr__(self) -> str:
        return f"RandomInputs(dist={self.dist!r})"


def declare(
    kernel: Any,
    *,
    args: Callable[..., Sequence[Any]],
    launch: Callable[..., Any],
    reference: Callable[..., Any],
    example: Size | None = None,
    outputs: Sequence[str] | str | None = None,
    accumulates: Sequence[str] | str | None = None,
    rtol: float = 1e-5,
    atol: float = 0.0,
    error_scale: Callable[..., Any] | None = None,
    name: str | None = None,
    family: str | None = None,
    test_sizes: Iterable[Size] | None = None,
    verify_sizes: Iterable[Size] | None = None,
    bench_sizes: Iterable[Size] | None = None,
    size_multiples: Mapping[str, int] | None = None,
    work: Callable[..., Work] | None = None,
    signatures: Sequence[str] | None = None,
    constants: Mapping[str, int] | None = None,
    description: str = "",
    module: str | None = None,
    special_values: bool = False,
) -> KernelSpec:
    """Register ``kernel`` with what verification and benchmarks need; returns its ``KernelSpec``.

    ``args(rand, **size)`` returns the kernel's arguments for a size (its parameters after ``rand`` name the size's
    dimensions; their defaults, or ``example``, are the example size). ``launch(*arguments)`` returns a
    ``LaunchConfig`` or ``(grid, block)`` / ``(grid, block, shared_bytes)`` (an int for a 1-D grid or block, as
    ``kernel[grid, block]`` takes it); the spec's ``launch(*arguments)`` answers the same.
    ``reference(*arguments)`` returns the expected output (one output) or ``{name: expected}``, computed
    independently (numpy, in float64).
    ``error_scale(*arguments)``: the magnitude each output element's rounding error is relative to (default
    ``|expected|``), same form. ``work(**size)``: a ``Work`` for the benchmark. ``module``: where the spec is
    declared, when not the caller's module (a helper that declares on behalf of other modules).
    ``special_values``: the reference defines the outputs for inputs with inf, -inf, NaN, -0.0 and subnormals
    (float64 IEEE arithmetic, element by element), so verification also gives the kernel such inputs
    (``registry.SPECIAL``: ``rand`` draws them).

    What cannot be right is refused here, naming the kernel and the argument: ``rtol``/``atol`` that are not finite
    numbers >= 0 (an infinite tolerance passes any output), sizes below 1, a ``launch``, ``reference``,
    ``error_scale`` or ``work`` that is not a function, a launch a GPU would refuse.
    """
    pyfunc = getattr(kernel, "py_func", None)
    if pyfunc is None:
        raise TypeError(f"declare: 'kernel' must be a @cuda.jit kernel, got {type(kernel).__name__} {kernel!r}")
    name = name or pyfunc.__name__
    module = module or sys._getframe(1).f_globals.get("__name__", pyfunc.__module__)
    where = f"declare({name})"
    _check_functions(where, launch=launch, reference=reference, error_scale=error_scale, work=work)
    check_tolerances(where, rtol, atol)
    use = argument_use(kernel)
    params = use.params

    dims, defaults = _dimensions(where, args)
    example = _example(where, dims, defaults, example)
    multiples = dict(size_multiples or {})
    _check_keys(where, "size_multiples", multiples, dims, partial=True)
    _check_positive(where, "size_multiples", multiples)
    multiples = {k: int(v) for k, v in multiples.items()}

    out_names = (_names(where, "outputs", outputs, params) if outputs is not None
                 else sorted(use.written, key=params.index))
    if not out_names:
        raise ValueError(f"{where}: the kernel writes none of its arguments ({', '.join(params)}); name its outputs "
                         "with outputs=[...]")
    acc_names = (_names(where, "accumulates", accumulates, params) if accumulates is not None
                 else [n for n in out_names if n in use.accumulated])
    stray = [n for n in acc_names if n not in out_names]
    if stray:
        raise ValueError(f"{where}: accumulates {stray} must also be outputs ({', '.join(out_names)})")
    out_idx = tuple(params.index(n) for n in out_names)
    acc_idx = tuple(params.index(n) for n in acc_names)

    def make_case(size: Size, rng: np.random.Generator, dist: str = "uniform") -> Case:
        _check_keys(where, "size", size, dims)
        made = tuple(args(RandomInputs(rng, dist), **size))
        if len(made) != len(params):
            raise ValueError(f"{where}: args() returned {len(made)} value(s); the kernel takes {len(params)} "
                             f"({', '.join(params)})")
        made = tuple(_poisoned(a) if i in out_idx and i not in acc_idx else a for i, a in enumerate(made))
        return Case(made, _launch_config(where, launch, made), dict(size))

    def by_index(what: str, fn: Callable[..., Any]) -> Callable[..., dict[int, np.ndarray]]:
        def indexed(*case_args):
            return _by_index(where, what, fn(*case_args), out_names, params)

        return indexed

    smallest = {d: multiples.get(d, 1) for d in dims}
    first = make_case(smallest, np.random.default_rng(0), "uniform")
    for i in acc_idx:
        a = first.args[i]
        if isinstance(a, np.ndarray) and a.dtype.kind in "fc" and not np.isfinite(a).all():
            raise ValueError(f"{where}: '{params[i]}' is an accumulator (the kernel adds to it), so args() must give "
                             "it starting values (rand(...) or np.zeros(...)), not np.empty(...)")
    reference_fn = by_index("reference", reference)
    reference_fn(*first.fresh_args())  # fails now, with the kernel named, rather than in the middle of a test run

    block = max(first.launch.block)
    test = (_sizes(where, test_sizes, dims) if test_sizes is not None
            else derive_test_sizes(dims, example, block, multiples))
    verify = (_sizes(where, verify_sizes, dims) if verify_sizes is not None
              else derive_verify_sizes(dims, example, block, multiples))
    bench = _sizes(where, bench_sizes, dims) if bench_sizes is not None else (dict(example),)

    spec = KernelSpec(
        name=name,
        family=family or module.rsplit(".", 1)[-1],
        kernel=kernel,
        signatures=tuple(signatures) if signatures else (signature_of(first.args),),
        make_case=make_case,
        reference=reference_fn,
        outputs=out_idx,
        test_sizes=test,
        verify_sizes=verify,
        bench_sizes=bench,
        accumulates=acc_idx,
        rtol=rtol,
        atol=atol,
        error_scale=by_index("error_scale", error_scale) if error_scale else None,
        constants=dict(constants or {}),
        work=(lambda size: work(**size)) if work else None,
        description=description or (inspect.getdoc(pyfunc) or "").split("\n", 1)[0],
        size_multiples=multiples,
        module=module,
        special_values=bool(special_values),
        launcher=lambda *launch_args: _launch_config(where, launch, launch_args),
    )
    return register(spec)


# ---------------------------------------------------------------------------------------------------------------
# sizes


def derive_test_sizes(dims: Sequence[str], example: Size, block: int, multiples: Mapping[str, int] | None = None):
    """Simulator sizes: 1 everywhere, then distinct primes just above the block size (capped so the product stays
    under ``TEST_ELEMENTS``, and never above the example's own dimension)."""
    multiples = multiples or {}
    ones = {d: 1 for d in dims}
    cap = max(2, int(TEST_ELEMENTS ** (1 / max(1, len(dims)))))
    above_block = _distinct_primes(min(block, cap - 1) + 1, len(dims), cap)
    small = {d: min(p, max(1, example[d])) for d, p in zip(dims, above_block)}
    return _unique([_fit(s, multiples) for s in (ones, small)])


def derive_verify_sizes(dims: Sequence[str], example: Size, block: int, multiples: Mapping[str, int] | None = None):
    """GPU sizes: the test sizes, primes near the example (at most ``VERIFY_ELEMENTS`` elements), the example."""
    multiples = multiples or {}
    near = {}
    scale = min(1.0, (VERIFY_ELEMENTS / max(1, math.prod(example.values()))) ** (1 / max(1, len(dims))))
    used: set[int] = set()
    for d in dims:
        p = _prime_at_most(max(2, int(example[d] * scale)), avoid=used)
        near[d] = p if example[d] > 1 else 1
        used.add(p)
    return _unique([*derive_test_sizes(dims, example, block, multiples), _fit(near, multiples),
                    _fit(dict(example), multiples)])


def _fit(size: dict[str, int], multiples: Mapping[str, int]) -> dict[str, int]:
    return {d: (-(-v // multiples[d]) * multiples[d] if d in multiples else v) for d, v in size.items()}


def _unique(sizes: list[dict[str, int]]) -> tuple[dict[str, int], ...]:
    out: list[dict[str, int]] = []
    for s in sizes:
        if s not in out:
            out.append(s)
    return tuple(out)


def _is_prime(n: int) -> bool:
    return n >= 2 and all(n % p for p in range(2, math.isqrt(n) + 1))


def _distinct_primes(start: int, count: int, cap: int) -> list[int]:
    """``count`` distinct primes from ``start`` up; below ``start`` if they would pass ``cap``."""
    found: list[int] = []
    n = start
    while len(found) < count and n <= cap:
        if _is_prime(n):
            found.append(n)
        n += 1
    n = start - 1
    while len(found) < count and n >= 2:
        if _is_prime(n) and n not in found:
            found.append(n)
        n -= 1
    return (found + [2] * count)[:count]


def _prime_at_most(n: int, avoid: set[int]) -> int:
    while n > 2 and (not _is_prime(n) or n in avoid):
        n -= 1
    return n


# ---------------------------------------------------------------------------------------------------------------
# arguments, launches, results


def signature_of(args: Sequence[Any]) -> str:
    """The numba signature string (``void(float32[:, ::1], int64)``) for a launch with these arguments."""
    from .frontend.choice import numba_cuda_installed

    if numba_cuda_installed():
        from numba import typeof
        from numba.core import types
    else:  # numba-cuda-mlir's own copy of numba's types (an environment without numba)
        from numba_cuda_mlir.numba_cuda import types
        from numba_cuda_mlir.numba_cuda.typing.typeof import typeof

    parts = []
    for a in args:
        t = typeof(a)
        if isinstance(t, types.Array):
            colon = [":"] * t.ndim
            if t.layout == "C":
                colon[-1] = "::1"
            elif t.layout == "F":
                colon[0] = "::1"
            parts.append(f"{t.dtype}[{', '.join(colon)}]")
        else:
            parts.append(str(t))
    return f"void({', '.join(parts)})"


def _poisoned(a: Any) -> Any:
    """An output the kernel must write: NaN (integers: a sentinel), so an unwritten element cannot pass."""
    if not isinstance(a, np.ndarray):
        return a
    if a.dtype.kind in "fc":
        return np.full(a.shape, np.nan, dtype=a.dtype)
    if a.dtype.kind in "iu":
        info = np.iinfo(a.dtype)
        return np.full(a.shape, info.min + 0x5A if a.dtype.kind == "i" else info.max - 0x5A, dtype=a.dtype)
    return np.full(a.shape, True, dtype=a.dtype) if a.dtype.kind == "b" else a.copy()


def _launch_config(where: str, launch: Callable[..., Any], args: Sequence[Any]) -> LaunchConfig:
    """``launch(*args)`` as a ``LaunchConfig``; what is wrong with it, or with the launch it describes (one a GPU
    would refuse), is an error naming the kernel."""
    try:
        value = launch(*args)
        if isinstance(value, LaunchConfig):
            return value
        if isinstance(value, tuple) and len(value) in (2, 3):
            return LaunchConfig(*value)
    except (TypeError, ValueError) as e:
        raise _renamed(e, f"{where}: launch(): {e}") from e
    raise TypeError(f"{where}: launch() must return a LaunchConfig, (grid, block) or (grid, block, shared_bytes); "
                    f"got {value!r}")


def _renamed(e: Exception, message: str) -> Exception:
    """``e``'s kind of error with ``message`` (its own class where it takes a message alone)."""
    try:
        return type(e)(message)
    except Exception:  # noqa: BLE001 - a class with another constructor: its base kind
        return (TypeError if isinstance(e, TypeError) else ValueError)(message)


def _by_index(where: str, what: str, value: Any, out_names: Sequence[str], params: Sequence[str]):
    if not isinstance(value, Mapping):
        if len(out_names) != 1:
            raise TypeError(f"{where}: {what}() must return {{name: array}} for the outputs {', '.join(out_names)}")
        value = {out_names[0]: value}
    unknown = [k for k in value if k not in out_names]
    missing = [n for n in out_names if n not in value]
    if unknown or (missing and what == "reference"):
        raise ValueError(f"{where}: {what}() returned {sorted(value)}; the outputs are {', '.join(out_names)}")
    return {params.index(k): np.asarray(v) for k, v in value.items()}


# ---------------------------------------------------------------------------------------------------------------
# checking what the user gave


def _dimensions(where: str, maker: Callable[..., Any]) -> tuple[tuple[str, ...], dict[str, int]]:
    try:
        sig = inspect.signature(maker)
    except (TypeError, ValueError):
        raise TypeError(f"{where}: 'args' must be a function args(rand, <size dimensions>...), got {maker!r}") from None
    params = list(sig.parameters.values())
    if not params or any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        raise TypeError(f"{where}: 'args' must be a function args(rand, <size dimensions>...) with named "
                        f"dimensions, got {maker.__qualname__}{sig}")
    dims = tuple(p.name for p in params[1:])
    if not dims:
        raise TypeError(f"{where}: args{sig} names no size dimension after 'rand' (e.g. args(rand, n=4096))")
    return dims, {p.name: p.default for p in params[1:] if p.default is not p.empty}


def _example(where: str, dims: Sequence[str], defaults: Mapping[str, Any], example: Size | None) -> dict[str, int]:
    merged = {**defaults, **(example or {})}
    _check_keys(where, "example", merged, dims)
    _check_positive(where, "example sizes", merged)
    return {d: int(merged[d]) for d in dims}


def _check_positive(where: str, what: str, given: Mapping[str, Any]) -> None:
    bad = {k: v for k, v in given.items() if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1}
    if bad:
        raise ValueError(f"{where}: {what} must be positive integers, got {bad}")


def _check_functions(where: str, **functions: Any) -> None:
    """Each of ``functions`` is callable (or None where that is allowed: every one but launch and reference)."""
    for what, fn in functions.items():
        if not callable(fn) and (fn is not None or what in ("launch", "reference")):
            raise TypeError(f"{where}: '{what}' must be a function of the kernel's arguments, got "
                            f"{type(fn).__name__} {fn!r}")


def _check_keys(where: str, what: str, given: Mapping[str, Any], dims: Sequence[str], partial: bool = False) -> None:
    unknown = sorted(set(given) - set(dims))
    missing = [] if partial else [d for d in dims if d not in given]
    if unknown or missing:
        detail = "; ".join(x for x in (f"unknown {unknown}" if unknown else "", f"missing {missing}" if missing else "")
                           if x)
        raise ValueError(f"{where}: {what} must give the dimensions of args() ({', '.join(dims)}): {detail}")


def _names(where: str, what: str, given: Sequence[str] | str, params: Sequence[str]) -> list[str]:
    names = [given] if isinstance(given, str) else list(given)
    unknown = [n for n in names if n not in params]
    if unknown:
        raise ValueError(f"{where}: {what} {unknown} are not parameters of the kernel ({', '.join(params)})")
    return names


def _sizes(where: str, sizes: Iterable[Size], dims: Sequence[str]) -> tuple[dict[str, int], ...]:
    out = tuple(dict(s) for s in sizes)
    for s in out:
        _check_keys(where, "every size", s, dims)
        _check_positive(where, "sizes", s)
    if not out:
        raise ValueError(f"{where}: give at least one size")
    return out


__all__ = ["DISTRIBUTIONS", "RandomInputs", "declare", "derive_test_sizes", "derive_verify_sizes", "signature_of"]
