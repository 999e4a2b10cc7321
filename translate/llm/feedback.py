"""What may go back to the model after a failed compile or verification: facts about its own code, nothing else.

A compiler log can carry anything the compiler read: the text of an included file (``/proc/self/environ`` is the
process's environment, API key included), paths of the machine, the project's own code. So the candidate is
compiled behind a ``#line 1 "candidate.cu"`` marker (``mark_candidate``), and ``compiler_feedback`` keeps only the
diagnostics the compiler filed under that name, shown with the reply's own line numbers and the candidate's own
line from the checked code (never the compiler's echo of it), each message cut to printable ASCII and a few hundred
characters, at most a few diagnostics; what the log says about other files is only counted. ``clean`` caps any
other text the loop sends (gate reasons, verification reports).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

#: the name the compiler gives the candidate's lines; anything it files under another name stays on the machine
CANDIDATE_FILE = "candidate.cu"
#: the name of the project's code after the candidate (the launchers)
PROJECT_FILE = "numbakern-project.cu"

MAX_DIAGNOSTICS = 8
MAX_MESSAGE_CHARS = 240
MAX_FEEDBACK_CHARS = 3000
#: the part of a log that is read at all: lines, and characters per line
MAX_LOG_LINES = 2000
MAX_LOG_LINE_CHARS = 1000

_DIAGNOSTIC = re.compile(r"(?P<file>[^\s()]{1,300})\((?P<line>\d{1,6})\): (?P<severity>catastrophic error|fatal error"
                         r"|error|warning|remark)(?: #[\w-]{1,20})?: (?P<message>.*)")


@dataclass(frozen=True)
class Diagnostic:
    line: int  # line of the candidate's code (1-based)
    severity: str
    message: str


def mark_candidate(code: str) -> str:
    """``code`` between ``#line`` markers, for a compile whose log may go back to the model."""
    return f'#line 1 "{CANDIDATE_FILE}"\n{code}#line 1 "{PROJECT_FILE}"\n'


def candidate_diagnostics(log: str) -> tuple[list[Diagnostic], int]:
    """The diagnostics filed under ``CANDIDATE_FILE``, and how many others the log has."""
    mine: list[Diagnostic] = []
    others = 0
    for raw in log.splitlines()[:MAX_LOG_LINES]:
        m = _DIAGNOSTIC.match(raw[:MAX_LOG_LINE_CHARS].strip())
        if m is None:
            continue  # source echoes, carets, included text, summaries: never passed on
        if m["file"] == CANDIDATE_FILE:
            mine.append(Diagnostic(int(m["line"]), m["severity"], clean(m["message"], MAX_MESSAGE_CHARS, lines=False)))
        else:
            others += 1
    return mine, others


def compiler_feedback(log: str, code: str, origin: Sequence[str] = ()) -> str:
    """The compiler's diagnostics about ``code`` (the checked candidate), as the model may see them: each with the
    reply's line (``origin[i]`` names line ``i + 1`` of ``code``) and that line of ``code``."""
    diagnostics, others = candidate_diagnostics(log)
    errors = [d for d in diagnostics if d.severity != "warning" and d.severity != "remark"] or diagnostics
    lines = code.splitlines()
    out = []
    for d in errors[:MAX_DIAGNOSTICS]:
        where = origin[d.line - 1] if 0 < d.line <= len(origin) else f"line {d.line}"
        out.append(f"{where}: {d.severity}: {d.message}")
        if 0 < d.line <= len(lines) and lines[d.line - 1].strip():
            out.append("    " + clean(lines[d.line - 1].strip(), 160, lines=False))
    if len(errors) > MAX_DIAGNOSTICS:
        out.append(f"... and {len(errors) - MAX_DIAGNOSTICS} more")
    if others:
        out.append(f"({others} more diagnostic{'s' if others != 1 else ''} about the project's code around yours, "
                   "not shown: check that your code keeps to the signature and the rules)")
    if not out:
        out.append("the compiler failed without a diagnostic about your code's lines")
    return clean("\n".join(out), MAX_FEEDBACK_CHARS)


def clean(text: str, limit: int, *, lines: bool = True) -> str:
    """``text`` in printable ASCII (newlines kept with ``lines``), at most ``limit`` characters."""
    allowed = "\n" if lines else ""
    out = "".join(ch if (" " <= ch <= "~" or ch in allowed) else ("    " if ch == "\t" else "?") for ch in text)
    return out if len(out) <= limit else out[: limit - 15] + " ... (cut here)"
