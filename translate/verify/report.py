"""Text reports of verification results: one line per case (details for failures), one summary row per kernel."""

from __future__ import annotations

from collections.abc import Iterable


def _fmt(x: float) -> str:
    return f"{x:.3g}" if x == x and x not in (float("inf"), float("-inf")) else str(x)


def case_line(case) -> str:
    status = "ok  " if case.ok else "FAIL"
    line = (f"{status} {case.kernel:<24} {case.label:<40} max abs {_fmt(case.max_abs_error):>9}  "
            f"max rel {_fmt(case.max_rel_error):>9}")
    if case.ok:
        return line
    details = [f"       failed: {', '.join(case.failed)}"]
    details += [f"       {m}".replace("\n", "\n       ") for m in case.messages[:4]]
    return "\n".join([line, *details])


def result_block(result, *, verbose: bool = False, sanitizer_pending: bool = False) -> str:
    lines = [f"== {result.kernel} <- {result.cu} [{result.candidate}]"]
    if result.error:
        lines.append(f"   ERROR: {result.error}")
    shown = result.cases if verbose else [c for c in result.cases if not c.ok][:10]
    lines += [case_line(c) for c in shown]
    hidden = sum(not c.ok for c in result.cases) - sum(not c.ok for c in shown)
    if hidden > 0:
        lines.append(f"   ... and {hidden} more failing cases")
    lines.append(summary_line(result, sanitizer_pending=sanitizer_pending))
    return "\n".join(lines)


def sanitizer_text(sanitizer) -> str:
    if not sanitizer:
        return "not run"
    if all(v == "ok" for v in sanitizer.values()):
        return "ok (" + ", ".join(sanitizer) + ")"
    return "; ".join(f"{tool}: {status}" for tool, status in sanitizer.items() if status != "ok")


def summary_line(result, *, sanitizer_pending: bool = False) -> str:
    """``sanitizer_pending``: the sanitizer runs later (a spread run prints the cases as soon as they are done)."""
    verdict = "PASS" if result.ok else "FAIL"
    failing = result.failed_checks()
    why = f"  failing checks: {', '.join(f'{k}×{v}' for k, v in sorted(failing.items()))}" if failing else ""
    return (f"   {verdict}: {len(result.cases) - result.n_failed}/{len(result.cases)} cases, max abs error "
            f"{_fmt(result.max_abs_error)}, max rel error {_fmt(result.max_rel_error)}, sanitizer "
            f"{'still to run' if sanitizer_pending else sanitizer_text(result.sanitizer)}{why}")


def summary_table(results: Iterable) -> str:
    results = list(results)
    head = f"{'kernel':<24} {'verdict':<7} {'cases':>7} {'max abs':>10} {'max rel':>10}  sanitizer / failing checks"
    rows = [head, "-" * len(head)]
    for r in results:
        failing = r.failed_checks()
        if r.error:
            note = r.error.splitlines()[0][:60]
        else:
            note = ", ".join(sorted(failing)) if failing else sanitizer_text(r.sanitizer)
        rows.append(f"{r.kernel:<24} {'PASS' if r.ok else 'FAIL':<7} {len(r.cases) - r.n_failed:>3}/{len(r.cases):<3} "
                    f"{_fmt(r.max_abs_error):>10} {_fmt(r.max_rel_error):>10}  {note}")
    return "\n".join(rows)
