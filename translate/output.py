"""What the ``translate`` command prints, as it goes: a live progress display and then a table on a terminal, one
whole line per kernel as each finishes anywhere else, and a summary line always.

A pipe, a file or a CI log gets one line per kernel that nothing cuts short (rich sizes a table for an 80-column
terminal when it cannot ask one, which truncated the output paths: the one thing a user needs), written the moment
the kernel is done, so that a long run shows its progress and an interrupted one keeps the lines of what finished.
A terminal too narrow for the table gets the same whole lines (a table would have to break paths and names).
Each line says what happened to the file (written, unchanged, failed), its path, the launcher(s) and the
resources; the summary line counts them, and says when the run was interrupted.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from rich.console import Console
from rich.measure import Measurement
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from .trust import printable

#: how a kernel's file fared
WRITTEN, UNCHANGED, FAILED = "written", "unchanged", "failed"
#: the CUDA C of a kernel that takes its shared memory at launch (the launcher's shared_bytes)
DYNAMIC_SHARED = "extern __shared__"
#: how much the command says: errors and the summary line only; the usual; also each kernel's stage times
QUIET, NORMAL, VERBOSE = -1, 0, 1
_COLOUR = {WRITTEN: "green", UNCHANGED: "cyan", FAILED: "red"}


@dataclass(frozen=True)
class Row:
    kernel: str
    status: str                  # WRITTEN, UNCHANGED or FAILED
    path: str = ""               # the .cu as the user named its folder
    launchers: tuple[str, ...] = ()
    registers: int | None = None
    static_shared: int | None = None  # bytes of __shared__ arrays of fixed size, from NVRTC's resource report
    dynamic_shared: bool = False      # the kernel also takes shared memory at launch
    seconds: float = 0.0


def row_for(kernel: str, result, before_sha256: str | None, seconds: float) -> Row:
    """The row of one successful translation; ``before_sha256``: the file's bytes before it (None: no file)."""
    comp = result.compile or {}
    status = UNCHANGED if before_sha256 == result.entry.get("file_sha256") else WRITTEN
    return Row(kernel, status, display_path(result.path), tuple(x["symbol"] for x in result.entry["launchers"]),
               comp.get("registers"), comp.get("shared_bytes"), DYNAMIC_SHARED in result.code, seconds)


def display_path(path: str | None) -> str:
    """``path`` relative to the current folder when it is below it, else absolute."""
    if not path:
        return ""
    rel = os.path.relpath(path)
    return os.path.abspath(path) if rel.startswith(os.pardir + os.sep) else rel


def shared_text(row: Row) -> str:
    """Shared memory as the user should read it: a kernel that sizes it at launch does not use ``0`` bytes."""
    if row.dynamic_shared:
        return "dynamic" if not row.static_shared else f"{row.static_shared} B + dynamic"
    return "-" if row.static_shared is None else f"{row.static_shared} B"


def is_terminal(stream: TextIO) -> bool:
    return hasattr(stream, "isatty") and stream.isatty()


def summary_line(rows: Sequence[Row], title: str, total: int | None = None) -> str:
    """``translate -> out/ (ast, sm_90): 1 written, 0 unchanged, 0 failed``; with ``total`` larger than the rows, the
    run was interrupted and the line says after how many."""
    counts = ", ".join(f"{sum(r.status == s for r in rows)} {s}" for s in (WRITTEN, UNCHANGED, FAILED))
    if total is not None and len(rows) < total:
        return f"{title}: interrupted after {len(rows)} of {total} kernels: {counts}"
    return f"{title}: {counts}"


def plain_line(r: Row) -> str:
    """One kernel as one whole line: ``written generated_cuda/k.cu  kernel k  launcher launch_k  ...``."""
    if r.status == FAILED:
        return f"failed     {r.kernel}  (the error is above, on stderr)"
    regs = "-" if r.registers is None else str(r.registers)
    launchers = ("launchers " if len(r.launchers) > 1 else "launcher ") + ", ".join(r.launchers)
    return (f"{r.status:<10} {r.path}  kernel {r.kernel}  {launchers}  registers {regs}  smem {shared_text(r)}  "
            f"{r.seconds:.2f}s")


def table_of(rows: Sequence[Row], title: str) -> Table:
    table = Table(title=title)
    for col in ("kernel", "status", "file", "launchers", "registers", "smem", "time"):
        table.add_column(col, no_wrap=True)
    for r in rows:
        table.add_row(r.kernel, f"[{_COLOUR[r.status]}]{r.status}[/]", r.path or "-", ", ".join(r.launchers) or "-",
                      "-" if r.registers is None else str(r.registers),
                      "-" if r.status == FAILED else shared_text(r), f"{r.seconds:.2f}s")
    return table


def fits(console: Console, renderable) -> bool:
    """Whether ``renderable`` fits the console's width without wrapping a cell."""
    # measured as if the console were unbounded: a measurement within the console's width is clamped to it
    unbounded = console.options.update_width(1 << 20)
    return Measurement.get(console, unbounded, renderable).maximum <= console.width


class Report:
    """One run's output, kernel by kernel: ``start(name)`` before a kernel, ``done(row)`` after it, ``error(text)``
    for what went wrong (stderr), ``close()`` at the end, also of an interrupted run (``with Report(...)`` closes).

    On a terminal a live progress display runs while the kernels translate (a bar, the kernel in hand) and the
    table follows; elsewhere each kernel's line is written when it is done. The summary line comes last, always
    (also with ``QUIET``, which prints nothing else but errors). ``silent`` prints nothing on stdout at all
    (``--json``: the caller prints its document there). ``stream`` and ``errors`` default to sys.stdout and
    sys.stderr as they are when the report is made."""

    def __init__(self, title: str, total: int, *, stream: TextIO | None = None, errors: TextIO | None = None,
                 verbosity: int = NORMAL, live: bool = True, silent: bool = False):
        self.title, self.total, self.verbosity, self.live = title, total, verbosity, live
        self.stream = None if silent else (stream or sys.stdout)
        self.errors = errors or sys.stderr
        self.rows: list[Row] = []
        self.terminal = self.stream is not None and is_terminal(self.stream)
        self.console = Console(file=self.stream, highlight=False) if self.terminal else None
        self._progress: Progress | None = None
        self._task = None
        self._closed = False

    def __enter__(self) -> Report:
        if self.live and self.terminal and self.verbosity > QUIET and self.total > 1:
            self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                      MofNCompleteColumn(), TimeElapsedColumn(), console=self.console,
                                      transient=True, redirect_stdout=False, redirect_stderr=False)
            self._task = self._progress.add_task("translating", total=self.total)
            self._progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self, name: str) -> None:
        if self._progress is not None:
            self._progress.update(self._task, description=f"translating {name}")

    def done(self, row: Row, stage_seconds: dict | None = None) -> None:
        self.rows.append(row)
        if self._progress is not None:
            self._progress.advance(self._task)
        if self.stream is None or self.terminal or self.verbosity <= QUIET:
            return
        line = plain_line(row)
        if self.verbosity >= VERBOSE and stage_seconds:
            line += "  (" + ", ".join(f"{k} {v:.2f}s" for k, v in stage_seconds.items()) + ")"
        self.stream.write(line + "\n")
        self.stream.flush()

    def note(self, text: str) -> None:
        """A line about a kernel that is not an error (the llm backend's account of its turns), on stderr."""
        if self.verbosity > QUIET:
            self.error(text)

    def error(self, text: str) -> None:
        """``text`` on stderr; above the live display when both are the same terminal."""
        if self._progress is not None and is_terminal(self.errors):
            self._progress.console.print(text, markup=False, highlight=False, soft_wrap=True)
            return
        self.errors.write(text if text.endswith("\n") else text + "\n")
        self.errors.flush()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._progress is not None:
            self._progress.stop()
        if self.stream is None:
            return
        summary = summary_line(self.rows, self.title, self.total)
        if not self.terminal:
            self.stream.write(summary + "\n")
            self.stream.flush()
            return
        if self.verbosity > QUIET and self.rows:
            table = table_of(self.rows, self.title)
            if fits(self.console, table):
                self.console.print(table)
            else:  # whole lines, which the terminal wraps without breaking a path in two
                for r in self.rows:
                    status = f"[{_COLOUR[r.status]}]{r.status}[/]"
                    self.console.print(status + plain_line(r)[len(r.status):], soft_wrap=True)
        self.console.print(summary, soft_wrap=True, markup=False)

    @property
    def failed(self) -> bool:
        return any(r.status == FAILED for r in self.rows)


def print_translations(rows: list[Row], title: str, stream: TextIO | None = None) -> None:
    """The rows of a finished run, as ``Report`` prints them."""
    with Report(title, len(rows), stream=stream, live=False) as report:
        for r in rows:
            report.done(r)


def print_check(problems: list[dict], out_dir: str, stream: TextIO | None = None, what: str = "",
                accepted: Sequence[dict] = (), claims: Sequence[str] | None = None) -> None:
    """``what``: which kernels the check is about, when the user may not expect it (numbakern's library);
    ``accepted``: the problems the user accepted (``--accept-unverifiable``), listed apart; ``claims``: what the
    manifest's verification records claim, a line each (``--verbose``). Every field is printed as text
    (``trust.printable``): a manifest's fields never reach the terminal as control sequences."""
    stream = stream or sys.stdout
    where = f"{out_dir}/" + (f" ({what})" if what else "")
    for line in claims or ():
        stream.write(printable(line) + "\n")
    for p in accepted:
        stream.write(f"accepted     {printable(p['file'])}  {printable(p['detail'])}\n")
    if not problems:
        done = f"every file in {where} is up to date" if not accepted else \
            f"every file in {where} is up to date or an accepted claim ({len(accepted)})"
        message = f"translate --check: {done}"
        if is_terminal(stream):
            Console(file=stream, highlight=False).print(Text(message, style="green"), soft_wrap=True)
        else:
            stream.write(message + "\n")
        return
    title = f"translate --check: {len(problems)} problem(s) in {where}"
    if is_terminal(stream):
        table = Table(title=title)
        for col in ("file", "problem", "detail"):
            table.add_column(col, overflow="fold")
        for p in problems:
            table.add_row(Text(printable(p["file"])), Text(p["problem"], style="red"), Text(printable(p["detail"])))
        Console(file=stream, highlight=False).print(table)
        return
    stream.write(title + "\n")
    for p in problems:
        stream.write(f"{p['problem']:<12} {printable(p['file'])}  {printable(p['detail'])}\n")
