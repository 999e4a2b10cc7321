"""``translate``: Numba CUDA kernels -> plain CUDA C, offline and deterministic.

    translate KERNEL [--signature SIG] [--const NAME=VALUE] [--backend ast] [--out DIR] [--arch ARCH]
    translate --all [--out DIR] [--arch ARCH]
    translate --check [--out DIR]

KERNEL is a registered kernel name (``matmul_tiled``), ``package.module:kernel`` or ``path/to/file.py:kernel``
(a module of the current folder is found as ``python -m`` finds it).

Inside a user's project (the current folder or a parent has a ``pyproject.toml`` with ``[tool.numbakern]``) the
project says which kernels ``--all`` and ``--verify`` mean, where their files go and the default ``--arch``; anywhere
else that is numbakern's own library and ``generated_cuda/`` (``numbakern.project``). ``--check --out DIR`` checks
the files DIR's manifest lists; with the project's own folder, every kernel of the project must have one.
Exit code 0 only on success; 2 for unusable input (options, a damaged manifest, a bad ``[tool.numbakern]``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback

from . import output
from .errors import TranslationError
from .llm import cli_args as llm_args
from .manifest import ManifestError, sha256_file
from .verify import cli_args as verify_args


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="translate", description="Translate Numba CUDA kernels to plain CUDA C.")
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
    from numbakern import project as projects

    from . import api
    from .request import TranslateOptions
    from .verify import cli as verify_cli

    try:
        project = projects.find(os.getcwd())
    except projects.ProjectError as e:
        return _usage(str(e))
    own_folder = args.out is None
    args.out = args.out or output.display_path(str(project.out_dir))
    args.arch = args.arch or project.arch
    try:
        if args.check:
            return _check(args, api, project if own_folder or _same_folder(args.out, project.out_dir) else None)
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
        try:
            names = [kernel_name(spec) for spec in project_specs(project)] if args.all \
                else [_named_in(project, args.kernel)]
        except projects.ProjectError as e:
            return _usage(str(e))
        except Exception as e:  # noqa: BLE001 - the project's kernel modules fail to import: where, no traceback
            return _usage(import_failure(project, e))
        rc = _translate(args, api, names, opts, constants)
        if rc == 0 and args.verify:
            rc = verify_cli.run(args, None if args.all else names, directory=args.out, project=project)
        return rc
    except ManifestError as e:
        sys.stderr.write(f"translate: {e}\n")
        return 2


def project_specs(project):
    """The project's kernels, their modules imported as ``translate`` imports a kernel's module (a kernel compiled
    at import records its signature instead: there may be no GPU)."""
    from .targets import recording_signatures  # numba's CUDA target: only once main() has chosen it

    with recording_signatures():
        return project.specs()


def import_failure(project, e: BaseException) -> str:
    """One line for a kernel module of ``project`` that failed to import: the project, the error, and the line of
    the project's own file where it happened."""
    root = str(project.root) + os.sep
    mine = [f for f in traceback.extract_tb(e.__traceback__) if f.filename.startswith(root)]
    where = f" at {os.path.relpath(mine[-1].filename)}:{mine[-1].lineno}" if mine else ""
    return f"importing the kernels of {project.pyproject or 'numbakern'} failed{where}: {type(e).__name__}: {e}"


def kernel_name(spec) -> str:
    """What ``translate`` resolves to ``spec``'s kernel: a library kernel by its registry name, a user's where its
    module binds it (``module:kernel``, never confused with a library kernel of the same name)."""
    from numbakern import registry  # imports numba: only once main() has chosen its CUDA target

    if spec.namespace == registry.LIBRARY:
        return spec.name
    return registry.kernel_target(spec) or spec.qualified_name


def _named_in(project, kernel: str) -> str:
    """A bare kernel name inside a user's project means the project's kernel of that name."""
    if ":" in kernel or project.is_library:
        return kernel
    try:
        return kernel_name(next(s for s in project_specs(project) if s.name == kernel))
    except StopIteration:
        return kernel  # not the project's: a library kernel's name, resolved by the registry


def _same_folder(a, b) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def _usage(message: str) -> int:
    sys.stderr.write(f"translate: {message}\n")
    return 2


def _translate(args, api, names: list[str], opts, constants: dict) -> int:
    rows = []
    # the files' bytes before: a translation that writes the same bytes left its file unchanged
    before = {f: sha256_file(os.path.join(args.out, f)) for f in os.listdir(args.out) if f.endswith(".cu")} \
        if os.path.isdir(args.out) else {}
    for name in names:
        t0 = time.perf_counter()
        try:
            r = api.translate(name, signature=args.signature, constants=constants, opts=opts, out_dir=args.out)
        except ManifestError:
            raise  # the folder's manifest is unusable: no kernel can be written there
        except Exception as e:  # noqa: BLE001 - TranslationError, LookupError, LLMError, ...: report, go on
            # plain text on stderr: wrapping would break the caret under the construct
            sys.stderr.write(f"{e}\n" if isinstance(e, TranslationError) else f"{name}: {type(e).__name__}: {e}\n")
            sys.stderr.flush()
            rows.append(output.Row(name, output.FAILED, seconds=time.perf_counter() - t0))
            continue
        file_name = os.path.basename(r.path or "")
        rows.append(output.row_for(name, r, before.get(file_name), time.perf_counter() - t0))
        before[file_name] = r.entry.get("file_sha256")
    output.print_translations(rows, f"translate -> {args.out}/ ({args.backend}, {args.arch})")
    return 1 if any(r.status == output.FAILED for r in rows) else 0


def _check(args, api, project) -> int:
    """``project``: the project whose own folder this is (its kernels must all have files), else None."""
    expected = None
    if project is not None and not project.is_library:
        try:
            expected = [kernel_name(spec) for spec in project_specs(project)]
        except ValueError as e:  # ProjectError: a clash of names
            return _usage(str(e))
        except Exception as e:  # noqa: BLE001 - the project's kernel modules fail to import
            return _usage(import_failure(project, e))
    problems = api.check(args.out, registry=project is not None and project.is_library, expected=expected)
    output.print_check(problems, args.out)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
