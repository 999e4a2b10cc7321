"""Translate and NVRTC-compile every corpus kernel; print (or write into docs/translate.md) the table of what
translated and every refusal with its reason.

    python -m tests.translate.corpus.report                 # print the table
    python -m tests.translate.corpus.report --write-docs    # also replace the corpus section of docs/translate.md
    python -m tests.translate.corpus.report --verified FILE # merge a GPU run's verification results (JSON)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict, dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
DOCS = os.path.join(ROOT, "docs", "translate.md")
BEGIN, END = "<!-- corpus-table:begin -->", "<!-- corpus-table:end -->"


@dataclass
class Outcome:
    id: str
    status: str            # translated | refused | compile-error | crash
    reason: str = ""       # the first line of the refusal / error
    location: str = ""     # file:line:col of a refusal
    seconds: float = 0.0

    @property
    def translated(self) -> bool:
        return self.status == "translated"


def translate_entry(entry, write_dir=None):
    """(Outcome, TranslationResult | None) for one corpus entry."""
    from translate.api import translate_kernel
    from translate.errors import CompileError, TranslationError

    t0 = time.perf_counter()
    try:
        r = translate_kernel(entry.target, signature=entry.signature, write=write_dir is not None,
                             out_dir=write_dir or "generated_cuda")
    except CompileError as e:
        return Outcome(entry.id, "compile-error", _first_line(e.message), seconds=time.perf_counter() - t0), None
    except TranslationError as e:
        where = f"{os.path.basename(e.filename)}:{e.line}:{e.col + 1}" if e.line else os.path.basename(e.filename)
        return Outcome(entry.id, "refused", _first_line(e.message), where, time.perf_counter() - t0), None
    except Exception as e:  # noqa: BLE001 - a crash is a translator bug: reported as such
        return Outcome(entry.id, "crash", f"{type(e).__name__}: {_first_line(str(e))}",
                       seconds=time.perf_counter() - t0), None
    return Outcome(entry.id, "translated", seconds=time.perf_counter() - t0), r


def _first_line(text: str) -> str:
    lines = [l for l in str(text).strip().splitlines() if l.strip()]
    return lines[0] if lines else ""


def run(entries) -> list[Outcome]:
    return [translate_entry(e)[0] for e in entries]


def table(outcomes, verified: dict | None = None) -> str:

    n = len(outcomes)
    ok = sum(o.translated for o in outcomes)
    lines = [f"Corpus: {n} kernels from numba-cuda's documentation examples and cudapy tests, as written "
             f"(`tests/translate/corpus/`).", "",
             "| | kernels | share |", "|---|---|---|",
             f"| translated and NVRTC-compiled | {ok} | {100 * ok / n:.0f}% |"]
    if verified is not None:
        v = sum(1 for o in outcomes if verified.get(o.id) is True)
        ran = sum(1 for o in outcomes if o.id in verified)
        lines.append(f"| verified against Numba on a GPU ({verified.get('_device', 'GPU')}) | {v} of {ran} run | "
                     f"{100 * v / n:.0f}% |")
    else:
        lines.append("| verified against Numba on a GPU | not run here (`pytest --gpu tests/translate -m gpu`) | |")
    by_file: dict = {}
    for o in outcomes:
        stem = o.id.split(":")[0].split("__")[0]
        done, total = by_file.get(stem, (0, 0))
        by_file[stem] = (done + o.translated, total + 1)
    lines += ["", "By source file (`doc_*`: documentation examples, `cudapy_*`: cudapy test modules):", "",
              "| file | translated |", "|---|---|"]
    lines += [f"| `{stem}` | {done} of {total} |" for stem, (done, total) in by_file.items()]
    refused = [o for o in outcomes if not o.translated]
    if refused:
        lines += ["", f"Not translated ({len(refused)}), each with the located error it gets:", "",
                  "| kernel | status | reason | at |", "|---|---|---|---|"]
        lines += [f"| `{o.id}` | {o.status} | {o.reason.replace('|', '/')} | {o.location} |" for o in refused]
    else:
        lines += ["", "Not translated: none."]
    if verified is not None:
        failed = [o for o in outcomes if o.translated and verified.get(o.id) is False]
        if failed:
            lines += ["", "Translated but not verified:", ""] + [f"- `{o.id}`" for o in failed]
        unrun = [o for o in outcomes if o.translated and o.id not in verified]
        if unrun:
            lines += ["", f"Translated, not yet run on a GPU ({len(unrun)}):", "",
                      ", ".join(f"`{o.id}`" for o in unrun)]
    return "\n".join(lines) + "\n"


def write_docs(text: str) -> None:
    with open(DOCS) as f:
        doc = f.read()
    if BEGIN not in doc:
        raise SystemExit(f"{DOCS} has no {BEGIN} marker")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = head + BEGIN + "\n" + text + END + tail
    tmp = DOCS + ".tmp"
    with open(tmp, "w") as f:
        f.write(new)
    os.replace(tmp, DOCS)


def main(argv=None) -> int:
    os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write-docs", action="store_true")
    p.add_argument("--verified", nargs="+", help="JSON written by GPU runs (NUMBAKERN_CORPUS_RESULTS), merged")
    p.add_argument("--json", help="write the outcomes as JSON here")
    p.add_argument("ids", nargs="*", help="only these entries (default: all)")
    args = p.parse_args(argv)
    from .index import ENTRIES

    entries = [e for e in ENTRIES if not args.ids or e.id in args.ids or e.kernel in args.ids]
    outcomes = run(entries)
    verified = None
    if args.verified:
        verified = {}
        for path in args.verified:
            with open(path) as f:
                verified.update(json.load(f))
    text = table(outcomes, verified)
    sys.stdout.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump([asdict(o) for o in outcomes], f, indent=1)
    if args.write_docs:
        write_docs(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
