"""Timing kernels on a GPU, the way ``triton.testing`` does it: ``do_bench`` for one callable, ``sweep`` for several
implementations over a range of sizes, with its report (a Markdown table, a CSV file, a plot).

    from numbakern.bench import do_bench, sweep, Work

    ms = do_bench(lambda: kernel[grid, block](x, out))        # median milliseconds per call

    def numba_add(n):                                          # an implementation: size -> a call to time
        a, b = cuda.to_device(np.random.rand(n)), cuda.to_device(np.random.rand(n))
        out = cuda.device_array_like(a)
        cfg = numbakern.launch_config(n, 256)
        return lambda: vector_add[cfg.grid, cfg.block](a, b, out)

    result = sweep({"numba": numba_add, "torch": torch_add}, [{"n": 1 << k} for k in range(16, 27, 2)],
                   work=lambda n: Work(bytes=24.0 * n))
    print(result.markdown())          # a row per size, a column per implementation: "0.071 ms (3,731 GB/s)"
    result.write_csv("sweep.csv")
    result.plot("sweep.png")          # needs matplotlib (pip install 'numbakern[bench]'); False without it

How a call is timed (``do_bench``): one call first (the warm-up, and the compilation of a Numba kernel), a few
more, then samples; each sample is a batch of calls about 1 ms long, so that launch gaps stay out of short kernels,
timed with CUDA events; as many samples as fit in ``budget_s`` seconds, within ``[min_samples, max_samples]``; the
result is their median. Before each sample one more call goes into the queue untimed: the start event then waits
behind it, and the host's work to launch the first timed call overlaps the device's work instead of counting as
device time. The events are torch's when torch with CUDA is installed (they time work on torch's current stream),
else numba's (the default stream).

Timings need a GPU: in numbakern's simulator (no GPU, or ``NUMBA_ENABLE_CUDASIM=1``) they would time Python, and
``do_bench`` refuses with a ``RuntimeError`` that says so.
"""

from __future__ import annotations

import csv
import importlib.util
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from . import mode
from .registry import Work

__all__ = ["Events", "SweepResult", "Work", "do_bench", "rate", "sweep"]


class Events(Protocol):
    """What ``do_bench`` needs of a GPU timer: a pair of timing events on the stream the timed work runs on."""

    def pair(self) -> tuple[Any, Any]: ...
    def record(self, event: Any) -> None: ...
    def elapsed_ms(self, start: Any, end: Any) -> float: ...  # waits for ``end``
    def synchronize(self) -> None: ...  # waits for all work on the device


class _TorchEvents:
    def __init__(self):
        import torch

        self.torch = torch

    def pair(self):
        return (self.torch.cuda.Event(enable_timing=True), self.torch.cuda.Event(enable_timing=True))

    def record(self, event):
        event.record()

    def elapsed_ms(self, start, end):
        end.synchronize()
        return start.elapsed_time(end)

    def synchronize(self):
        self.torch.cuda.synchronize()


class _NumbaEvents:
    def __init__(self):
        from numba import cuda

        self.cuda = cuda

    def pair(self):
        return self.cuda.event(timing=True), self.cuda.event(timing=True)

    def record(self, event):
        event.record()

    def elapsed_ms(self, start, end):
        end.synchronize()
        return self.cuda.event_elapsed_time(start, end)

    def synchronize(self):
        self.cuda.synchronize()


def default_events() -> Events:
    """torch's CUDA events where torch can use the GPU, else numba's; a ``RuntimeError`` in the simulator."""
    if mode.in_simulator():
        raise RuntimeError("numbakern.bench times kernels on a GPU, and this process runs them in numbakern's "
                           "simulator (no CUDA GPU here, or NUMBA_ENABLE_CUDASIM=1): a timing would measure Python")
    if importlib.util.find_spec("torch") is not None:
        import torch

        if torch.cuda.is_available():
            return _TorchEvents()
    return _NumbaEvents()


def do_bench(fn: Callable[[], Any], budget_s: float = 0.8, *, min_samples: int = 5, max_samples: int = 100,
             events: Events | None = None) -> float:
    """The median milliseconds per call of ``fn`` (a call that launches GPU work), from CUDA events: see the
    module's docstring for how. ``events``: the timer (default: ``default_events()``)."""
    if budget_s <= 0:
        raise ValueError(f"budget_s must be positive, got {budget_s}")
    if not 1 <= min_samples <= max_samples:
        raise ValueError(f"need 1 <= min_samples <= max_samples, got {min_samples} and {max_samples}")
    events = events or default_events()
    start, end = events.pair()
    fn()
    events.synchronize()
    events.record(start)
    fn()
    events.record(end)
    estimate = max(events.elapsed_ms(start, end), 1e-3)
    for _ in range(min(3, max(1, int(20 / estimate)))):
        fn()
    batch = max(1, min(100, math.ceil(1.0 / estimate)))
    samples = max(min_samples, min(max_samples, int(budget_s * 1e3 / (estimate * batch))))
    times = []
    for _ in range(samples):
        fn()
        events.record(start)
        for _ in range(batch):
            fn()
        events.record(end)
        times.append(events.elapsed_ms(start, end) / batch)
    return statistics.median(times)


def rate(work: Work, ms: float) -> tuple[float, str]:
    """``(throughput, unit)`` of ``work`` done in ``ms``: GFLOP/s for compute-bound work (at least 4 flops per
    byte), else GB/s (the bytes it must read and write)."""
    use_flops = work.flops > 0 and (work.bytes == 0 or work.flops / work.bytes >= 4)
    amount = work.flops if use_flops else work.bytes
    return amount / (ms * 1e-3) / 1e9, ("GFLOP/s" if use_flops else "GB/s")


@dataclass
class SweepResult:
    """``sweep``'s timings: ``rows`` of ``{"size": {...}, "impl", "ms", "rate", "unit"}`` in the order they ran."""

    sizes: list[dict[str, int]]
    impls: list[str]
    rows: list[dict[str, Any]] = field(default_factory=list)

    def get(self, size: Mapping[str, int], impl: str) -> dict[str, Any] | None:
        return next((r for r in self.rows if r["size"] == dict(size) and r["impl"] == impl), None)

    def markdown(self) -> str:
        """A row per size, a column per implementation: ``0.071 ms (3,731 GB/s)``, ``n/a`` where one did not run."""
        lines = ["| size | " + " | ".join(self.impls) + " |", "|---|" + "---:|" * len(self.impls)]
        for size in self.sizes:
            cells = []
            for impl in self.impls:
                r = self.get(size, impl)
                if r is None:
                    cells.append("n/a")
                else:
                    cells.append(f"{r['ms']:.3f} ms" + (f" ({r['rate']:,.0f} {r['unit']})" if r["unit"] else ""))
            lines.append(f"| {_size_text(size)} | " + " | ".join(cells) + " |")
        return "\n".join(lines) + "\n"

    def write_csv(self, path: str | Path) -> None:
        keys = list(self.sizes[0]) if self.sizes else []
        with open(path, "w", newline="") as f:
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow([*keys, "impl", "ms", "rate", "unit"])
            for r in self.rows:
                writer.writerow([*(r["size"][k] for k in keys), r["impl"], f"{r['ms']:.6g}",
                                 "" if math.isnan(r["rate"]) else f"{r['rate']:.6g}", r["unit"]])

    def plot(self, path: str | Path, title: str = "") -> bool:
        """Throughput (or time, without ``work``) against size, a line per implementation, log-log; False when
        matplotlib is not installed (``pip install 'numbakern[bench]'``)."""
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            return False
        units = {r["unit"] for r in self.rows}
        by_rate = units and "" not in units
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for impl in self.impls:
            points = [(math.prod(r["size"].values()), r["rate"] if by_rate else r["ms"])
                      for r in self.rows if r["impl"] == impl]
            if points:
                ax.plot(*zip(*points), marker="o", label=impl)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(" × ".join(self.sizes[0]) if self.sizes else "size")
        ax.set_ylabel(" / ".join(sorted(units)) if by_rate else "ms per call (median)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        if title:
            ax.set_title(title, fontsize=9)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return True


def sweep(impls: Mapping[str, Callable[..., Callable[[], Any] | None]], sizes: Sequence[Mapping[str, int]], *,
          work: Callable[..., Work] | None = None, budget_s: float = 0.5, events: Events | None = None,
          on_row: Callable[[dict[str, Any]], None] | None = None) -> SweepResult:
    """Time each implementation at each size. ``impls``: name -> ``make(**size)``, which sets up the inputs (not
    timed) and returns the call to time, or None where the implementation does not apply at that size. ``work``:
    ``work(**size) -> Work`` for the throughput. ``on_row``: called with each row as it is timed (progress)."""
    if not impls or not sizes:
        raise ValueError("sweep needs at least one implementation and one size")
    events = events or default_events()
    result = SweepResult([dict(s) for s in sizes], list(impls))
    for size in result.sizes:
        for name, make in impls.items():
            fn = make(**size)
            if fn is None:
                continue
            ms = do_bench(fn, budget_s, events=events)
            throughput, unit = rate(work(**size), ms) if work is not None else (float("nan"), "")
            row = {"size": size, "impl": name, "ms": ms, "rate": throughput, "unit": unit}
            result.rows.append(row)
            if on_row is not None:
                on_row(row)
    return result


def _size_text(size: Mapping[str, int]) -> str:
    return "×".join(str(v) for v in size.values())
