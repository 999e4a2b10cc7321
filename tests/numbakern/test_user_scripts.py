"""Plain scripts that use numbakern, run as a user runs them: ``python script.py`` in a clean environment.

Each script runs in a fresh interpreter with only PATH and HOME set (no NUMBA_ENABLE_CUDASIM, no pytest): the mode
is chosen by ``import numbakern`` alone. Without a GPU the kernels must run in the simulator and the note must
appear exactly once on stderr; with a GPU nothing may change (no note, the real target).
"""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from numbakern import mode
from tests import environments

NOTE = mode.SCRIPT_NOTE
HAS_GPU = mode.gpu_available()


def run_script(tmp_path, code, **env):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(code))
    clean = environments.clean(tmp_path, **env)
    return subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=clean, capture_output=True, text=True,
                          timeout=300)


ISORT_ORDER = """
    import numpy as np
    from numba import cuda

    from numbakern import launch_config


    @cuda.jit
    def twice(x, out):
        i = cuda.grid(1)
        if i < x.shape[0]:
            out[i] = 2 * x[i]


    x = np.random.default_rng(0).random(1000).astype(np.float32)
    out = np.full_like(x, np.nan)
    cfg = launch_config(x.size, 256)
    twice[cfg.grid, cfg.block](x, out)
    assert np.array_equal(out, 2 * x)
    from numba.cuda.core import config
    print("target:", "simulator" if config.ENABLE_CUDASIM else "gpu", type(twice).__name__)
"""


def test_isort_ordered_imports_just_work(tmp_path):
    # isort puts `from numba import cuda` before `from numbakern import ...`: numba.cuda is already imported then
    result = run_script(tmp_path, ISORT_ORDER)
    assert result.returncode == 0, result.stderr
    if HAS_GPU:
        assert "target: gpu" in result.stdout and NOTE not in result.stderr
    else:
        assert "target: simulator FakeCUDAKernel" in result.stdout
        assert result.stderr.count(NOTE) == 1, result.stderr


@pytest.mark.skipif(HAS_GPU, reason="the switch happens only on a machine without a GPU")
def test_kernels_decorated_before_numbakern_was_imported_run_in_the_simulator(tmp_path):
    result = run_script(tmp_path, """
        import numpy as np
        from numba import cuda


        @cuda.jit(device=True)
        def double(v):
            return 2 * v


        @cuda.jit
        def twice(x, out):
            i = cuda.grid(1)
            if i < x.shape[0]:
                out[i] = double(x[i])


        from numba.cuda import jit  # bound before the switch (it reads numba's config at each call, so it follows)

        import numbakern  # after the kernels: they are real dispatchers, their launches go to the simulator
        import numbakern.sim


        @jit
        def halve(x, out):
            i = cuda.grid(1)
            if i < x.shape[0]:
                out[i] = x[i] / 2


        @cuda.jit
        def quadruple(x, out):  # a simulator kernel calling a real device function
            i = cuda.grid(1)
            if i < x.shape[0]:
                out[i] = double(double(x[i]))


        x = np.random.default_rng(1).random(700).astype(np.float32)
        for launch, factor in ((twice[3, 256], 2), (twice.configure(3, 256), 2), (twice.forall(700), 2),
                               (halve[3, 256], 0.5), (quadruple[3, 256], 4)):
            out = np.full_like(x, np.nan)
            launch(x, out)
            assert np.array_equal(out, x * np.float32(factor))
        print(type(twice).__name__, type(halve).__name__, type(quadruple).__name__, numbakern.sim.active_engine())
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["CUDADispatcher", "FakeCUDAKernel", "FakeCUDAKernel", "numbakern"]
    assert result.stderr.count(NOTE) == 1


@pytest.mark.skipif(HAS_GPU, reason="the switch happens only on a machine without a GPU")
def test_the_checkers_work_in_a_script(tmp_path):
    result = run_script(tmp_path, """
        import numpy as np
        from numba import cuda

        import numbakern


        @cuda.jit
        def shift(x, out):
            buf = cuda.shared.array(32, dtype=np.float32)
            t = cuda.threadIdx.x
            buf[t] = x[t]
            out[t] = buf[(t + 1) % 32]  # no syncthreads() between the store and the neighbour's load


        x = np.arange(32, dtype=np.float32)
        shift[1, 32](x, np.empty_like(x))
    """, NUMBAKERN_SIM_CHECKS="all")
    assert result.returncode == 1
    assert "RaceError: in kernel 'shift'" in result.stderr  # a store and a neighbour's load in one interval


def test_an_explicit_simulator_choice_is_silent(tmp_path):
    result = run_script(tmp_path, ISORT_ORDER, NUMBA_ENABLE_CUDASIM="1")
    assert result.returncode == 0, result.stderr
    assert "target: simulator" in result.stdout and NOTE not in result.stderr


@pytest.mark.skipif(HAS_GPU, reason="needs a machine without a CUDA driver")
def test_forcing_the_gpu_target_without_a_driver_names_the_fix(tmp_path):
    result = run_script(tmp_path, ISORT_ORDER, NUMBA_ENABLE_CUDASIM="0")
    assert result.returncode == 1
    assert "CudaSupportError" in result.stderr
    assert "NUMBA_ENABLE_CUDASIM=0 in the environment forces numba's real GPU target" in result.stderr
    assert "Unset NUMBA_ENABLE_CUDASIM" in result.stderr
    assert NOTE not in result.stderr


def test_hidden_devices_mean_the_simulator(tmp_path):
    # CUDA_VISIBLE_DEVICES="" hides every GPU: on a GPU machine too, numbakern must pick the simulator
    result = run_script(tmp_path, ISORT_ORDER, CUDA_VISIBLE_DEVICES="")
    assert result.returncode == 0, result.stderr
    assert "target: simulator" in result.stdout and result.stderr.count(NOTE) == 1


WHICH_TARGET = """
    import sys
    from numba import cuda

    import numbakern
    from numba.cuda.core import config
    print("simulator" if config.ENABLE_CUDASIM else "gpu", "initialised" if cuda.cudadrv.driver.driver.is_initialized
          else "not initialised")
"""


LIBM = next((p for p in ("/usr/lib/x86_64-linux-gnu/libm.so.6", "/lib/x86_64-linux-gnu/libm.so.6",
                          "/usr/lib64/libm.so.6", "/lib64/libm.so.6") if os.path.exists(p)), None)


@pytest.mark.skipif(HAS_GPU or LIBM is None, reason="needs a Linux machine without a CUDA driver")
def test_a_driver_library_means_the_gpu_and_cuda_is_not_initialised_by_the_import(tmp_path):
    # any loadable library named libcuda.so.1 stands in for an installed driver: the choice is made without
    # initialising CUDA (a GPU machine's process may fork later), so here it can only be seen, not used
    fake = tmp_path / "driver"
    fake.mkdir()
    shutil.copy(LIBM, fake / "libcuda.so.1")
    result = run_script(tmp_path, WHICH_TARGET, LD_LIBRARY_PATH=str(fake))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["gpu", "not", "initialised"] and NOTE not in result.stderr
