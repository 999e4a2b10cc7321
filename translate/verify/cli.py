"""``python -m translate.verify`` and the options the ``translate`` CLI borrows (``add_arguments`` / ``run``).

    python -m translate.verify --all --sanitize            # verify every registered kernel, record in the manifest
    python -m translate.verify matmul_tiled --seeds 5      # one kernel, more seeds
    python -m translate.verify --apply records.json        # apply records verified on another machine
    python -m translate.verify --all --gpus 2 --shard 1/4  # this host's quarter of the kernels, on two of its GPUs

Inside a user's project (``[tool.numbakern]`` in the current folder's or a parent's ``pyproject.toml``) ``--all``
means the project's kernels, a bare name one of the project's, and ``--dir`` defaults to the project's folder
(``numbakern.project``). A kernel's spec is the one its own module declares, never a library kernel's of the same
name.

The kernels are spread over the visible GPUs (``--gpus all|N``), several worker processes per GPU
(``translate.verify.parallel``; docs/verification.md says how many and why).

Exit status: 0 all verified, 1 a kernel failed verification, 2 verification could not run (no GPU, no manifest).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from numbakern import gpus as gpu_list
from numbakern import mode, registry
from numbakern import project as projects
from numbakern.registry import KernelSpec, all_specs, get

from .. import manifest, targets, trust
from . import driver, isolated, parallel, schedule, shards
from .abi import select_launcher
from .build import nvcc_path
from .cli_args import add_arguments, add_shard_argument, jobs_per_gpu
from .harness import Candidate, VerifyResult, device_facts, now, verify
from .report import result_block, summary_table
from .sanitize import TOOLS, sanitize_candidates

DEFAULT_DIR = "generated_cuda"


def candidate_for(spec: KernelSpec, directory: str | os.PathLike = DEFAULT_DIR) -> tuple[str, Candidate]:
    """``(file name, Candidate)`` for a kernel's spec (the library's or a user's) from the manifest, or a
    ``LookupError`` saying why not."""
    directory = Path(directory)
    found = manifest_entry(manifest.load(directory), spec)
    if found is None:
        raise LookupError(f"{spec.name}: no entry in {manifest.manifest_path(directory)} "
                          f"(run `translate {_translate_name(spec)}` first)")
    file_name, entry = found
    cu = directory / file_name
    if not cu.exists():
        raise LookupError(f"{spec.name}: {cu} is listed in the manifest but missing")
    launcher = select_launcher(entry.get("launchers", ()), getattr(spec, "constants", {}) or {})
    flags = tuple((entry.get("build") or {}).get("nvcc_flags") or ())
    return file_name, Candidate(cu, launcher, label=spec.name, nvcc_flags=flags)


def manifest_entry(data: dict, spec: KernelSpec) -> tuple[str, dict] | None:
    """``(file name, entry)`` of ``spec``'s kernel: a library kernel's by its registry name; a user kernel's by
    where its module binds it (the entry's ``target``) or by its function's ``module:qualname`` -- never a file of
    the same name that another module's kernel wrote."""
    func = getattr(spec.kernel, "py_func", spec.kernel)
    qualname = f"{func.__module__}:{func.__qualname__}"
    if spec.namespace == registry.LIBRARY:
        found = manifest.entry_for(data, spec.name)
        if found is None:
            return None
        # by registry name, or the file of that name only when the library's kernel wrote it
        entry = found[1]
        mine = entry.get("registry_name") == spec.name or entry.get("kernel") == qualname
        return found if mine else None
    target = registry.kernel_target(spec)
    for file_name, entry in sorted(data["files"].items()):
        if (target and entry.get("target") == target) or entry.get("kernel") == qualname \
                or _names_file_of(entry.get("kernel") or "", func):
            return file_name, entry
    return None


def _names_file_of(label: str, func) -> bool:
    """True when a manifest's ``path/to/file.py:qualname`` (a kernel translated by its file's path, relative to the
    folder translate ran in) is ``func``: the same qualname in the same file, whichever name its module was
    imported under (a project's module, or the file imported by path)."""
    where, _, qualname = label.rpartition(":")
    if not targets.names_file(where) or qualname != func.__qualname__:
        return False
    source = getattr(func, "__code__", None)
    return source is not None and os.path.realpath(where) == os.path.realpath(source.co_filename)


def _translate_name(spec: KernelSpec) -> str:
    return spec.name if spec.namespace == registry.LIBRARY else registry.kernel_target(spec) or spec.qualified_name


def specs_named(names: Sequence[str] | None, project: projects.Project | None = None) -> list[KernelSpec]:
    """The specs ``names`` mean (None: every kernel of the project; the library's outside a project): a bare name is
    the project's kernel of that name, ``module:name`` the one that module declares."""
    project = project or projects.library()
    if names is None:
        return all_specs() if project.is_library else project.specs()
    if project.is_library:
        return [_qualified(n) if ":" in n else get(n) for n in names]
    mine = {spec.name: spec for spec in project.specs()}
    return [_qualified(n) if ":" in n else mine.get(n) or project.spec(n) for n in names]


def _qualified(name: str) -> KernelSpec:
    """``module:name`` as the registry reads it, else ``module:attribute`` or ``path/to/file.py:attribute`` of a
    declared kernel (the forms ``translate`` names a user's kernel by), found in the module ``translate`` imported."""
    where, _, attr = name.rpartition(":")
    if not targets.names_file(where):
        try:
            return get(name)
        except KeyError as missing:
            spec = registry.spec_for_kernel(getattr(sys.modules.get(where), attr, None))
            if spec is None:
                raise missing from None
            return spec
    spec = registry.spec_for_kernel(targets.resolve(name).kernel)
    if spec is None:
        raise LookupError(f"{name} is not declared (numbakern.declare(kernel, args=..., launch=..., reference=...)): "
                          "verification needs its inputs, launch and reference")
    return spec


def verify_kernels(
    names: Sequence[str] | None = None,
    *,
    specs: Sequence[KernelSpec] | None = None,
    directory: str | os.PathLike = DEFAULT_DIR,
    seeds: int = 3,
    sanitize: bool = False,
    record: bool = True,
    records_out: str | os.PathLike | None = None,
    log_dir: str | os.PathLike | None = None,
    verbose_cases: bool = False,
    out=None,
    gpus: str | int | Sequence[gpu_list.Gpu] | None = None,
    jobs_per_gpu: int | None = None,
) -> list:
    """Verify kernels (``specs``, else registered ``names``, else every library kernel) from ``directory``'s
    manifest; print reports; optionally record. ``gpus``: spread the work over these GPUs (or ``"all"`` / a number
    of the visible ones: ``resolve_gpus``, which raises ``numbakern.gpus.GpuListError``), ``jobs_per_gpu`` worker
    processes on each (None: decided from the host, ``translate.verify.schedule``); without ``gpus`` everything
    runs in this process, on its GPU."""
    out = out or sys.stdout
    specs = list(specs) if specs is not None else [get(n) for n in names] if names else all_specs()
    if gpus is not None:
        chosen = resolve_gpus(gpus) if isinstance(gpus, (str, int)) else list(gpus)
        return _verify_spread(specs, directory=directory, seeds=seeds, sanitize=sanitize, record=record,
                              records_out=records_out, log_dir=log_dir, verbose_cases=verbose_cases, out=out,
                              gpus=chosen, jobs_per_gpu=jobs_per_gpu)
    info = device_facts()
    print(f"verification on {info['device']} (cc {info['compute_capability']}, driver {info['driver']}, "
          f"runtime {info['runtime']}, nvcc {info['nvcc']}), {now()}", file=out, flush=True)
    found: dict[str, tuple[str, Any]] = {}
    results: dict[str, VerifyResult] = {}
    for spec in specs:
        try:
            found[spec.name] = candidate_for(spec, directory)
        except Exception as exc:  # noqa: BLE001 - reported per kernel
            results[spec.name] = VerifyResult(spec.name, "", "", "", False, error=str(exc), device=info, date=now())
    session = tempfile.TemporaryDirectory(prefix="numbakern-verify-builds-")
    # every build in parallel, each in its own sandbox; a failed one is built again (and reported) by verify
    built = build_isolated([cand for _, cand in found.values()], arch=info["arch"], workdir=session.name)
    log = Path(log_dir) if log_dir else None
    for spec in specs:
        if spec.name not in found:
            continue
        t0 = time.perf_counter()
        result = verify(spec, found[spec.name][1], seeds=tuple(range(seeds)), arch=info["arch"],
                        prebuilt=built.get(found[spec.name][1].cu))
        results[spec.name] = result
        result.seconds = {"cases": round(time.perf_counter() - t0, 2)}
        print(result_block(result, verbose=verbose_cases) + f"  [{time.perf_counter() - t0:.1f} s]", file=out,
              flush=True)
        if log:
            log.mkdir(parents=True, exist_ok=True)
            with open(log / "cases.log", "a") as f:
                f.write(result_block(result, verbose=True) + "\n")
    if sanitize:
        items = [(spec, found[spec.name][1], built[found[spec.name][1].cu])
                 for spec in specs if spec.name in found and not results[spec.name].error
                 and found[spec.name][1].cu in built]
        t0 = time.perf_counter()
        spent: dict[str, dict[str, float]] = {}
        san = sanitize_candidates(items, log_dir=log, seconds=spent)
        for name, tools in san.items():
            results[name].sanitizer = tools
            results[name].ok = results[name].ok and all(v == "ok" for v in tools.values())
            if spent.get(name):
                results[name].seconds = {**(results[name].seconds or {}), "sanitize": spent[name]}
        print(f"compute-sanitizer: {len(items)} kernels × {len(san and next(iter(san.values())))} tools "
              f"[{time.perf_counter() - t0:.1f} s]", file=out, flush=True)
    ordered = [results[s.name] for s in specs]
    print(summary_table(ordered), file=out, flush=True)

    records = [{"file": found[r.kernel][0], "record": r.to_record()} for r in ordered if r.kernel in found]
    _write_records(records, records_out)
    if record:
        outcome = manifest.apply_records(directory, records)
        for file_name, what in outcome.items():
            print(f"manifest: {file_name}: {what}", file=out)
    session.cleanup()
    return ordered


#: no records file is larger (a record is at most 64 KiB; a library's worth is a few hundred KiB)
MAX_RECORDS_BYTES = 64 << 20


def read_records(path: str | os.PathLike) -> list[dict]:
    """The ``[{"file": name, "record": {...}}, ...]`` that ``--records-out`` writes, read as data: a ``ValueError``
    (one line) for a file that is missing, not a regular file, too large, not UTF-8 JSON, not such a list, an item
    whose file is not a plain file name or whose record is not a well-formed verification record
    (``translate.trust``)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError("no such file" if not path.exists() else "not a regular file")
    if path.stat().st_size > MAX_RECORDS_BYTES:
        raise ValueError(f"larger than {MAX_RECORDS_BYTES >> 20} MiB, which no records file is")
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    if not isinstance(items, list):
        raise ValueError(f"holds {type(items).__name__}, not the list of records --records-out writes")
    for n, item in enumerate(items, start=1):
        if not isinstance(item, dict) or set(item) != {"file", "record"}:
            raise ValueError(f"item {n} is not {{\"file\": ..., \"record\": ...}}")
        try:
            trust.check_file_name(item["file"])
        except trust.UntrustedEntry as e:
            raise ValueError(f"item {n}: {e}") from None
        problem = trust.record_problem(item["record"])
        if problem is not None:
            raise ValueError(f"item {n} ({trust.printable(item['file'])}): not a verification record: {problem}")
    return items


def _write_records(records: list[dict], records_out: str | os.PathLike | None) -> None:
    if records_out:
        Path(records_out).parent.mkdir(parents=True, exist_ok=True)
        Path(records_out).write_text(json.dumps(records, indent=2, sort_keys=True) + "\n")


def _verify_spread(specs: Sequence[KernelSpec], *, directory, seeds: int, sanitize: bool, record: bool, records_out,
                   log_dir, verbose_cases: bool, out, gpus: Sequence[gpu_list.Gpu], jobs_per_gpu: int | None) -> list:
    """``verify_kernels`` over ``gpus``, in worker processes (``translate.verify.parallel``)."""
    found: dict[str, tuple[KernelSpec, str, Candidate]] = {}
    results: dict[str, VerifyResult] = {}
    for spec in specs:
        try:
            file_name, cand = candidate_for(spec, directory)
            found[spec.name] = (spec, file_name, cand)
        except Exception as exc:  # noqa: BLE001 - reported per kernel
            results[spec.name] = VerifyResult(spec.name, "", "", "", False, error=str(exc), date=now())
    done, recorded = parallel.verify_on_gpus(found, directory=directory, gpus=gpus, seeds=seeds, sanitize=sanitize,
                                             jobs_per_gpu=jobs_per_gpu, record=record, log_dir=log_dir,
                                             verbose_cases=verbose_cases, out=out)
    results.update(done)
    ordered = [results[s.name] for s in specs if s.name in results]
    print(summary_table(ordered), file=out, flush=True)
    _write_records([{"file": found[r.kernel][1], "record": r.to_record()} for r in ordered if r.kernel in found],
                   records_out)
    for file_name, what in recorded.items():
        print(f"manifest: {file_name}: {what}", file=out)
    return ordered


def resolve_gpus(value: str | int = "all", environ=None) -> list[gpu_list.Gpu]:
    """The GPUs ``--gpus all|N`` means: the first N of those ``numbakern.gpus.visible`` lists (``nvidia-smi``, or
    ``CUDA_VISIBLE_DEVICES``), else of the driver's device count; a ``GpuListError`` naming the option."""
    found = gpu_list.visible(environ)
    if not found and (environ or os.environ).get(gpu_list.VISIBLE_ENV) is None:
        # no nvidia-smi here: the driver counts them (cuInit and a count make no context)
        found = [gpu_list.Gpu(i, str(i)) for i in range(driver.device_count())]
    return found[:gpu_list.parse_count(str(value), len(found))]


def shard_specs(specs: Sequence[KernelSpec], shard: tuple[int, int], directory: str | os.PathLike
                ) -> list[KernelSpec]:
    """Shard ``(i, n)`` of ``specs``, balanced by the whole verification's time each would take (3 seeds, the
    sanitizer) as ``directory``'s manifest records it or the sizes predict it: the split depends on the kernels and
    the manifest only, never on this run's options, so that every host of a matrix computes the same one."""
    data = manifest.load(directory)
    records = {}
    for spec in specs:
        found = manifest_entry(data, spec)
        records[spec.name] = (found[1].get("verification") if found else None)
    costs = schedule.estimates(specs, records, seeds=range(3), tools=TOOLS)
    keys = {_translate_name(spec): spec for spec in specs}
    chosen = shards.select(list(keys), {key: costs[spec.name] for key, spec in keys.items()}, shard)
    return [keys[key] for key in chosen]


def build_isolated(candidates: Sequence[Any], *, arch: str, workdir: str | os.PathLike, jobs: int | None = None
                   ) -> dict[Path, Path]:
    """``{cu: library}`` for the candidates that built, each built by ``nvcc`` in a sandbox of its own."""
    def one(k_cand):
        k, cand = k_cand
        folder = Path(workdir) / f"build-{k}"
        folder.mkdir()
        return cand.cu, isolated.build(cand.cu, arch=arch, workdir=folder, nvcc_flags=cand.nvcc_flags).so

    with ThreadPoolExecutor(max_workers=jobs or min(16, os.cpu_count() or 4)) as pool:
        return {cu: so for cu, so in pool.map(one, enumerate(candidates)) if so is not None}


def preflight() -> str:
    """Why verification cannot run here ("" when it can): no GPU, no nvcc, or the simulator asked for by the user. (A
    process without a GPU that imported numbakern is put on the simulator by numbakern itself: that is "no GPU".)"""
    if not driver.available():
        return "no CUDA GPU is visible (verification runs the compiled C and the Numba kernel on a GPU)"
    if mode.sim_requested():
        return f"{mode.SIM_ENV}=1 is set: verification compares against the Numba kernel on the real GPU; unset it"
    if not nvcc_path():
        return "nvcc is not on PATH (verification builds each .cu into a shared library with nvcc -shared)"
    return ""


def run(args: argparse.Namespace, kernels: Sequence[str] | None, *, directory: str | os.PathLike = DEFAULT_DIR,
        project: projects.Project | None = None, command: str = "translate --verify") -> int:
    """What ``translate ... --verify`` calls after translating (and ``translate --check --require-verified``, named
    ``command`` in its messages): verify ``kernels`` (names as ``specs_named`` reads them, in ``project``; None = all
    of the project's)."""
    problem = preflight()
    if problem:
        print(f"{command}: {problem}", file=sys.stderr)
        return 2
    try:
        specs = everyone = specs_named(kernels, project)
        per_gpu = jobs_per_gpu(args.jobs_per_gpu)
        if kernels is None and getattr(args, "shard", None):
            specs = shard_specs(everyone, shards.parse(args.shard), directory)
    except (LookupError, projects.ProjectError, ValueError, manifest.ManifestError) as e:
        print(f"{command}: {e}", file=sys.stderr)
        return 2
    if not specs:
        print(f"{command}: shard {args.shard} holds none of the {len(everyone)} kernels", file=sys.stderr)
        return 0
    try:
        results = verify_kernels(
            specs=specs, directory=directory, seeds=args.seeds, sanitize=args.sanitize, record=args.record,
            records_out=args.records_out, log_dir=args.verify_log, verbose_cases=args.verbose_cases,
            gpus=args.gpus, jobs_per_gpu=per_gpu,
        )
    except gpu_list.GpuListError as e:
        print(f"{command}: {e}", file=sys.stderr)
        return 2
    return 0 if results and all(r.ok for r in results) else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m translate.verify", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kernels", nargs="*", help="registered kernel names (default with --all: every one)")
    parser.add_argument("--all", action="store_true", help="every registered kernel")
    parser.add_argument("--dir", help="where the .cu files and manifest.json are (default: the project's "
                                      "[tool.numbakern] out, else generated_cuda)")
    parser.add_argument("--apply", metavar="RECORDS_JSON", help="apply records written by --records-out, then exit")
    add_shard_argument(parser, "verify")
    add_arguments(parser, with_verify_flag=False)
    args = parser.parse_args(argv)
    try:
        project = projects.find(os.getcwd())
    except projects.ProjectError as e:
        parser.error(str(e))
    args.dir = args.dir or os.path.relpath(project.out_dir)
    if args.apply:
        try:
            records = read_records(args.apply)
            outcomes = manifest.apply_records(args.dir, records)
        except (ValueError, manifest.ManifestError) as e:
            parser.error(f"--apply {args.apply}: {e}")
        for file_name, what in outcomes.items():
            print(f"{file_name}: {trust.printable(what)}")
        return 0
    if not args.kernels and not args.all:
        parser.error("name kernels to verify, or --all")
    if args.shard and not args.all:
        parser.error("--shard I/N applies to --all")
    return run(args, args.kernels or None, directory=args.dir, project=project)
