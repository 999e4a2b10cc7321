"""Run registered kernels on cases named by (kernel, size, seed, distribution) in the simulator, in a process of
its own: how a GPU process (which cannot switch numba to simulator mode) gets the simulator's outputs to compare.

    python -m numbakern.sim.replay CASES.json OUT.npz

``CASES.json`` is a list of ``{"name", "size", "seed", "dist"}`` (and ``"module"``: a module whose ``SPECS``
dict holds the kernel spec, for kernels kept out of the registry); each case is rebuilt with the spec's own
``make_case`` and ``np.random.default_rng(seed)``, exactly as the caller builds it, and ``OUT.npz`` gets, per case
``i`` and output argument ``j``, the array ``"{i}:{j}"`` and the inputs' checksum ``"{i}:inputs"`` (so the caller
can tell that both processes ran the same inputs).

A case's launch (and the workspace its maker sizes for it) can depend on the device: a reduction splits a row over
as many blocks as the device runs at once. So a caller that has its own cases passes them whole: ``"args"``, the
path of an ``.npz`` written by ``save_case`` (the arguments and the launch), instead of a seed; and where the
spec's kernel is a specialization chosen for the device (attention's tiles), ``"constants"``: the caller's, from which
the same specialization is made here.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

import numpy as np


def case_for(spec, size: dict, seed: int, dist: str):
    return spec.make_case(size, np.random.default_rng(seed), dist)


def save_case(case, path: str) -> None:
    """``case``'s arguments and launch, for ``load_case`` in another process."""
    arrays = {f"a{i}": a for i, a in enumerate(case.args) if isinstance(a, np.ndarray)}
    scalars = {str(i): (type(a).__name__, a.item() if hasattr(a, "item") else a)
               for i, a in enumerate(case.args) if not isinstance(a, np.ndarray)}
    launch = {"grid": list(case.launch.grid), "block": list(case.launch.block),
              "shared_bytes": int(case.launch.shared_bytes)}
    meta = json.dumps({"n": len(case.args), "scalars": scalars, "launch": launch, "size": dict(case.size)})
    np.savez(path, _meta=np.array(meta), **arrays)


def load_case(path: str):
    from numbakern.launch import LaunchConfig
    from numbakern.registry import Case

    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data["_meta"]))
        args = []
        for i in range(meta["n"]):
            if f"a{i}" in data.files:
                args.append(data[f"a{i}"])
            else:
                kind, value = meta["scalars"][str(i)]
                args.append(getattr(np, kind)(value) if hasattr(np, kind) and kind not in ("int", "float", "bool")
                            else value)
    launch = meta["launch"]
    return Case(tuple(args), LaunchConfig(tuple(launch["grid"]), tuple(launch["block"]), launch["shared_bytes"]),
                meta["size"])


def inputs_checksum(case) -> np.ndarray:
    """A digest of a case's arguments (array bytes, dtypes and shapes; scalars by value)."""
    h = hashlib.sha256()
    for a in case.args:
        if isinstance(a, np.ndarray):
            h.update(f"{a.dtype}{a.shape}".encode())
            h.update(np.ascontiguousarray(a).tobytes())
        else:
            h.update(repr(a).encode())
    return np.frombuffer(h.digest(), dtype=np.uint8)


def spec_for(c: dict):
    import importlib

    from numbakern import registry

    if c.get("module"):
        return importlib.import_module(c["module"]).SPECS[c["name"]]
    return registry.get(c["name"])


def kernel_for(spec, constants: dict | None):
    """The spec's kernel, or the specialization of its factory for ``constants`` when they differ from its own."""
    from numbakern.specialize import constants_of, factory_of

    factory = factory_of(spec.kernel)
    if not constants or factory is None or constants_of(spec.kernel) == constants:
        return spec.kernel
    return factory(**constants)


def run(cases: list[dict], out_path: str) -> None:
    from numbakern import registry

    results = {}
    for i, c in enumerate(cases):
        spec = spec_for(c)
        case = load_case(c["args"]) if c.get("args") else case_for(spec, c["size"], c["seed"], c["dist"])
        results[f"{i}:inputs"] = inputs_checksum(case)
        for j, value in registry.run_case(spec, case, kernel_for(spec, c.get("constants"))).items():
            results[f"{i}:{j}"] = np.asarray(value)
    tmp = out_path + ".tmp.npz"
    np.savez(tmp, **results)
    os.replace(tmp, out_path)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    from numbakern import mode

    if not mode.in_simulator():
        print("numbakern.sim.replay: run it with NUMBA_ENABLE_CUDASIM=1", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as f:
        cases = json.load(f)
    run(cases, argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
