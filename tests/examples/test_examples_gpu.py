"""On a GPU: the examples' generated C verified against their Numba kernels and their own specs.

Run on the GPU machine with ``pytest --gpu tests/examples`` (nvcc on PATH). Each run is a child process in
examples/, as its user runs ``python -m translate.verify``; nothing is recorded (``--no-record``).
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.environments import with_path_first

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TRANSLATED = ["mykernels.softmax:row_softmax", "mykernels.stencil:stencil5", "mykernels.histogram:histogram",
              "mykernels.reduce:block_sum"]


def verify(*kernels, extra=()):
    env = with_path_first(dict(os.environ), EXAMPLES)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    command = [sys.executable, "-m", "translate.verify", *kernels, "--dir", "generated_cuda", "--no-record",
               "--verbose-cases", *extra]
    return subprocess.run(command, cwd=EXAMPLES, env=env, capture_output=True, text=True, timeout=1800)


@pytest.mark.gpu
def test_the_examples_translations_verify():
    result = verify(*TRANSLATED)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    for kernel in ("row_softmax", "stencil5", "histogram", "block_sum"):
        assert f"== {kernel} <- generated_cuda/{kernel}.cu" in result.stdout


@pytest.mark.gpu
def test_a_user_block_sum_verifies_against_its_own_spec():
    result = verify("mykernels.reduce:block_sum", extra=("--seeds", "1"))
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    # the user's spec: its own sizes (131 and 4194301; the library's are 1000, 65537, 2**20) and its own file
    assert "n=131 " in result.stdout and "n=4194301 " in result.stdout and "n=65537 " not in result.stdout
    assert "== block_sum <- generated_cuda/block_sum.cu [launch_block_sum]" in result.stdout
