"""``numbakern``: the ``translate`` commands under numbakern's own name, as subcommands.

    numbakern translate KERNEL | --all [options]   the same as ``translate KERNEL | --all [options]``
    numbakern check [--out DIR] [--json]            the same as ``translate --check ...``
    numbakern list [--json]                         the same as ``translate --list ...``
    numbakern verify KERNEL... | --all [options]    the same as ``python -m translate.verify ...``
    numbakern merge DIR... [--out DIR]              the same as ``translate --merge DIR...``
    numbakern profile KERNEL [options]              profile a launch in the simulator (numbakern.profiler.cli)
    numbakern --version

Why a second name: ``translate`` is also an unrelated package on PyPI, which installs a ``translate`` command and a
``translate`` module of its own. ``numbakern`` is this distribution's own name, so ``numbakern ...`` always means
this tool, whatever else is installed; the ``translate`` command keeps working exactly as before. Each subcommand
is the command it names, with the same options, output and exit status (docs/cli.md).
"""

from __future__ import annotations

import argparse
import sys

from . import cli

#: subcommand -> (what it runs, the arguments put before the user's, one line of help)
COMMANDS = {
    "translate": ("translate", [], "translate kernels to CUDA C (translate KERNEL | --all)"),
    "check": ("translate", ["--check"], "fail when a generated file is stale or edited (translate --check)"),
    "list": ("translate", ["--list"], "list the project's kernels and their files' state (translate --list)"),
    "verify": ("verify", [], "run the .cu files against their Numba kernels on a GPU (python -m translate.verify)"),
    "merge": ("translate", ["--merge"], "merge other folders' GPU verification records into this folder's manifest "
              "(translate --merge)"),
    "profile": ("profile", [], "profile one launch of a kernel in the simulator: memory requests, sectors, bank "
                "conflicts, divergence, occupancy, roofline (no GPU needed)"),
}


def build_parser() -> argparse.ArgumentParser:
    """The top level only: each subcommand's options are the command's own (``numbakern check --help``)."""
    p = argparse.ArgumentParser(prog="numbakern", description="numbakern's commands: translate Numba CUDA kernels "
                                "to CUDA C, check and list the generated files, verify them on a GPU.",
                                epilog="Each subcommand takes the options of the command it names; "
                                       "`numbakern COMMAND --help` lists them.")
    p.add_argument("--version", action="version", version=f"numbakern {cli.numbakern_version()}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (_, _, text) in COMMANDS.items():
        sub.add_parser(name, help=text, add_help=False)
    return p


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        build_parser().parse_args(argv[:1])  # --help, --version, or an error that lists the commands
        return 2
    command, rest = argv[0], argv[1:]
    runs, before, _ = COMMANDS[command]
    if runs == "profile":
        # imported here, not above: it puts this process on numbakern's simulator before numba is imported
        from numbakern.profiler import cli as profile_cli

        return profile_cli.main(rest)
    if runs == "verify":
        # imported here, not above: it imports numbakern, which chooses where kernels run, and the translate
        # subcommands must choose first (numba's real CUDA target, in cli.main)
        from .verify import cli as verify_cli

        return verify_cli.main(rest)
    return cli.main([*before, *rest], prog=f"numbakern {command}")


if __name__ == "__main__":
    sys.exit(main())
