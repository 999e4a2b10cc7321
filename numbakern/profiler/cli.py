"""``numbakern profile KERNEL``: profile one launch of a declared kernel's case in the simulator.

    numbakern profile KERNEL [--size NAME=N,...] [--gpu H100] [--sample N|all] [--seed N] [--dist uniform]
                             [--json] [--chart PATH] [--no-compile]

KERNEL is a kernel of the project in the current folder (``[tool.numbakern]``), or of numbakern's library, or
``module:name``. The case is the kernel's own (``make_case``) at ``--size`` (default: its largest test size), with
seeded inputs. The command always runs the simulator, on a machine with a GPU too. Exit status: 0 profiled, 1 the
launch failed, 2 a bad argument.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path


def parse_size(text: str) -> dict[str, int]:
    """``"h=4096,w=4096"`` -> ``{"h": 4096, "w": 4096}``; ``ValueError`` naming ``--size`` otherwise."""
    size = {}
    for part in text.split(","):
        key, eq, value = part.partition("=")
        if not eq or not key.strip() or not value.strip().isdigit() or int(value) < 1:
            raise ValueError(f"--size: expected NAME=POSITIVE_INT[,NAME=POSITIVE_INT...] such as h=4096,w=4096, "
                             f"got {text!r}")
        size[key.strip()] = int(value)
    return size


def case_size(spec, size: dict[str, int] | None) -> dict[str, int]:
    """``size`` checked against ``spec``'s size names, or the kernel's largest test size."""
    known = spec.test_sizes or spec.verify_sizes
    if not known:
        raise ValueError(f"--size: {spec.name} declares no sizes; give one with --size")
    if size is None:
        return dict(max(known, key=lambda s: _product(s.values())))
    if sorted(size) != sorted(known[0]):
        raise ValueError(f"--size: {spec.name} takes the sizes {', '.join(known[0])}, got {', '.join(size)}")
    if not spec.accepts(size):
        raise ValueError(f"--size: {spec.name} needs multiples of {dict(spec.size_multiples)}, got {size}")
    return {k: size[k] for k in known[0]}


def _product(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def build_parser() -> argparse.ArgumentParser:
    from . import DEFAULT_GPU, DEFAULT_SAMPLE
    from .roofline import GPUS

    p = argparse.ArgumentParser(prog="numbakern profile", description="Profile one launch of a declared kernel in "
                                "numbakern's simulator: memory requests, sectors, wavefronts and bank conflicts per "
                                "source line, divergence, atomics, flops, occupancy and a roofline bound.")
    p.add_argument("kernel", metavar="KERNEL", help="a kernel of this project or of numbakern's library, or "
                   "MODULE:NAME")
    p.add_argument("--size", help="the case's size, e.g. h=4096,w=4096 (default: the kernel's largest test size)")
    p.add_argument("--gpu", default=DEFAULT_GPU, help=f"the GPU for occupancy and the roofline: {', '.join(GPUS)} "
                   f"(default {DEFAULT_GPU})")
    p.add_argument("--sample", default=str(DEFAULT_SAMPLE), metavar="N",
                   help=f"run about N blocks of a larger grid and scale the counts (default {DEFAULT_SAMPLE}); 'all': "
                        "every block")
    p.add_argument("--seed", type=int, default=0, help="seed of the case's random inputs (default 0)")
    p.add_argument("--dist", default="uniform", help="the inputs' distribution (default uniform)")
    p.add_argument("--json", action="store_true", help="print the profile as JSON")
    p.add_argument("--chart", metavar="PATH", help="write a roofline chart (needs matplotlib: the [bench] extra)")
    p.add_argument("--no-compile", action="store_true", help="skip compiling the kernel for its registers (no "
                   "occupancy)")
    return p


def use_simulator() -> None:
    """Run this process's kernels in numbakern's simulator, whatever the machine has."""
    from .. import mode, switch

    if not mode.numba_cuda_imported():
        os.environ[mode.SIM_ENV] = "1"
    elif not mode.in_simulator():
        switch.to_simulator()
    from .. import sim

    sim.install()


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    use_simulator()
    import numpy as np

    from .. import project as projects
    from .. import registry
    from . import profile, report, roofline

    try:
        sample = None if args.sample == "all" else int(args.sample)
        if sample is not None and sample < 1:
            raise ValueError
    except ValueError:
        build_parser().error(f"--sample: expected a positive number of blocks or 'all', got {args.sample!r}")
    try:
        spec_gpu = roofline.gpu(args.gpu)
        project = projects.find(Path.cwd())
        spec = registry.get(args.kernel) if ":" in args.kernel or project.is_library else project.spec(args.kernel)
        size = case_size(spec, parse_size(args.size) if args.size else None)
        case = spec.make_case(size, np.random.default_rng(args.seed), args.dist)
    except (KeyError, ValueError, LookupError, projects.ProjectError) as e:
        build_parser().error(str(e.args[0]) if e.args else str(e))
    cfg = case.launch
    try:
        result = profile(spec.kernel, cfg.grid, cfg.block, *case.fresh_args(), shared_bytes=cfg.shared_bytes,
                         gpu=args.gpu, sample=sample, compile=not args.no_compile)
    except Exception as e:  # noqa: BLE001 - a kernel's failure in the simulator: said, not a traceback
        print(f"numbakern profile: {spec.name} at {size} failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    if args.json:
        data = result.to_json()
        data["case"] = {"kernel": spec.qualified_name, "size": size, "seed": args.seed, "dist": args.dist}
        print(json.dumps(data, indent=1))
    else:
        print(f"{spec.qualified_name} at {', '.join(f'{k}={v}' for k, v in size.items())} (seed {args.seed}, "
              f"{args.dist} inputs)\n")
        print(report.text(result))
    if args.chart:
        written = report.chart([result], spec_gpu, args.chart)
        print(f"wrote {written}" if written else "no chart: matplotlib is not installed (pip install "
              "'numbakern[bench]')", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
