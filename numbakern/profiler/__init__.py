"""A profiler without a GPU: one launch run in numbakern's simulator, counted the way Nsight Compute counts it.

``numbakern.profile(kernel, grid, block, *args)`` runs the launch as ``kernel[grid, block](*args)`` would (the
arguments are changed as a launch changes them) and returns a ``Profile``: per source line and for the kernel,
global-memory requests and 32-byte sectors against the ideal for the access width, shared-memory wavefronts and
bank conflicts, active lanes per executed warp instruction and divergent branches, atomics and their contention,
floating-point operations by type; the theoretical occupancy from the compiled kernel's registers and shared
memory; a roofline bound on a chosen GPU; and the three costliest things to fix. ``numbakern profile KERNEL`` does
the same for a declared kernel's case from the command line, and ``pytest --profile KERNEL`` for the launches of a
test run. docs/profiling.md explains the counts and shows them on the lecture's kernels.

The modules, one job each: ``rules`` (how the hardware counts one warp instruction), ``collect`` (the lanes'
accesses from the simulator, grouped into warp instructions), ``flops`` (operations per line from the front end's
types), ``resources`` and ``occupancy`` (the compiled kernel's registers, and what fits on a multiprocessor),
``roofline`` (GPU specs and the bound), ``advice`` (what to fix), ``report`` (table, JSON, chart), ``watch`` (the
pytest option), ``cli`` (the command), ``lessons`` (the kernels docs/profiling.md teaches with).
"""

from __future__ import annotations

import ast
import math
import numbers
from typing import Any

from .model import Advice, Branch, Kernel, Line, Memory, Occupancy, Profile, Roofline, Sampling

__all__ = ["Advice", "Branch", "Kernel", "Line", "Memory", "Occupancy", "Profile", "Roofline", "Sampling",
           "profile", "profile_launch"]

#: blocks a launch runs at most before it is sampled (see ``collect.plan``)
DEFAULT_SAMPLE = 64
DEFAULT_GPU = "H100"


def profile(kernel: Any, grid: Any, block: Any, *args: Any, shared_bytes: int = 0, gpu: str = DEFAULT_GPU,
            sample: int | None = DEFAULT_SAMPLE, compile: bool = True) -> Profile:
    """Profile the launch ``kernel[grid, block, 0, shared_bytes](*args)`` in numbakern's simulator.

    ``gpu``: the GPU whose occupancy and roofline to compute (``roofline.GPUS``: H100, H200, A100, L4, RTX4090).
    ``sample``: a grid of more blocks than this runs a stratified sample of about this many, its counts scaled to
    the whole grid (None: every block). ``compile``: compile the kernel (numba-cuda to PTX, nvJitLink to SASS, no
    GPU needed) for its registers and static shared memory; without it there is no occupancy.
    """
    from .. import mode
    from . import roofline

    if not mode.in_simulator():
        raise RuntimeError("numbakern.profile runs the launch in numbakern's simulator, and this process runs kernels "
                           "on a GPU: set NUMBA_ENABLE_CUDASIM=1 before numba is imported (or use the `numbakern "
                           "profile` command, which does)")
    roofline.gpu(gpu)  # an unknown GPU fails before the launch runs
    grid3, block3 = _dims("grid", grid), _dims("block", block)
    if sample is not None and (not isinstance(sample, int) or isinstance(sample, bool) or sample < 1):
        raise ValueError(f"profile: sample must be a positive number of blocks or None (every block), got {sample!r}")
    if not isinstance(shared_bytes, int) or shared_bytes < 0:
        raise ValueError(f"profile: shared_bytes must be a non-negative int, got {shared_bytes!r}")
    return profile_launch(kernel[grid3, block3, 0, shared_bytes], args, gpu=gpu, sample=sample, compile=compile)


def profile_launch(configured: Any, args, *, gpu: str = DEFAULT_GPU, sample: int | None = DEFAULT_SAMPLE,
                   compile: bool = True) -> Profile:
    """``profile`` of a kernel already configured for its launch (``kernel[grid, block, 0, shared_bytes]``)."""
    from ..sim import engine
    from . import roofline
    from .collect import ProfiledLaunch

    if not engine.enabled():
        raise RuntimeError("numbakern.profile needs numbakern's simulator engine, and launches run on numba-cuda's "
                           "stock one here (NUMBAKERN_SIM_ENGINE=stock)")
    spec = roofline.gpu(gpu)
    launch = ProfiledLaunch(configured, sample)
    launch.run(tuple(args))
    return _assemble(launch, configured, spec, compile)


def _dims(name: str, value: Any) -> tuple[int, int, int]:
    dims = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, numbers.Integral) and not isinstance(d, bool) and d >= 1
                                          for d in dims):
        raise ValueError(f"profile: {name} must be a positive int or a tuple of 1 to 3 positive ints, got {value!r}")
    return tuple(int(d) for d in (*dims, *(1,) * (3 - len(dims))))


def _assemble(launch, configured, spec, compile: bool) -> Profile:
    from . import advice, occupancy, resources, roofline

    recorder = launch.recorder
    notes = []
    request = facts = None
    if launch.typed is not None:
        from ..frontend import client
        from ..sim import kerneltypes

        request = kerneltypes.typing_request(configured, launch.argtypes)
        facts = client.facts(request)
    else:
        notes.append("the launch ran untyped (NUMBAKERN_SIM_TYPING=0): no operation counts, no occupancy")
    static = {}
    if facts is not None:
        from .flops import line_flops

        static = line_flops(facts, _files(facts, launch.fn, request.devices))
    rows = recorder.line_rows(static)
    kernel_file = launch.fn.__code__.co_filename
    lines = sorted(rows.values(), key=lambda r: (r.file != kernel_file, r.file, r.line))
    total = Kernel()
    for row in lines:
        for kind, m in row.memory.items():
            total.memory.setdefault(kind, Memory()).add(m)
        for kind, n in row.flops.items():
            total.flops[kind] = total.flops.get(kind, 0.0) + n
        total.executions += row.executions
        total.thread_executions += row.thread_executions
    blocks = math.prod(launch.grid_dim)
    for label, _, _, read, written in recorder.touched.values():
        most = -(-label.span // 32) + 1  # the array's sectors (one more if it does not start on a sector)
        total.unique_bytes_read += 32.0 * min(read, most)
        total.unique_bytes_written += 32.0 * min(written, most)
    sampling = Sampling(blocks, len(launch.plan), launch.how)
    if launch.how != "all":
        notes.append(f"sampled: {launch.how}; the bytes the kernel must move are the sample's scaled (at most each "
                     "array's size)")
    threads = math.prod(launch.block_dim)
    dynamic = launch.adapter.dynamic_shared_bytes(configured)
    occ = None
    if compile and request is not None:
        found = resources.resources(configured, launch.fn, request, spec.cc)
        if "error" in found:
            notes.append(f"no occupancy: the kernel did not compile here ({found['error'].splitlines()[0]})")
        else:
            occ = occupancy.occupancy(spec, threads, found["registers"], found["static_shared"], dynamic,
                                      found.get("source", ""))
            if found.get("local_bytes"):
                notes.append(f"the compiled kernel uses {found['local_bytes']} bytes of local memory per thread "
                             "(spills or a stack): its traffic is not counted")
    profile = Profile(launch.name, tuple(launch.grid_dim), tuple(launch.block_dim), dynamic, lines, total, sampling,
                      occ, roofline.bound(total, spec), [], notes)
    profile.notes.append("active lanes are counted per source line; Nsight Compute counts per SASS instruction")
    profile.advice = advice.advise(profile, spec)
    return profile


def _files(facts: dict, fn, devices: list) -> dict[str, str]:
    """Each facts function's source file, by label."""
    files = {"kernel": fn.__code__.co_filename}

    def file_of(label: str) -> str:
        if label in files:
            return files[label]
        if label.startswith("device:"):
            index = int(label.split(":")[1])
            found = devices[index].__code__.co_filename if index < len(devices) else files["kernel"]
        elif label.startswith("nested:"):
            found = file_of(ast.literal_eval(label[len("nested:"):])[0])
        else:
            found = files["kernel"]
        files[label] = found
        return found

    for data in facts.get("functions") or ():
        if data:
            file_of(data["label"])
    return files
