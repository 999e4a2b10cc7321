"""``translate --check``: every generated file is up to date with its kernel and unedited.

Problems: a file listed in the manifest is missing; its bytes differ from ``file_sha256`` (edited by hand);
its kernel's source, device functions or constants changed (``source_sha256``: stale); a registered kernel
has no generated file. Only the manifest and the kernels' sources are read: no translation, no NVRTC.
"""

from __future__ import annotations

import os


def check(out_dir: str = "generated_cuda", registry: bool = True) -> list[dict]:
    """A list of ``{"file", "problem", "detail"}``; empty when everything is current."""
    from numbakern import mode

    if mode.in_simulator():
        from . import worker

        return worker.call("check", out_dir=os.path.abspath(out_dir), registry=registry)
    from . import manifest, targets

    data = manifest.load(out_dir)
    problems = []
    seen = set()
    for filename, entry in sorted(data["files"].items()):
        path = os.path.join(out_dir, filename)
        if entry.get("registry_name"):
            seen.add(entry["registry_name"])
        if not os.path.exists(path):
            problems.append({"file": filename, "problem": "missing", "detail": f"{path} does not exist"})
            continue
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
        if manifest.sha256_text(text) != entry.get("file_sha256"):
            problems.append({"file": filename, "problem": "edited",
                             "detail": "the file differs from what translate wrote (edited by hand?)"})
        try:
            tgt = targets.resolve(entry.get("target") or entry.get("registry_name") or entry["kernel"],
                                  _constants(entry))
            sha = current_source_sha256(tgt, entry)
        except Exception as e:  # noqa: BLE001
            problems.append({"file": filename, "problem": "unresolvable", "detail": f"{type(e).__name__}: {e}"})
            continue
        if sha != entry.get("source_sha256"):
            problems.append({"file": filename, "problem": "stale",
                             "detail": f"{entry['kernel']} changed since translation: re-run translate"})
    if registry:
        from numbakern import registry as reg

        for spec in reg.all_specs():
            if spec.name not in seen:
                problems.append({"file": f"{spec.name}.cu", "problem": "missing",
                                 "detail": f"registered kernel '{spec.name}' has no generated file"})
    return problems


def _constants(entry):
    c = entry.get("constants") or {}
    return {k: (v if isinstance(v, list) else [v]) for k, v in c.items()} or None


def current_source_sha256(tgt, entry) -> str:
    """The kernel's ``source_sha256`` as it would be computed now: the entry's dependencies with today's sources and
    constant values."""
    from . import options
    from .pipeline import source_sha256

    deps = entry.get("depends") or {}
    constants = {}
    fn = tgt.pyfunc
    for name in deps.get("constants", {}):
        if name in fn.__code__.co_freevars:
            value = fn.__closure__[fn.__code__.co_freevars.index(name)].cell_contents
        else:
            value = fn.__globals__.get(name)
        constants[name] = value.item() if hasattr(value, "item") else value
    insts = [dict(launcher.get("constants") or {}) for launcher in entry.get("launchers") or [{}]]
    return source_sha256(tgt, deps.get("device_functions", []), constants,
                         options.from_target(tgt, insts).fingerprint())
