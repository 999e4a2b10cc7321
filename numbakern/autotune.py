"""Autotuning of compile-time constants, in the manner of ``triton.autotune``.

An ``Autotuner`` wraps a ``numbakern.specialize`` kernel factory, a list of candidate configurations (dicts of
the factory's constants), a ``key`` function that reads the problem shape off the arguments, and a ``launch``
function that gives the launch shape for a config and the arguments. The first call for a (device, shape class)
compiles and times every candidate on the actual arguments (CUDA events, warm-up, median), keeps the fastest,
and writes the choice to a JSON cache on disk; later calls, in this process or the next, launch the cached
choice straight away.

- The **shape class** of a shape is each dimension rounded up to a power of two (``shape_class((1000, 33)) ==
  (1024, 64)``): close shapes share a choice, a 1024³ and an 8192³ product do not.
- The **cache** lives in ``$NUMBAKERN_CACHE_DIR/autotune.json`` (default ``~/.cache/numbakern``), keyed by
  ``"<name>|<device name>|<shape class>"``. It is written atomically (a temporary file in the same directory,
  then ``os.replace``), merged with what another process may have written meanwhile, and a corrupt or unreadable
  file counts as empty. ``NUMBAKERN_AUTOTUNE=0`` turns tuning off (the default config is used).
- Under the **simulator** autotuning is off: timings there mean nothing, so the ``sim_config`` (or the first
  config) is used and nothing is read or written.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from . import mode
from .launch import LaunchConfig

CACHE_ENV = "NUMBAKERN_CACHE_DIR"
ENABLE_ENV = "NUMBAKERN_AUTOTUNE"
CACHE_VERSION = 1


def cache_path() -> Path:
    base = os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "numbakern")
    return Path(base) / "autotune.json"


def shape_class(shape: Iterable[int]) -> tuple[int, ...]:
    """Each dimension rounded up to a power of two (0 stays 0)."""
    return tuple(0 if int(d) <= 0 else 1 << (int(d) - 1).bit_length() for d in shape)


def cache_key(name: str, device: str, shape: Iterable[int]) -> str:
    return f"{name}|{device}|{'x'.join(str(d) for d in shape_class(shape))}"


def load_cache(path: Path | None = None) -> dict[str, Any]:
    """The cache's entries; ``{}`` if the file is missing, unreadable, corrupt or of another version."""
    path = cache_path() if path is None else path
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION or not isinstance(data.get("entries"), dict):
        return {}
    return data["entries"]


def store_entry(key: str, entry: Mapping[str, Any], path: Path | None = None) -> None:
    """Add one entry, merged with the file's current contents, written atomically (temp file + ``os.replace``)."""
    path = cache_path() if path is None else path
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = load_cache(path)
    entries[key] = dict(entry)
    fd, tmp = tempfile.mkstemp(prefix=".autotune-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"version": CACHE_VERSION, "entries": entries}, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def enabled() -> bool:
    """Autotuning runs only on a real GPU and unless ``NUMBAKERN_AUTOTUNE=0``."""
    return not mode.in_simulator() and os.environ.get(ENABLE_ENV, "1").strip() not in ("0", "")


def device_name() -> str:
    from numba import cuda

    name = cuda.get_current_device().name
    return name.decode() if isinstance(name, bytes) else str(name)


def time_launch(run: Callable[[], None], *, warmup: int = 2, reps: int = 10) -> float:
    """Median milliseconds of ``run()`` (which launches on the default stream), timed with CUDA events. Each timed
    ``run()`` has an untimed one queued ahead of it, so the start event waits behind device work and the host's
    work to launch (more of it for a candidate of two launches) overlaps the device's instead of counting."""
    from numba import cuda

    for _ in range(warmup):
        run()
    cuda.synchronize()
    times = []
    for _ in range(reps):
        run()
        start, end = cuda.event(), cuda.event()
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(cuda.event_elapsed_time(start, end))
    return statistics.median(times)


class Autotuner:
    """Pick a specialization per device and shape class by timing the candidates once (see the module docs)."""

    def __init__(
        self,
        name: str,
        factory: Callable[..., Any],
        *,
        configs: Sequence[Mapping[str, Any]],
        key: Callable[..., Sequence[int]],
        launch: Callable[..., LaunchConfig],
        sim_config: Mapping[str, Any] | None = None,
        warmup: int = 2,
        reps: int = 10,
    ):
        if not configs:
            raise ValueError(f"Autotuner '{name}': give at least one config")
        self.name = name
        self.factory = factory
        self.configs = [dict(c) for c in configs]
        self.key = key
        self.launch = launch
        self.sim_config = dict(sim_config) if sim_config is not None else dict(self.configs[0])
        self.warmup, self.reps = warmup, reps
        self._memo: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        #: the timings of the last tuning run (config index -> ms), for reports
        self.last_timings: dict[str, float] = {}

    def default_config(self) -> dict[str, Any]:
        return dict(self.sim_config if mode.in_simulator() else self.configs[0])

    def select(self, *args: Any) -> dict[str, Any]:
        """The config to use for these arguments: cached, else tuned now (on a GPU), else the default."""
        if not enabled():
            return self.default_config()
        shape = tuple(self.key(*args))
        key = cache_key(self.name, device_name(), shape)
        with self._lock:
            hit = self._memo.get(key)
            if hit is None:
                entry = load_cache().get(key)
                if entry and entry.get("config") in self.configs:
                    hit = dict(entry["config"])
                else:
                    hit = self._tune(key, shape, args)
                self._memo[key] = hit
        return dict(hit)

    def _tune(self, key: str, shape: tuple[int, ...], args: tuple[Any, ...]) -> dict[str, Any]:
        timings: dict[str, float] = {}
        best, best_ms = None, float("inf")
        for config in self.configs:
            label = json.dumps(config, sort_keys=True)
            try:
                kernel = self.factory(**config)
                cfg = self.launch(config, *args)

                def run(kernel=kernel, cfg=cfg):
                    kernel[cfg.grid, cfg.block, 0, cfg.shared_bytes](*args)

                ms = time_launch(run, warmup=self.warmup, reps=self.reps)
            except Exception as e:  # a config that fails to compile or launch here is skipped, not fatal
                timings[label] = float("nan")
                self._note(f"config {label} failed: {type(e).__name__}: {e}")
                continue
            timings[label] = ms
            if ms < best_ms:
                best, best_ms = config, ms
        if best is None:
            raise RuntimeError(f"Autotuner '{self.name}': no config compiled and ran for shape {shape}")
        self.last_timings = timings
        store_entry(key, {"config": best, "ms": best_ms, "shape": list(shape), "timings_ms": timings,
                          "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        return dict(best)

    def _note(self, message: str) -> None:
        import warnings

        warnings.warn(f"autotune {self.name}: {message}", RuntimeWarning, stacklevel=3)

    def __call__(self, *args: Any) -> dict[str, Any]:
        """Launch the selected config on ``args``; returns the config used."""
        config = self.select(*args)
        kernel = self.factory(**config)
        cfg = self.launch(config, *args)
        kernel[cfg.grid, cfg.block, 0, cfg.shared_bytes](*args)
        return config

