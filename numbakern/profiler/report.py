"""A profile as text (a table over the kernel's source lines, like ``ncu --page source``, and a summary), as JSON,
and as a roofline chart (matplotlib, from the ``[bench]`` extra; without it the chart is skipped with a note)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from .model import Memory, Profile
from .roofline import GPU

_COLUMNS = ("line", "warp runs", "lanes", "global ld", "sect/req", "global st", "sect/req", "shared",
            "wavefr/req", "conflicts", "atomics", "flops", "source")


def _n(x: float) -> str:
    """A count in few characters: 12, 3.4k, 12.5M."""
    if x == 0:
        return ""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.3g}{unit}"
    return f"{x:.3g}" if x != int(x) else str(int(x))


def _per(m: Memory | None, value: float, ideal: float) -> str:
    if m is None or not m.requests:
        return ""
    return f"{value / m.requests:.1f} ({ideal / m.requests:.0f})"


def _sum(memories: Sequence[Memory | None]) -> Memory | None:
    found = [m for m in memories if m is not None and m.requests]
    if not found:
        return None
    total = Memory()
    for m in found:
        total.add(m)
    return total


def table(profile: Profile, width: int = 60) -> str:
    """The per-line table: lines that ran or touched memory, in the kernel's file first."""
    kernel_file = profile.lines[0].file if profile.lines else ""
    rows = [_COLUMNS]
    for r in sorted(profile.lines, key=lambda r: (r.file != kernel_file, r.file, r.line)):
        gld = _sum([r.memory.get("global_ld"), r.memory.get("global_ldgsts")])
        gst = r.memory.get("global_st")
        shared = _sum([r.memory.get(k) for k in ("shared_ld", "shared_st", "shared_ldgsts")])
        atoms = _sum([r.memory.get("global_atom"), r.memory.get("shared_atom")])
        where = str(r.line) if r.file == kernel_file else f"{os.path.basename(r.file)}:{r.line}"
        rows.append((
            where, _n(r.executions), f"{r.active_lanes:.1f}" if r.executions else "",
            _n(gld.requests) if gld else "", _per(gld, gld.sectors, gld.ideal_sectors) if gld else "",
            _n(gst.requests) if gst else "", _per(gst, gst.sectors, gst.ideal_sectors) if gst else "",
            _n(shared.requests) if shared else "",
            _per(shared, shared.wavefronts, shared.ideal_wavefronts) if shared else "",
            _n(shared.bank_conflicts) if shared else "",
            f"{_n(atoms.accesses)} (x{atoms.max_contention})" if atoms else "",
            _n(sum(v for k, v in r.flops.items() if not k.startswith("sfu"))),
            r.source[:width],
        ))
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    lines = []
    for i, row in enumerate(rows):
        cells = [c.ljust(w) if j in (len(row) - 1,) else c.rjust(w) for j, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def summary(profile: Profile) -> str:
    """The kernel's totals, occupancy, roofline and what to fix."""
    k = profile.kernel
    out = [f"kernel {profile.kernel_name}: grid {profile.grid}, block {profile.block}, dynamic shared "
           f"{profile.shared_bytes} B; ran {profile.sampling.profiled} of {profile.sampling.blocks} blocks"
           + ("" if profile.sampling.how == "all" else " (sampled: counts scaled to the grid)")]
    for kind, m in k.memory.items():
        if not m.requests:
            continue
        if kind.startswith("global"):
            detail = (f"{_n(m.sectors)} sectors, {m.sectors_per_request:.2f}/request "
                      f"(ideal {m.ideal_sectors_per_request:.2f})")
        else:
            detail = (f"{_n(m.wavefronts)} wavefronts, {_n(m.bank_conflicts) or 0} bank conflicts "
                      f"({m.wavefronts / m.requests:.2f}/request, ideal {m.ideal_wavefronts / m.requests:.2f})")
        if kind.endswith("atom"):
            detail += f", at most {m.max_contention} lanes on one address"
        out.append(f"  {kind.replace('_', ' '):14} {_n(m.requests):>7} requests  {detail}")
    out.append(f"  global bytes: must move {_n(k.unique_bytes)}B (read {_n(k.unique_bytes_read)}B, written "
               f"{_n(k.unique_bytes_written)}B), L1 moves {_n(k.moved_bytes)}B")
    if k.flops:
        out.append("  operations: " + ", ".join(f"{kind} {_n(v)}" for kind, v in sorted(k.flops.items())))
    if k.executions:
        out.append(f"  divergence: {k.active_lanes:.1f} active lanes per executed warp instruction (line-level)")
    occ = profile.occupancy
    if occ is not None:
        regs = f"{occ.registers} registers/thread" if occ.registers is not None else "registers unknown"
        out.append(f"  occupancy on {occ.gpu}: {100 * occ.fraction:.1f}% ({occ.warps_per_sm}/{occ.max_warps_per_sm} "
                   f"warps, {occ.blocks_per_sm} blocks/SM), limited by {occ.limiter}; {regs}, "
                   f"{occ.static_shared + occ.dynamic_shared} B shared/block")
    roof = profile.roofline
    if roof is not None:
        parts = ", ".join(f"{name} {_us(s)}" for name, s in sorted(roof.seconds.items(), key=lambda x: -x[1]) if s)
        out.append(f"  roofline on {roof.gpu}: at least {_us(roof.bound_seconds)}, limited by {roof.limiter} "
                   f"({parts}); arithmetic intensity {roof.arithmetic_intensity:.2f} flop/B")
    if profile.advice:
        out.append("what to fix:")
        out += [f"  {i}. {a.message} (~{_us(a.seconds)})" for i, a in enumerate(profile.advice, 1)]
    for note in profile.notes:
        out.append(f"note: {note}")
    return "\n".join(out)


def _us(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    if seconds >= 1e-6:
        return f"{seconds * 1e6:.3g} us"
    return f"{seconds * 1e9:.3g} ns"


def text(profile: Profile) -> str:
    return table(profile) + "\n\n" + summary(profile)


def to_json(profile: Profile) -> str:
    return json.dumps(profile.to_json(), indent=1)


def chart(profiles: Sequence[Profile], spec: GPU, path: str | os.PathLike) -> str | None:
    """A roofline chart of ``profiles`` on ``spec`` written to ``path``; None (and nothing written) without
    matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig, ax = plt.subplots(figsize=(7, 4.5))
    xs = [10 ** (e / 10) for e in range(-30, 41)]
    for kind, rate in sorted(spec.flops_per_s.items(), key=lambda x: x[1]):
        if kind in ("fp32", "fp64", "tensor_bf16"):
            ax.plot(xs, [min(rate, x * spec.dram_bytes_per_s) for x in xs], lw=1,
                    label=f"{kind} peak {rate / 1e12:.3g} TFLOP/s")
    for p in profiles:
        roof = p.roofline
        if roof is None or not roof.flops or not roof.bound_seconds:
            continue
        ax.scatter([roof.arithmetic_intensity], [roof.flops / roof.bound_seconds], zorder=3)
        ax.annotate(p.kernel_name, (roof.arithmetic_intensity, roof.flops / roof.bound_seconds), fontsize=8,
                    xytext=(4, 4), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (flop per DRAM byte the kernel must move)")
    ax.set_ylabel("flop/s at the bound")
    ax.set_title(f"roofline on {spec.name} (DRAM {spec.dram_bytes_per_s / 1e12:.3g} TB/s)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return str(path)
