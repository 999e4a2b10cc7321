"""What ``translate`` prints: plain whole lines when stdout is not a terminal, a table on one; what happened to each
file; shared memory a kernel takes at launch is "dynamic", never ``0``."""

import io
import os
import re
import sys
from pathlib import Path

import pytest

from tests import environments, forked
from translate import output

ROOT = Path(__file__).resolve().parents[2]
LONG = "generated/" + "a_folder_with_a_long_name/" * 4 + "matmul_tiled_with_a_long_name.cu"


def child_env() -> dict[str, str]:
    """This environment for a ``translate`` child run from any folder: numbakern and translate from this checkout
    first on the path, and whatever else the path had (a ``pip --target`` install's folder) kept."""
    return environments.with_path_first({k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}, ROOT)


class Terminal(io.StringIO):
    def isatty(self):
        return True


def rows():
    return [
        output.Row("matmul_tiled", output.WRITTEN, LONG, ("launch_matmul_tiled",), 40, 0, True, 0.31),
        output.Row("histogram", output.UNCHANGED, "gen/histogram.cu", ("launch_histogram",), 20, 1024, False, 0.2),
        output.Row("broken.py:k", output.FAILED, seconds=0.1),
    ]


def test_piped_output_is_one_whole_line_per_kernel():
    stream = io.StringIO()
    output.print_translations(rows(), "translate -> generated/ (ast, sm_90)", stream)
    lines = stream.getvalue().splitlines()
    assert lines[0] == (f"written    {LONG}  kernel matmul_tiled  launcher launch_matmul_tiled  registers 40  "
                        "smem dynamic  0.31s")
    assert lines[1] == ("unchanged  gen/histogram.cu  kernel histogram  launcher launch_histogram  registers 20  "
                        "smem 1024 B  0.20s")
    assert lines[2].startswith("failed     broken.py:k")
    assert lines[3] == "translate -> generated/ (ast, sm_90): 1 written, 1 unchanged, 1 failed"
    assert not any(ch in stream.getvalue() for ch in "…│┃━")


def plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", text)


def test_a_wide_terminal_gets_a_table_of_whole_cells_and_the_summary_line(monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    stream = Terminal()
    output.print_translations(rows(), "translate -> generated/ (ast, sm_90)", stream)
    text = plain(stream.getvalue())
    assert "┃ kernel" in text and "dynamic" in text and "unchanged" in text
    assert "…" not in text and f" {LONG} " in text  # the path whole, in one cell
    assert text.splitlines()[-1] == "translate -> generated/ (ast, sm_90): 1 written, 1 unchanged, 1 failed"


def test_an_80_column_terminal_gets_whole_lines_no_word_broken_and_the_summary_line(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    stream = Terminal()
    output.print_translations(rows(), "translate -> generated/ (ast, sm_90)", stream)
    lines = plain(stream.getvalue()).splitlines()
    # the table would need more than 80 columns: each kernel's whole line instead (the terminal wraps it softly)
    assert lines == [output.plain_line(r) for r in rows()] + [
        "translate -> generated/ (ast, sm_90): 1 written, 1 unchanged, 1 failed"]


def test_each_kernels_line_is_written_when_it_is_done_and_an_interrupted_run_says_so():
    stream = io.StringIO()
    first, second, _ = rows()
    with pytest.raises(KeyboardInterrupt), output.Report("translate -> gen/ (ast, sm_90)", 3, stream=stream) as report:
        report.done(first)
        assert stream.getvalue() == output.plain_line(first) + "\n"  # before the next kernel starts
        report.done(second)
        raise KeyboardInterrupt
    assert stream.getvalue().splitlines()[-1] == ("translate -> gen/ (ast, sm_90): interrupted after 2 of 3 kernels: "
                                                   "1 written, 1 unchanged, 0 failed")


def test_quiet_prints_the_summary_line_only():
    stream = io.StringIO()
    with output.Report("translate -> gen/ (ast, sm_90)", 3, stream=stream, verbosity=output.QUIET) as report:
        for r in rows():
            report.done(r)
    assert stream.getvalue() == "translate -> gen/ (ast, sm_90): 1 written, 1 unchanged, 1 failed\n"


def test_shared_memory_text():
    assert output.shared_text(output.Row("k", output.WRITTEN, static_shared=0, dynamic_shared=True)) == "dynamic"
    assert output.shared_text(output.Row("k", output.WRITTEN, static_shared=512, dynamic_shared=True)) == \
        "512 B + dynamic"
    assert output.shared_text(output.Row("k", output.WRITTEN, static_shared=0)) == "0 B"
    assert output.shared_text(output.Row("k", output.WRITTEN)) == "-"


def test_check_output_piped():
    stream = io.StringIO()
    output.print_check([{"file": "k.cu", "problem": "stale", "detail": "mod:k changed since translation"}], "gen",
                       stream)
    assert stream.getvalue() == ("translate --check: 1 problem(s) in gen/\n"
                                 "stale        k.cu  mod:k changed since translation\n")


def test_the_command_says_dynamic_shared_memory_and_what_it_did(tmp_path):
    env = child_env()
    out = tmp_path / "gen"

    def run():
        return forked.run([sys.executable, "-m", "translate.cli", "matmul_tiled", "--out", str(out)], cwd=ROOT,
                          env=env, timeout=600)

    first, second = run(), run()
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    # matmul_tiled's tiles are `extern __shared__`, sized at launch
    assert "extern __shared__" in (out / "matmul_tiled.cu").read_text()
    line = first.stdout.splitlines()[0]
    assert line.startswith(f"written    {out}/matmul_tiled.cu  kernel matmul_tiled  launcher launch_matmul_tiled  "
                           "registers "), line
    assert " smem dynamic " in line
    assert second.stdout.splitlines()[0].startswith(f"unchanged  {out}/matmul_tiled.cu ")


def test_a_terminal_sees_the_live_progress_then_the_result_and_the_summary_line(monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    stream = Terminal()
    first, second, third = rows()
    with output.Report("translate -> gen/ (ast, sm_90)", 3, stream=stream) as report:
        for r in (first, second, third):
            report.start(r.kernel)
            report.done(r)
    text = plain(stream.getvalue())
    assert "translating broken.py:k" in text and "3/3" in text  # the live display: the kernel in hand, the count
    assert "┃ kernel" in text and text.splitlines()[-1] == ("translate -> gen/ (ast, sm_90): 1 written, 1 unchanged, "
                                                           "1 failed")


def test_the_report_writes_to_stdout_as_it_is_when_made(monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    report = output.Report("translate -> gen/ (ast, sm_90)", 2)
    assert report.stream is terminal and report.terminal
    assert output.Report("t", 2, silent=True).stream is None
