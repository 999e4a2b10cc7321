"""What Numba and the translated C compile to, side by side, on a machine without a GPU.

    python scripts/codegen.py conv2d_5x5 attention_d128            # print the table
    python scripts/codegen.py --all --out docs/bench               # every kernel; writes codegen.csv / codegen.md

For each kernel, Numba's PTX (numba-cuda's ``compile_ptx`` with the kernel's own ``fastmath`` and launch bounds)
and its translated ``.cu`` (nvcc with the flags its manifest records, as verification and the benchmark build it)
are assembled for ``--arch`` by ptxas. The table gives, for each: registers per thread and spilled bytes; shared
memory per block (static, plus the dynamic amount of the benchmark's launch); the blocks and warps per
multiprocessor those allow for the benchmark's block size, and which resource sets that limit (the theoretical
occupancy; the CUDA occupancy calculator's rules); and, when ``nvdisasm`` is found (``pip install
nvidia-cuda-nvdisasm``, or a CUDA toolkit), the machine instructions by kind. Counts are of the code, not of what
runs: a loop body counts once (the longest loop's instructions are counted apart: a tiled kernel's main loop).

On the GPU, the driver compiles Numba's PTX and nvcc the C: with the same toolkit version here as there, this is the
code the GPU ran. A profile (Nsight Compute) says how it behaves; this says what it is, without a GPU.

In a user's project (``[tool.numbakern]``) the kernels are the project's and the ``.cu`` files its own.
Exit status: 0 done, 1 a kernel could not be compiled, 2 no nvcc and ptxas (a CUDA toolkit) found.
"""

from __future__ import annotations

import argparse
import collections
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import benchkit  # this script's folder

TOOL = "codegen.py"
RESULTS = benchkit.ROOT / "docs" / "bench"


# -- theoretical occupancy ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Multiprocessor:
    """One multiprocessor's limits (CUDA C++ Programming Guide, "Technical Specifications per Compute
    Capability"; allocation rules of the CUDA occupancy calculator)."""

    registers: int = 65536
    max_warps: int = 64
    max_blocks: int = 32
    shared_bytes: int = 233472           # the most shared memory a multiprocessor can give its blocks
    reserved_shared_per_block: int = 1024  # the system's own shared memory in every block (cc 8.0 and later)
    register_unit: int = 256             # registers are given to a warp in units of this many


MULTIPROCESSORS = {
    "sm_80": Multiprocessor(shared_bytes=167936),
    "sm_86": Multiprocessor(max_warps=48, max_blocks=16, shared_bytes=102400),
    "sm_89": Multiprocessor(max_warps=48, max_blocks=24, shared_bytes=102400),
    "sm_90": Multiprocessor(),
}


def occupancy(sm: Multiprocessor, threads: int, registers: int, shared_bytes: int) -> tuple[int, str]:
    """``(resident blocks per multiprocessor, the resource that limits them)`` for blocks of ``threads`` threads
    using ``registers`` per thread and ``shared_bytes`` of shared memory each."""
    warps = math.ceil(threads / 32)
    per_warp = math.ceil(max(registers, 1) * 32 / sm.register_unit) * sm.register_unit
    limits = {
        "blocks": sm.max_blocks,
        "warps": sm.max_warps // warps,
        "registers": sm.registers // (per_warp * warps),
        "shared memory": sm.shared_bytes // (shared_bytes + sm.reserved_shared_per_block),
    }
    binding = min(limits, key=lambda k: limits[k])
    return limits[binding], binding


# -- machine instructions by kind -----------------------------------------------------------------------------------
#: kinds of SASS instructions, by opcode (the first match wins); the rest count only in the total
SASS_KINDS = (
    ("FFMA", r"FFMA$"),
    ("other fp32", r"(FMUL|FADD|FMNMX|FSEL|FSETP|FCHK|MUFU)$"),
    ("integer", r"(IMAD|IADD3|IADD|ISETP|IMNMX|IABS|LEA|SEL|LOP3|SHF|VIADD|VIMNMX|PRMT|POPC|FLO|BREV)$"),
    ("shared ld/st", r"(LDS|STS|LDSM)$"),
    ("global ld/st", r"(LDG|STG|LDGSTS|RED|ATOMG)$"),
    ("local ld/st", r"(LDL|STL)$"),
)
_INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9]*)")


def sass_counts(sass: str) -> dict[str, int]:
    """Instructions of a disassembled kernel by ``SASS_KINDS``, and ``total`` (NOPs left out)."""
    counts = collections.Counter()
    for line in sass.splitlines():
        m = _INSTRUCTION.match(line)
        if not m or m.group(1) == "NOP":
            continue
        counts["total"] += 1
        for kind, pattern in SASS_KINDS:
            if re.match(pattern, m.group(1)):
                counts[kind] += 1
                break
    return {key: counts[key] for key in ("total", *(kind for kind, _ in SASS_KINDS))}


_LABEL = re.compile(r"^\s*\.(L_x_\d+):")
_BRANCH_TO = re.compile(r"\bBRA\b.*?\.(L_x_\d+)")


def sass_loop(sass: str) -> dict[str, int]:
    """The longest loop of a disassembled kernel (from a branch's target up to the branch back to it): its
    instructions (``loop``, NOPs left out) and of those the 64-bit address arithmetic (``loop_lea``: ``LEA`` and
    ``LEA.HI.X``). The main loop of a tiled kernel is where its time goes; both are 0 in a kernel with no loop."""
    code: list[tuple[str, str | None]] = []  # (opcode, the label it branches to), in order
    labels: dict[str, int] = {}
    for line in sass.splitlines():
        label = _LABEL.match(line)
        if label:
            labels[label.group(1)] = len(code)
        elif (m := _INSTRUCTION.match(line)) and m.group(1) != "NOP":
            target = _BRANCH_TO.search(line)
            code.append((m.group(1), target.group(1) if target else None))
    longest = (0, 0)
    for end, (_, target) in enumerate(code):
        start = labels.get(target, end + 1) if target else end + 1
        if start <= end:  # a branch back: a loop
            body = code[start:end + 1]
            longest = max(longest, (len(body), sum(op == "LEA" for op, _ in body)))
    return {"loop": longest[0], "loop_lea": longest[1]}


def disassembler() -> str | None:
    """nvdisasm from the CUDA wheels or the toolkit, else None (the table then has no instruction counts)."""
    try:
        from cuda import pathfinder  # numba-cuda's own way of finding CUDA's tools

        found = pathfinder.find_nvidia_binary_utility("nvdisasm")
    except Exception:  # noqa: BLE001 - an older cuda-pathfinder: PATH only
        found = None
    return found or shutil.which("nvdisasm")


def disassembler_version(nvdisasm: str) -> str:
    """``13.5.37`` from ``nvdisasm --version`` (a toolkit's or a wheel's), else the wheel's version."""
    out = subprocess.run([nvdisasm, "--version"], capture_output=True, text=True).stdout
    found = re.search(r"\bV(\d+\.\d+\.\d+)", out)
    return found.group(1) if found else benchkit.dist_version("nvidia-cuda-nvdisasm")


def disassemble(nvdisasm: str, cubin: Path) -> str:
    return subprocess.run([nvdisasm, "-c", str(cubin)], capture_output=True, text=True, check=True).stdout


# -- the two compilers --------------------------------------------------------------------------------------------
def numba_ptx(spec, arch: str) -> str:
    """The kernel's PTX as numba-cuda makes it at launch (its first signature, its own code-generation options)."""
    from numba import cuda

    from numbakern.frontend.target import cuda_typing  # calls to device functions ask for the device's cc: answered

    kernel = spec.kernel
    options = getattr(kernel, "targetoptions", {})
    cc = (int(arch[3]), int(arch[4:]))
    with cuda_typing(cc):
        ptx, _ = cuda.compile_ptx(kernel.py_func, spec.signatures[0], cc=cc, fastmath=bool(options.get("fastmath")),
                                  launch_bounds=options.get("launch_bounds"))
    return ptx


def c_ptx(nvcc: str, cu: Path, flags, arch: str) -> list[tuple[str, str]]:
    """``(entry, PTX)`` of each kernel instantiation of a translated file, compiled by nvcc as the benchmark does."""
    with tempfile.TemporaryDirectory() as d:
        target = Path(d) / "k.ptx"
        subprocess.run([nvcc, f"-arch={arch}", "-ptx", *flags, str(cu), "-o", str(target)], check=True,
                       capture_output=True, text=True)
        return benchkit.split_entries(target.read_text())


BENCH_LAUNCH = "bench launch"


def launch_of(spec) -> tuple[int | None, int, str]:
    """``(threads per block, dynamic shared bytes, where from)`` of the benchmark's launch at its first size. Some
    launches ask the GPU (its multiprocessor count): then the threads of the kernel's launch bounds, if it has any."""
    import numpy as np

    size = (spec.bench_sizes or spec.test_sizes)[0]
    try:
        case = spec.make_case(size, np.random.default_rng(0), "uniform")
        return case.launch.threads_per_block, case.launch.shared_bytes, BENCH_LAUNCH
    except Exception:  # noqa: BLE001 - a launch that needs the GPU to be sized
        bounds = getattr(spec.kernel, "targetoptions", {}).get("launch_bounds")
        return (bounds[0] if bounds else None), 0, "launch bounds"


def row(spec, compiler: str, ptx: str, ptxas: str, arch: str, nvdisasm: str | None, launch,
        max_registers: int | None = None) -> dict:
    threads, dynamic, source = launch
    with tempfile.TemporaryDirectory() as d:
        cubin = Path(d) / "k.cubin"
        report = benchkit.ptxas_report(ptx, ptxas, arch, keep_cubin=cubin, with_shared=True,
                                       max_registers=max_registers)
        text = disassemble(nvdisasm, cubin) if nvdisasm else ""
        sass = {**sass_counts(text), **sass_loop(text)} if nvdisasm else {}
    shared = report["shared_bytes"] + dynamic
    blocks, limit = occupancy(MULTIPROCESSORS[arch], threads, report["registers"], shared) if threads else (0, "")
    warps = blocks * math.ceil(threads / 32) if threads else 0
    return {"kernel": spec.name, "compiler": compiler, "threads": threads or "", "launch": source,
            "registers": report["registers"],
            "spill_stores": report["spill_stores"], "spill_loads": report["spill_loads"], "shared_bytes": shared,
            "blocks_per_sm": blocks or "", "warps_per_sm": warps or "",
            "occupancy": f"{warps / MULTIPROCESSORS[arch].max_warps:.0%}" if threads else "", "limit": limit,
            **{f"sass_{k}": v for k, v in sass.items()}}


FIELDS = ["kernel", "compiler", "threads", "launch", "registers", "spill_stores", "spill_loads", "shared_bytes",
          "blocks_per_sm", "warps_per_sm", "occupancy", "limit", "sass_total",
          *(f"sass_{kind}" for kind, _ in SASS_KINDS), "sass_loop", "sass_loop_lea"]
COLUMNS = (("threads", "threads"), ("registers", "registers"), ("spills", "spill st/ld (B)"),
           ("shared_bytes", "shared (B)"), ("resident", "blocks/SM (limit)"), ("occupancy", "warps/SM"),
           ("sass_total", "SASS instr."), *((f"sass_{kind}", kind) for kind, _ in SASS_KINDS),
           ("sass_loop", "main loop instr."), ("sass_loop_lea", "of them LEA"))


def markdown(rows, provenance: str) -> str:
    lines = [provenance, "", "| kernel | compiler | " + " | ".join(t for _, t in COLUMNS) + " |",
             "|---|---|" + "---:|" * len(COLUMNS)]
    for r in rows:
        cells = []
        for key, _ in COLUMNS:
            if key == "spills":
                cells.append(f"{r['spill_stores']} / {r['spill_loads']}")
            elif key == "resident":
                cells.append(f"{r['blocks_per_sm']} ({r['limit']})" if r["limit"] else "")
            elif key == "threads":
                cells.append(f"{r['threads']}{'' if r['launch'] == BENCH_LAUNCH else '*'}")
            elif key == "occupancy":
                cells.append(f"{r['warps_per_sm']} ({r['occupancy']})" if r["occupancy"] else "")
            else:
                cells.append(str(r.get(key, "")))
        lines.append(f"| {r['kernel']} | {r['compiler']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"



def change_table(before: list[dict], after: list[dict], before_provenance: str) -> str:
    """Markdown: for each kernel in ``after``, Numba's registers and spills beside the C's before (``before``: an
    earlier run's rows, e.g. the CSV this script wrote before a change of the generator) and after; a kernel with
    several instantiations has a line for each."""
    def c_rows(rows):
        out: dict = {}
        for r in rows:
            if r["compiler"] != "Numba":
                out.setdefault(r["kernel"], []).append(r)
        return out

    numba = {r["kernel"]: r for r in after if r["compiler"] == "Numba"}
    old, new = c_rows(before), c_rows(after)

    def cell(r):
        return ("", "") if r is None else (str(r["registers"]), f"{r['spill_stores']} / {r['spill_loads']}")

    lines = [f"Before: {before_provenance.split(' Registers and spills')[0].rstrip('.')}.", "",
             "| kernel | Numba registers | Numba spill st/ld (B) | C registers before | C spill st/ld before (B) "
             "| C registers after | C spill st/ld after (B) |", "|---|---:|---:|---:|---:|---:|---:|"]
    for kernel, rows in new.items():
        for i, r in enumerate(rows):
            b = old.get(kernel, [])
            cells = [*cell(numba.get(kernel)), *cell(b[i] if i < len(b) else None), *cell(r)]
            lines.append(f"| {kernel} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kernels", nargs="*", metavar="KERNEL", help="registered kernel names (or --all)")
    parser.add_argument("--all", action="store_true", help="every kernel (the project's, else the library's)")
    parser.add_argument("--arch", default="sm_90", choices=sorted(MULTIPROCESSORS), help="target (default sm_90)")
    parser.add_argument("--out", help="write codegen.csv and codegen.md into this folder (default: print only)")
    parser.add_argument("--compare", metavar="CSV", help="an earlier run's codegen.csv: also write codegen_change.md "
                        "(registers and spills of the C before and after, beside Numba's) into --out, and into "
                        "docs/translate.md when --out is docs/bench")
    args = parser.parse_args(argv)
    if args.compare and not args.out:
        parser.error("--compare needs --out")
    before = benchkit.read_csv(Path(args.compare)) if args.compare else None  # read before --out overwrites it
    if not args.kernels and not args.all:
        parser.error("name kernels, or --all")
    nvcc, ptxas = shutil.which("nvcc"), shutil.which("ptxas")
    if not nvcc or not ptxas:
        raise benchkit.NoGPU(TOOL, "needs nvcc and ptxas on PATH (a CUDA toolkit; no GPU needed)")
    # numba's real CUDA target compiles to PTX without a GPU; importing numbakern without a driver would otherwise
    # choose its simulator
    os.environ["NUMBA_ENABLE_CUDASIM"] = "0"
    from numbakern import project as projects
    from translate.verify.build import nvcc_version
    from translate.verify.cli import candidate_for, specs_named

    try:
        project = projects.find(Path.cwd())
        specs = specs_named(None if args.all else args.kernels, project)
    except (KeyError, LookupError, projects.ProjectError) as exc:
        print(f"{TOOL}: {exc}", file=sys.stderr)
        return 2
    generated = benchkit.ROOT / "generated_cuda" if project.is_library else project.out_dir
    nvdisasm = disassembler()
    rows, failed = [], 0
    for spec in specs:
        try:
            _, cand = candidate_for(spec, generated)
            launch = launch_of(spec)
            cap = getattr(spec.kernel, "targetoptions", {}).get("max_registers")  # numba's linker passes it to ptxas
            rows.append(row(spec, "Numba", numba_ptx(spec, args.arch), ptxas, args.arch, nvdisasm, launch, cap))
            for _, ptx in c_ptx(nvcc, cand.cu, cand.nvcc_flags, args.arch):
                rows.append(row(spec, "C (nvcc)", ptx, ptxas, args.arch, nvdisasm, launch))
        except Exception as exc:  # noqa: BLE001 - reported per kernel; the others go on
            failed += 1
            print(f"{spec.name}: {type(exc).__name__}: {str(exc).strip()[:2000]}", file=sys.stderr)
            continue
        print(f"  {spec.name} (threads from the {launch[2]})", flush=True)
    import numba

    where = f"; instructions by nvdisasm {disassembler_version(nvdisasm)}" if nvdisasm else \
        "; no nvdisasm found, so no instruction counts"
    provenance = (f"Compiled for {args.arch} on {benchkit.today()} with `python scripts/codegen.py "
                  f"{'--all' if args.all else ' '.join(args.kernels)}` (no GPU): numba {numba.__version__}, "
                  f"numba-cuda {benchkit.dist_version('numba-cuda')}, nvcc and ptxas {nvcc_version()}{where}. "
                  "Registers and spills from ptxas; blocks and warps per multiprocessor: the theoretical occupancy "
                  "at the benchmark's block size (threads marked * are the kernel's launch bounds, where sizing the "
                  "launch asks the GPU: shared memory is then the static part only); instructions: counts in the "
                  "code (static), NOPs left out.")
    md = markdown(rows, provenance)
    print("\n" + md)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        benchkit.write_csv(out / "codegen.csv", rows, FIELDS, provenance)
        benchkit.write_text(out / "codegen.md", md)
        print(f"wrote {out / 'codegen.csv'}, {out / 'codegen.md'}")
        if before is not None:
            after = [{k: str(v) for k, v in r.items()} for r in rows]
            after_line = provenance.split(" Registers and spills")[0]
            table = f"After: {after_line}\n\n" + change_table(before[0], after, before[1])
            benchkit.write_text(out / "codegen_change.md", table)
            print(f"wrote {out / 'codegen_change.md'}")
            doc = benchkit.ROOT / "docs" / "translate.md"
            if out.resolve() == RESULTS.resolve() and benchkit.embed(doc, "codegen_change.md", table):
                print(f"updated the table in {doc}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
