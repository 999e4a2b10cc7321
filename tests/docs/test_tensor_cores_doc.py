"""docs/tensor-cores.md: every Python example runs as printed, and its m16n8k8 tf32 table says what the simulator's
fragments hold."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import numpy as np
import pytest

from numbakern.mma import layout

DOC = Path(__file__).resolve().parents[2] / "docs" / "tensor-cores.md"
TEXT = DOC.read_text()
EXAMPLES = re.findall(r"^```python\n(.*?)^```", TEXT, re.S | re.M)


def test_the_page_has_its_examples():
    assert len(EXAMPLES) >= 4
    assert any("tile_16x8x16_bf16[1, 32](a, b, c, d)" in e for e in EXAMPLES)  # §3, with its a, b, c, d and rng
    assert any("mma_m16n8k8_tf32" in e for e in EXAMPLES) and any("MisalignedAccessError" in e for e in EXAMPLES)


@pytest.mark.sim
@pytest.mark.parametrize("number", range(len(EXAMPLES)))
def test_every_python_example_runs_as_printed(number, tmp_path):
    # a file of its own, as a reader would save it: its kernels have source lines, its asserts check its results
    script = tmp_path / f"tensor_cores_example_{number}.py"
    script.write_text(EXAMPLES[number])
    runpy.run_path(str(script), run_name="__main__")


def _table() -> dict[str, tuple[str, str, str]]:
    """The tf32 table's rows: register -> (matrix, row expression, column expression)."""
    section = TEXT.split("**m16n8k8 with tf32 operands**", 1)[1].split("```", 1)[0]
    rows = re.findall(r"^\| ([abc]\d) \| (A|B|C/D)\((.+?), (.+?)\) \|$", section, re.M)
    return {reg: (matrix, row, col) for reg, matrix, row, col in rows}


def test_the_tf32_table_lists_every_register():
    assert sorted(_table()) == ["a0", "a1", "a2", "a3", "b0", "b1", "c0", "c1", "c2", "c3"]


def _held(expression: str, lane: int) -> int:
    """The value of a formula of the table (``g+8``, ``2t+1``) for a lane."""
    g, t = lane >> 2, lane % 4
    if not re.fullmatch(r"[gt0-9+ ]+", expression):
        raise ValueError(f"not a formula of g and t: {expression!r}")
    python = re.sub(r"(\d)([gt])", r"\1*\2", expression)  # 2t: 2*t
    return eval(python, {}, {"g": g, "t": t})  # noqa: S307 - digits, g, t and + (checked above)


def test_the_tf32_table_is_the_fragment_layout_the_simulator_gathers():
    """Read against ``numbakern.mma.layout``, whose tables ``numbakern.sim.tensorcore`` gathers a warp's fragments
    with (the doc's example computes A·B + C through the simulator with this table's loads)."""
    table = _table()
    shape = layout.M16N8K8_TF32
    for lane in range(32):
        for what, elements in (("a", layout.a_elements(shape, lane)), ("b", layout.b_elements(shape, lane)),
                               ("c", layout.c_elements(shape, lane))):
            for i, element in enumerate(elements):
                _, row, col = table[f"{what}{i}"]
                assert (_held(row, lane), _held(col, lane)) == element, (lane, f"{what}{i}")


def test_the_tf32_table_covers_each_element_once():
    table = _table()
    for matrix, rows, cols in (("A", 16, 8), ("B", 8, 8), ("C/D", 16, 8)):
        seen = np.zeros((rows, cols), int)
        for lane in range(32):
            for m, row, col in table.values():
                if m == matrix:
                    seen[_held(row, lane), _held(col, lane)] += 1
        assert (seen == 1).all(), matrix
