"""A defect the simulator finds in a plain script is shown from the user's frames and the kernel's, not the
engine's; ``NUMBAKERN_SIM_TRACEBACK=full`` keeps the engine's for debugging numbakern itself."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest

from tests import environments

SCRIPT = textwrap.dedent("""
    import numpy as np
    from numba import cuda

    import numbakern  # noqa: F401


    @cuda.jit
    def reverse_racy(x):
        buf = cuda.shared.array(64, np.float32)
        t = cuda.threadIdx.x
        buf[t] = x[t]
        x[t] = buf[cuda.blockDim.x - 1 - t]  # DEFECT: no syncthreads() between the write and the read


    def main():
        x = np.arange(64, dtype=np.float32)
        reverse_racy[1, 64](x)


    main()
""")


def _run(tmp_path, **env) -> tuple[str, list[str]]:
    script = tmp_path / "racy.py"
    script.write_text(SCRIPT)
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                            env=environments.clean(tmp_path, NUMBAKERN_SIM_CHECKS="all", **env))
    assert result.returncode == 1 and "RaceError" in result.stderr, result.stderr
    return result.stderr, re.findall(r'^  File "([^"]+)", line (\d+)', result.stderr, re.M)


def test_a_scripts_race_is_shown_from_the_scripts_frames_and_the_kernels(tmp_path):
    stderr, frames = _run(tmp_path)
    assert [(name.rsplit("/", 1)[-1], int(line)) for name, line in frames] == [
        ("racy.py", 21), ("racy.py", 18), ("racy.py", 12)], stderr  # main(), the launch, the kernel's line
    assert "numbakern.sim.errors.RaceError: in kernel 'reverse_racy'" in stderr


@pytest.mark.parametrize("setting", ["full", "FULL"])
def test_the_engines_frames_are_kept_for_debugging_numbakern(tmp_path, setting):
    stderr, frames = _run(tmp_path, NUMBAKERN_SIM_TRACEBACK=setting)
    engine = {name.rsplit("/", 1)[-1] for name, _ in frames if "/numbakern/sim/" in name}
    assert {"engine.py", "scheduler.py", "checked_array.py", "trackers.py"} <= engine, stderr
