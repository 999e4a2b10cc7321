"""One line describing the machine a benchmark ran on (CPU, cores, load, Python and library versions)."""

from __future__ import annotations

import os
import platform


def describe() -> str:
    import numba_cuda
    import numpy

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    load = f", load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    return (f"{cpu}, {os.cpu_count()} cores{load}; Python {platform.python_version()}, numba-cuda "
            f"{numba_cuda.__version__}, numpy {numpy.__version__}")
