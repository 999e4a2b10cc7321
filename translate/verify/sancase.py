"""The process compute-sanitizer watches: runs candidate launchers on their smallest cases, nothing else.

``python -m translate.verify.sancase PLAN.json`` where the plan lists ``{"name", "spec", "so", "launcher",
"sizes"}`` items (written by ``translate.verify.sanitize``); ``spec`` is a ``numbakern.registry.spec_ref``: the spec
is re-created from the module that declared it (``plan_spec``), so a user's kernel is never checked with the cases of
a library kernel of the same name. Numba is imported (the registry makes the cases) but
never launches anything, so every kernel the sanitizer sees is a candidate's. After each item a ``SANCASE-TIME name
seconds`` line says how long its cases took under the tool (what the scheduler of a spread run plans with).
"""

from __future__ import annotations

import ctypes
import json
import sys
import time

import numpy as np

from numbakern import registry

from . import abi
from .runner import candidate_run


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0]) as f:
        plan = json.load(f)
    ok = True
    for item in plan:
        t0 = time.perf_counter()
        spec = plan_spec(item)
        fn = abi.bind(ctypes.CDLL(item["so"]), item["launcher"])
        for si, size in enumerate(item["sizes"]):
            case = spec.make_case(size, np.random.default_rng([0, si]), "normal")
            run = candidate_run(fn, item["launcher"], spec, case, "a", shared=None)
            status = run.error or "ran"
            ok = ok and not run.error
            print(f"SANCASE {item['name']} {size}: {status}", flush=True)
        print(f"SANCASE-TIME {item['name']} {time.perf_counter() - t0:.3f}", flush=True)
    print(f"SANCASE-DONE {'ok' if ok else 'failed'}", flush=True)
    return 0 if ok else 1


def plan_spec(item: dict) -> registry.KernelSpec:
    """The spec a plan item names: its ``spec_ref`` re-created (a bare name, from older plans: the library's)."""
    ref = item["spec"]
    return registry.get(ref) if isinstance(ref, str) else registry.from_ref(ref)


if __name__ == "__main__":
    raise SystemExit(main())
