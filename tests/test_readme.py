"""The README's snippets and commands are the project's promises: keep them executable and in step with CI."""

import re
import subprocess
import sys
from pathlib import Path

from tests import environments

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def bash_blocks():
    return re.findall(r"```bash\n(.*?)```", README, re.S)


def quickstart_code():
    quickstart = README.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    return "\n".join(re.findall(r"```python\n(.*?)```", quickstart, re.S))


def test_quickstart_runs():
    code = quickstart_code()
    assert "matmul(a, b)" in code
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})


def test_quickstart_runs_as_a_plain_script_in_a_clean_environment(tmp_path):
    """Saved as quickstart.py and run with plain python: no pytest plugin, no NUMBA_ENABLE_CUDASIM."""
    from numbakern import mode

    script = tmp_path / "quickstart.py"
    script.write_text(quickstart_code())
    env = environments.clean(tmp_path)
    result = subprocess.run([sys.executable, script.name], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    notes = result.stderr.count(mode.SCRIPT_NOTE)
    assert notes == (0 if mode.gpu_available() else 1), result.stderr


def test_readme_points_to_the_examples_project():
    quickstart = README.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    assert "examples/" in quickstart and "docs/your-kernels.md" in quickstart
    assert (ROOT / "examples" / "pyproject.toml").exists() and (ROOT / "docs" / "your-kernels.md").exists()


def test_readme_gives_exactly_two_setup_commands_and_ci_runs_the_test_one():
    setup = README.split("## Set up on a fresh machine", 1)[1].split("\n## ", 1)[0]
    commands = [b.strip() for b in re.findall(r"```bash\n(.*?)```", setup, re.S)]
    assert len(commands) == 2
    main_job, tests = commands
    assert "translate" in main_job and "pytest" in tests
    ci = (ROOT / ".ci" / "run").read_text()
    assert tests in ci, "the CI script must run the README's test command verbatim"
