from __future__ import annotations

import json
from pathlib import Path

import pytest

DEFECTS_DIR = Path(__file__).parent / "defects"


@pytest.fixture(scope="session")
def fixture_launchers() -> dict:
    return json.loads((DEFECTS_DIR / "launchers.json").read_text())
