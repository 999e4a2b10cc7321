"""Translate and NVRTC-compile every kernel of the second corpus (or the third: ``corpus3.report``); print (or write
into docs/translate.md) the table of its sources and what translated, and every refusal with its reason.

    NUMBAKERN_CORPUS2_MIRRORS=DIR python -m tests.translate.corpus2.report                # print the table
    NUMBAKERN_CORPUS2_MIRRORS=DIR python -m tests.translate.corpus2.report --write-docs   # also into the docs
    ... --verified FILE                          # merge a GPU run's verification results (NUMBAKERN_CORPUS_RESULTS)
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..corpus.report import DOCS, translate_entry


def table(entries, outcomes, verified: dict | None = None, sources=None, title: str = "Second corpus",
          folder: str = "corpus2") -> str:
    if sources is None:
        from .sources import SOURCES as sources

    n, ok = len(outcomes), sum(o.translated for o in outcomes)
    lines = [f"{title}: {n} kernels from {len(sources)} public repositories, read at the commits below "
             f"(`tests/translate/{folder}/`).", "",
             "| | kernels | share |", "|---|---|---|",
             f"| translated and NVRTC-compiled | {ok} | {100 * ok / n:.0f}% |"]
    if verified is not None:
        v = sum(1 for o in outcomes if verified.get(o.id) is True)
        ran = sum(1 for o in outcomes if o.id in verified)
        lines.append(f"| verified against Numba on a GPU ({verified.get('_device', 'GPU')}) | {v} of {ran} run | "
                     f"{100 * v / n:.0f}% |")
    else:
        lines.append("| verified against Numba on a GPU | not run here (`pytest --gpu tests/translate -m gpu`) | |")
    lines += ["", "| source | what | commit | licence | files | translated |", "|---|---|---|---|---|---|"]
    for key, source in sources.items():
        mine = [(e, o) for e, o in zip(entries, outcomes) if e.source == key]
        files = sorted({e.path for e, _ in mine})
        lines.append(f"| [{source.repo}](https://github.com/{source.repo}) | {source.what} | `{source.commit[:12]}` | "
                     f"{source.license} | {', '.join(f'`{f}`' for f in files)} | "
                     f"{sum(o.translated for _, o in mine)} of {len(mine)} |")
    refused = [(e, o) for e, o in zip(entries, outcomes) if not o.translated]
    if refused:
        lines += ["", f"Not translated ({len(refused)}), each with the located error it gets:", "",
                  "| kernel | status | reason | at |", "|---|---|---|---|"]
    for e, o in refused:
        why = f" ({e.note})" if e.note else ""
        lines.append(f"| `{o.id}` | {o.status} | {o.reason.replace('|', '/')}{why} | {o.location} |")
    if verified is not None:
        failed = [o for o in outcomes if o.translated and verified.get(o.id) is False]
        if failed:
            lines += ["", "Translated but not verified:", ""] + [f"- `{o.id}`" for o in failed]
    return "\n".join(lines) + "\n"


def write_docs(text: str, folder: str = "corpus2") -> None:
    begin, end = f"<!-- {folder}-table:begin -->", f"<!-- {folder}-table:end -->"
    with open(DOCS) as f:
        doc = f.read()
    if begin not in doc:
        raise SystemExit(f"{DOCS} has no {begin} marker")
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    tmp = DOCS + ".tmp"
    with open(tmp, "w") as f:
        f.write(head + begin + "\n" + text + end + tail)
    os.replace(tmp, DOCS)


def main(argv=None, folder: str = "corpus2", title: str = "Second corpus") -> int:
    import importlib

    os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--write-docs", action="store_true")
    p.add_argument("--verified", nargs="+", help="JSON written by GPU runs (NUMBAKERN_CORPUS_RESULTS), merged")
    args = p.parse_args(argv)
    sources = importlib.import_module(f"tests.translate.{folder}.sources")
    entries = importlib.import_module(f"tests.translate.{folder}.index").ENTRIES

    missing = sorted({sources.SOURCES[e.source].repo for e in entries if not sources.available(e.source)})
    if missing:
        print(f"no local copies of {', '.join(missing)} under ${sources.MIRRORS_ENV}", file=sys.stderr)
        return 2
    outcomes = [translate_entry(e)[0] for e in entries]
    verified = None
    if args.verified:
        verified = {}
        for path in args.verified:
            with open(path) as f:
                verified.update(json.load(f))
    text = table(entries, outcomes, verified, sources.SOURCES, title, folder)
    sys.stdout.write(text)
    if args.write_docs:
        write_docs(text, folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
