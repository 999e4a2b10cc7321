"""docs/tensor-cores.md §9 as printed: its kernel is ``tests/hopper/stage.py``'s, its example runs, and each row of its
table of planted defects names the error the simulator raises and words from its message."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from numbakern import sim
from numbakern.mma import formats
from tests.hopper import stage

pytestmark = pytest.mark.sim

ROOT = Path(__file__).resolve().parents[2]
SECTION = (ROOT / "docs" / "tensor-cores.md").read_text().split("## 9. The Hopper path", 1)[1].split("\n## 10.", 1)[0]
BLOCKS = re.findall(r"```python\n(.*?)```", SECTION, re.S)
ROWS = re.findall(r"^\| (\d+) \| [^|]+ \| `(\w+)`[^|]*?((?:\"[^\"]+\"[^|]*)*)\|", SECTION, re.M)


def test_the_documented_kernel_is_the_tested_one():
    source = Path(stage.__file__).read_text()
    # (from its imports: the block runs as printed, as every example of the page does)
    kernel = source[source.index("import numpy as np"):source.index("\n\ndef tensor_maps")].rstrip()
    assert BLOCKS[0].rstrip() == kernel


def test_the_example_runs_as_printed():
    exec(compile(BLOCKS[1], "docs/tensor-cores.md", "exec"), {})


@pytest.mark.parametrize("bug, error, quoted", ROWS, ids=[row[0] for row in ROWS])
def test_each_documented_defect_raises_what_the_table_says(bug, error, quoted, rng):
    a = formats.f32_to_bf16_bits(rng.standard_normal((64, 64)).astype(np.float32))
    b = formats.f32_to_bf16_bits(rng.standard_normal((64, 64)).astype(np.float32))
    out = np.zeros((64, 64), np.float32)
    with pytest.raises(Exception) as caught, sim.checks("all"):
        stage.one_stage[1, 256, 0, stage.SHARED](a, b, out, *stage.tensor_maps(a, b, out), int(bug))
    assert type(caught.value).__name__ == error
    message = str(caught.value)
    for words in re.findall(r'"([^"]+)"', quoted):
        for piece in words.split(" ... "):  # (the table shortens with " ... ")
            assert piece in message, (piece, message)


def test_the_table_covers_every_planted_defect():
    planted = set(re.findall(r"bug [!=]= (\d+)", Path(stage.__file__).read_text()))
    assert {row[0] for row in ROWS} == planted
