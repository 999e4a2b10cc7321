"""``translate``: Numba CUDA kernels -> plain CUDA C, offline and deterministic.

    translate KERNEL [--signature SIG] [--const NAME=VALUE] [--backend ast] [--out DIR] [--arch ARCH]
    translate --all [--out DIR] [--arch ARCH]
    translate --check [--out DIR]
    translate --list
    translate --prune [--out DIR]              # remove the files of kernels that no longer exist
    translate --all --shard I/N [--verify]     # one host's share of the kernels (a CI matrix, a job array)
    translate --merge DIR... [--out DIR]       # the other hosts' verification records, into this folder

KERNEL is a registered kernel name (``matmul_tiled``), ``package.module:kernel`` or ``path/to/file.py:kernel``
(a module of the current folder is found as ``python -m`` finds it).

Inside a user's project (the current folder or a parent has a ``pyproject.toml`` with ``[tool.numbakern]``) the
project says which kernels ``--all``, ``--list`` and ``--verify`` mean, where their files go and the default
``--arch``; anywhere else that is numbakern's own library and ``generated_cuda/`` (``numbakern.project``).
``--check --out DIR`` checks the files DIR's manifest lists; with the project's own folder, every kernel of the
project must have one. ``--json`` prints one JSON document on stdout instead of lines. The same commands are
``numbakern translate``, ``numbakern check`` and ``numbakern list`` (``translate.commands``), and
``python -m translate``.

Exit code 0 only on success; 1 when a kernel failed or a file is not up to date; 2 for unusable input (options,
a damaged manifest, a bad ``[tool.numbakern]``, an unknown kernel, an ``--out`` that cannot be written); 130 when
interrupted (Ctrl-C: one line, and the lines of the kernels that finished).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import tempfile
import time
import traceback
from importlib.metadata import PackageNotFoundError, version

from . import manifest, output, trust
from .errors import TranslationError
from .llm import cli_args as llm_args
from .llm.client import LLMError
from .manifest import ManifestError, sha256_file
from .merge import merge
from .verify import cli_args as verify_args
from .verify.shards import parse as parse_shard

#: the exit status of a run stopped by Ctrl-C (128 + SIGINT, as shells report it)
INTERRUPTED = 130


def numbakern_version() -> str:
    try:
        return version("numbakern")
    except PackageNotFoundError:  # run from a checkout that was never installed
        # (imported here: importing the numbakern package chooses the CUDA target, which main() does first)
        from numbakern._version import __version__

        return __version__


def clash_warning() -> str | None:
    """A warning when the unrelated PyPI package ``translate`` is installed beside numbakern: both install an import
    package named ``translate`` (and a ``translate`` command), so each overwrites the other's files (docs/cli.md)."""
    try:
        other = version("translate")
    except PackageNotFoundError:
        return None
    return (f"translate: warning: the PyPI package 'translate' {other} is installed in this environment too; it and "
            "numbakern both install an import package named 'translate' and a 'translate' command, which overwrite "
            "each other's files. Install numbakern in an environment of its own (docs/cli.md, 'The name').")


def build_parser(prog: str = "translate") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="Translate Numba CUDA kernels to plain CUDA C.",
                                epilog="Inside a project (a pyproject.toml with [tool.numbakern]) the project's "
                                       "kernels, folder and arch; elsewhere numbakern's own library. "
                                       "Exit status: 0 done, 1 a kernel failed or a file is not up to date, "
                                       "2 unusable input, 130 interrupted.")
    p.add_argument("kernel", nargs="?", help="registry name, package.module:kernel or path/to/file.py:kernel")
    p.add_argument("--signature", help='numba signature, e.g. "void(float32[:, ::1], float32[:, ::1], int64)"')
    p.add_argument("--const", action="append", default=[], metavar="NAME=VALUE",
                   help="compile-time constant (template parameter); NAME=V1,V2 instantiates several")
    p.add_argument("--backend", default="ast", help="device-code backend (default: ast, deterministic, offline)")
    p.add_argument("--out", help="output directory (default: the project's [tool.numbakern] out, else "
                                  "generated_cuda)")
    p.add_argument("--arch", help="NVRTC target architecture (default: the project's arch, else sm_90)")
    p.add_argument("--all", action="store_true", help="translate every kernel of the project (numbakern's own library "
                                                      "outside a project)")
    p.add_argument("--force", action="store_true",
                   help="replace a GPU-verified file with a model's unverified translation, or a file edited by hand")
    p.add_argument("--check", action="store_true",
                   help="exit non-zero if a generated file is stale or was edited by hand")
    p.add_argument("--accept-unverifiable", action="store_true",
                   help="with --check: accept files another backend (a model) wrote, which cannot be derived again, "
                        "when their bytes are the manifest's (listed as accepted claims; without it they fail)")
    p.add_argument("--require-verified", action="store_true",
                   help="with --check: also verify every file on this machine's GPU against its Numba kernel "
                        "(manifest records are claims, not proof); refused without a GPU")
    p.add_argument("--list", action="store_true",
                   help="list the project's kernels with the state of their files (nothing is translated)")
    p.add_argument("--prune", action="store_true",
                   help="remove the files and manifest entries of kernels that no longer exist in the project "
                        "(renamed, deleted, or a library kernel the project does not include); never a file of a "
                        "kernel that exists")
    p.add_argument("--merge", nargs="+", metavar="DIR",
                   help="merge the GPU verification records of these folders' manifests (other hosts' shards) into "
                        "the output folder's, for the same file bytes; conflicting records are refused, one line each")
    verify_args.add_shard_argument(p, "with --all, translate (and --verify)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON document on stdout (what translate.api returns), nothing else there")
    noise = p.add_mutually_exclusive_group()
    noise.add_argument("-q", "--quiet", dest="verbosity", action="store_const", const=output.QUIET,
                       default=output.NORMAL, help="print only errors and the summary line")
    noise.add_argument("-v", "--verbose", dest="verbosity", action="store_const", const=output.VERBOSE,
                       help="also print each kernel's stage times, and the traceback of an unexpected error")
    p.add_argument("--version", action="version", version=f"translate (numbakern) {numbakern_version()}")
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
            value = conv(text)
        except ValueError:
            continue
        if not math.isfinite(value):
            raise ValueError(f"constant values must be finite numbers, got {text!r}")
        return value
    if text in ("True", "False", "true", "false"):
        return text.lower() == "true"
    raise ValueError(f"constant values must be numbers, got {text!r}")


def main(argv=None, prog: str = "translate") -> int:
    """The command; ``prog``: the name it was called by (``numbakern check`` runs it too)."""
    try:
        return _main(argv, prog)
    except KeyboardInterrupt:
        # what finished was printed already (the report closes on the way out): one line, no traceback
        sys.stderr.write("translate: interrupted\n")
        return INTERRUPTED
    except BrokenPipeError:  # `translate --all | head`: the reader left; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _main(argv, prog: str) -> int:
    # the translator needs numba's real CUDA front end (it needs no GPU); the simulator has none
    os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
    warning = clash_warning()
    if warning:
        sys.stderr.write(warning + "\n")
    args = build_parser(prog).parse_args(argv)
    # numba reads that variable when numba.cuda is first imported: what imports numba is imported here, not above
    from numbakern import project as projects

    from . import api, project_kernels
    from .request import TranslateOptions
    from .verify import cli as verify_cli

    try:
        project = projects.find(os.getcwd())
    except projects.ProjectError as e:
        return _usage(str(e))
    own_folder = args.out is None
    out_label = f"out in {project.pyproject}" if own_folder and project.pyproject else "--out"
    arch_label = "--arch" if args.arch else f"arch in {project.pyproject}"
    args.out = args.out or output.display_path(str(project.out_dir))
    args.arch = args.arch or project.arch
    try:
        problem = _what_to_do_problem(args)
        if problem:
            return _usage(problem)
        if args.merge:
            return _merge(args)
        if args.list:
            return _list(args, api, project)
        if args.prune:
            return _prune(args, project)
        if args.check:
            return _check(args, api, project)
        problem = _preflight(args, arch_label, out_label)
        if problem:
            return _usage(problem)
        sends = args.backend == "llm" and not args.show_prompt
        backend_options = llm_args.backend_options(args) if sends else {}
        try:
            constants = parse_constants(args.const)
            # --verify with the llm backend also verifies each reply on the GPU inside the repair loop
            opts = TranslateOptions(backend=args.backend, backend_options=backend_options, arch=args.arch,
                                    verify=args.verify and args.backend == "llm", force=args.force)
        except ValueError as e:
            return _usage(str(e))
        try:
            names = [project_kernels.target_name(spec) for spec in _specs_of_run(args, project, verify_cli)] \
                if args.all else [project_kernels.target_for(project, args.kernel)]
        except (projects.ProjectError, project_kernels.UnknownKernel, ValueError) as e:  # (also a bad --shard)
            return _usage(str(e))
        except Exception as e:  # noqa: BLE001 - the project's kernel modules fail to import: where, no traceback
            return _usage(project_kernels.import_failure(project, e))
        if args.show_prompt:
            return _show_prompt(args, names[0], constants, opts)
        rc = _translate(args, api, names, opts, constants)
        if rc == 0 and args.verify:
            # with --json, stdout holds the document alone: the verification's report goes to stderr (its records
            # to the manifest, as always)
            with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
                rc = verify_cli.run(args, None if args.all and not args.shard else names, directory=args.out,
                                    project=project)
        return rc
    except ManifestError as e:
        sys.stderr.write(f"translate: {e}\n")
        return 2


def _specs_of_run(args, project, verify_cli):
    """``--all``'s kernels: the project's, or with ``--shard`` this host's share of them."""
    from . import project_kernels  # imports numba: only once main() has chosen its CUDA target

    specs = project_kernels.specs(project)
    return verify_cli.shard_specs(specs, parse_shard(args.shard), args.out) if args.shard else specs


def _merge(args) -> int:
    """``--merge DIR...``: the verification records of other folders' manifests into ``args.out``'s."""
    for source in args.merge:
        if not os.path.exists(source):
            return _usage(f"--merge {source}: no such folder or file")
    outcomes = merge(args.out, args.merge)
    refused = [o for o in outcomes if o.refused]
    counts = {"merged": sum(o.merged for o in outcomes), "kept": sum(not o.merged and not o.refused
                                                                     for o in outcomes), "refused": len(refused)}
    if args.json:
        _print_json({"command": "merge", "out": args.out, "sources": args.merge, "summary": counts,
                     "outcomes": [{"source": o.source, "file": o.file, "what": o.what, "refused": o.refused,
                                   "merged": o.merged} for o in outcomes]})
    else:
        for o in outcomes:
            if o.refused:
                sys.stderr.write(f"translate --merge: {o.line()}\n")
            elif args.verbosity > output.QUIET:
                sys.stdout.write(o.line() + "\n")
        sys.stdout.write(f"translate --merge -> {args.out}/: {counts['merged']} merged, {counts['kept']} kept, "
                         f"{counts['refused']} refused\n")
    return 1 if refused else 0


def _what_to_do_problem(args) -> str | None:
    """Options that do not make one command (None when they do)."""
    if sum(map(bool, (args.check, args.list, args.merge, args.prune, args.all or args.kernel))) > 1:
        return "use one of KERNEL / --all, --check, --list, --prune and --merge"
    if args.shard and not args.all:
        return "--shard I/N applies to --all"
    for flag in ("accept_unverifiable", "require_verified"):
        if getattr(args, flag) and not args.check:
            return f"--{flag.replace('_', '-')} applies to --check"
    if args.check or args.list or args.merge or args.prune:
        return None
    if args.all == bool(args.kernel):
        return "name one KERNEL, or use --all, --check, --list, --prune or --merge"
    if args.all and (args.signature or args.const):
        return "--signature/--const apply to one kernel, not --all"
    if args.show_prompt and args.all:
        return "--show-prompt shows the prompt for one KERNEL, not --all"
    return None


def _preflight(args, arch_label: str, out_label: str) -> str | None:
    """What would make every kernel of the run fail, found before the first is translated (None when nothing
    does): the architecture, the output folder, and with the llm backend its model, key and endpoint."""
    problem = arch_problem(args.arch, arch_label)
    if problem is None and not args.show_prompt:
        problem = out_problem(args.out, out_label)
    if problem is None and args.backend == "llm" and args.verify and not args.show_prompt:
        from .verify.cli import preflight  # imports numbakern: only once main() has chosen numba's target

        cannot = preflight()
        problem = f"--verify: {cannot}; nothing was sent to the model" if cannot else None
    if problem is None and args.backend == "llm" and not args.show_prompt:
        try:
            llm_args.check_endpoint(args)  # model, key and URL, and that the endpoint takes a connection at all
        except LLMError as e:
            problem = str(e)
    return problem


def arch_problem(arch: str, label: str = "--arch") -> str | None:
    """Why NVRTC cannot compile for ``arch`` (None when it can), found before any kernel is translated."""
    from .request import arch_number  # imports numba: only once main() has chosen its CUDA target

    try:
        number = int(arch_number(arch))
    except ValueError:
        return f"{label} must look like sm_90 or compute_90, got {arch!r}"
    # NVRTC says which architectures it compiles for (it is loaded only when a kernel is to be translated)
    from cuda.bindings import nvrtc

    err, supported = nvrtc.nvrtcGetSupportedArchs()
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS or number in supported:
        return None  # (NVRTC cannot say: its own error comes with the first compile)
    _, major, minor = nvrtc.nvrtcVersion()
    return (f"{label} {arch}: NVRTC {major}.{minor} does not compile for it; it compiles for "
            f"{', '.join(f'sm_{n}' for n in supported)}")


def out_problem(out: str, label: str = "--out") -> str | None:
    """Why the folder ``out`` cannot take the generated files (None when it can), found before any kernel is
    translated: a file in its place, or a folder (it, or the one it would be made in) that cannot be written."""
    folder = os.path.abspath(out)
    if os.path.exists(folder) and not os.path.isdir(folder):
        return f"{label} {out} is a file, not a folder"
    while not os.path.exists(folder):  # translate makes the folder: where it would be made must be writable
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        return f"{label} {out}: {output.display_path(folder)} is a file, not a folder"
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        return f"{label} {out}: cannot write in the folder {output.display_path(folder)} ({e.strerror})"
    return None


def _usage(message: str) -> int:
    sys.stderr.write(f"translate: {message}\n")
    return 2


def error_text(name: str, e: BaseException, verbose: bool = False) -> str:
    """What the user reads about a kernel that failed: a located TranslationError as it is (its caret must stay
    under the construct), the message of an error the user can act on, and the type of an unexpected one."""
    if isinstance(e, TranslationError):
        return str(e)
    if isinstance(e, (LookupError, LLMError)):
        message = e.args[0] if isinstance(e, KeyError) and e.args else str(e)  # KeyError's str() adds quotes
        return f"translate: {name}: {message}"
    text = f"translate: {name}: {type(e).__name__}: {e}"
    if verbose:
        text += "\n" + "".join(traceback.format_exception(e)).rstrip()
    return text


def _translate(args, api, names: list[str], opts, constants: dict) -> int:
    # the files' bytes before: a translation that writes the same bytes left its file unchanged
    before = {f: sha256_file(os.path.join(args.out, f)) for f in os.listdir(args.out) if f.endswith(".cu")} \
        if os.path.isdir(args.out) else {}
    title = f"translate -> {args.out}/ ({args.backend}, {args.arch})"
    records: list[dict] = []
    report = output.Report(title, len(names), silent=args.json, verbosity=args.verbosity)
    try:
        with report, llm_args.turn_notes(args, report.note):
            for name in names:
                report.start(name)
                t0 = time.perf_counter()
                try:
                    r = api.translate(name, signature=args.signature, constants=constants, opts=opts,
                                      out_dir=args.out)
                except ManifestError:
                    raise  # the folder's manifest is unusable: no kernel can be written there
                except Exception as e:  # noqa: BLE001 - TranslationError, LookupError, LLMError, ...: report, go on
                    report.error(error_text(name, e, args.verbosity >= output.VERBOSE))
                    report.done(output.Row(name, output.FAILED, seconds=time.perf_counter() - t0))
                    records.append({"kernel": name, "status": output.FAILED, "seconds": report.rows[-1].seconds,
                                    "error": {"type": type(e).__name__, "message": str(e)}, "result": None})
                    continue
                file_name = os.path.basename(r.path or "")
                row = output.row_for(name, r, before.get(file_name), time.perf_counter() - t0)
                before[file_name] = r.entry.get("file_sha256")
                if args.backend == "llm":
                    report.note(llm_args.summary(name, r.entry, args.out))
                report.done(row, r.seconds)
                records.append({"kernel": name, "status": row.status, "seconds": row.seconds, "error": None,
                                "result": r.to_json()})
    finally:
        if args.json:
            _print_json({"command": "translate", "out": args.out, "backend": args.backend, "arch": args.arch,
                         "kernels": records, "total": len(names), "interrupted": len(records) < len(names),
                         "summary": {s: sum(x["status"] == s for x in records)
                                     for s in (output.WRITTEN, output.UNCHANGED, output.FAILED)}})
    return 1 if report.failed else 0


def _print_json(document) -> None:
    sys.stdout.write(json.dumps(document, indent=2, default=str) + "\n")
    sys.stdout.flush()


def _show_prompt(args, name: str, constants: dict, opts) -> int:
    """``--show-prompt``: the messages the llm backend would send for ``name``, printed; nothing sent or written."""
    from . import pipeline, targets  # numba's CUDA target: only once main() has chosen it
    from .backends.llm import prompt_messages

    try:
        request = pipeline.build_request(targets.resolve(name, constants), args.signature, constants, opts)
    except Exception as e:  # noqa: BLE001 - the same errors translation reports
        sys.stderr.write(error_text(name, e, args.verbosity >= output.VERBOSE) + "\n")
        return 1
    messages = prompt_messages(request)
    if args.json:
        _print_json({"command": "show-prompt", "kernel": name, "messages": messages})
        return 0
    for m in messages:
        sys.stdout.write(f"----- {m['role']} -----\n{m['content'].rstrip()}\n")
    sys.stdout.write(f"----- {len(messages)} messages, {sum(len(m['content']) for m in messages)} characters; "
                     "nothing was sent -----\n")
    return 0


def _check(args, api, project) -> int:
    """``--check`` of ``args.out`` in ``project``: what ``translate.api.check`` finds (the same rules); with
    ``--accept-unverifiable`` another backend's files are accepted claims, with ``--require-verified`` every file is
    also verified on this machine's GPU (nothing is recorded: a check writes nothing)."""
    from . import project_kernels  # imports numba: only once main() has chosen its CUDA target
    from .check import UNVERIFIABLE  # (imports numba too)

    if args.require_verified:
        from .verify import cli as verify_cli  # imports numbakern: only once main() has chosen numba's target

        problem = verify_cli.preflight()
        if problem:
            return _usage(f"--check --require-verified: {problem}; nothing was verified (run it on a machine with a "
                          "GPU, or drop the flag: --check alone derives every file from its kernel but runs none)")
    try:
        _, library = project_kernels.expected_in(project, args.out)
        problems = api.check(args.out)
    except Exception as e:  # noqa: BLE001 - said as _project_failure says it
        return _project_failure(project, e)
    claims = [p for p in problems if p["problem"] == UNVERIFIABLE]
    accepted = claims if args.accept_unverifiable or args.require_verified else []
    problems = [p for p in problems if p not in accepted]
    rc = 1 if problems else 0
    if args.require_verified and not problems:
        rc = _verify_checked(args, project)
    if args.json:
        _print_json({"command": "check", "out": args.out, "library": library, "ok": rc == 0,
                     "problems": problems, **({"accepted": accepted} if accepted else {})})
    elif args.verbosity > output.QUIET or problems:
        # outside a project the library is checked: say so, a user may have expected their own kernels
        what = "numbakern's library kernels: no [tool.numbakern] in a pyproject.toml here or above" if library else ""
        output.print_check(problems, args.out, what=what, accepted=accepted,
                           claims=_claims(args.out) if args.verbosity >= output.VERBOSE else None)
    return rc


def _project_failure(project, e: Exception) -> int:
    """The exit status (2) and one line for what stopped a command on ``project``'s kernels: a ``ProjectError`` (a
    clash of names) as it is, the project's kernel modules failing to import located in them; a damaged manifest is
    raised on (``_main`` says it)."""
    from . import project_kernels  # imports numba: only once main() has chosen its CUDA target

    if isinstance(e, ManifestError):
        raise e
    if isinstance(e, ValueError):
        return _usage(str(e))
    return _usage(project_kernels.import_failure(project, e))


def _verify_checked(args, project) -> int:
    """``--require-verified``: every file of ``args.out`` verified on the GPU, nothing recorded."""
    from .verify import cli as verify_cli  # imports numbakern: only once main() has chosen numba's target

    data = manifest.load(args.out)
    names = [entry.get("registry_name") or entry.get("target") for _, entry in sorted(data["files"].items())]
    args.record = False
    with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
        return verify_cli.run(args, [n for n in names if isinstance(n, str)], directory=args.out, project=project,
                              command="translate --check --require-verified")


def _claims(out: str) -> list[str]:
    """What the manifest's verification records claim, one line per file (``trust.claim_text``)."""
    return [f"{name}: the manifest claims {trust.claim_text(entry.get('verification'))}"
            for name, entry in sorted(manifest.load(out)["files"].items())
            if trust.record(entry.get("verification")) is not None]


def _prune(args, project) -> int:
    """``--prune``: the files and entries of ``args.out`` whose kernels no longer exist in ``project``, removed."""
    from . import project_kernels  # imports numba: only once main() has chosen its CUDA target

    if not os.path.isdir(args.out):
        return _usage(f"--prune: {args.out} is not a folder of generated files")
    try:
        removed, kept = project_kernels.prune(project, args.out)
    except Exception as e:  # noqa: BLE001 - said as _project_failure says it
        return _project_failure(project, e)
    if args.json:
        _print_json({"command": "prune", "out": args.out, "removed": removed, "kept": kept})
        return 0
    for r in removed if args.verbosity > output.QUIET else ():
        why = trust.printable(r["why"])
        sys.stdout.write(f"removed    {os.path.join(args.out, r['file'])}  {r['kernel']}: {why}\n")
    for k in kept:
        sys.stderr.write(f"translate --prune: kept {os.path.join(args.out, k['file'])}: a kernel of the project "
                         f"writes it, though its entry names {k['kernel']} (translate the kernel again to rewrite the "
                         "entry)\n")
    sys.stdout.write(f"translate --prune -> {args.out}/: {len(removed)} removed" +
                     (f", {len(kept)} kept" if kept else "") + "\n")
    return 0


def _list(args, api, project) -> int:
    """``--list``: the project's kernels, each with its file and the file's state (as ``--check`` finds it)."""
    from . import project_kernels  # imports numba: only once main() has chosen its CUDA target

    try:
        specs = project_kernels.specs(project)
    except Exception as e:  # noqa: BLE001 - said as _project_failure says it
        return _project_failure(project, e)
    names = [project_kernels.target_name(s) for s in specs]
    data = manifest.load(args.out)
    # (a folder not made yet: every kernel's file is missing)
    problems = {p["file"]: p for p in api.check(args.out, registry=False, expected=names)} \
        if os.path.isdir(args.out) else {}
    kernels = []
    for spec, name in zip(specs, names):
        found = manifest.entry_for(data, spec.name) if ":" not in name else \
            next(((f, e) for f, e in data["files"].items() if e.get("target") == name), None)
        file_name, entry = found or (f"{spec.name}.cu", {})
        problem = problems.get(file_name) or (None if os.path.isdir(args.out) else
                                              {"problem": "missing", "detail": f"{args.out} does not exist"})
        record = trust.record(entry.get("verification"))
        claim = record if problem is None and record is not None and record["file_sha256"] == \
            entry.get("file_sha256") else None
        kernels.append({"kernel": spec.name, "target": name, "family": spec.family,
                        "file": os.path.join(args.out, file_name),
                        "status": problem["problem"] if problem else "up to date",
                        "detail": problem["detail"] if problem else "",
                        # a record is what the manifest claims, never shown as proof (translate.trust)
                        "claimed_verification": {k: record.get(k) for k in ("ok", "device", "host", "date",
                                                                            "file_sha256")} if claim else None,
                        "claim": trust.claim_text(claim) if claim else None})
    # files of the folder whose kernels the project cannot find (renamed, removed, not its own): never hidden
    listed = {os.path.basename(k["file"]) for k in kernels}
    orphans = [{"file": os.path.join(args.out, f), "status": p["problem"], "detail": p["detail"]}
               for f, p in sorted(problems.items())
               if f not in listed and p["problem"] in ("untrusted", "unresolvable")]
    where = f"project {project.name} ({output.display_path(str(project.pyproject))})" if not project.is_library \
        else "numbakern's library (no [tool.numbakern] in a pyproject.toml here or above)"
    if args.json:
        _print_json({"command": "list", "project": project.name, "pyproject": project.pyproject and
                     str(project.pyproject), "out": args.out, "kernels": kernels, "orphans": orphans})
        return 0
    sys.stdout.write(f"{where}: {len(kernels)} kernels, their files in {args.out}/\n")
    width = max((len(k["kernel"]) for k in kernels), default=len("(no kernel)"))
    path_width = max((len(k["file"]) for k in (*kernels, *orphans)), default=0)
    for k in kernels:
        state = k["status"] + (f"; the manifest claims {k['claim']}" if k["claim"] else "")
        sys.stdout.write(f"{k['kernel']:<{width}}  {k['file']:<{path_width}}  {state}\n")
    for o in orphans:
        sys.stdout.write(f"{'(no kernel)':<{width}}  {o['file']:<{path_width}}  {o['status']}: "
                         f"{trust.printable(o['detail'])}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
