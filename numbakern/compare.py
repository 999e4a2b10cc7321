"""Comparing a kernel's output with a reference, with a report a person can act on."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Comparison:
    name: str
    ok: bool
    max_abs_error: float
    max_rel_error: float  # relative to the error scale, the quantity the tolerance bounds
    mismatches: int
    first_mismatches: tuple[tuple[tuple[int, ...], float, float], ...]  # (index, got, expected)
    reason: str = ""
    #: of the mismatches, how many still hold the value the output had before the launch (never written), and
    #: which of ``first_mismatches`` they are (by index)
    never_written: int = 0
    first_never_written: tuple[tuple[int, ...], ...] = ()

    def __str__(self) -> str:
        if self.ok:
            return f"{self.name}: ok (max abs error {self.max_abs_error:.3g}, max rel error {self.max_rel_error:.3g})"
        differ = f"{self.mismatches} element{'s differ' if self.mismatches != 1 else ' differs'}"
        if self.never_written:
            differ += (f", {'all' if self.never_written == self.mismatches else self.never_written} of them never "
                       "written by the kernel")
        head = f"{self.name}: {self.reason or differ}"
        head += f" (max abs error {self.max_abs_error:.3g}, max rel error {self.max_rel_error:.3g})"
        rows = [f"  at {idx}: never written (still {got!r}, its value before the launch), expected {exp!r}"
                if idx in self.first_never_written else f"  at {idx}: got {got!r}, expected {exp!r}"
                for idx, got, exp in self.first_mismatches]
        return "\n".join([head, *rows])


def compare(
    actual: np.ndarray,
    expected: np.ndarray,
    *,
    scale: np.ndarray | None = None,
    rtol: float = 1e-5,
    atol: float = 0.0,
    name: str = "output",
    show: int = 5,
    before: np.ndarray | None = None,
) -> Comparison:
    """Element-wise ``|actual - expected| <= atol + rtol * scale`` (``scale`` defaults to ``|expected|``) where the
    expected value is a finite number; where it is a special value the actual one must be the same: ``inf`` where
    it is ``inf``, ``-inf`` where it is ``-inf``, a NaN (any) where it is NaN.

    Integers compare exactly when ``rtol`` and ``atol`` are 0. NaN or Inf in ``actual`` where ``expected`` is
    finite always fails (poisoned outputs that a kernel never wrote show up here), and so does a number where
    ``expected`` is NaN or infinite, whatever the scale. ``before``: the output as it was before the launch
    (poisoned); a wrong element that still holds its value from then is reported as never written, not as a wrong
    number.
    """
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    if actual.shape != expected.shape:
        return Comparison(name, False, np.inf, np.inf, actual.size, (), f"shape {actual.shape} != {expected.shape}")
    scale = None if scale is None else np.broadcast_to(np.asarray(scale), actual.shape)
    if _identical(actual, expected):  # every error is 0, whatever the scale (the usual C-vs-Numba answer)
        return Comparison(name, True, 0.0, 0.0, 0, ())
    # in chunks that stay in cache: a 16 M-element output compared whole made a dozen float64 temporaries of
    # 128 MB each, and verification's workers, several to a GPU, spent their time waiting on the host's memory
    flat_a, flat_e = actual.reshape(-1), expected.reshape(-1)
    flat_s = None if scale is None else scale.reshape(-1)
    flat_before = None
    if before is not None and np.shape(before) == actual.shape:
        flat_before = np.asarray(before).reshape(-1)
    max_abs = max_rel = 0.0
    n_bad = never_written = 0
    bad_at: list[int] = []  # flat indices of the first ``show`` mismatches
    for lo in range(0, flat_a.size, _CHUNK):
        hi = min(lo + _CHUNK, flat_a.size)
        err, rel, bad = _errors(flat_a[lo:hi], flat_e[lo:hi], None if flat_s is None else flat_s[lo:hi], rtol, atol)
        max_abs = max(max_abs, float(err.max(initial=0.0)))
        max_rel = max(max_rel, float(rel.max(initial=0.0)))
        count = int(np.count_nonzero(bad))
        if count and len(bad_at) < show:
            bad_at += [lo + int(i) for i in np.flatnonzero(bad)[:show - len(bad_at)]]
        n_bad += count
        if count and flat_before is not None:
            never_written += int(np.count_nonzero(bad & _unchanged(flat_a[lo:hi], flat_before[lo:hi])))
    where = [tuple(int(i) for i in np.unravel_index(k, actual.shape)) for k in bad_at]
    first = tuple((idx, actual[idx].item(), expected[idx].item()) for idx in where)
    first_never_written = ()
    if never_written:
        unwritten = _unchanged(actual, before)
        first_never_written = tuple(idx for idx in where if unwritten[idx])
    return Comparison(
        name=name,
        ok=n_bad == 0,
        max_abs_error=max_abs,
        max_rel_error=max_rel,
        mismatches=n_bad,
        first_mismatches=first,
        never_written=never_written,
        first_never_written=first_never_written,
    )


#: elements compared at a time (float64 temporaries of 2 MB)
_CHUNK = 1 << 18


def _identical(actual: np.ndarray, expected: np.ndarray) -> bool:
    """The same dtype and the same bits everywhere (so the same values, NaN where NaN): nothing to measure."""
    if actual.dtype != expected.dtype or actual.dtype.kind not in "fiub" or actual.dtype.hasobject:
        return False
    as_bits = np.dtype(f"u{actual.dtype.itemsize}") if actual.dtype.itemsize in (1, 2, 4, 8) else None
    if as_bits is None:
        return False
    bits = [np.ascontiguousarray(x).view(as_bits) for x in (actual, expected)]
    return bool(np.array_equal(*bits))


def _errors(actual: np.ndarray, expected: np.ndarray, scale: np.ndarray | None, rtol: float,
            atol: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per element: the absolute error, the error relative to the scale, and whether it is out of tolerance
    (see ``compare``)."""
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    s = np.abs(e) if scale is None else np.abs(np.asarray(scale, dtype=np.float64))
    with np.errstate(invalid="ignore", over="ignore"):
        special = ~np.isfinite(a) | ~np.isfinite(e)  # compared by value, not by a tolerance
        same_special = (a == e) | (np.isnan(a) & np.isnan(e))
        err = np.where(special, np.where(same_special, 0.0, np.inf), np.abs(a - e))
        # a scale that is not a finite number (inputs with inf or NaN) bounds nothing: |expected| instead
        s = np.where(np.isfinite(s), s, np.abs(np.where(np.isfinite(e), e, 0.0)))
        bad = np.where(special, ~same_special, ~(err <= atol + rtol * s))
        rel = np.where(s > 0, err / np.where(s > 0, s, 1.0), np.where(err > 0, np.inf, 0.0))
    return err, rel, bad


def _unchanged(actual: np.ndarray, before) -> np.ndarray:
    """Elements of ``actual`` that hold the same value as ``before`` (NaN as NaN: the float poison)."""
    before = np.asarray(before)
    if before.shape != actual.shape:
        return np.zeros(actual.shape, dtype=bool)
    same = actual == before
    if actual.dtype.kind in "fc" and before.dtype.kind in "fc":
        same |= np.isnan(actual) & np.isnan(before)
    return same
