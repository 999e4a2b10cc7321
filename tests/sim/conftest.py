"""Everything under tests/sim exercises numbakern's simulator: it runs in simulator mode and skips with --gpu, but
for the tests marked ``gpu`` (comparisons of the simulator with a GPU), which run only with --gpu."""

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items):
    for item in items:
        if HERE in Path(str(item.fspath)).parents and item.get_closest_marker("gpu") is None:
            item.add_marker(pytest.mark.sim)
