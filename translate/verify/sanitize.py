"""compute-sanitizer (memcheck, racecheck, initcheck, synccheck) on the smallest cases of each candidate.

The sanitized process (``python -m translate.verify.sancase PLAN``) runs only the candidate C, through its launcher,
never the Numba kernel: one process per tool for all candidates, and only when a tool reports errors is each
candidate run again alone to say which one it was.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from numbakern import mode, registry

from . import sandbox
from .cases import smallest_sizes

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
TOOL_FLAGS = {
    "memcheck": ["--leak-check", "no"],
    "racecheck": [],
    "initcheck": [],
    "synccheck": [],
}
ERROR_EXIT = 86


def sanitizer_path() -> str | None:
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for candidate in ("/usr/local/cuda/bin/compute-sanitizer", "/usr/local/cuda/compute-sanitizer/compute-sanitizer"):
        if Path(candidate).exists():
            return candidate
    return None


def parse_summary(tool: str, rc: int, output: str) -> str:
    """``"ok"`` or a one-line description of what the tool found."""
    m = re.search(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)", output)
    errors = None
    if m:
        errors = int(m.group(2))
    else:
        m = re.search(r"ERROR SUMMARY: (\d+) errors?", output)
        if m:
            errors = int(m.group(1))
    child_ok = "SANCASE-DONE ok" in output
    if errors == 0 and rc == 0 and child_ok:
        return "ok"
    first = next((line.strip("= ").strip() for line in output.splitlines()
                  if line.startswith("=========")
                  and re.search(r"(Error|Invalid|Race|Uninitialized|Barrier|hazard)", line)), "")
    if errors:
        return f"{errors} error(s): {first}"[:300]
    if not child_ok:
        tail = " | ".join(line for line in output.strip().splitlines()[-3:])
        return f"the sanitized run failed (rc {rc}): {tail}"[:300]
    return f"rc {rc}: {first}"[:300]


def _plan_items(items) -> list[dict[str, Any]]:
    # the spec travels as its module and name (registry.spec_ref): the child re-creates the very spec, a user's
    # kernel from the user's module, never a library kernel that happens to have its name
    return [{"name": cand.name, "spec": registry.spec_ref(spec), "so": str(so), "launcher": dict(cand.launcher),
             "sizes": smallest_sizes(spec)} for spec, cand, so in items]


def _run_tool(tool: str, plan: list[dict[str, Any]], timeout: float, log_dir: Path | None) -> tuple[int, str]:
    """One tool over the plan's candidates, in a sandboxed child (the candidates' code runs there)."""
    with tempfile.TemporaryDirectory(prefix="numbakern-sancase-") as workdir:
        path = Path(workdir) / "plan.json"
        path.write_text(json.dumps(plan))
        command = [sanitizer_path(), "--tool", tool, *TOOL_FLAGS[tool], "--error-exitcode", str(ERROR_EXIT),
                   "--print-limit", "20", sys.executable, "-m", "translate.verify.sancase", str(path)]
        limits = sandbox.Limits(wall_seconds=timeout, cpu_seconds=int(timeout))
        # the candidates' libraries lie in the verification's build folder (in /tmp by default), which the
        # sandbox's private /tmp hides unless named
        done = sandbox.run(command, workdir=workdir, limits=limits, env_extra={"NUMBA_ENABLE_CUDASIM": "0",
                                                                               **_device_facts()},
                           read_only=[item["so"] for item in plan])
        rc = 124 if done.timed_out else (done.returncode if done.returncode is not None else -1)
        output = (f"timeout after {timeout}s\n" if done.timed_out else "") + done.stdout + done.stderr
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
        names = "+".join(item["name"] for item in plan)[:80]
        with open(log_dir / "sanitizer.log", "a") as log:
            log.write(f"\n##### {tool} [{names}] rc={rc}\n$ {' '.join(command)}\n{output}\n")
    return rc, output


def _device_facts() -> dict[str, str]:
    """What the cases of the sanitized process would ask Numba's CUDA driver for (the multiprocessors that size a
    grid-stride launch), asked here: started in there after a candidate's runtime, the driver's start reports
    ``CUDA_ERROR_INVALID_VALUE`` from ``cuGetProcAddress`` to memcheck (seen on an H100, 2026-11-26), and the batch
    would fail on no kernel's fault. Empty where this process has no GPU to ask."""
    # (here, not at the top: a user's project without the library never imports numbakern.kernels,
    # tests/translate/test_api_is_the_cli.py)
    from numbakern.kernels.collectives import MULTIPROCESSORS_ENV, multiprocessors

    if mode.in_simulator():  # (no device: the simulator's count would mean nothing to the child)
        return {}
    try:
        return {MULTIPROCESSORS_ENV: str(multiprocessors())}
    except Exception:  # noqa: BLE001 - no device here: the child asks its own
        return {}


def item_seconds(output: str) -> dict[str, float]:
    """``{candidate name: seconds}`` from the sanitized process's ``SANCASE-TIME`` lines (its cases under the tool)."""
    found = {}
    for m in re.finditer(r"^SANCASE-TIME (\S+) ([0-9.]+)$", output, flags=re.MULTILINE):
        found[m.group(1)] = float(m.group(2))
    return found


def sanitize_tool(items: Sequence[tuple[Any, Any, Path]], tool: str, timeout: float = 300,
                  log_dir: str | os.PathLike | None = None) -> tuple[dict[str, str], dict[str, float]]:
    """One tool over ``(spec, Candidate, so_path)`` items, in one sanitized process (each item again alone when it
    finds something, to say which): ``({name: "ok" | finding}, {name: seconds under the tool})``."""
    items = list(items)
    if not items:
        return {}, {}
    if sanitizer_path() is None:
        return {cand.name: "unavailable" for _, cand, _ in items}, {}
    log_dir = log_dir or os.environ.get("NUMBAKERN_VERIFY_LOG")
    log = Path(log_dir) if log_dir else None
    plan = _plan_items(items)
    rc, output = _run_tool(tool, plan, timeout, log)
    status = parse_summary(tool, rc, output)
    seconds = item_seconds(output)
    if status == "ok" or len(plan) == 1:
        return {item["name"]: status for item in plan}, seconds
    print(f"compute-sanitizer {tool} over {len(plan)} kernels: {status}; running each alone to find which",
          file=sys.stderr, flush=True)
    found = {}
    for item in plan:  # attribute the finding
        rc, output = _run_tool(tool, [item], timeout, log)
        found[item["name"]] = parse_summary(tool, rc, output)
        seconds.update(item_seconds(output))
    return found, seconds


def sanitize_candidates(items: Sequence[tuple[Any, Any, Path]], tools: Sequence[str] = TOOLS, timeout: float = 300,
                        log_dir: str | os.PathLike | None = None,
                        seconds: dict[str, dict[str, float]] | None = None) -> dict[str, dict[str, str]]:
    """``{candidate name: {tool: "ok" | finding}}`` for ``(spec, Candidate, so_path)`` items; ``seconds``, when
    given, is filled with ``{candidate name: {tool: seconds}}``."""
    items = list(items)
    results: dict[str, dict[str, str]] = {cand.name: {} for _, cand, _ in items}
    for tool in tools:
        status, spent = sanitize_tool(items, tool, timeout, log_dir)
        for name, verdict in status.items():
            results[name][tool] = verdict
        if seconds is not None:
            for name, s in spent.items():
                seconds.setdefault(name, {})[tool] = s
    return results
