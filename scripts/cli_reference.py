#!/usr/bin/env python
"""The reference part of docs/cli.md, made from the commands' own argument parsers, so that it cannot drift.

    python scripts/cli_reference.py            # rewrite the generated block of docs/cli.md
    python scripts/cli_reference.py --check    # exit 1 when docs/cli.md is not what the parsers say

The block covers ``translate`` (``translate.cli.build_parser``), ``numbakern`` (``translate.commands``),
``python -m translate.verify`` (its ``--help``) and ``numbakern profile`` (``numbakern.profiler.cli``). The rest of
docs/cli.md is written by hand.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from pathlib import Path

import benchkit  # this script's folder: the generated-block markers the docs share

DOC = benchkit.ROOT / "docs" / "cli.md"
BLOCK = "cli reference"
#: argparse wraps help at the terminal's width: the page is made at a fixed one
COLUMNS = "100"


def option_table(parser: argparse.ArgumentParser) -> list[str]:
    """A Markdown table per argument group: the option, its argument, its default and its help."""
    lines: list[str] = []
    # argparse keeps its groups here (sphinx-argparse reads them too); the positional arguments and the general
    # options make one table
    groups: dict[str, tuple[str, list[argparse.Action]]] = {}
    for group in parser._action_groups:
        title = "arguments" if group.title in ("positional arguments", "options") else group.title
        actions = groups.setdefault(title, (group.description or "", []))[1]
        actions += [a for a in group._group_actions if a.help != argparse.SUPPRESS]
    for title, (description, actions) in groups.items():
        if not actions:
            continue
        lines += ["", f"**{title}**" + (f": {description}" if description else ""), "",
                  "| option | value | default | what it does |", "|---|---|---|---|"]
        for a in actions:
            names = ", ".join(f"`{s}`" for s in a.option_strings) or f"`{a.metavar or a.dest.upper()}`"
            value = "" if a.nargs == 0 or not a.option_strings else f"`{a.metavar or a.dest.upper()}`"
            if isinstance(a, argparse._StoreConstAction | argparse._StoreTrueAction | argparse._VersionAction):
                value = ""
            default = "" if a.default in (None, False, [], argparse.SUPPRESS) or a.nargs == 0 or not a.option_strings \
                else f"`{a.default}`"
            text = (a.help or "").replace("%(prog)s", parser.prog).replace("|", "&#124;")
            lines.append(f"| {names} | {value} | {default} | {text} |")
    return lines


def verify_help() -> str:
    """``python -m translate.verify --help``, as its parser prints it."""
    from translate.verify import cli as verify_cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        verify_cli.main(["--help"])
    return out.getvalue()


def reference() -> str:
    """The generated block: each command's usage line and options."""
    from translate import cli, commands

    translate = cli.build_parser()
    umbrella = commands.build_parser()
    lines = ["### translate", "", "```text", translate.format_usage().strip(), "```", "",
             translate.description or "", *option_table(translate), "", translate.epilog or "", "",
             "### numbakern", "", "```text", umbrella.format_usage().strip(), "```", "",
             "| command | runs | what it does |", "|---|---|---|"]
    for name, (runs, before, text) in commands.COMMANDS.items():
        target = {"verify": "python -m translate.verify", "profile": "python -m numbakern.profiler.cli"}.get(
            runs, " ".join(["translate", *before]))
        lines.append(f"| `numbakern {name}` | `{target}` | {text.replace('|', '&#124;')} |")
    lines += ["", "`numbakern --version` prints numbakern's version. Each subcommand takes the options of the command "
              "it runs (`numbakern COMMAND --help`).", "",
              "### python -m translate.verify", "", "```text", verify_help().strip(), "```", ""]
    from numbakern.profiler import cli as profile_cli

    profile = profile_cli.build_parser()
    lines += ["### numbakern profile", "", "```text", profile.format_usage().strip(), "```", "",
              profile.description or "", *option_table(profile)]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 when the page is out of date; change nothing")
    parser.add_argument("--doc", type=Path, default=DOC, help=f"the page (default: {DOC.relative_to(benchkit.ROOT)})")
    args = parser.parse_args(argv)
    os.environ["COLUMNS"] = COLUMNS
    os.environ["NUMBA_ENABLE_CUDASIM"] = "0"  # as the translate command runs (the verify parser imports numbakern)
    new = reference()
    if args.check:
        if benchkit.embedded_block(args.doc, BLOCK).strip() != new.strip():
            print(f"{args.doc}: the command reference is out of date: run python scripts/cli_reference.py",
                  file=sys.stderr)
            return 1
        return 0
    print(f"{'updated' if benchkit.embed(args.doc, BLOCK, new) else 'unchanged'}: {args.doc}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
