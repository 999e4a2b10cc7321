"""docs/profiling.md's example runs as written, and every lesson has its generated table."""

import re
from pathlib import Path

import pytest

from numbakern.profiler import lessons

pytestmark = pytest.mark.sim
DOC = (Path(__file__).resolve().parents[2] / "docs" / "profiling.md").read_text()


def test_the_first_example_runs(capsys):
    code = re.search(r"```python\n(.*?)```", DOC, re.S).group(1)
    namespace = {}
    exec(compile(code, "docs/profiling.md", "exec"), namespace)  # noqa: S102 - the doc's own example
    p = namespace["p"]
    assert "dst[u32(row + j), u32(col)] = tile[u32(tx), u32(ty + j)]" in p.line(39).source
    assert p.line(39).memory["shared_ld"].bank_conflicts == 0  # the padded tile
    assert "kernel transpose: grid (32, 32, 1)" in capsys.readouterr().out


@pytest.mark.parametrize("name", list(lessons.LESSONS))
def test_every_lesson_has_its_table(name):
    block = re.search(rf"<!-- generated: profile lesson {name} \(do not edit by hand\) -->\n(.*?)<!-- end generated",
                      DOC, re.S)
    assert block is not None, f"docs/profiling.md has no block for the lesson {name}"
    assert f"kernel {lessons.LESSONS[name][0].py_func.__name__}: grid" in block.group(1)
