"""What the ``translate`` command prints: a table on a terminal, plain whole lines anywhere else.

A pipe, a file or a CI log gets one line per kernel that nothing cuts short (rich sizes a table for an 80-column
terminal when it cannot ask one, which truncated the output paths: the one thing a user needs). Each line says what
happened to the file (written, unchanged, failed), its path, the launcher(s) and the resources.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import TextIO

from rich.console import Console
from rich.table import Table

#: how a kernel's file fared
WRITTEN, UNCHANGED, FAILED = "written", "unchanged", "failed"
#: the CUDA C of a kernel that takes its shared memory at launch (the launcher's shared_bytes)
DYNAMIC_SHARED = "extern __shared__"


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


def print_translations(rows: list[Row], title: str, stream: TextIO = sys.stdout) -> None:
    if is_terminal(stream):
        table = Table(title=title)
        for col in ("kernel", "status", "file", "launchers", "registers", "smem", "time"):
            # a path or a symbol wraps rather than losing its end on a narrow terminal
            table.add_column(col, overflow="fold")
        colour = {WRITTEN: "green", UNCHANGED: "cyan", FAILED: "red"}
        for r in rows:
            table.add_row(r.kernel, f"[{colour[r.status]}]{r.status}[/]", r.path or "-", ", ".join(r.launchers) or "-",
                          "-" if r.registers is None else str(r.registers),
                          "-" if r.status == FAILED else shared_text(r), f"{r.seconds:.2f}s")
        Console(file=stream, highlight=False).print(table)
        return
    for r in rows:
        stream.write(plain_line(r) + "\n")
    counts = {s: sum(r.status == s for r in rows) for s in (WRITTEN, UNCHANGED, FAILED)}
    stream.write(f"{title}: " + ", ".join(f"{n} {s}" for s, n in counts.items()) + "\n")
    stream.flush()


def plain_line(r: Row) -> str:
    """One kernel as one whole line: ``written generated_cuda/k.cu  kernel k  launcher launch_k  ...``."""
    if r.status == FAILED:
        return f"failed     {r.kernel}  (the error is above, on stderr)"
    regs = "-" if r.registers is None else str(r.registers)
    launchers = ("launchers " if len(r.launchers) > 1 else "launcher ") + ", ".join(r.launchers)
    return (f"{r.status:<10} {r.path}  kernel {r.kernel}  {launchers}  registers {regs}  smem {shared_text(r)}  "
            f"{r.seconds:.2f}s")


def print_check(problems: list[dict], out_dir: str, stream: TextIO = sys.stdout) -> None:
    if not problems:
        message = f"translate --check: every file in {out_dir}/ is up to date"
        if is_terminal(stream):
            Console(file=stream, highlight=False).print(f"[green]{message}[/green]")
        else:
            stream.write(message + "\n")
        return
    title = f"translate --check: {len(problems)} problem(s) in {out_dir}/"
    if is_terminal(stream):
        table = Table(title=title)
        for col in ("file", "problem", "detail"):
            table.add_column(col, overflow="fold")
        for p in problems:
            table.add_row(p["file"], f"[red]{p['problem']}[/red]", p["detail"])
        Console(file=stream, highlight=False).print(table)
        return
    stream.write(title + "\n")
    for p in problems:
        stream.write(f"{p['problem']:<12} {p['file']}  {p['detail']}\n")
