"""The third corpus in numbakern's simulator: each kernel runs on its entry's inputs with the checkers on and writes
some of its arrays (so that the GPU comparison of test_corpus3_gpu.py compares something), and the kernels simple
enough to restate in numpy match that restatement, computed in float64 from the same inputs. Skips where no local
copies of the sources are found (``NUMBAKERN_CORPUS2_MIRRORS``)."""

from __future__ import annotations

import contextlib
import importlib.util

import numpy as np
import pytest

from numbakern import sim

from .corpus2 import sources
from .corpus3.index import ENTRIES
from .test_corpus3 import entry_params

pytestmark = pytest.mark.sim


def _kernel(entry):
    path, name = entry.target.rsplit(":", 1)
    spec = importlib.util.spec_from_file_location(f"corpus3_{entry.kernel}_{abs(hash(path))}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


#: what the simulator reports of a kernel that numba compiles and runs as its authors mean it, and the setting that
#: lets it run: kernel -> (context, why)
FINDINGS = {
    # every flagged position's thread stores the same NaN (or 0) into the overlapping windows: a benign race
    "port_mask_kernel": (lambda: sim.checks("uninit,bounds,barrier"), "the same value stored by two threads"),
    "port_mask_zero_kernel": (lambda: sim.checks("uninit,bounds,barrier"), "the same value stored by two threads"),
    # xp[-1]: the last element, numba's wraparound (the C wraps it too)
    "interp2d_kernel": (sim.allow_negative_indices, "xp[-1] is the last element"),
}


def _run(entry, seed=0):
    """(the inputs, the arguments after the kernel ran on them in the simulator)."""
    args = entry.make_args(seed)
    before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    launch = entry.launch
    context = FINDINGS[entry.kernel][0]() if entry.kernel in FINDINGS else contextlib.nullcontext()
    with context:
        _kernel(entry)[launch.grid, launch.block, 0, launch.shared_bytes](*args)
    return before, args


def _port_mask(flags, beg, end, prices, n, fill):
    """gQuant's port mask: ``fill`` over [i + beg, i + end) around each flagged i, an index below 0 wrapping to the
    end of the array (the kernel's second branch), none past the end."""
    out = prices.copy()
    for i in np.flatnonzero(flags == 1):
        for j in range(beg + i, min(end + i, n)):
            out[j % n] = fill
    return out


def _binary_div(a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        return a / b  # nan for 0/0 and for a nan, +-inf for a nonzero over 0, as the kernel's branches say


def _lowhigh(high, low):
    out = np.zeros_like(high)
    out[1:] = np.abs(high[1:] - low[:-1]) - np.abs(low[1:] - high[:-1])
    return out


def _convolve(data, kernel, out):
    """The interior of ``out`` (a ``kernel``-sized window fits): the window's weighted sum; the border untouched."""
    out = out.copy()
    kr, kc = kernel.shape[0] // 2, kernel.shape[1] // 2
    rows, cols = data.shape
    acc = np.zeros((rows - 2 * kr, cols - 2 * kc))
    for k in range(kernel.shape[0]):
        for h in range(kernel.shape[1]):
            acc += kernel[k, h] * data[k:k + rows - 2 * kr, h:h + cols - 2 * kc]
    out[kr:rows - kr, kc:cols - kc] = acc
    return out


#: entry kernel -> (index of the output argument, its value from the inputs)
REFERENCES = {
    "port_mask_kernel": (3, lambda a: _port_mask(a[0], a[1], a[2], a[3], a[4], np.nan)),
    "port_mask_zero_kernel": (3, lambda a: _port_mask(a[0], a[1], a[2], a[3], a[4], 0.0)),
    "binary_div": (2, lambda a: _binary_div(a[0], a[1])),
    "lowhigh_diff_kernel": (2, lambda a: _lowhigh(a[0], a[1])),
    "_convolve_2d_cuda": (2, lambda a: _convolve(a[0], a[1], a[2])),
    "cu_sort_float2d": (2, lambda a: np.where(np.arange(a[2].shape[0])[:, None] < a[0], a[3][a[1]], a[2])),
    "compute_costs_data": (1, lambda a: -a[0].astype(np.float64) * np.float32(1.0 + a[2])),
}


def _available(entry):
    if not sources.available(entry.source):
        pytest.skip(f"no local copy of {sources.SOURCES[entry.source].repo} (${sources.MIRRORS_ENV})")


@pytest.mark.parametrize("entry", entry_params())
def test_corpus3_kernel_runs_in_the_simulator_and_writes_its_outputs(entry):
    _available(entry)
    before, after = _run(entry)
    changed = [i for i, (b, a) in enumerate(zip(before, after))
               if isinstance(a, np.ndarray) and not np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")]
    assert changed, f"{entry.id}: the launch writes none of its arrays: the GPU comparison would compare inputs"
    for i in changed:
        if after[i].dtype.kind in "fc":
            assert np.isfinite(after[i]).any(), f"{entry.id}: argument {i} is all NaN or inf after the launch"


@pytest.mark.parametrize("kernel", sorted(REFERENCES))
def test_corpus3_kernel_matches_numpy_in_the_simulator(kernel):
    entry = next(e for e in ENTRIES if e.kernel == kernel)
    _available(entry)
    for seed in (0, 1):
        before, after = _run(entry, seed)
        index, reference = REFERENCES[kernel]
        want = reference(before)
        np.testing.assert_allclose(after[index], want, rtol=1e-6, atol=0, equal_nan=True,
                                   err_msg=f"{entry.id}, seed {seed}")


def test_the_port_mask_entries_launch_with_a_negative_beg():
    """issue 39: the repository calls port_mask_kernel with beg < 0 (its second branch); so does the corpus."""
    for kernel in ("port_mask_kernel", "port_mask_zero_kernel"):
        entry = next(e for e in ENTRIES if e.kernel == kernel)
        assert entry.make_args(0)[1] < 0
