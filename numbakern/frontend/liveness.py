"""Two of numba-cuda's IR analyses with the same answers in less time, for numbakern's own compiles
(``compile.compile_function``: the helper's typing for the simulator, the translator's).

numba-cuda runs its variable-liveness analysis (``analysis.compute_live_map``) after almost every pass, and its
fix-point sweeps every block and re-unions every set until nothing grows; ``fixup_var_define_in_scope`` walks every
variable once per block, though the blocks mostly share one scope. Both are quadratic in a kernel's size, and an
unrolled kernel is large: they took about a third of the CPU time of typing ``matmul_wgmma``. Here the
fix-points are computed with worklists (a block is visited again only when what flows into it grew) and each
scope is completed once. A least fix-point is unique, so the maps are the same sets numba's would be
(``tests/numbakern/test_liveness.py`` compares both on the library's kernels).

``faster_liveness`` replaces the two functions (where numba-cuda calls them: ``_ANALYSES``) only under numba-cuda
0.30, the version they were written against and the one ``pyproject.toml`` pins, and puts numba's back when the
compile is done.
"""

from __future__ import annotations

import contextlib
import functools
from collections import defaultdict
from importlib.metadata import version

from . import typer

#: (module, name) of what ``faster_liveness`` replaces, each in the module that calls it by that name
_ANALYSES = (("core.analysis", "compute_live_map"), ("core.ir_utils", "compute_live_map"),
             ("core.ir_utils", "fixup_var_define_in_scope"), ("core.untyped_passes", "fixup_var_define_in_scope"))


def compute_live_map(cfg, blocks, var_use_map, var_def_map):
    """The variables that must be alive at the entry of each block (numba's ``analysis.compute_live_map``)."""
    # reach[b]: what b or a block that reaches it uses or defines (a forward flow: ascending offsets first)
    reach: dict = defaultdict(set)
    for b in var_def_map:
        reach[b] |= var_def_map[b] | var_use_map[b]
    _flow(sorted(var_def_map), lambda b: (s for s, _ in cfg.successors(b)),
          lambda b, s: reach[b], reach, lambda s: s in var_def_map)
    # live[b]: used at b or after it, defined before it and not in between (backward: descending offsets first)
    live = {b: set(var_use_map[b]) for b in blocks}
    _flow(sorted(live, reverse=True), lambda b: (p for p, _ in cfg.predecessors(b)),
          lambda b, p: (live[b] & reach[p]) - var_def_map[p], live, lambda p: True)
    return live


def _flow(order, targets, carried, sets, revisit) -> None:
    """Grow ``sets[t]`` by ``carried(b, t)`` for every ``t`` in ``targets(b)`` until nothing grows, visiting a
    block again only when its set grew (and ``revisit`` says its own set flows on)."""
    work = list(reversed(order))  # (popped from the end)
    queued = set(work)
    while work:
        b = work.pop()
        queued.discard(b)
        for t in targets(b):
            more = carried(b, t)
            if not more <= sets[t]:
                sets[t] |= more
                if t not in queued and revisit(t):
                    queued.add(t)
                    work.append(t)


def fixup_var_define_in_scope(blocks):
    """Every variable the blocks use, defined in every scope they have (numba's ``ir_utils`` function: it visits
    each scope once per block)."""
    used = {}
    for block in blocks.values():
        for inst in block.body:
            for var in inst.list_vars():
                used[var] = inst
    done = set()
    for block in blocks.values():
        scope = block.scope
        if id(scope) in done:
            continue
        done.add(id(scope))
        for var in used:
            if var.name not in scope.localvars:
                scope.localvars.define(var.name, var)


_MINE = {"compute_live_map": compute_live_map, "fixup_var_define_in_scope": fixup_var_define_in_scope}


@contextlib.contextmanager
def faster_liveness():
    """numba-cuda's two analyses replaced by this module's during one compile (numba-cuda 0.30's front end only)."""
    if typer.is_mlir() or not _written_for():
        yield
        return
    modules = [(typer.module(m), name) for m, name in _ANALYSES]
    saved = [getattr(module, name) for module, name in modules]
    for module, name in modules:
        setattr(module, name, _MINE[name])
    try:
        yield
    finally:
        for (module, name), original in zip(modules, saved):
            setattr(module, name, original)


@functools.cache
def _written_for() -> bool:
    return version("numba-cuda").startswith("0.30.")
