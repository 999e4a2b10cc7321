"""``translate --check``: every generated file is up to date with its kernel, unedited, and its records its own.

The manifest is data: nothing it names is imported unless it is a kernel of the project's own kernel modules (or of
numbakern's library, for a project that includes it), and nothing in it is evaluated (``translate.trust``). The
manifest and the files' hashes are read together under the folder's shared lock (``manifest.snapshot``), so a
``translate`` writing at the same time is never seen half done.

Problems, one per file:

- ``missing``: a listed file is not there; an expected kernel (the caller names them: the registered ones, for the
  library's own folder) has no file;
- ``invalid``: the name holds a link, a folder or anything but a plain file;
- ``untrusted``: the entry names a kernel outside the project's kernel modules (never imported), or holds a
  signature or constants that are not plain data;
- ``unresolvable``: a trusted kernel that cannot be found or imported now;
- ``stale``: the kernel's source, device functions, constants or front end changed since translation;
- ``edited``: the file is not what translate produces for its kernel (edited by hand?): every entry's kernel is
  translated again by the deterministic backend, in memory, and the bytes compared -- whatever the entry says
  about its backend, so no field of the manifest decides whether this check runs;
- ``unverifiable``: the file is not the deterministic translation and its entry says another backend (a model)
  wrote it. Such bytes cannot be derived again, so that they are right is only the manifest's claim: a problem,
  unless the caller accepts such claims (``translate --check --accept-unverifiable``) or verifies them on a GPU
  (``--require-verified``). A file whose bytes also differ from the entry's ``file_sha256`` is ``edited``;
- ``unverified``: the entry carries a GPU verification record of other bytes than the file's (void).

A verification record is never evidence here: it is a claim anyone who edits the manifest can make
(``translate.trust.record``); ``--list`` shows it as one.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from numbakern import project as projects
from numbakern import registry
from numbakern.frontend.choice import NUMBA_CUDA
from numbakern.frontend.signatures import signature_text

from . import depends, derivations, manifest, options, pipeline, targets, trust
from .request import TranslateOptions

#: the backend whose translation --check derives again for every entry and compares byte for byte
DETERMINISTIC = trust.DETERMINISTIC_BACKEND
#: what a problem about a kernel that may be gone adds
PRUNE_HINT = " (if the kernel was renamed or removed, translate --prune removes its file and entry)"
#: the problem of a file only a manifest's claim vouches for (another backend's, which cannot be derived again)
UNVERIFIABLE = "unverifiable"


def check(out_dir: str, expected: Iterable[str] = (), project=None) -> list[dict]:
    """A list of ``{"file", "problem", "detail"}``; empty when everything is current. ``expected``: registry names
    of kernels that must have a file in ``out_dir``; ``project``: whose kernel modules the entries may name (default:
    the project of the current folder). Raises ``manifest.ManifestError`` for a damaged manifest, or a folder that does
    not exist where no file is expected (with ``expected``, each is ``missing``)."""
    project = project if project is not None else projects.find(".")
    expected = list(expected)
    if not os.path.isdir(out_dir) and not expected:  # a check of nothing is no pass (expected files are missing)
        raise manifest.ManifestError(f"{out_dir} is not a folder of generated files (it does not exist, or is a file): "
                                     "nothing to check")
    data, states = manifest.snapshot(out_dir)
    registry_names = _vouched_registry_names(project)
    problems = []
    seen = set()
    for filename, entry in sorted(data["files"].items()):
        seen.update(n for n in (entry.get("registry_name"), entry.get("target")) if isinstance(n, str))
        problem = _check_entry(out_dir, filename, entry, states[filename], project, registry_names)
        if problem is not None:
            problems.append({"file": filename, "problem": problem[0], "detail": problem[1]})
    for name in expected:
        if name not in seen:
            stem = name.rsplit(":", 1)[-1].rsplit(".", 1)[-1]  # module:kernel writes <kernel>.cu
            problems.append({"file": f"{stem}.cu", "problem": "missing",
                             "detail": f"{'kernel' if ':' in name else 'registered kernel'} '{name}' has no "
                                       "generated file (run translate --all)"})
    return problems


def _check_entry(out_dir, filename, entry, state, project, registry_names) -> tuple[str, str] | None:
    shown = f"{out_dir.rstrip('/')}/{filename}"
    if state.problem == "missing":
        return "missing", f"{shown} does not exist"
    if state.problem is not None:
        return "invalid", f"{shown} {state.problem}"
    name = entry.get("target") or entry.get("registry_name") or entry.get("kernel")
    try:
        target = trust.kernel_target(name, project, registry_names)
        constants = trust.constants(entry.get("constants"))
    except trust.UntrustedEntry as e:
        return "untrusted", f"not checked, nothing imported: {e}{PRUNE_HINT}"
    try:
        # a file target as translate imported it (by its path, whatever else imported its module by name since)
        tgt = targets.resolve(target, constants or None, by_path=True)
        sha = current_source_sha256(tgt, entry)
    except Exception as e:  # noqa: BLE001 - any failure to find the kernel is this file's problem, reported
        hint = PRUNE_HINT if isinstance(e, LookupError) else ""
        return "unresolvable", f"{type(e).__name__}: {e}{hint}"
    recorded = (entry.get("frontend") or {}).get("source", NUMBA_CUDA)
    if recorded != tgt.frontend:
        return "stale", (f"{entry.get('kernel')} was translated from a {recorded} kernel and is now written against "
                         f"{tgt.frontend}: re-run translate")
    if sha != entry.get("source_sha256"):
        return "stale", f"{entry.get('kernel')} changed since translation: re-run translate"
    claimed = (entry.get("backend") or {}).get("name")
    # a remembered derivation that differs from a file said to be the deterministic one is derived afresh before
    # the file is called edited (another backend's file is expected to differ)
    derived, failure = _derived_sha256(tgt, entry, constants, state.sha256 if claimed == DETERMINISTIC else None)
    if isinstance(failure, trust.UntrustedEntry):
        return "untrusted", f"not checked: {failure}"
    if state.sha256 != derived:
        if claimed == DETERMINISTIC:
            if failure is not None:
                return "stale", f"{entry.get('kernel')} no longer translates ({type(failure).__name__}: {failure})"
            return "edited", "the file differs from what translate produces for its kernel (edited by hand?)"
        if state.sha256 != entry.get("file_sha256"):
            return "edited", "the file differs from what translate wrote (edited by hand?)"
        why = "" if failure is None else f"; the deterministic translator cannot translate it ({failure})"
        return UNVERIFIABLE, (f"the manifest says backend {trust.printable(claimed)!r} wrote it and it is not what "
                              f"the deterministic translator produces{why}: that it is right is only the "
                              "manifest's claim (verify it on a GPU: --require-verified, or accept such files: "
                              "--accept-unverifiable)")
    record = trust.record(entry.get("verification"))
    if record is not None and record["ok"] and record["file_sha256"] != state.sha256:
        return "unverified", ("its GPU verification record is of other bytes than the file's; the record is void "
                              "(verify the file again: translate KERNEL --verify)")
    return None


def _derived_sha256(tgt, entry, constants, on_disk) -> tuple[str | None, Exception | None]:
    """The sha256 of the deterministic translation of the entry's kernel, or None and why there is none."""
    try:
        return _retranslated_sha256(tgt, entry, constants, on_disk), None
    except Exception as e:  # noqa: BLE001 - the kernel does not translate now: the caller says what that means
        return None, e


def gone(out_dir: str, project=None) -> list[dict]:
    """The entries of ``out_dir``'s manifest whose kernel no longer exists in ``project``, as ``{"file",
    "kernel", "why"}``: the entry names no kernel the project vouches for (a module dropped from its kernel modules,
    a library kernel in a project that does not include the library), or the project's module no longer has it (or
    is gone itself). A kernel whose module fails to import for any other reason may still exist: never listed."""
    project = project if project is not None else projects.find(".")
    data = manifest.load(out_dir)
    registry_names = _vouched_registry_names(project)
    found = []
    for filename, entry in sorted(data["files"].items()):
        name = entry.get("target") or entry.get("registry_name") or entry.get("kernel")
        why = _why_gone(name, project, registry_names)
        if why is not None:
            found.append({"file": filename, "kernel": trust.printable(name, 200), "why": why})
    return found


def _why_gone(name, project, registry_names) -> str | None:
    try:
        target = trust.kernel_target(name, project, registry_names)
    except trust.UntrustedEntry as e:
        return str(e)
    try:
        targets.resolve(target, by_path=True)
    except ModuleNotFoundError as e:
        module = target.rsplit(":", 1)[0]
        return f"its module {module} no longer exists" if e.name and module.startswith(e.name) else None
    except LookupError as e:
        # a specialized factory asks for its constants: it exists
        return None if "specialized kernel factory" in str(e) else str(e.args[0] if e.args else e)
    except Exception:  # noqa: BLE001 - a module that does not import now may still hold the kernel: keep its file
        return None
    return None


def _vouched_registry_names(project) -> set[str]:
    """The registered kernels whose bare names an entry may use: the library's (if the project includes it) and the
    project's own."""
    names = set()
    if project.is_library or project.include_library:
        names.update(spec.name for spec in registry.all_specs())
    if not project.is_library:
        with targets.recording_signatures():
            names.update(spec.name for spec in project.specs())
    return names


def _retranslated_sha256(tgt: targets.KernelTarget, entry: dict, constants: dict, on_disk: str | None) -> str:
    """The sha256 of what the deterministic backend writes for the entry's kernel now, translated in memory with
    the entry's signature (read by ``trust.signature``, never evaluated), constants and architecture; remembered
    in the user's cache by the content it depends on (``translate.derivations``). ``on_disk``: the file's sha256,
    which a remembered answer must match, else the kernel is translated afresh (None: no such confirmation)."""
    sig = entry.get("signature")
    declared = [s for s in tgt.signatures if signature_text(s) == sig]
    signature = declared[0] if declared else trust.signature(sig)
    arch = (entry.get("compile") or {}).get("arch") or "sm_90"
    if not isinstance(arch, str) or not projects.ARCH_PATTERN.match(arch):
        raise trust.UntrustedEntry(f"the architecture {arch!r} is not one NVRTC names")

    def derive() -> str:
        result = pipeline.translate(tgt, signature=signature, constants=constants,
                                    opts=TranslateOptions(backend=DETERMINISTIC, arch=arch), out_dir=None, nvrtc=False)
        return manifest.sha256_text(result.code)

    sha, remembered = derivations.sha256(tgt, signature_text(signature), constants, arch, derive)
    if remembered and on_disk is not None and sha != on_disk:
        sha, _ = derivations.sha256(tgt, signature_text(signature), constants, arch, derive, fresh=True)
    return sha


def current_source_sha256(tgt: targets.KernelTarget, entry: dict) -> str:
    """The kernel's ``source_sha256`` as it would be computed now: the entry's dependencies with today's sources and
    constant values. Device functions are looked up among the modules the kernel's own module imported, never
    imported on the manifest's word."""
    deps = entry.get("depends") or {}
    names = [n for n in deps.get("constants", {}) if isinstance(n, str)]
    device_functions = [q for q in deps.get("device_functions", []) if isinstance(q, str) and ":" in q]
    constants = depends.current_constants(tgt.pyfunc, names)
    insts = [dict(launcher.get("constants") or {}) for launcher in entry.get("launchers") or [{}]]
    return depends.source_sha256(tgt.pyfunc, device_functions, constants, tgt.constants,
                                 options.from_target(tgt, insts).fingerprint())
