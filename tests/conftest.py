"""Fixtures shared by the whole suite.

Random inputs: a test takes the ``rng`` fixture (a ``numpy.random.Generator``) or the ``seed`` fixture (the int
behind it, for torch or CuPy generators). Each test's seed is derived from the run's base seed and the test's id,
so a test draws the same inputs however the suite is selected or ordered. The base seed is ``DEFAULT_SEED``;
``pytest --seed N`` picks another and ``pytest --seed random`` a fresh one per run (printed in the header). When a
test that drew random inputs fails, its report has a "random inputs" section with the seed and the command that
reproduces the failure.
"""

from __future__ import annotations

import secrets
import zlib

import numpy as np
import pytest

#: the base seed when ``--seed`` is not given
DEFAULT_SEED = 20_251_122

_SEED = pytest.StashKey[int]()
_BASE = pytest.StashKey[int]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--seed", default=None, metavar="N|random",
                     help=f"base seed of every test's random inputs (default {DEFAULT_SEED}; 'random': a fresh one)")


def _base_seed(config: pytest.Config) -> int:
    if _BASE in config.stash:
        return config.stash[_BASE]
    given = config.getoption("--seed")
    if given is None:
        base = DEFAULT_SEED
    elif given == "random":
        base = secrets.randbits(32)
    else:
        try:
            base = int(given)
        except ValueError:
            raise pytest.UsageError(f"--seed must be an integer or 'random', got {given!r}") from None
        if base < 0:
            raise pytest.UsageError(f"--seed must be non-negative, got {base}")
    config.stash[_BASE] = base
    return base


def derive_seed(base: int, nodeid: str) -> int:
    """The seed of one test: a function of the base seed and the test's id (stable across runs and selections)."""
    return int(np.random.SeedSequence([base, zlib.crc32(nodeid.encode())]).generate_state(1)[0])



def pytest_configure(config: pytest.Config) -> None:
    _base_seed(config)  # a bad --seed is a usage error before any test runs


def pytest_report_header(config: pytest.Config) -> str:
    return f"random inputs: base seed {_base_seed(config)} (pytest --seed N to change it)"


@pytest.fixture
def seed(request: pytest.FixtureRequest) -> int:
    """This test's seed (also recorded for the failure report)."""
    value = derive_seed(_base_seed(request.config), request.node.nodeid)
    request.node.stash[_SEED] = value
    return value


@pytest.fixture
def rng(seed: int) -> np.random.Generator:
    """A generator seeded for this test alone; its seed is printed if the test fails."""
    return np.random.default_rng(seed)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    value = item.stash.get(_SEED, None)
    if value is not None and report.failed:
        base = _base_seed(item.config)
        why = (f"this test's seed: {value} (np.random.default_rng({value})), from base seed {base}\n"
               f"reproduce: pytest --seed {base} '{item.nodeid}'")
        report.sections.append(("random inputs", why))
    return report
