"""The ``rng`` and ``seed`` fixtures of numbakern's pytest plugin, which this suite uses as a user's project does:
seeded per test, reproducible, the seed shown on failure, ``pytest --seed`` to replay or change it."""

import re
import subprocess
import sys

import numpy as np

from numbakern.pytest_plugin import DEFAULT_SEED, derive_seed
from tests import environments

SECTION = re.compile(r"^-+ random inputs -+$", re.MULTILINE)

PROBE = '''
import numpy as np

def test_draws(rng, seed):
    print("SEED", seed, "FIRST", rng.integers(1 << 30))

def test_fails(rng):
    assert rng.random() < 0  # always fails: its report must carry the seed
'''


def run_probe(tmp_path, *args):
    """The probe as a user's project runs it: plain pytest, the plugin from numbakern's installation, no conftest."""
    (tmp_path / "test_probe.py").write_text(PROBE)
    proc = subprocess.run([sys.executable, "-m", "pytest", *environments.pytest_plugin_args(), "-p", "no:cacheprovider",
                           "-s", *args, str(tmp_path)], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          check=False, env=environments.clean(tmp_path))
    return proc.returncode, proc.stdout + proc.stderr


def draws(output):
    seed, first = re.search(r"SEED (\d+) FIRST (\d+)", output).groups()
    return int(seed), int(first)


def test_seed_is_derived_from_the_base_seed_and_the_test_id():
    a = derive_seed(DEFAULT_SEED, "tests/x.py::test_a")
    assert a == derive_seed(DEFAULT_SEED, "tests/x.py::test_a")
    assert a != derive_seed(DEFAULT_SEED, "tests/x.py::test_b") and a != derive_seed(1, "tests/x.py::test_a")


def test_the_same_base_seed_gives_the_same_inputs_and_a_failure_prints_its_seed(tmp_path):
    rc, out = run_probe(tmp_path)
    assert rc == 1, out
    seed, first = draws(out)
    assert seed == derive_seed(DEFAULT_SEED, "test_probe.py::test_draws")
    assert first == np.random.default_rng(seed).integers(1 << 30)
    fails_seed = derive_seed(DEFAULT_SEED, "test_probe.py::test_fails")
    assert SECTION.search(out) and f"this test's seed: {fails_seed}" in out, out
    assert f"reproduce: pytest --seed {DEFAULT_SEED} 'test_probe.py::test_fails'" in out, out
    assert f"random inputs: base seed {DEFAULT_SEED} (pytest --seed N to change it)" in out  # the header

    rc, again = run_probe(tmp_path, "--seed", str(DEFAULT_SEED))
    assert draws(again) == (seed, first)
    rc, other = run_probe(tmp_path, "--seed", "7")
    assert draws(other)[0] == derive_seed(7, "test_probe.py::test_draws") != seed


def test_a_passing_test_prints_no_seed_and_a_bad_seed_is_a_usage_error(tmp_path):
    rc, out = run_probe(tmp_path, "-k", "draws")
    assert rc == 0 and not SECTION.search(out), out
    rc, out = run_probe(tmp_path, "--seed", "abc")
    assert rc == 4 and "--seed must be an integer or 'random', got 'abc'" in out, out
