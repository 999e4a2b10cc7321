"""The GPUs this process may use, found without initialising CUDA here, and how work is spread over them.

A process that hands work to one worker process per GPU must not start CUDA itself: ``cuInit`` reads
``CUDA_VISIBLE_DEVICES`` once, and a context in the parent would hold memory on a GPU it never computes on. So the
GPUs are listed by ``nvidia-smi`` (its ``--query-gpu`` report: index, UUID, name, memory, clocks, compute
capability), narrowed to what ``CUDA_VISIBLE_DEVICES`` leaves visible, or, without ``nvidia-smi``, read from
``CUDA_VISIBLE_DEVICES`` alone. ``NUMBAKERN_FAKE_GPUS`` replaces both with a made-up list (tests and CI have no GPU):
a count (``2``) or a JSON list of names or of objects with ``Gpu``'s fields.

Each GPU carries the ``token`` a child's ``CUDA_VISIBLE_DEVICES`` is set to: the device's UUID where known (a UUID
means one device whatever ``CUDA_DEVICE_ORDER`` is), else the entry the user gave. ``worker_gpu`` is the round-robin
rule (the k-th worker gets GPU k mod n); ``same_model`` says whether timings taken on two GPUs may be compared.

Standard library only: the pytest plugin uses it before numba may be imported.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

FAKE_ENV = "NUMBAKERN_FAKE_GPUS"
VISIBLE_ENV = "CUDA_VISIBLE_DEVICES"
#: what ``nvidia-smi --query-gpu`` is asked, in this order (``compute_cap`` needs a driver of 2022 or later: without
#: it the query is made again without that field)
QUERY = ("index", "uuid", "name", "memory.total", "memory.free", "clocks.max.sm", "clocks.max.memory", "compute_cap")


@dataclass(frozen=True)
class Gpu:
    """One visible GPU. ``index``: its position among the visible GPUs (what ``cuda.get_current_device().id`` says in
    a process that sees them all); ``token``: what a worker's ``CUDA_VISIBLE_DEVICES`` is set to for this GPU alone.
    The facts are None where they are not known."""

    index: int
    token: str
    name: str = ""
    uuid: str = ""
    memory_total_mib: int | None = None
    memory_free_mib: int | None = None
    sm_clock_mhz: int | None = None
    memory_clock_mhz: int | None = None
    compute_capability: str = ""

    @property
    def label(self) -> str:
        """``GPU 1 (NVIDIA H100 80GB HBM3)``."""
        return f"GPU {self.index}" + (f" ({self.name})" if self.name else "")

    @property
    def arch(self) -> str:
        """``sm_90`` from the compute capability, "" when it is not known."""
        return "sm_" + self.compute_capability.replace(".", "") if self.compute_capability else ""

    def model(self) -> dict[str, object]:
        """What makes two GPUs the same model for a timing: the name, and where known the memory and the clocks."""
        return {"name": self.name, "compute capability": self.compute_capability or None,
                "memory (MiB)": self.memory_total_mib, "max SM clock (MHz)": self.sm_clock_mhz,
                "max memory clock (MHz)": self.memory_clock_mhz}


class GpuListError(ValueError):
    """A ``--gpus`` value or a fake list that cannot be used; the message is one line naming it."""


def visible(environ: Mapping[str, str] | None = None, smi: Sequence[Mapping[str, str]] | None = None) -> list[Gpu]:
    """The GPUs this process may use, in ``CUDA_VISIBLE_DEVICES`` order. ``smi``: ``nvidia-smi``'s rows (as
    ``query_smi`` returns them), for tests; read from ``nvidia-smi`` when None. Never initialises CUDA."""
    environ = os.environ if environ is None else environ
    fake = environ.get(FAKE_ENV)
    if fake:
        return fake_list(fake)
    rows = query_smi() if smi is None else list(smi)
    entries = _visible_entries(environ.get(VISIBLE_ENV))
    if entries is None:  # every GPU nvidia-smi lists
        return [_from_row(i, row) for i, row in enumerate(rows)]
    gpus = []
    for i, entry in enumerate(entries):
        row = _row_for(entry, rows)
        if row is None and rows and not entry.startswith("MIG-"):  # (nvidia-smi's GPU rows list no MIG instance)
            break  # CUDA stops at the first entry that names no device: the ones after it are not visible either
        gpus.append(_from_row(i, row, token=entry) if row is not None else Gpu(i, entry))
    return gpus


def _visible_entries(value: str | None) -> list[str] | None:
    """``CUDA_VISIBLE_DEVICES`` as its entries; None when it is not set (all devices), [] when it hides them all."""
    if value is None:
        return None
    entries = [e.strip() for e in value.split(",")]
    out = []
    for e in entries:
        if not e or e.startswith("-"):
            break  # "" or "-1" hides what follows, as CUDA reads it
        out.append(e)
    return out


def _row_for(entry: str, rows: Sequence[Mapping[str, str]]) -> Mapping[str, str] | None:
    if entry.isdigit():  # nvidia-smi's index (CUDA's order matches it under CUDA_DEVICE_ORDER=PCI_BUS_ID, and on a
        # host of one GPU model, where the fastest-first order falls back to the PCI order)
        return next((r for r in rows if r.get("index") == entry), None)
    # a UUID or a unique prefix of one ("GPU-8f3e..."), as CUDA accepts it
    found = [r for r in rows if r.get("uuid", "").startswith(entry)]
    return found[0] if len(found) == 1 else None


def _number(text: str | None) -> int | None:
    try:
        return int(float(text))
    except (TypeError, ValueError):
        return None  # "[N/A]", "[Not Supported]", missing


def _from_row(i: int, row: Mapping[str, str], token: str | None = None) -> Gpu:
    uuid = row.get("uuid", "")
    return Gpu(index=i, token=uuid or token or row.get("index", str(i)), name=row.get("name", ""), uuid=uuid,
               memory_total_mib=_number(row.get("memory.total")), memory_free_mib=_number(row.get("memory.free")),
               sm_clock_mhz=_number(row.get("clocks.max.sm")), memory_clock_mhz=_number(row.get("clocks.max.memory")),
               compute_capability=(row.get("compute_cap") or "") if _number(row.get("compute_cap")) is not None
               else "")


def query_smi(timeout: float = 30.0) -> list[dict[str, str]]:
    """``nvidia-smi --query-gpu``'s rows as ``{field: text}`` (fields ``QUERY``); [] without ``nvidia-smi`` or when
    it fails (no driver)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    for query in (QUERY, QUERY[:-1]):
        try:
            done = subprocess.run([smi, f"--query-gpu={','.join(query)}", "--format=csv,noheader,nounits"],
                                  capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired):
            return []
        if done.returncode == 0:
            return [dict(zip(query, (cell.strip() for cell in line.split(","))))
                    for line in done.stdout.splitlines() if line.strip()]
    return []


def fake_list(text: str) -> list[Gpu]:
    """``NUMBAKERN_FAKE_GPUS``: ``"2"`` (two GPUs named ``fake GPU``), or a JSON list of names or of objects with
    ``Gpu``'s fields (``index`` and ``token`` default to the position)."""
    text = text.strip()
    if text.isdigit():
        return [Gpu(i, str(i), name="fake GPU") for i in range(int(text))]
    try:
        items = json.loads(text)
    except ValueError:
        raise GpuListError(f"{FAKE_ENV} must be a count or a JSON list, got {text[:60]!r}") from None
    if not isinstance(items, list):
        raise GpuListError(f"{FAKE_ENV} must be a count or a JSON list, got {type(items).__name__}")
    known = {f.name for f in fields(Gpu)}
    gpus = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            item = {"name": item}
        if not isinstance(item, dict) or set(item) - known:
            raise GpuListError(f"{FAKE_ENV}: item {i} must be a name or an object with the fields "
                               f"{', '.join(sorted(known))}")
        gpus.append(Gpu(**{"index": i, "token": str(i), **item}))
    return gpus


def parse_count(value: str, available: int, option: str = "--gpus") -> int:
    """How many GPUs ``--gpus all|N`` asks for, of ``available``; a ``GpuListError`` naming the option otherwise."""
    text = str(value).strip().lower()
    if text == "all":
        if available == 0:
            raise GpuListError(f"{option} all: no GPU is visible (nvidia-smi lists none, or {VISIBLE_ENV} hides them)")
        return available
    if not text.isdigit() or int(text) < 1:
        raise GpuListError(f"{option} must be 'all' or a positive number, got {value!r}")
    if int(text) > available:
        raise GpuListError(f"{option} {text}: only {available} GPU{'s' if available != 1 else ''} "
                           f"{'is' if available == 1 else 'are'} visible")
    return int(text)


def worker_gpu(worker: int, gpus: Sequence[Gpu]) -> Gpu:
    """The GPU of worker number ``worker`` (0, 1, ...): its own while there are GPUs enough, else round robin."""
    if not gpus:
        raise GpuListError("no GPU to give a worker")
    return gpus[worker % len(gpus)]


def xdist_worker_number(worker_id: str) -> int | None:
    """``gw3`` -> 3 (pytest-xdist's worker ids); None for anything else."""
    digits = worker_id[2:] if worker_id.startswith("gw") else ""
    return int(digits) if digits.isdigit() else None


def same_model(gpus: Sequence[Gpu]) -> tuple[bool, str]:
    """Whether timings from ``gpus`` may be compared row for row: every fact of ``Gpu.model`` known for two GPUs is
    equal (the name must be known). Returns the verdict and one sentence that says why."""
    if len(gpus) < 2:
        return True, "one GPU"
    if any(not g.name for g in gpus):
        return False, "the model of " + ", ".join(f"GPU {g.index}" for g in gpus if not g.name) + " is not known"
    first = gpus[0].model()
    for g in gpus[1:]:
        for fact, value in g.model().items():
            if value is not None and first[fact] is not None and value != first[fact]:
                return False, f"GPU {gpus[0].index} and GPU {g.index} differ in {fact}: {first[fact]} and {value}"
    known = [f"{k} {v}" for k, v in first.items() if k != "name" and v is not None]
    return True, f"all {len(gpus)} are {first['name']}" + (f" ({', '.join(known)})" if known else "")


def describe(gpus: Sequence[Gpu]) -> str:
    """``2 GPUs: 0 NVIDIA H100 80GB HBM3, 1 NVIDIA H100 80GB HBM3``."""
    names = ", ".join(f"{g.index} {g.name or g.token}" for g in gpus)
    return f"{len(gpus)} GPU{'s' if len(gpus) != 1 else ''}: {names}"
