"""The pytest plugin, exercised in fresh pytest processes (the mode is fixed once numba is imported)."""

import re

import pytest

from tests import environments

pytest_plugins = ["pytester"]

SIM_AND_GPU_TESTS = """
import os
import pytest

def test_runs_in_the_simulator():
    from numba.cuda.core import config
    assert os.environ["NUMBA_ENABLE_CUDASIM"] == "1" and config.ENABLE_CUDASIM

@pytest.mark.gpu
def test_needs_a_gpu():
    raise AssertionError("a gpu test must not run in the simulator")
"""


@pytest.mark.sim
def test_without_a_gpu_tests_run_in_the_simulator_and_gpu_tests_skip(pytester):
    pytester.makepyfile(SIM_AND_GPU_TESTS)
    result = pytester.runpytest_subprocess("-rs", "--sim")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*numbakern: CUDA simulator*", "*needs a CUDA GPU*"])


@pytest.mark.sim
def test_gpu_flag_without_a_gpu_is_a_clear_error(pytester):
    from numbakern import mode

    if mode.gpu_available():
        pytest.skip("this machine has a GPU")
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("--gpu")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*--gpu was given but no CUDA GPU is visible*"])


@pytest.mark.sim
def test_numba_imported_in_the_wrong_mode_is_reported(pytester):
    # a conftest-less early import: a plugin given with -p that imports numba before our hook runs
    pytester.makepyfile(early_numba="import os\nos.environ['NUMBA_ENABLE_CUDASIM'] = '0'\nimport numba.cuda\n")
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "early_numba", "--sim")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*numba.cuda was imported in the real GPU target before the numbakern plugin could "
                                 "select the simulator*"])


RACY_KERNEL_TEST = """
import numpy as np
from numba import cuda

@cuda.jit
def shift(x, out):
    tmp = cuda.shared.array(64, dtype=np.float32)
    i = cuda.threadIdx.x
    tmp[i] = x[i]
    out[i] = tmp[(i + 1) % 64]  # the cuda.syncthreads() before this line is missing

def test_shift(rng, device):
    assert device.simulator and device.checks == "all" and device.name == "numbakern simulator"
    x = rng.random(64).astype(np.float32)
    out = np.zeros_like(x)
    shift[1, 64](device.to_device(x), out)
"""


def _failure_section(text: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "test_shift" in line and line.startswith("_"))
    end = next(i for i, line in enumerate(lines) if "random inputs" in line)
    return lines[start:end]


@pytest.mark.sim
def test_a_race_is_reported_from_the_kernels_own_lines_with_its_seed(pytester):
    pytester.makepyfile(test_racy=RACY_KERNEL_TEST)
    result = pytester.runpytest_subprocess("--sim", *environments.pytest_plugin_args())
    result.assert_outcomes(failed=1)
    section = _failure_section(result.stdout.str())
    text = "\n".join(section)
    # the test's line, then the kernel's line, then the message: no simulator, numba or greenlet frames
    assert "numbakern/sim" not in text and "greenlet" not in text and "numba/" not in text, text
    assert "SharedMemoryTracker" not in text and "self = " not in text, text  # no tracker locals
    assert len(section) < 30, text
    result.stdout.fnmatch_lines(["test_racy.py:15: ", "    def shift(x, out):", ">       tmp[i] = x[i]",
                                 "E   *RaceError: in kernel 'shift': shared array 'tmp'*", "test_racy.py:8: RaceError",
                                 "*reproduce: pytest --seed 20251122 'test_racy.py::test_shift'*"])


@pytest.mark.sim
def test_fulltrace_shows_the_simulators_frames(pytester):
    pytester.makepyfile(test_racy=RACY_KERNEL_TEST)
    result = pytester.runpytest_subprocess("--sim", "--fulltrace", *environments.pytest_plugin_args())
    result.assert_outcomes(failed=1)
    assert "numbakern/sim/engine.py" in result.stdout.str()


@pytest.mark.sim
def test_a_user_projects_tests_get_rng_seed_and_device_from_the_plugin(pytester):
    pytester.makepyfile(test_fixtures="""
        import numpy as np

        def test_uses_them(rng, seed, device):
            assert isinstance(rng, np.random.Generator) and isinstance(seed, int)
            assert np.random.default_rng(seed).random() == rng.random()
            assert device.simulator
            print("SEED", seed)
    """)
    first = pytester.runpytest_subprocess("--sim", "-s", *environments.pytest_plugin_args())
    again = pytester.runpytest_subprocess("--sim", "-s", "--seed", "20251122", *environments.pytest_plugin_args())
    other = pytester.runpytest_subprocess("--sim", "-s", "--seed", "5", *environments.pytest_plugin_args())
    for r in (first, again, other):
        r.assert_outcomes(passed=1)
    seeds = [re.search(r"SEED (\d+)", r.stdout.str()).group(1) for r in (first, again, other)]
    assert seeds[0] == seeds[1] != seeds[2]
    first.stdout.fnmatch_lines(["random inputs: base seed 20251122 (pytest --seed N to change it)"])


WHERE_AM_I = """
import os
import pytest

@pytest.mark.parametrize("n", range(8))
def test_where(n):
    folder = os.environ["WHERE_DIR"]
    worker = os.environ.get("PYTEST_XDIST_WORKER", "none")
    with open(os.path.join(folder, f"{worker}-{n}"), "w") as f:
        f.write(os.environ.get("CUDA_VISIBLE_DEVICES", "unset"))
"""


def _seen_by_worker(folder) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = {}
    for path in folder.iterdir():
        seen.setdefault(path.name.split("-")[0], set()).add(path.read_text())
    return seen


# more workers than GPUs (round robin), one GPU for all, more GPUs than workers (each worker a GPU of its own, no
# round robin: what an equal count would show too)
@pytest.mark.parametrize("gpus, workers", [(2, 3), (1, 2), (8, 2)])
def test_each_xdist_worker_gets_its_own_gpu_round_robin(pytester, monkeypatch, tmp_path, gpus, workers):
    pytest.importorskip("xdist")
    where = tmp_path / "where"
    where.mkdir()
    monkeypatch.setenv("NUMBAKERN_FAKE_GPUS", str(gpus))
    monkeypatch.setenv("WHERE_DIR", str(where))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    pytester.makepyfile(test_where=WHERE_AM_I)
    result = pytester.runpytest_subprocess("-n", str(workers), "-p", "no:cacheprovider",
                                           *environments.pytest_plugin_args())
    result.assert_outcomes(passed=8)
    seen = _seen_by_worker(where)
    assert set(seen) <= {f"gw{k}" for k in range(workers)} and len(seen) >= 2, seen
    for worker, visible in seen.items():
        assert visible == {str(int(worker[2:]) % gpus)}, seen  # gwK: GPU K mod n, and only it
    shared = " (round robin: more workers than GPUs)" if workers > gpus else ""
    header = result.stdout.str()
    assert f"numbakern: {workers} xdist workers on {gpus} GPU{'s' if gpus > 1 else ''}, each with " \
           f"CUDA_VISIBLE_DEVICES set to its own{shared}:\n" in header
    for k in range(min(gpus, workers)):
        mine = ", ".join(f"gw{w}" for w in range(workers) if w % gpus == k)
        assert f"\n  GPU {k} (fake GPU) [{k}]: {mine}\n" in header, header


def test_with_sim_the_workers_gpus_are_left_alone(pytester, monkeypatch, tmp_path):
    pytest.importorskip("xdist")
    where = tmp_path / "where"
    where.mkdir()
    monkeypatch.setenv("NUMBAKERN_FAKE_GPUS", "2")
    monkeypatch.setenv("WHERE_DIR", str(where))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    pytester.makepyfile(test_where=WHERE_AM_I)
    result = pytester.runpytest_subprocess("-n", "2", "--sim", "-p", "no:cacheprovider",
                                           *environments.pytest_plugin_args())
    result.assert_outcomes(passed=8)
    assert set().union(*_seen_by_worker(where).values()) == {"0,1"}
    assert "xdist workers on" not in result.stdout.str()


def test_a_bad_fake_gpu_list_is_a_usage_error(pytester, monkeypatch):
    pytest.importorskip("xdist")
    monkeypatch.setenv("NUMBAKERN_FAKE_GPUS", "lots")
    pytester.makepyfile("def test_x():\n    pass\n")
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider", *environments.pytest_plugin_args())
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*numbakern: NUMBAKERN_FAKE_GPUS must be a count or a JSON list*"])
