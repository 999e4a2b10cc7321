"""What the front end's helper process runs for ``test_liveness.py`` (``HELPER_FUNCTIONS``): one compile of a kernel
in which every call of the two analyses ``numbakern.frontend.liveness`` replaces runs numba-cuda's own as well, on
the same IR, and the answers are compared."""

from __future__ import annotations

HELPER_FUNCTIONS = ("compared",)


def compared(module: str, name: str, signature: str | None = None, fault: bool = False) -> dict:
    """``{"live_maps": n, "scopes": n, "differ": [...]}``: how many times each analysis ran in the compile of
    ``module.name`` for ``signature`` (``module`` "registry": a registered kernel, its first signature), and
    where numbakern's answer differs from numba's (which the compile goes on with). ``fault``: numbakern's live maps
    each lose one variable, to show that a difference is seen."""
    import copy
    import importlib

    from numbakern.frontend import liveness, typer
    from numbakern.frontend.compile import compile_function
    from numbakern.frontend.signatures import parse_signature

    if module == "registry":
        from numbakern import registry

        spec = registry.get(name)
        pyfunc, signature = registry._py_func(spec.kernel), spec.signatures[0]
    else:
        pyfunc = getattr(importlib.import_module(module), name)
    _, argtypes = parse_signature(signature)
    analysis, ir_utils = typer.module("core.analysis"), typer.module("core.ir_utils")
    numbas = analysis.compute_live_map, ir_utils.fixup_var_define_in_scope
    counts: dict = {"live_maps": 0, "scopes": 0, "differ": []}

    def live_map(cfg, blocks, uses, defs):
        counts["live_maps"] += 1
        theirs, ours = numbas[0](cfg, blocks, uses, defs), liveness.compute_live_map(cfg, blocks, uses, defs)
        if fault:
            next(s for s in ours.values() if s).pop()
        if theirs != ours:
            counts["differ"].append(f"live map {counts['live_maps']}")
        return theirs

    def fixup(blocks):
        counts["scopes"] += 1
        ours = copy.deepcopy(blocks)
        liveness.fixup_var_define_in_scope(ours)
        numbas[1](blocks)
        for (label, block), other in zip(blocks.items(), ours.values()):
            if sorted(block.scope.localvars._con) != sorted(other.scope.localvars._con):
                counts["differ"].append(f"scope of block {label}")

    # the spies stand where faster_liveness puts numbakern's analyses during the compile
    mine = liveness._MINE
    liveness._MINE = {"compute_live_map": live_map, "fixup_var_define_in_scope": fixup}
    try:
        compile_function(pyfunc, tuple(argtypes))
    finally:
        liveness._MINE = mine
    return counts
