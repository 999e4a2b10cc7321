"""The suite's ``rng`` fixture (tests/conftest.py): seeded per test, reproducible, its seed shown on failure."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from .conftest import DEFAULT_SEED, derive_seed

CONFTEST = Path(__file__).with_name("conftest.py")
SECTION = re.compile(r"^-+ random inputs -+$", re.MULTILINE)

PROBE = '''
import numpy as np

def test_draws(rng, seed):
    print("SEED", seed, "FIRST", rng.integers(1 << 30))

def test_fails(rng):
    assert rng.random() < 0  # always fails: its report must carry the seed
'''


def run_probe(tmp_path, *args):
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "test_probe.py").write_text(PROBE)
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:numbakern", "-p", "no:cacheprovider", "-s",
                           *args, str(tmp_path)], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          check=False)
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
