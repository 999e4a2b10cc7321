"""What a profile is, as plain data: per source line and per kernel, the counts ``numbakern.profile`` returns.

Counts of a sampled launch are extrapolated to the whole grid (``Sampling``), so they are floats; a launch run in
full has whole numbers in them. ``Profile.to_json()`` is the ``--json`` form.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

#: the memory instruction kinds, by (space, op): global/shared loads, stores and atomics, and cp.async (ldgsts),
#: whose global side is a load and whose shared side a store
KINDS = ("global_ld", "global_st", "global_atom", "global_ldgsts",
         "shared_ld", "shared_st", "shared_atom", "shared_ldgsts")


@dataclass
class Memory:
    """One kind of memory instruction at one line (or summed over the kernel)."""

    requests: float = 0.0  # warp-level instructions executed
    accesses: float = 0.0  # active lanes over those instructions
    bytes: float = 0.0  # bytes the lanes asked for
    sectors: float = 0.0  # global: 32-byte sectors touched
    ideal_sectors: float = 0.0  # global: the sectors of the same bytes contiguous and aligned
    wavefronts: float = 0.0  # shared: wavefronts
    ideal_wavefronts: float = 0.0  # shared: one per pass (1, 2 or 4 per request by access width)
    serialized: float = 0.0  # atomics: steps, the most lanes on one address summed over requests
    max_contention: int = 0  # atomics: the most lanes of one warp on one address
    width: int = 0  # bytes per lane (the widest instruction)
    stride: int | None = None  # the commonest address step between neighbouring lanes (bytes)
    instruction: str = ""  # "", or the instruction a stand-in is: "vector", "ldmatrix", "cp.async"

    @property
    def sectors_per_request(self) -> float:
        return self.sectors / self.requests if self.requests else 0.0

    @property
    def ideal_sectors_per_request(self) -> float:
        return self.ideal_sectors / self.requests if self.requests else 0.0

    @property
    def bank_conflicts(self) -> float:
        return self.wavefronts - self.ideal_wavefronts

    def add(self, other: Memory, weight: float = 1.0) -> None:
        for name in ("requests", "accesses", "bytes", "sectors", "ideal_sectors", "wavefronts",
                     "ideal_wavefronts", "serialized"):
            setattr(self, name, getattr(self, name) + weight * getattr(other, name))
        self.max_contention = max(self.max_contention, other.max_contention)
        self.width = max(self.width, other.width)
        if self.stride is None:
            self.stride = other.stride
        self.instruction = self.instruction or other.instruction


@dataclass
class Branch:
    """A branch (an ``if`` or ``while`` test): warp-level executions, and those whose lanes went different ways."""

    executions: float = 0.0
    divergent: float = 0.0


@dataclass
class Line:
    """One source line of the kernel or of a device function it calls."""

    file: str
    line: int
    source: str
    executions: float = 0.0  # warp-level executions (a warp running the line with at least one lane)
    thread_executions: float = 0.0  # the lanes over those executions
    memory: dict[str, Memory] = field(default_factory=dict)  # by KINDS
    flops: dict[str, float] = field(default_factory=dict)  # by type: "fp32", "fp64", "fp16", "tensor_bf16"...
    branch: Branch | None = None

    @property
    def active_lanes(self) -> float:
        """Active lanes per executed warp instruction (32 with no divergence in full warps)."""
        return self.thread_executions / self.executions if self.executions else 0.0


@dataclass
class Sampling:
    """Which blocks ran: all of them, or a stratified sample whose counts are scaled to the grid."""

    blocks: int  # in the grid
    profiled: int  # run and counted
    how: str  # "all", or how the sample was drawn


@dataclass
class Occupancy:
    """Theoretical occupancy from the compiled kernel's resources and the launch (CUDA's occupancy calculator)."""

    gpu: str
    registers: int | None  # per thread, from ptxas (None: unknown)
    static_shared: int  # bytes per block
    dynamic_shared: int
    threads: int  # per block
    blocks_per_sm: int
    warps_per_sm: int
    max_warps_per_sm: int
    limiter: str  # "warps", "blocks", "registers", "shared memory"
    limits: dict[str, int] = field(default_factory=dict)  # blocks per SM each resource allows
    source: str = ""  # where the registers came from

    @property
    def fraction(self) -> float:
        return self.warps_per_sm / self.max_warps_per_sm if self.max_warps_per_sm else 0.0


@dataclass
class Roofline:
    """The launch's lower bound on a GPU: the time each resource needs at its peak, and the largest (the limiter)."""

    gpu: str
    seconds: dict[str, float]  # resource -> time at its peak rate
    limiter: str
    bound_seconds: float
    arithmetic_intensity: float  # flops per byte of DRAM traffic (unique bytes)
    flops: float
    dram_bytes: float


@dataclass
class Advice:
    """One thing to fix, at a line, with its estimated cost."""

    file: str
    line: int
    what: str  # "coalescing", "bank conflicts", "divergence", "atomics", "occupancy", "traffic"
    message: str
    seconds: float  # estimated time it costs on the chosen GPU (what ranks the advice)


@dataclass
class Kernel:
    """Totals over the launch."""

    memory: dict[str, Memory] = field(default_factory=dict)
    flops: dict[str, float] = field(default_factory=dict)
    executions: float = 0.0
    thread_executions: float = 0.0
    unique_bytes_read: float = 0.0  # global bytes the kernel must read at least (whole sectors, each once)
    unique_bytes_written: float = 0.0

    @property
    def active_lanes(self) -> float:
        return self.thread_executions / self.executions if self.executions else 0.0

    @property
    def total_flops(self) -> float:
        return sum(self.flops.values())

    @property
    def moved_bytes(self) -> float:
        """Global bytes the L1 moves: every sector of every request."""
        return 32.0 * sum(m.sectors for k, m in self.memory.items() if k.startswith("global"))

    @property
    def unique_bytes(self) -> float:
        return self.unique_bytes_read + self.unique_bytes_written


@dataclass
class Profile:
    kernel_name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    lines: list[Line]
    kernel: Kernel
    sampling: Sampling
    occupancy: Occupancy | None = None
    roofline: Roofline | None = None
    advice: list[Advice] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the counts leave out or approximate, for this launch

    def line(self, number: int, file: str | None = None) -> Line:
        """The row of source line ``number`` (of the kernel's file, or of ``file``)."""
        for row in self.lines:
            if row.line == number and (file is None or row.file == file):
                return row
        raise KeyError(f"line {number} has no row in the profile of {self.kernel_name} (it never ran)")

    def to_json(self) -> dict:
        """Plain JSON data (derived ratios included)."""
        data = _plain(dataclasses.asdict(self))
        data["kernel"]["active_lanes"] = _round(self.kernel.active_lanes)
        data["kernel"]["moved_bytes"] = _round(self.kernel.moved_bytes)
        if self.occupancy is not None:
            data["occupancy"]["fraction"] = _round(self.occupancy.fraction)
        for row, out in zip(self.lines, data["lines"]):
            out["active_lanes"] = _round(row.active_lanes)
        return data


def _round(x):
    if isinstance(x, float):
        if math.isfinite(x) and x == int(x) and abs(x) < 2**53:
            return int(x)
        return float(f"{x:.6g}")
    return x


def _plain(value):
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return _round(value)
