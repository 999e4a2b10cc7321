"""``python -m translate.verify`` and the options the ``translate`` CLI borrows (``add_arguments`` / ``run``).

    python -m translate.verify --all --sanitize            # verify every registered kernel, record in the manifest
    python -m translate.verify matmul_tiled --seeds 5      # one kernel, more seeds
    python -m translate.verify --apply records.json        # apply records verified on another machine

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

from numbakern import mode
from numbakern.registry import KernelSpec, all_specs, get

from .. import manifest
from . import driver, isolated
from .abi import select_launcher
from .build import nvcc_path
from .cli_args import add_arguments
from .harness import Candidate, VerifyResult, device_facts, now, verify
from .report import result_block, summary_table
from .sanitize import sanitize_candidates

DEFAULT_DIR = "generated_cuda"


def candidate_for(spec: KernelSpec, directory: str | os.PathLike = DEFAULT_DIR) -> tuple[str, Candidate]:
    """``(file name, Candidate)`` for a registered kernel from the manifest, or a ``LookupError`` saying why not."""
    directory = Path(directory)
    found = manifest.entry_for(manifest.load(directory), spec.name)
    if found is None:
        raise LookupError(f"{spec.name}: no entry in {manifest.manifest_path(directory)} "
                          f"(run `translate {spec.name}` first)")
    file_name, entry = found
    cu = directory / file_name
    if not cu.exists():
        raise LookupError(f"{spec.name}: {cu} is listed in the manifest but missing")
    launcher = select_launcher(entry.get("launchers", ()), getattr(spec, "constants", {}) or {})
    flags = tuple((entry.get("build") or {}).get("nvcc_flags") or ())
    return file_name, Candidate(cu, launcher, label=spec.name, nvcc_flags=flags)


def verify_kernels(
    names: Sequence[str] | None = None,
    *,
    directory: str | os.PathLike = DEFAULT_DIR,
    seeds: int = 3,
    sanitize: bool = False,
    record: bool = True,
    records_out: str | os.PathLike | None = None,
    log_dir: str | os.PathLike | None = None,
    verbose_cases: bool = False,
    out=sys.stdout,
) -> list:
    """Verify registered kernels (default: all) from ``directory``'s manifest; print reports; optionally record."""
    specs = [get(n) for n in names] if names else all_specs()
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
        san = sanitize_candidates(items, log_dir=log)
        for name, tools in san.items():
            results[name].sanitizer = tools
            results[name].ok = results[name].ok and all(v == "ok" for v in tools.values())
        print(f"compute-sanitizer: {len(items)} kernels × {len(san and next(iter(san.values())))} tools "
              f"[{time.perf_counter() - t0:.1f} s]", file=out, flush=True)
    ordered = [results[s.name] for s in specs]
    print(summary_table(ordered), file=out, flush=True)

    records = [{"file": found[r.kernel][0], "record": r.to_record()} for r in ordered if r.kernel in found]
    if records_out:
        Path(records_out).parent.mkdir(parents=True, exist_ok=True)
        Path(records_out).write_text(json.dumps(records, indent=2, sort_keys=True) + "\n")
    if record:
        outcome = manifest.apply_records(directory, records)
        for file_name, what in outcome.items():
            print(f"manifest: {file_name}: {what}", file=out)
    session.cleanup()
    return ordered


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


def _preflight() -> str:
    if mode.sim_requested():
        return f"{mode.SIM_ENV}=1 is set: verification compares against the Numba kernel on the real GPU; unset it"
    if not driver.available():
        return "no CUDA GPU is visible (verification runs the compiled C and the Numba kernel on a GPU)"
    if not nvcc_path():
        return "nvcc is not on PATH (verification builds each .cu into a shared library with nvcc -shared)"
    return ""


def run(args: argparse.Namespace, kernels: Sequence[str] | None, *, directory: str | os.PathLike = DEFAULT_DIR) -> int:
    """What ``translate ... --verify`` calls after translating: verify ``kernels`` (registry names; None = all)."""
    problem = _preflight()
    if problem:
        print(f"translate --verify: {problem}", file=sys.stderr)
        return 2
    results = verify_kernels(
        kernels, directory=directory, seeds=args.seeds, sanitize=args.sanitize, record=args.record,
        records_out=args.records_out, log_dir=args.verify_log, verbose_cases=args.verbose_cases,
    )
    return 0 if results and all(r.ok for r in results) else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m translate.verify", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kernels", nargs="*", help="registered kernel names (default with --all: every one)")
    parser.add_argument("--all", action="store_true", help="every registered kernel")
    parser.add_argument("--dir", default=DEFAULT_DIR, help="where the .cu files and manifest.json are")
    parser.add_argument("--apply", metavar="RECORDS_JSON", help="apply records written by --records-out, then exit")
    add_arguments(parser, with_verify_flag=False)
    args = parser.parse_args(argv)
    if args.apply:
        records = json.loads(Path(args.apply).read_text())
        for file_name, what in manifest.apply_records(args.dir, records).items():
            print(f"{file_name}: {what}")
        return 0
    if not args.kernels and not args.all:
        parser.error("name kernels to verify, or --all")
    return run(args, args.kernels or None, directory=args.dir)
