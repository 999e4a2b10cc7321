"""docs/your-kernels.md shows code, a checker message and derived values: all of them must be what the examples
project really contains and produces."""

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.environments import with_path_first

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "your-kernels.md").read_text()
EXAMPLES = ROOT / "examples"


def tagged_blocks(tag):
    """(argument, block text) for every fenced block right after a ``<!-- tag: argument -->`` line."""
    return re.findall(rf"<!-- {tag}: (.+?) -->\n```\w*\n(.*?)```", DOC, re.S)


EXCERPTS = tagged_blocks("excerpt")


@pytest.mark.parametrize("path, block", EXCERPTS, ids=[f"{p}:{i}" for i, (p, _) in enumerate(EXCERPTS)])
def test_code_in_the_doc_is_copied_from_the_examples(path, block):
    assert block in (ROOT / path).read_text(), f"the excerpt of {path} in docs/your-kernels.md is out of date"


def test_the_doc_has_its_excerpts():
    assert len(EXCERPTS) >= 5 and len(tagged_blocks("checker message")) == 1


PRODUCE = textwrap.dedent("""
    import json, sys
    import numpy as np
    import numbakern.project, numbakern.sim
    sys.path.insert(0, "tests")
    from test_checker_catches import TILE, stencil5_no_barrier

    src = np.random.default_rng(0).random((40, 40), dtype=np.float32)
    try:
        with numbakern.sim.checks("all"):
            stencil5_no_barrier[(3, 3), (TILE, TILE)](src, np.empty_like(src))
        message = "no error"
    except numbakern.sim.SimulationError as e:
        message = f"{type(e).__name__}: {e}"
    specs = {}
    for spec in numbakern.project.find(".").specs():
        names = spec.arg_names()
        specs[spec.name] = {
            "outputs": [names[i] for i in spec.outputs],
            "accumulates": [names[i] for i in spec.accumulates],
            "signature": spec.signatures[0],
            "test": ["×".join(map(str, s.values())) for s in spec.test_sizes],
            "verify": ["×".join(map(str, s.values())) for s in spec.verify_sizes],
        }
    print(json.dumps({"message": message, "specs": specs}))
""")


@pytest.fixture(scope="module")
def produced():
    # the checker's message is the simulator's, on a machine with a GPU too
    env = with_path_first(dict(os.environ, NUMBA_ENABLE_CUDASIM="1"), EXAMPLES)
    result = subprocess.run([sys.executable, "-c", PRODUCE], cwd=EXAMPLES, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_checker_message_in_the_doc_is_the_real_one(produced):
    ((_, shown),) = tagged_blocks("checker message")
    assert shown.strip() == produced["message"]


def table_row(label):
    line = next(line for line in DOC.splitlines() if line.startswith(f"| {label} |"))
    return [cell.strip().strip("`") for cell in line.strip("|").split("|")][2:]


def test_the_derived_values_in_the_doc_are_the_specs(produced):
    header = table_row("derived")
    specs = [produced["specs"][name] for name in header]
    none = lambda names: ", ".join(names) or "—"  # noqa: E731
    assert table_row("outputs") == [none(s["outputs"]) for s in specs]
    assert table_row("accumulators") == [none(s["accumulates"]) for s in specs]
    assert table_row("signature (for `translate`)") == [s["signature"] for s in specs]
    assert table_row("simulator sizes") == [", ".join(s["test"]) for s in specs]
    assert table_row("GPU sizes") == ["+ " + ", ".join(s["verify"][len(s["test"]):]) for s in specs]
