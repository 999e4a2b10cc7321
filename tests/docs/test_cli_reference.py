"""docs/cli.md's reference is what the commands' parsers say (scripts/cli_reference.py makes it), and the README
points to it."""

import os
import subprocess
import sys
from pathlib import Path

from tests import environments

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "cli_reference.py"


def check(doc: Path) -> subprocess.CompletedProcess:
    env = environments.with_path_first({k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}, ROOT)
    return subprocess.run([sys.executable, str(SCRIPT), "--check", "--doc", str(doc)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_reference_is_what_the_parsers_say_and_a_stale_one_fails(tmp_path):
    page = ROOT / "docs" / "cli.md"
    result = check(page)
    assert result.returncode == 0, result.stderr
    stale = tmp_path / "cli.md"
    stale.write_text("\n".join(line for line in page.read_text().splitlines() if not line.startswith("| `--json`")))
    result = check(stale)
    assert result.returncode == 1
    assert result.stderr == f"{stale}: the command reference is out of date: run python scripts/cli_reference.py\n"


def test_every_option_of_translate_is_in_the_reference():
    from translate.cli import build_parser

    page = (ROOT / "docs" / "cli.md").read_text()
    for action in build_parser()._actions:
        for option in action.option_strings:
            assert f"`{option}`" in page, option


def test_the_readme_links_the_command_reference():
    assert "(docs/cli.md)" in (ROOT / "README.md").read_text()
