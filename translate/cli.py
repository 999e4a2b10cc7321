"""``translate``: Numba CUDA kernels -> plain CUDA C, offline and deterministic.

    translate KERNEL [--signature SIG] [--const NAME=VALUE] [--backend ast] [--out DIR] [--arch ARCH]
    translate --all [--out DIR] [--arch ARCH]
    translate --check [--out DIR]

KERNEL is a registered kernel name (``matmul_tiled``), ``package.module:kernel`` or ``path/to/file.py:kernel``.
Exit code 0 only on success; 2 for unusable input (options, a damaged manifest).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from rich.console import Console
from rich.table import Table

from .errors import TranslationError
from .llm import cli_args as llm_args
from .manifest import ManifestError
from .verify import cli_args as verify_args


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
    llm_args.add_arguments(p)
    verify_args.add_arguments(p)
    return p


def parse_constants(items) -> dict:
    """``["tw=16", "tw=32", "n=4"]`` or ``["tw=16,32"]`` -> ``{"tw": [16, 32], "n": [4]}``."""
    out: dict = {}
    for item in items or ():
        if "=" not in item:
            raise ValueError(f"--const expects NAME=VALUE, got {item!r}")
        name, values = item.split("=", 1)
        for v in values.split(","):
            out.setdefault(name.strip(), []).append(_number(v.strip()))
    return out


def _number(text):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    if text in ("True", "False", "true", "false"):
        return text.lower() == "true"
    raise ValueError(f"constant values must be numbers, got {text!r}")


def main(argv=None) -> int:
    # the translator needs numba's real CUDA front end (it needs no GPU); the simulator has none
    os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
    args = build_parser().parse_args(argv)
    # numba reads that variable when numba.cuda is first imported: what imports numba is imported here, not above
    from numbakern import registry

    from . import api
    from .request import TranslateOptions
    from .verify import cli as verify_cli

    console = Console(stderr=False, highlight=False)
    try:
        if args.check:
            return _check(args, console, api)
        if args.all == bool(args.kernel):
            return _usage("name one KERNEL, or use --all or --check")
        if args.all and (args.signature or args.const):
            return _usage("--signature/--const apply to one kernel, not --all")
        backend_options = {}
        if args.backend == "llm":
            try:
                # checks model, endpoint and key before any work; the pipeline makes the backend from the options
                llm_args.make_backend(args).close()
                backend_options = llm_args.backend_options(args)
            except Exception as e:  # noqa: BLE001 - LLMError: missing model / key / bad URL
                return _usage(str(e))
        try:
            constants = parse_constants(args.const)
            # --verify with the llm backend also verifies each reply on the GPU inside the repair loop
            opts = TranslateOptions(backend=args.backend, backend_options=backend_options, arch=args.arch,
                                    verify=args.verify and args.backend == "llm", force=args.force)
        except ValueError as e:
            return _usage(str(e))
        names = [s.name for s in registry.all_specs()] if args.all else [args.kernel]
        rc = _translate(args, console, api, names, opts, constants)
        if rc == 0 and args.verify:
            rc = verify_cli.run(args, None if args.all else [args.kernel], directory=args.out)
        return rc
    except ManifestError as e:
        sys.stderr.write(f"translate: {e}\n")
        return 2


def _usage(message: str) -> int:
    sys.stderr.write(f"translate: {message}\n")
    return 2


def _translate(args, console: Console, api, names: list[str], opts, constants: dict) -> int:
    table = Table(title=f"translate -> {args.out}/ ({args.backend}, {args.arch})")
    for col in ("kernel", "file", "launchers", "registers", "smem", "time", "status"):
        table.add_column(col)
    failures = 0
    with console.status("translating...") as status:
        for name in names:
            status.update(f"translating {name} ...")
            t0 = time.perf_counter()
            try:
                r = api.translate(name, signature=args.signature, constants=constants, opts=opts, out_dir=args.out)
            except ManifestError:
                raise  # the folder's manifest is unusable: no kernel can be written there
            except Exception as e:  # noqa: BLE001 - TranslationError, LookupError, LLMError, ...: report, go on
                failures += 1
                # plain text on stderr: wrapping would break the caret under the construct
                sys.stderr.write(f"{e}\n" if isinstance(e, TranslationError) else f"{name}: {type(e).__name__}: {e}\n")
                table.add_row(name, "-", "-", "-", "-", f"{time.perf_counter() - t0:.2f}s", "[red]failed[/red]")
                continue
            comp = r.compile
            symbols = ", ".join(launcher["symbol"] for launcher in r.entry["launchers"])
            table.add_row(name, os.path.relpath(r.path), symbols, str(comp.get("registers") or "-"),
                          str(comp.get("shared_bytes") if comp.get("shared_bytes") is not None else "-"),
                          f"{time.perf_counter() - t0:.2f}s", "[green]ok[/green]")
    console.print(table)
    return 1 if failures else 0


def _check(args, console: Console, api) -> int:
    problems = api.check(args.out)
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
