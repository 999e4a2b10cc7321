"""The README's snippets and commands are the project's promises: keep them executable and in step with CI."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests import environments, forked

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


def test_the_readme_shows_what_the_main_command_prints_in_a_fresh_clone(tmp_path):
    """The README's sample of ``translate matmul_tiled`` is what that command prints where a user first runs it: a
    fresh clone, whose ``generated_cuda/`` already holds the translation (all but the time, which is the
    machine's). The clone's folder is a copy of the repository's generated files, so the test writes nothing here."""
    sample = re.search(r"```text\n(\w+ +generated_cuda/matmul_tiled\.cu .*?)```", README, re.S).group(1)
    shutil.copytree(ROOT / "generated_cuda", tmp_path / "generated_cuda")
    env = environments.with_path_first({k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}, ROOT)
    run = forked.run([sys.executable, "-m", "translate.cli", "matmul_tiled"], cwd=tmp_path, env=env, timeout=600)
    assert run.returncode == 0, run.stderr

    def timeless(text):
        return re.sub(r"  \d+\.\d+s$", "  TIME", text.strip(), flags=re.M)

    assert timeless(run.stdout) == timeless(sample)
    assert sample.startswith("unchanged  ")
