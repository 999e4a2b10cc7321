"""What the benchmark tools (``bench.py``, ``bench_matmul.py``, ``codegen.py``) share: the GPU check, CUDA-event
timing, where results and logs go, results files (CSV with its provenance line, Markdown, the tables embedded in the
docs), running a ``.cu`` through its ``extern "C"`` launcher, and ptxas' report on a kernel's PTX.

Not a tool itself: the scripts import it from their own folder.
"""

from __future__ import annotations

import csv
import datetime as dt
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: the environment variable naming a folder for results and full logs (the GPU machine's output folder)
OUT_ENV = "OUT"


class NoGPU(SystemExit):
    """The tool cannot run here; exits with status 2 and the reason on stderr."""

    def __init__(self, tool: str, why: str):
        print(f"{tool}: {why}", file=sys.stderr)
        super().__init__(2)


def require_gpu(tool: str):
    """torch, once this process can time kernels on a CUDA GPU; otherwise ``NoGPU`` with the reason."""
    from numbakern import mode

    # the GPU check first: on a machine without one, importing numbakern has already chosen the simulator
    if not mode.gpu_available():
        raise NoGPU(tool, "needs a CUDA GPU, and the CUDA driver reports none on this machine")
    if mode.sim_requested():
        raise NoGPU(tool, f"{mode.SIM_ENV}=1 selects the CUDA simulator; benchmarks need the GPU (unset it)")
    try:
        import torch
    except ImportError:
        raise NoGPU(tool, "needs torch with CUDA (pip install torch)") from None
    if not torch.cuda.is_available():
        raise NoGPU(tool, f"torch {torch.__version__} cannot use the GPU (a CPU-only build?)")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    return torch


def out_dir(given: str | None, default: Path) -> Path:
    """``--out`` if given, else ``$OUT``, else the repository's results folder ``default``."""
    return Path(given or os.environ.get(OUT_ENV) or default)


class _Tee:
    def __init__(self, stream, log):
        self.stream, self.log = stream, log

    def write(self, text):
        self.stream.write(text)
        self.log.write(text)
        return len(text)

    def flush(self):
        self.stream.flush()
        self.log.flush()


def log_to_out(name: str) -> Path | None:
    """When ``$OUT`` is set, copy everything this process prints into ``$OUT/<name>.log``; returns that path."""
    folder = os.environ.get(OUT_ENV)
    if not folder:
        return None
    path = Path(folder) / f"{name}.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    log = open(path, "w", buffering=1)  # noqa: SIM115 - open for the rest of the process, like stdout
    sys.stdout, sys.stderr = _Tee(sys.stdout, log), _Tee(sys.stderr, log)
    return path


def dist_version(dist: str) -> str:
    """The installed version of a distribution, or ``?``."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


def today() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")


def device_line(torch) -> str:
    """``NVIDIA H200 (cc 9.0, driver 13.0, CUDA 13.0, torch 2.11.0+cu130)``."""
    from translate.verify import driver

    info = driver.device_info()
    return (f"{info['device']} (cc {info['compute_capability']}, driver {info['driver']}, CUDA {torch.version.cuda}, "
            f"torch {torch.__version__})")


def median_ms(fn: Callable[[], Any], budget_s: float, min_samples: int = 5, max_samples: int = 100) -> float:
    """Median milliseconds per call of ``fn``, from CUDA events: ``numbakern.bench.do_bench`` (warm-up, batches of
    calls about 1 ms long, as many samples as fit in ``budget_s``), on torch's current stream."""
    from numbakern.bench import do_bench

    return do_bench(fn, budget_s, min_samples=min_samples, max_samples=max_samples)


# ---------------------------------------------------------------------------------------------------------------
# results files


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]], fields: Sequence[str], provenance: str) -> None:
    """The rows, then ``# <provenance>`` (device, date, command) as the last line. Written atomically."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(fields), extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        f.write(f"# {provenance}\n")
    os.replace(tmp, path)


def read_csv(path: Path) -> tuple[list[dict[str, str]], str]:
    """``(rows, provenance)`` of a file written by ``write_csv``."""
    lines = Path(path).read_text().splitlines()
    provenance = " ".join(line[2:] for line in lines if line.startswith("# "))
    rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))
    if not provenance:
        raise ValueError(f"{path}: no '# ...' provenance line (device, date, command): not written by a bench tool")
    return rows, provenance


def write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def number(value: Any) -> float:
    """A CSV cell as a float (``nan`` for an empty cell)."""
    return float(value) if value not in ("", None) else float("nan")


def block_markers(name: str) -> tuple[str, str]:
    return f"<!-- generated: {name} (do not edit by hand) -->", f"<!-- end generated: {name} -->"


def embedded_block(doc: Path, name: str) -> str:
    """The text between the markers of block ``name`` in ``doc``."""
    begin, end = block_markers(name)
    text = doc.read_text()
    if begin not in text or end not in text:
        raise ValueError(f"{doc}: no block '{name}' (expected the lines '{begin}' ... '{end}')")
    return text.split(begin, 1)[1].split(end, 1)[0].strip("\n")


def embed(doc: Path, name: str, body: str) -> bool:
    """Replace block ``name`` of ``doc`` with ``body``; True if the file changed."""
    begin, end = block_markers(name)
    text = doc.read_text()
    old = embedded_block(doc, name)
    head, rest = text.split(begin, 1)
    new = f"{head}{begin}\n{body.strip()}\n{end}{rest.split(end, 1)[1]}"
    if old.strip() == body.strip():
        return False
    write_text(doc, new)
    return True


def where_and_when(provenance: str) -> str:
    """``Measured on <device> (...), <date>`` from a provenance line (for a chart's title)."""
    return provenance.split(", with ", 1)[0]


def publish(out: Path, stem: str, md: str, draw: Callable[[Path], bool] | None, doc: Path, home: Path,
            doc_md: str | None = None) -> None:
    """Write ``<stem>.md`` (and, with ``draw``, ``<stem>.png``) next to ``<stem>.csv`` in ``out``; when ``out`` is
    the repository's results folder ``home``, also refresh the table in ``doc`` (``doc_md``, else ``md``)."""
    write_text(out / f"{stem}.md", md)
    wrote = [out / f"{stem}.csv", out / f"{stem}.md"]
    if draw is not None:
        if draw(out / f"{stem}.png"):
            wrote.append(out / f"{stem}.png")
        else:
            print("no chart: matplotlib is not installed")
    print("wrote " + ", ".join(map(str, wrote)))
    if out.resolve() == home.resolve() and embed(doc, f"{stem}.md", md if doc_md is None else doc_md):
        print(f"updated the table in {doc}")


def bar_chart(path: Path, labels: Sequence[str], series: Mapping[str, Sequence[float]], xlabel: str, title: str,
              log: bool = False) -> bool:
    """Horizontal grouped bars (one group per label, one bar per series); False when matplotlib is missing."""
    return panel_chart(path, [("", labels, series)], xlabel, title, log)


def panel_chart(path: Path, panels: Sequence[tuple[str, Sequence[str], Mapping[str, Sequence[float]]]], xlabel: str,
                title: str, log: bool = False) -> bool:
    """One panel of horizontal grouped bars per ``(panel title, labels, series)``, stacked, sharing the x axis
    (a kernel family per panel); False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    import numpy as np

    widths = [max(1, len(series)) ** 0.5 for _, _, series in panels]
    heights = [0.25 * len(labels) * w + 0.6 for (_, labels, _), w in zip(panels, widths)]
    total = sum(heights) + 1.0
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, total), sharex=True, squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, (name, labels, series) in zip(axes[:, 0], panels):
        y = np.arange(len(labels))
        height = 0.8 / max(1, len(series))
        for i, (label, values) in enumerate(series.items()):
            ax.barh(y + (i - (len(series) - 1) / 2) * height, values, height, label=label)
        ax.set_yticks(y, labels, fontsize=7)
        ax.invert_yaxis()
        if name:
            ax.set_title(name, fontsize=8, loc="left")
        ax.grid(axis="x", alpha=0.3)
        if log:
            ax.set_xscale("log")
    axes[-1, 0].set_xlabel(xlabel)
    axes[0, 0].legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.35 / total))  # room for the title above the first panel
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# ---------------------------------------------------------------------------------------------------------------
# CUDA C through its extern "C" launcher


def translated_launch(spec, tensors: Sequence[Any], grid, block, shared_bytes: int = 0,
                      directory: Path = ROOT / "generated_cuda"):
    """A zero-argument function that runs ``spec``'s generated ``.cu`` (its manifest launcher, built with
    ``nvcc -shared`` and the file's build flags) on ``tensors`` (torch CUDA tensors and scalars, in the kernel's
    argument order). ``LookupError`` / ``ValueError`` when the kernel has no usable generated file."""
    import ctypes

    import numpy as np
    import torch

    from translate.verify import abi
    from translate.verify.cli import candidate_for

    _, cand = candidate_for(spec, directory)
    arch = "sm_{}{}".format(*torch.cuda.get_device_capability())
    fn = abi.bind(ctypes.CDLL(str(cand.build(arch))), cand.launcher)
    args = [abi.ArrayArg(t.data_ptr(), tuple(t.shape), np.dtype(str(t.dtype).removeprefix("torch.")))
            if isinstance(t, torch.Tensor) else t for t in tensors]
    call = abi.call_args(cand.launcher, args, grid, block, shared_bytes)

    def run(_alive=tuple(tensors)):  # the call holds raw pointers: keep the tensors alive with it
        err = fn(*call)
        if err:
            raise RuntimeError(f"{cand.launcher['symbol']} returned cudaError {err}")

    return run


def load_launchers(cu: Path, symbols: Iterable[str]) -> dict[str, Callable]:
    """Launchers ``(a, b, c, h, k, w, stream) -> cudaError_t`` of a hand-written ``.cu`` (``scripts/reference/``),
    built with ``nvcc -shared`` for this GPU."""
    import ctypes

    import torch

    from translate.verify.build import build_shared_library

    arch = "sm_{}{}".format(*torch.cuda.get_device_capability())
    lib = ctypes.CDLL(str(build_shared_library(cu, arch=arch)))
    out = {}
    for symbol in symbols:
        fn = getattr(lib, symbol)
        fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int] * 3 + [ctypes.c_void_p]
        fn.restype = ctypes.c_int
        out[symbol] = fn
    return out


# -- what ptxas makes of PTX (no GPU needed) -----------------------------------------------------------------------
PTXAS = {"registers": r"Used (\d+) registers", "spill_stores": r"(\d+) bytes spill stores",
         "spill_loads": r"(\d+) bytes spill loads"}


def ptxas_report(ptx: str, ptxas: str, arch: str = "sm_90", keep_cubin: Path | None = None,
                 with_shared: bool = False, max_registers: int | None = None) -> dict:
    """Registers and spill bytes ptxas reports for one kernel's PTX (``PTXAS``' keys), assembled for ``arch``
    (with a kernel's ``max_registers`` cap, as numba's linker applies it); with ``with_shared`` also
    ``shared_bytes`` (static shared memory); the machine code is kept at ``keep_cubin`` when given."""
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "k.ptx"
        # numba-cuda's NVVM stamps a newer PTX ISA version than an older ptxas reads; these kernels use nothing newer
        src.write_text(re.sub(r"^\.version 9\.[1-9]\d*$", ".version 9.0", ptx, count=1, flags=re.MULTILINE))
        cubin = keep_cubin or Path(d) / "k.cubin"
        cap = [f"-maxrregcount={max_registers}"] if max_registers else []
        r = subprocess.run([ptxas, f"-arch={arch}", "-v", *cap, str(src), "-o", str(cubin)],
                           capture_output=True, text=True, check=False)
    if r.returncode:
        raise RuntimeError(f"ptxas failed:\n{r.stderr.strip()}")
    text = r.stdout + r.stderr
    patterns = {**PTXAS, "shared_bytes": r"(\d+) bytes smem"} if with_shared else PTXAS
    return {key: int(m.group(1)) if (m := re.search(pattern, text)) else 0 for key, pattern in patterns.items()}


def split_entries(ptx: str) -> list[tuple[str, str]]:
    """``(entry name, header + that entry)`` for each kernel of a multi-kernel PTX file."""
    parts = re.split(r"(?=^\.(?:visible|weak) \.entry)", ptx, flags=re.MULTILINE)
    return [(re.search(r"\.entry\s+(\w+)", p).group(1), parts[0] + p) for p in parts[1:]]
