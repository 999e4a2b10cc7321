"""``translate --check``: every generated file is up to date with its kernel and unedited.

Problems: a file listed in the manifest is missing; its bytes differ from ``file_sha256`` (edited by hand);
its kernel's source, device functions or constants changed (``source_sha256``: stale); an expected kernel (the
caller names them: the registered ones, for the library's own folder) has no generated file. Only the manifest and
the kernels' sources are read: no translation, no NVRTC.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from numbakern.frontend.choice import NUMBA_CUDA

from . import depends, manifest, options, targets


def check(out_dir: str, expected: Iterable[str] = ()) -> list[dict]:
    """A list of ``{"file", "problem", "detail"}``; empty when everything is current. ``expected``: registry names
    of kernels that must have a file in ``out_dir``. Raises ``manifest.ManifestError`` for a damaged manifest."""
    data = manifest.load(out_dir)
    folder = manifest.folder(out_dir)
    problems = []
    seen = set()
    for filename, entry in sorted(data["files"].items()):
        path = os.path.join(folder, filename)
        seen.update(filter(None, (entry.get("registry_name"), entry.get("target"))))
        if not os.path.exists(path):
            problems.append({"file": filename, "problem": "missing",
                             "detail": f"{os.path.join(out_dir, filename)} does not exist"})
            continue
        if manifest.sha256_file(path) != entry.get("file_sha256"):
            problems.append({"file": filename, "problem": "edited",
                             "detail": "the file differs from what translate wrote (edited by hand?)"})
        try:
            tgt = targets.resolve(entry.get("target") or entry.get("registry_name") or entry["kernel"],
                                  _constants(entry))
            sha = current_source_sha256(tgt, entry)
        except Exception as e:  # noqa: BLE001 - any failure to find the kernel is this file's problem, reported
            problems.append({"file": filename, "problem": "unresolvable", "detail": f"{type(e).__name__}: {e}"})
            continue
        recorded = (entry.get("frontend") or {}).get("source", NUMBA_CUDA)
        if recorded != tgt.frontend:
            problems.append({"file": filename, "problem": "stale",
                             "detail": f"{entry['kernel']} was translated from a {recorded} kernel and is now "
                                       f"written against {tgt.frontend}: re-run translate"})
            continue
        if sha != entry.get("source_sha256"):
            problems.append({"file": filename, "problem": "stale",
                             "detail": f"{entry['kernel']} changed since translation: re-run translate"})
    for name in expected:
        if name not in seen:
            stem = name.rsplit(":", 1)[-1].rsplit(".", 1)[-1]  # module:kernel writes <kernel>.cu
            problems.append({"file": f"{stem}.cu", "problem": "missing",
                             "detail": f"{'kernel' if ':' in name else 'registered kernel'} '{name}' has no "
                                       "generated file (run translate --all)"})
    return problems


def _constants(entry):
    c = entry.get("constants") or {}
    return {k: (v if isinstance(v, list) else [v]) for k, v in c.items()} or None


def current_source_sha256(tgt: targets.KernelTarget, entry: dict) -> str:
    """The kernel's ``source_sha256`` as it would be computed now: the entry's dependencies with today's sources and
    constant values."""
    deps = entry.get("depends") or {}
    constants = depends.current_constants(tgt.pyfunc, deps.get("constants", {}))
    insts = [dict(launcher.get("constants") or {}) for launcher in entry.get("launchers") or [{}]]
    return depends.source_sha256(tgt.pyfunc, deps.get("device_functions", []), constants, tgt.constants,
                                 options.from_target(tgt, insts).fingerprint())
