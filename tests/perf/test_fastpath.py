"""numbakern.fastpath: jit presets and the unsigned index cast."""

import numpy as np
import pytest
from numba import cuda  # a module global: the simulator swaps it inside kernels

from numbakern import fastpath, mode


def test_jit_options_are_the_same_in_the_simulator_and_on_a_gpu():
    opts = fastpath.jit_options(threads=256, min_blocks=2, max_registers=128, lineinfo=True)
    assert opts == {"fastmath": True, "launch_bounds": (256, 2), "max_registers": 128, "lineinfo": True}
    cuda.jit(**opts)(lambda x: None)  # the simulator's cuda.jit takes them as the GPU's does


def test_jit_options_spelling():
    assert fastpath.jit_options(threads=128) == {"fastmath": True, "launch_bounds": (128,)}
    assert fastpath.jit_options(fastmath=False) == {"fastmath": False}


def test_jit_options_validation():
    with pytest.raises(ValueError, match="threads must be 1..1024"):
        fastpath.jit_options(threads=2048)
    with pytest.raises(ValueError, match="min_blocks needs threads"):
        fastpath.jit_options(min_blocks=2)


def test_fast_jit_kernel_runs():
    @fastpath.fast_jit(threads=32)
    def scale(x, out):
        i = cuda.grid(1)
        if i < x.shape[0]:
            out[fastpath.u32(i)] = x[fastpath.u32(i)] * np.float32(2.0)

    x = np.arange(40, dtype=np.float32)
    out = np.zeros_like(x)
    if mode.in_simulator():
        scale[2, 32](x, out)
    else:
        d = [cuda.to_device(a) for a in (x, out)]
        scale[2, 32](*d)
        out = d[1].copy_to_host()
    np.testing.assert_array_equal(out, 2 * x)
    assert fastpath.u32 is np.uint32
