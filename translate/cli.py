"""``translate``: Numba CUDA kernels -> plain CUDA C, offline and deterministic.

    translate KERNEL [--signature SIG] [--const NAME=VALUE] [--backend ast] [--out DIR] [--arch ARCH]
    translate --all [--out DIR] [--arch ARCH]
    translate --check [--out DIR]

KERNEL is a registered kernel name (``matmul_tiled``), ``package.module:kernel`` or ``path/to/file.py:kernel``.
Exit code 0 only on success.
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="translate", description="Translate Numba CUDA kernels to plain CUDA C.")
    p.add_argument("kernel", nargs="?", help="registry name, package.module:kernel or path/to/file.py:kernel")
    p.add_argument("--signature", help='numba signature, e.g. "void(float32[:, ::1], float32[:, ::1], int64)"')
    p.add_argument("--const", action="append", default=[], metavar="NAME=VALUE",
                   help="compile-time constant (template parameter); NAME=V1,V2 instantiates several")
    p.add_argument("--backend", default="ast", help="device-code backend (default: ast, deterministic, offline)")
    p.add_argument("--out", default="generated_cuda", help="output directory (default: generated_cuda)")
    p.add_argument("--arch", default="sm_90", help="NVRTC target architecture (default: sm_90)")
    p.add_argument("--all", action="store_true", help="translate every registered kernel")
    p.add_argument("--force", action="store_true",
                   help="replace a GPU-verified file even when the new translation is unverified")
    p.add_argument("--check", action="store_true",
                   help="exit non-zero if a generated file is stale or was edited by hand")
    for hook in ("translate.llm.cli_args", "translate.verify.cli"):  # options of the llm backend / verification
        try:
            __import__(hook, fromlist=["add_arguments"]).add_arguments(p)
        except ImportError:
            pass
    return p


def main(argv=None) -> int:
    # the translator needs numba's real CUDA front end (it needs no GPU); the simulator has none
    os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
    args = build_parser().parse_args(argv)
    from rich.console import Console

    console = Console(stderr=False, highlight=False)
    if args.check:
        return _check(args, console)
    if args.all == bool(args.kernel):
        console.print("[red]translate: name one KERNEL, or use --all or --check[/red]")
        return 2
    if args.all and (args.signature or args.const):
        console.print("[red]translate: --signature/--const apply to one kernel, not --all[/red]")
        return 2
    args.backend_options = None
    if args.backend == "llm":
        from .llm.cli_args import backend_options, make_backend

        try:
            # checks model, endpoint and key before any work; translate_kernel makes the backend from the options
            make_backend(args, configure=False).close()
            args.backend_options = backend_options(args)
            if getattr(args, "verify", False):
                args.backend_options["verify"] = True  # verify each reply on the GPU inside the repair loop
        except Exception as e:  # LLMError: missing model / key / bad URL
            sys.stderr.write(f"translate: {e}\n")
            return 2
    rc = _translate(args, console)
    if rc == 0 and getattr(args, "verify", False):
        from .verify import cli as verify_cli

        names = None if args.all else [args.kernel]
        rc = verify_cli.run(args, names, directory=args.out)
    return rc


def _translate(args, console) -> int:
    from rich.table import Table

    from .errors import TranslationError
    from .pipeline import parse_constants, translate_kernel

    if args.all:
        from numbakern import registry

        names = [s.name for s in registry.all_specs()]
    else:
        names = [args.kernel]
    try:
        constants = parse_constants(args.const)
    except ValueError as e:
        console.print(f"[red]translate: {e}[/red]")
        return 2
    table = Table(title=f"translate -> {args.out}/ ({args.backend}, {args.arch})")
    for col in ("kernel", "file", "launchers", "registers", "smem", "time", "status"):
        table.add_column(col)
    failures = 0
    with console.status("translating...") as status:
        for name in names:
            status.update(f"translating {name} ...")
            t0 = time.perf_counter()
            try:
                r = translate_kernel(name, signature=args.signature, constants=constants, backend=args.backend,
                                     out_dir=args.out, arch=args.arch, backend_options=args.backend_options,
                                     force=args.force)
            except Exception as e:  # TranslationError, LookupError, LLMError, ...: report, go on, exit 1
                failures += 1
                # plain text on stderr: wrapping would break the caret under the construct
                sys.stderr.write(f"{e}\n" if isinstance(e, TranslationError) else f"{name}: {type(e).__name__}: {e}\n")
                table.add_row(name, "-", "-", "-", "-", f"{time.perf_counter() - t0:.2f}s", "[red]failed[/red]")
                continue
            comp = r.compile
            symbols = ", ".join(l["symbol"] for l in r.entry["launchers"])
            table.add_row(name, os.path.relpath(r.path), symbols, str(comp.get("registers") or "-"),
                          str(comp.get("shared_bytes") if comp.get("shared_bytes") is not None else "-"),
                          f"{time.perf_counter() - t0:.2f}s", "[green]ok[/green]")
    console.print(table)
    return 1 if failures else 0


def _check(args, console) -> int:
    from rich.table import Table

    from .check import check

    problems = check(args.out)
    if not problems:
        console.print(f"[green]translate --check: every file in {args.out}/ is up to date[/green]")
        return 0
    table = Table(title=f"translate --check: {len(problems)} problem(s) in {args.out}/")
    for col in ("file", "problem", "detail"):
        table.add_column(col)
    for p in problems:
        table.add_row(p["file"], f"[red]{p['problem']}[/red]", p["detail"])
    console.print(table)
    return 1


if __name__ == "__main__":
    sys.exit(main())
