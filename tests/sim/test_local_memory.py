"""Local memory is checked like shared memory (issue 24, item 5): a thread that reads an element of its
``cuda.local.array`` it has not written gets an ``UninitializedReadError`` naming the array, the element and the
line; on a GPU it would read whatever the registers or the stack held."""

from __future__ import annotations

import numpy as np
import pytest
from numba import cuda

from numbakern import sim


@cuda.jit
def row_sums_never_zeroed(x, out):
    i = cuda.grid(1)
    acc = cuda.local.array(4, np.float32)
    if i < out.shape[0]:
        for r in range(x.shape[1]):
            acc[r % 4] += x[i, r]
        out[i] = acc[0] + acc[1] + acc[2] + acc[3]


@cuda.jit
def row_sums(x, out):
    i = cuda.grid(1)
    acc = cuda.local.array(4, np.float32)
    for j in range(4):
        acc[j] = np.float32(0.0)
    if i < out.shape[0]:
        for r in range(x.shape[1]):
            acc[r % 4] += x[i, r]
        out[i] = acc[0] + acc[1] + acc[2] + acc[3]


@cuda.jit
def last_slot_forgotten(x, out):
    i = cuda.grid(1)
    regs = cuda.local.array(3, np.float32)
    if i < out.shape[0]:
        regs[0] = x[i, 0]
        regs[1] = x[i, 1]
        out[i] = regs[0] * regs[1] + regs[2]


@cuda.jit
def through_a_view(x, out):
    i = cuda.grid(1)
    regs = cuda.local.array(8, np.float32)
    half = regs[4:]
    if i < out.shape[0]:
        for j in range(4):
            half[j] = x[i, j]
        out[i] = regs[4] + regs[7] + regs[3]


def _rows(rng, n=37, k=6):
    return rng.random((n, k)).astype(np.float32) + 0.5, np.zeros(n, np.float32)


def test_accumulator_never_zeroed_is_an_uninitialised_read(rng):
    x, out = _rows(rng)
    with sim.checks("all"), pytest.raises(
            sim.UninitializedReadError,
            match=r"in kernel 'row_sums_never_zeroed': thread \(0, 0, 0\) of block \(0, 0, 0\) read local array 'acc' "
                  r"element \[0\], which this thread has not written, at test_local_memory\.py:\d+ "
                  r"\(row_sums_never_zeroed\): acc\[r % 4\] \+= x\[i, r\]"):
        row_sums_never_zeroed[2, 32](x, out)


def test_initialised_accumulator_passes(rng):
    x, out = _rows(rng)
    with sim.checks("all"):
        row_sums[2, 32](x, out)
    np.testing.assert_allclose(out, x.astype(np.float64).sum(axis=1), rtol=1e-6)


def test_the_element_named_is_the_one_never_written(rng):
    x, out = _rows(rng)
    with sim.checks("all"), pytest.raises(sim.UninitializedReadError,
                                          match=r"local array 'regs' element \[2\].*out\[i\] = regs\[0\] \* regs\[1\]"):
        last_slot_forgotten[2, 32](x, out)


def test_writes_through_a_view_count_and_reads_past_them_do_not(rng):
    x, out = _rows(rng)
    with sim.checks("all"), pytest.raises(sim.UninitializedReadError, match=r"local array 'regs' element \[3\]"):
        through_a_view[2, 32](x, out)


def test_only_the_uninit_check_looks(rng):
    """With the other checks on and uninit off the kernel runs (and reads garbage, as on a GPU)."""
    x, out = _rows(rng)
    with sim.checks("race,bounds,barrier"):
        row_sums_never_zeroed[2, 32](x, out)
