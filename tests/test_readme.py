"""The README's snippets and commands are the project's promises: keep them executable and in step with CI."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def bash_blocks():
    return re.findall(r"```bash\n(.*?)```", README, re.S)


def test_quickstart_runs():
    code = "\n".join(re.findall(r"```python\n(.*?)```", README, re.S))
    assert "matmul(a, b)" in code
    exec(compile(code, "README.md", "exec"), {"__name__": "readme"})


def test_readme_gives_exactly_two_setup_commands_and_ci_runs_the_test_one():
    setup = README.split("## Set up on a fresh machine", 1)[1].split("\n## ", 1)[0]
    commands = [b.strip() for b in re.findall(r"```bash\n(.*?)```", setup, re.S)]
    assert len(commands) == 2
    main_job, tests = commands
    assert "translate" in main_job and "pytest" in tests
    ci = (ROOT / ".ci" / "run").read_text()
    assert tests in ci, "the CI script must run the README's test command verbatim"
