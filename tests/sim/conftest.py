"""Everything under tests/sim exercises numbakern's simulator: it runs in simulator mode and skips with --gpu."""

from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items):
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.sim)
